"""Validation suite: published measurements (``validation/measurements.csv``) against predictions.

Each row names a workload (a library model, ``gemm:MxNxK``, ``copy:N`` or ``attention:BxHxSQxSKxD``), a scenario
(``key=value;...``), a hardware template, a system size, a metric and the measured value with its
source; ``timing=isolated`` (or ``isolated:HARNESS`` naming the benchmark script when one source times
operators through different harnesses) marks a single call timed on its own with a host synchronisation, which
adds the template's ``sync_overhead_us`` (a property of the measurement, not of a workload).
A row the model cannot cover yet (several chips, a missing template, a scenario keyword not
supported) is listed as not covered with the reason; a malformed row is an error with the reason;
neither stops the other rows.

``dse validate`` first checks the whole file (:func:`check_measurements`): a malformed row, a row whose
hardware, workload, dtype or metric is unknown, a ragged row or a repeated id is one ``error:`` line each
and nothing is predicted; a measurement faster than the chip's pure roofline (:func:`roof_time`) is a
``warning:`` line naming the row, and the row is still predicted.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dse.errors import DseError, DseMultiError, _short, did_you_mean
from dse.hardware.designs import DesignBatch
from dse.hardware.schema import Hardware
from dse.hardware.system import System, default_system
from dse.hardware.templates import list_templates, load_hardware
from dse.predict import MixArrays, evaluate_times, mix_arrays, serial_collectives, step_times
from dse.units import DTYPES, TERA, fallback_dtype, repo_root
from dse.validate.families import family_of, out_of_sample
from dse.workloads.library import COLLECTIVE_OPS, SINGLE_OPS, Workload, load_description, workload
from dse.workloads.mix import Mix
from dse.workloads.parallel import Plan

MAX_CHIPS = 1_000_000  # a measurement row's n_chips (the largest published runs use ~10^4-10^5 chips)
REQUIRED = ("id", "workload", "scenario", "hardware", "n_chips", "metric", "value", "source")
METRICS = {
    "time_s": "seconds per pass",
    "tflops": "achieved TFLOP/s",
    "tokens_per_s": "tokens per second (decode: batch / step time)",
    "samples_per_s": "samples per second (batch / pass time)",
    "bandwidth_gbps": "bytes moved per second, GB/s",
    "mfu": "achieved / peak FLOP/s",
}


def default_path() -> Path:
    return repo_root() / "validation" / "measurements.csv"


def parse_scenario(text: str) -> dict[str, object]:
    """``"phase=decode;batch=1;fused_attention=true"`` -> keyword arguments for ``dse.workload``."""
    out: dict[str, object] = {}
    for part in filter(None, (p.strip() for p in str(text or "").split(";"))):
        if "=" not in part:
            raise ValueError(f"scenario item {part!r} is not key=value")
        k, v = (x.strip() for x in part.split("=", 1))
        if v.lower() in ("true", "false"):
            out[k] = v.lower() == "true"
        else:
            try:
                out[k] = int(v)
            except ValueError:
                out[k] = v
    return out


def load_measurements(path: str | Path | None = None) -> pd.DataFrame:
    from dse.yamlio import load_csv

    return load_csv(Path(path) if path else default_path(), "a measurements CSV", tuple(REQUIRED))


@dataclass(frozen=True)
class RowCase:
    """A measurement row ready to predict: its workload, its metric and the measured value."""

    id: str
    workload: Workload
    hardware: Hardware
    metric: str
    measured: float
    isolated: bool = False  # timed as a single host-synchronised call
    system: System | None = None  # multi-chip rows: the chip's system, resized to the row's chips
    harness: str = ""  # isolated rows: the timing harness (:func:`harness_of`) whose host-sync time they share


def case_arrays(case: RowCase) -> MixArrays:
    """The row's workload as predictor arrays (build once per row)."""
    return mix_arrays(Mix.of([case.workload]))


def case_time(case: RowCase, d: DesignBatch, arrays: MixArrays | None = None) -> np.ndarray:
    """[D] predicted seconds per step of the row's workload on each design (one chip of its system); a serving
    row adds its engine's host time of the pass (``dse.workloads.serving``: the same on every design)."""
    if case.system is not None:
        d = d.with_system(case.system)
    a = serial_collectives(arrays or case_arrays(case), d)  # a chip that runs collectives on its core hides none
    return step_times(evaluate_times(d, a.o, table_order=False), a)[:, 0]  # with the workload's host time


def metric_from_time(metric: str, wl: Workload, hw: Hardware | DesignBatch, t: np.ndarray) -> np.ndarray:
    """The row's metric from predicted seconds per pass ``t`` (any shape)."""
    batch = wl.scenario.get("batch", 1) or 1
    if metric == "time_s":
        return t
    if metric == "tflops":
        return wl.flops / t / 1e12
    if metric == "tokens_per_s" and wl.scenario.get("phase") == "serving":  # output tokens of one pass
        return wl.scenario["tokens"] / t
    if metric in ("tokens_per_s", "samples_per_s"):
        return batch / t
    if metric == "bandwidth_gbps":
        return wl.bytes / t / 1e9
    if metric == "mfu":  # model FLOPs: what recomputation runs again is left out (Korthikanti et al. 2022, Sec. 6)
        peak = hw.peak_flops if isinstance(hw, Hardware) else hw.peak_flops
        return (wl.flops - wl.scenario.get("recompute_flops", 0.0)) / t / peak
    raise ValueError(f"unknown metric {metric!r}")


def bad_metric(text: str) -> str | None:
    """Why a ``metric`` cell is bad (``got X; accepted: Y``), or None."""
    if text.strip() in METRICS:
        return None
    return f"got {_short(text.strip())}; accepted: {', '.join(METRICS)}"


def bad_value(text: str) -> str | None:
    """Why a ``value`` cell is bad, or None: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    return None if value > 0 and math.isfinite(value) else f"got {_short(text)}; accepted: a finite number > 0"


def chips_of(text: str) -> int:
    """A row's ``n_chips`` (an empty cell is one chip); 0 when it is not an integer 1..MAX_CHIPS."""
    text = (text or "").strip() or "1"
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_CHIPS:
        return 0
    return int(text)


def bad_chips(text: str) -> str | None:
    """Why an ``n_chips`` cell is bad, or None."""
    return None if chips_of(text) else f"got {_short(text)}; accepted: an integer 1..{MAX_CHIPS}"


def timing_of(text: str) -> str:
    """A row's ``timing`` (an empty cell is ``steady``)."""
    return (text or "steady").strip() or "steady"


def is_isolated(timing: str) -> bool:
    """``isolated`` or ``isolated:HARNESS`` (a non-empty harness name)."""
    return timing == "isolated" or (timing.startswith("isolated:") and len(timing) > len("isolated:"))


def bad_timing(text: str) -> str | None:
    """Why a ``timing`` cell is bad, or None."""
    timing = timing_of(text)
    if timing == "steady" or is_isolated(timing):
        return None
    return f"got {_short(timing)}; accepted: steady, isolated, isolated:HARNESS"


#: the cells :func:`prepare_row` checks itself, each with its check (the rest need the model's names)
CELL_CHECKS: dict[str, Callable[[str], str | None]] = {
    "metric": bad_metric, "value": bad_value, "n_chips": bad_chips, "timing": bad_timing}


def row_plan(scen: Mapping[str, Any], chips: int) -> dict[str, Any]:
    """The parallelism plan a row runs: its scenario's plan keywords and ``chips``; a row on several chips that names
    no split (``tp``, ``pp``, ``dp``, ``fsdp``, ``ep``) is tensor-parallel over all of them. Empty for one chip and
    no plan keywords (the workload's own single-chip plan)."""
    plan = {k: v for k, v in scen.items() if k in Plan.model_fields}
    if chips > 1 and not ({"tp", "pp", "dp", "fsdp", "ep"} & set(plan)):
        plan["tp"] = chips
    if plan:
        plan["chips"] = chips
    return plan


def prepare_row(row: Mapping[str, str], templates: Mapping[str, Hardware] | None = None) -> RowCase:
    """Build one row's case, or raise ``DseError`` (bad row) / ``NotCoveredError`` (model cannot cover it)."""
    rid = row.get("id") or "?"
    for column, check in CELL_CHECKS.items():
        bad = check(str(row.get(column) or ""))
        if bad:
            raise DseError(f"row {rid}: {bad}", field=column)
    metric, value, chips = row["metric"].strip(), float(row["value"]), chips_of(row.get("n_chips") or "")
    name = row["hardware"].strip()
    templates = templates or {}
    if name in templates:
        hw = templates[name]
    elif name in list_templates():
        hw = load_hardware(name)
    else:
        raise NotCoveredError(f"no hardware template {name!r} (shipped: {', '.join(list_templates())})")
    try:
        scen = parse_scenario(row["scenario"])
        plan = row_plan(scen, chips)
        scen = {k: v for k, v in scen.items() if k not in Plan.model_fields}
        wl = workload(row["workload"].strip(), plan=plan or None, **scen)
    except DseError as exc:
        raise NotCoveredError(f"workload not expressible yet: {exc}") from None
    except (ValueError, TypeError) as exc:
        raise DseError(f"row {rid}: scenario {row['scenario']!r}: {exc}", field="scenario") from None
    system = None
    if chips > 1:
        try:
            system = default_system(hw).resized(chips)
        except DseError as exc:
            raise NotCoveredError(f"no system for {chips} x {hw.name}: {exc}") from None
    isolated = is_isolated(timing_of(row.get("timing") or ""))
    return RowCase(rid, wl, hw, metric, value, isolated, system, harness_of(row) if isolated else "")


class NotCoveredError(Exception):
    """A valid row the model cannot predict yet; the message says why."""


def predict_case(case: RowCase, design: DesignBatch | None = None, sync_overhead_us: float | None = None) -> float:
    d = design if design is not None else DesignBatch.from_hardware(case.hardware)
    t = case_time(case, d)
    if case.isolated:
        sync = case.hardware.compute.sync_overhead_us if sync_overhead_us is None else sync_overhead_us
        t = t + sync * 1e-6
    return float(metric_from_time(case.metric, case.workload, d, t)[0])


def time_error_pct(predicted: Any, measured: Any, is_time: Any) -> Any:
    """Time error in percent, ``predicted / measured time - 1``: for a time metric ``p / m - 1``, for a rate
    (TFLOP/s, tokens/s, GB/s: inverse to time) ``m / p - 1``. Works on arrays (``is_time`` per row)."""
    ratio = np.asarray(predicted, dtype=float) / np.asarray(measured, dtype=float)
    return (np.where(is_time, ratio, 1.0 / ratio) - 1.0) * 100.0


#: the largest host time per timed call :func:`harness_sync_us` may estimate, us: a microbenchmark's launch and
#: synchronisation take tens to hundreds of us (the lc-, jaxpallas- and mlperf- rows' estimates), a host-timed
#: generate() call of an LLM runtime milliseconds (TensorRT-LLM 0.9's gptSessionBenchmark: the first-token latencies of
#: 128-token prompts sit 1.6-1.9 ms above their predicted device time on H100/H200 and 4-5 ms on A100)
MAX_HARNESS_US = 10_000.0


def harness_sync_us(pred_s: np.ndarray, meas_s: np.ndarray) -> np.ndarray:
    """[n] host-synchronisation time of each isolated call, each estimated from the OTHER isolated rows
    of the same template (leave-one-out): ``s_i = argmin_s sum_{j != i} ln((p_j + s) / m_j)^2`` over
    0..:data:`MAX_HARNESS_US`. It is a property of the timing harness (launch + synchronise + host timer; for a
    harness that times whole generate() calls also the runtime's per-call set-up and sampling), used only
    when the template sets no ``sync_overhead_us`` of its own."""
    from scipy.optimize import minimize_scalar

    out = np.zeros(pred_s.size)
    for i in range(pred_s.size):
        p, m = np.delete(pred_s, i), np.delete(meas_s, i)
        if not p.size:
            continue
        res = minimize_scalar(lambda s, p=p, m=m: float(np.sum(np.log((p + s * 1e-6) / m) ** 2)),
                              bounds=(0.0, MAX_HARNESS_US), method="bounded")
        out[i] = res.x
    return out


def harness_of(row: Mapping[str, str]) -> str:
    """The timing harness of a row: the name after ``timing=isolated:`` if given, else its source up to
    the first space without ``@commit`` (a repository or a paper). Rows of one source were timed by one harness
    (e.g. LLMCompass's torch.matmul loop, MLPerf's LoadGen + LWIS), so they share its host-synchronisation
    time; different sources do not, nor do differently named harnesses of one source (LLMCompass times
    its GeLU through a different function than its matmuls and adds a different overhead to each)."""
    timing = str(row.get("timing") or "").strip()
    source = str(row.get("source") or "").strip().split(" ", 1)[0].split("@", 1)[0]  # the repository, any commit
    return f"{source} {timing[len('isolated:'):]}" if timing.startswith("isolated:") else source


def chip_style(hw: Hardware) -> str:
    """``npu`` for a chip whose MAC arrays are systolic (TPU, Gaudi, the synthetic NPUs), ``gpu`` for SIMT tensor
    cores: the two groups whose families are reported apart (a GPU family's bar is issue 12's; NPU rows per chip)."""
    return "npu" if hw.compute.matrix.style == "systolic" else "gpu"


def run_suite(df: pd.DataFrame, templates: Mapping[str, Hardware] | None = None,
              families: Collection[str] | None = None, prepared: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """One result row per measurement: status (covered / not covered / error), predicted, error %.

    Isolated rows (one host-synchronised call) on a template without ``sync_overhead_us`` get the
    harness time estimated leave-one-out from the other isolated rows of the same template and the same
    harness (:func:`harness_of`; :func:`harness_sync_us`, column ``sync_us_loo``): never from the row itself.
    ``families``: only the rows of these families are predicted and returned (the leave-one-out harness times still
    come from every isolated row, so a kept row's prediction is the whole run's); a name no row has is one
    :class:`DseError` (field ``--family``) listing the families that have rows, raised before any row is predicted.
    ``prepared``: the rows' cases by id as :func:`check_measurements` left them (each row prepared once)."""
    recs, cases = [], []
    for _, row in df.iterrows():
        rec = {"id": row["id"], "workload": row["workload"], "hardware": row["hardware"], "metric": row["metric"],
               "scenario": str(row.get("scenario") or ""), "n_chips": str(row.get("n_chips") or ""), "style": "",
               "family": "", "fitted_into": (row.get("fitted_into") or "").strip(),
               "measured": pd.to_numeric(row["value"], errors="coerce"), "predicted": np.nan, "error_pct": np.nan,
               "time_error_pct": np.nan, "status": "covered", "reason": ""}
        case = None
        try:
            case = _prepared(row, templates, prepared)
            if not rec["fitted_into"] and str(row["id"]) in case.hardware.calibrated_on:  # a dse calibrate template
                rec["fitted_into"] = f"dse calibrate ({case.hardware.name})"
            rec["style"] = chip_style(case.hardware)
            rec["family"] = family_of(case.workload)
        except NotCoveredError as exc:
            rec["status"], rec["reason"] = "not covered", str(exc)
        except DseError as exc:
            rec["status"], rec["reason"] = "error", str(exc)
        recs.append(rec)
        cases.append(case)
    if families is not None:
        have = sorted({r["family"] for r in recs if r["family"]})
        if not families or any(f not in have for f in families):
            raise DseError(f"got {','.join(families)!r}; accepted: comma-separated names that have rows "
                           f"({', '.join(have)})", field="--family")
    loo_sync = _loo_sync(df, cases)
    out = []
    for k, (rec, case) in enumerate(zip(recs, cases, strict=True)):
        if families is not None and rec["family"] not in families:
            continue
        if case is not None and rec["status"] == "covered":
            try:
                rec["predicted"] = predict_case(case, sync_overhead_us=loo_sync.get(k))
                rec["sync_us_loo"] = loo_sync.get(k, np.nan)
                rec["error_pct"] = (rec["predicted"] / case.measured - 1) * 100
                rec["time_error_pct"] = float(time_error_pct(rec["predicted"], case.measured, case.metric == "time_s"))
            except NotCoveredError as exc:
                rec["status"], rec["reason"] = "not covered", str(exc)
            except DseError as exc:
                rec["status"], rec["reason"] = "error", str(exc)
        out.append(rec)
    return pd.DataFrame(out)


def _prepared(row: Any, templates: Mapping[str, Hardware] | None, prepared: Mapping[str, Any] | None) -> Any:
    """``row``'s case: the one ``prepared`` holds by its id (raising the error kept there), else :func:`prepare_row`."""
    got = prepared.get(str(row["id"])) if prepared else None
    if isinstance(got, Exception):
        raise got
    return got if got is not None else prepare_row(row, templates)


def _loo_sync(df: pd.DataFrame, cases: list[Any]) -> dict[int, float]:
    """Row position -> the harness time of an isolated row, estimated from the other isolated rows of its template
    and harness (:func:`harness_sync_us`); rows with no such peers are absent. ``cases``: each row's
    :func:`prepare_row`, None where it is not covered."""
    loo_sync: dict[int, float] = {}
    isolated: dict[str, list[tuple[int, float, float]]] = {}
    for k, ((_, row), case) in enumerate(zip(df.iterrows(), cases, strict=True)):
        if case is None:
            continue
        if case.isolated and case.metric == "time_s" and case.hardware.compute.sync_overhead_us == 0:
            key = f"{case.hardware.name} {harness_of(row)}"
            isolated.setdefault(key, []).append((k, predict_case(case), case.measured))
    for rows in isolated.values():
        if len(rows) > 1:
            s = harness_sync_us(np.array([r[1] for r in rows]), np.array([r[2] for r in rows]))
            loo_sync.update({r[0]: float(v) for r, v in zip(rows, s, strict=True)})
    return loo_sync


def error_stats(results: pd.DataFrame) -> dict[str, float]:
    """Median and maximum absolute time error (percent) over covered rows that set no template
    coefficient (``fitted_into`` empty: out of sample)."""
    err = out_of_sample(results)["time_error_pct"].abs()
    return {"rows": int(len(results)), "covered": int(err.size),  # covered and out of sample
            "median_abs_error_pct": float(err.median()) if err.size else float("nan"),
            "max_abs_error_pct": float(err.max()) if err.size else float("nan")}


def scatter_inputs(results: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str], tuple[float, float] | None]:
    """What the predicted-vs-measured scatter draws (``dse.report.plots.validation_scatter``, called by
    the CLI): the covered rows, the metric labels and the out-of-sample p10..p90 error band (percent)."""
    e = out_of_sample(results)["error_pct"].to_numpy(dtype=float)
    band = (float(np.percentile(e, 10)), float(np.percentile(e, 90))) if e.size else None
    return results[results["status"] == "covered"], METRICS, band


# -- the whole file checked before any prediction (dse validate) ----------------------------------------------

WHAT = "a measurements CSV"
MAX_ERROR_LINES = 50  #: bad fields listed one line each; past this, one line counts the rest
#: a measured time may undercut the roof by this fraction before it is called impossible: published values are
#: rounded to 2-4 significant figures
ROOF_SLACK = 0.03
WORKLOAD_FORMS = "a library model, a YAML path, gemm:MxNxK, copy:N, attention:BxHxSQxSKxD or all_reduce:BYTES"


@dataclass(frozen=True)
class Record:
    """One data row as the csv module splits it: the line it starts on and its cells."""

    line: int
    cells: list[str]

    def where(self, header: list[str]) -> str:
        """``line 7 (ID)``: the row's place in error and warning lines (the id when the row has one)."""
        rid = self.cells[header.index("id")].strip() if "id" in header and len(self.cells) > header.index("id") else ""
        rid = rid if len(rid) <= 60 else rid[:57] + "..."
        return f"line {self.line} ({rid})" if rid else f"line {self.line}"


def read_records(path: Path) -> tuple[list[str], list[Record]]:
    """The header and every data row of a CSV with the line each starts on; blank lines are skipped (as pandas
    does). The file-level checks are :func:`dse.yamlio.read_text`'s (size, UTF-8, no NUL)."""
    from dse.yamlio import MAX_CSV_BYTES, read_text

    reader = csv.reader(io.StringIO(read_text(path, WHAT, MAX_CSV_BYTES, encoding="utf-8-sig")))
    records, start = [], 1
    try:
        for cells in reader:
            if cells:
                records.append(Record(start, cells))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise DseError(f"line {start}: not a readable CSV ({exc}); accepted: {WHAT}", file=str(path)) from None
    return (records[0].cells, records[1:]) if records else ([], [])


def bad_workload(text: str) -> str | None:
    """Why a ``workload`` cell names no workload (an unknown model, a malformed ``gemm:``/``copy:``/``attention:``
    shape, a model YAML that does not load), or None. Nothing is expanded but a single operator."""
    name = text.strip()
    try:
        if not name:
            raise DseError(f"accepted: {WORKLOAD_FORMS}")
        if name.startswith((*SINGLE_OPS, *COLLECTIVE_OPS)):
            workload(name)
        else:
            load_description(name)
    except DseError as exc:
        accepted = exc.message.split("accepted: ", 1)[1] if "accepted: " in exc.message else f"{WORKLOAD_FORMS} ({exc})"
        return f"got {_short(name)}; accepted: {accepted}"
    return None


def scenario_errors(text: str, chips: str = "") -> list[tuple[str, str]]:
    """``(column, message)`` of a bad ``scenario`` cell: not ``key=value;...``, a keyword no workload takes, a dtype
    keyword (``dtype``, ``*_dtype``) naming no dtype, or a value its scenario or plan field refuses (``batch=-1``,
    ``phase=decoded``, ``context`` past its limit, ``causal=maybe``, ``tp=3`` on 8 chips: such a row was marked
    'not covered' and left out of the statistics without a word). Whether a model can run the scenario stays the
    workload's to judge (a row it cannot use is not covered)."""
    from pydantic import ValidationError

    from dse.errors import from_validation_error
    from dse.workloads.scenario import Scenario

    try:
        scen = parse_scenario(text)
    except ValueError as exc:
        return [("scenario", f"got {_short(text)}; accepted: key=value items separated by ';' ({exc})")]
    known = scenario_keys()
    unknown = [(f"scenario.{k}", f"got {k!r}{did_you_mean(k, sorted(known))}; accepted: a keyword of dse.workload "
                "(a scenario or plan field)") for k in scen if k not in known]  # a typo made the row 'not covered'
    dtypes = [(f"scenario.{k}", f"got {_short(v)}; accepted: one of {', '.join(DTYPES)}")
              for k, v in scen.items() if (k == "dtype" or k.endswith("_dtype")) and v not in DTYPES]
    if unknown or dtypes:
        return unknown + dtypes
    out = []
    fields = {k: v for k, v in scen.items() if k in Scenario.model_fields and not (k == "phase" and v == "inference")}
    plan = row_plan(scen, chips_of(chips) if not bad_chips(chips) else 1)
    for model, data in ((Scenario, fields), (Plan, plan)):
        try:
            model.model_validate(data)
        except ValidationError as exc:
            err = from_validation_error(exc, file=None, model=model, prefix="scenario")
            out.append((err.field or "scenario", err.message))
    return out


def single_op_errors(name: str, text: str) -> list[tuple[str, str]]:
    """A single-operator row (``gemm:``, ``copy:``, ``attention:``) is built here, cheaply, so a keyword value its
    operator refuses (``causal=maybe``) is a bad cell, not a row 'not covered'."""
    from dse.workloads.library import SINGLE_OPS, workload

    if not name.strip().startswith(SINGLE_OPS):
        return []
    try:
        workload(name.strip(), **parse_scenario(text))
    except DseError as exc:  # the key: the message's first word ('causal: got ...') or the field's last ('gemm: batch')
        keys = scenario_keys()
        first = exc.message.split(":", 1)[0].strip()
        if first in keys:
            return [(f"scenario.{first}", exc.message.split(":", 1)[1].strip())]
        last = str(exc.field or "").replace(":", " ").split()[-1:] or [""]
        return [(f"scenario.{last[0]}" if last[0] in keys else "scenario", exc.message)]
    except (ValueError, TypeError) as exc:
        return [("scenario", f"got {_short(text)}; accepted: keywords the operator takes ({exc})")]
    return []


#: the unit each metric's value is in (the ``unit`` column must say it: a time in ms read as seconds was 1000x off)
METRIC_UNITS = {"time_s": ("s",), "tflops": ("TFLOP/s",), "tokens_per_s": ("token/s", "tokens/s"),
                "samples_per_s": ("sample/s", "samples/s", "img/s"), "bandwidth_gbps": ("GB/s",),
                "mfu": ("fraction", "")}


def unit_error(metric: str, unit: str) -> str | None:
    """Why a row's ``unit`` does not match its ``metric`` (the value is read in the metric's unit), or None."""
    accepted = METRIC_UNITS.get(metric.strip())
    if accepted is None or unit.strip() in accepted:
        return None
    names = " or ".join(a or "empty" for a in accepted)
    return (f"got {_short(unit.strip())} for metric {metric.strip()}; accepted: {names} (the value is read in the "
            "metric's unit: convert it, e.g. 9.9 ms -> time_s 0.0099)")


def scenario_keys() -> frozenset[str]:
    """Every keyword a row's scenario may hold: the scenario's and the plan's fields and the keywords of the
    single-operator workloads (``gemm:``, ``copy:``, ``attention:``)."""
    from dse.workloads.library import ATTENTION_KEYS, COPY_KEYS, GEMM_KEYS
    from dse.workloads.scenario import Scenario

    return frozenset({*Scenario.model_fields, *Plan.model_fields, *ATTENTION_KEYS, *COPY_KEYS, *GEMM_KEYS})


#: how a measurements file may name a template besides the shipped ones (``dse validate``'s flag)
OTHER_NAMES = "a name given with --template NAME=TEMPLATE"


def cell_errors(row: Mapping[str, str], hardware: set[str], others: str = OTHER_NAMES) -> list[tuple[str, str]]:
    """``(column, message)`` of every bad cell of one well-formed row; ``hardware``: the template names accepted,
    ``others``: how the command names a template that is not shipped."""
    out = [(c, bad) for c, check in CELL_CHECKS.items() if (bad := check(row.get(c, "")))]
    if not row["id"].strip():
        out.append(("id", "got ''; accepted: an id unique in the file"))
    wl_bad = bad_workload(row["workload"])
    if wl_bad:
        out.append(("workload", wl_bad))
    sc_bad = scenario_errors(row["scenario"], row.get("n_chips", ""))
    out += sc_bad or ([] if wl_bad else single_op_errors(row["workload"], row["scenario"]))
    if "unit" in row and (bad := unit_error(row["metric"], row["unit"])):
        out.append(("unit", bad))
    if row["hardware"].strip() not in hardware:
        out.append(("hardware", f"got {_short(row['hardware'].strip())}; accepted: a template "
                    f"({', '.join(sorted(hardware))}) or {others}"))
    order = list(row)
    return sorted(out, key=lambda e: order.index(e[0].split(".")[0]) if e[0].split(".")[0] in order else len(order))


def row_errors(header: list[str], records: list[Record], hardware: set[str], file: str,
               others: str = OTHER_NAMES) -> list[DseError]:
    """One :class:`DseError` per bad cell of every row, a ragged row (too few or too many cells) and a repeated id,
    in file order; ``hardware``: the accepted template names."""
    errors, seen = [], {}
    for rec in records:
        where = rec.where(header)
        if len(rec.cells) != len(header):
            errors.append(DseError(f"got {len(rec.cells)} fields; accepted: {len(header)} fields, one per header "
                                   f"column ({', '.join(header)})", file=file, field=where))
            continue
        row = dict(zip(header, rec.cells, strict=True))
        errors += [DseError(msg, file=file, field=f"{where}.{col}") for col, msg in cell_errors(row, hardware, others)]
        rid = row["id"].strip()
        if rid in seen:
            errors.append(DseError(f"got {_short(rid)} again (first on line {seen[rid]}); accepted: an id unique in "
                                   "the file", file=file, field=f"{where}.id"))
        elif rid:
            seen[rid] = rec.line
    return errors


def header_errors(header: list[str], file: str) -> list[DseError]:
    """A column named twice in the header (pandas would rename the second one silently)."""
    twice = sorted({c for c in header if header.count(c) > 1})
    return [DseError(f"got column {_short(c)} twice; accepted: each column once", file=file, field="line 1")
            for c in twice]


def capped(errors: list[DseError], file: str) -> list[DseError]:
    """At most :data:`MAX_ERROR_LINES` lines: the first ones, then one line counting the rest."""
    if len(errors) <= MAX_ERROR_LINES:
        return errors
    keep = MAX_ERROR_LINES - 1
    return [*errors[:keep], DseError(f"got {len(errors)} bad fields, {len(errors) - keep} more not shown; accepted: "
                                     f"{WHAT} whose every row is valid", file=file)]


def unit_rate(hw: Hardware, dtype: str) -> float:
    """FLOP/s of the faster compute unit at ``dtype`` (the mode each falls back to; 0 when neither has one): an
    operator runs on one unit (``dse.predict``'s unit choice)."""
    rates = [0.0]
    for unit in (hw.compute.matrix, hw.compute.vector):
        mode = fallback_dtype(dtype, unit.peak_tflops) if dtype in DTYPES else None
        rates.append(unit.peak_tflops[mode] * TERA if mode else 0.0)
    return max(rates)


def on_chip_bytes(hw: Hardware) -> float:
    """Every byte the chip can hold on die: its registers and every memory level inside the main memory."""
    regs = hw.compute.register_kib_per_core * 1024 * hw.compute.cores
    return regs + sum(m.capacity_bytes for m in hw.memory[: hw.offchip_index])


def dram_bytes(wl: Workload, hw: Hardware) -> float:
    """The fewest bytes one pass must move through main memory: an operator that is its own kernel (neither fused
    into a producer nor a collective) reads at least its inputs less what the die holds, and writes at least its
    outputs less the same (``on_chip_bytes``; a small operator repeated on a warm cache may move none)."""
    o, cap = wl.ops, on_chip_bytes(hw)
    own = ~o["fused"].astype(bool).to_numpy() & (o["coll"].astype(str).to_numpy() == "")
    least = (np.maximum(o["bytes_read"].to_numpy(dtype=float) - cap, 0.0)
             + np.maximum(o["bytes_written"].to_numpy(dtype=float) - cap, 0.0))
    return float((least * o["count"].to_numpy(dtype=float))[own].sum())


def roof_time(wl: Workload, hw: Hardware) -> tuple[float, str]:
    """The pure roofline's lower bound on one pass of ``wl`` on one chip of ``hw`` (seconds) and what sets it: the
    FLOPs of each operator that is its own kernel (not fused into a producer, whose work may overlap) at the peak of
    the faster unit at its dtype, one after another, or the :func:`dram_bytes` at the main memory's bandwidth,
    whichever is longer. No efficiency, overhead, latency, wave quantisation or network time: nothing real runs
    faster. The bytes each kernel reads and writes that stay on the die still cross an on-chip level once, at no more
    than the fastest one's bandwidth: a copy that fits in the L2 has that bound (it had none: 0 s, so a 1 ps
    measurement passed without a warning)."""
    o = wl.ops
    own = ~o["fused"].astype(bool).to_numpy()
    rates = np.array([unit_rate(hw, str(d)) for d in o["dtype"]])
    count = o["count"].to_numpy(dtype=float)
    flops = o["flops"].to_numpy(dtype=float) * count
    timed = own & (rates > 0)
    t_flops = float(np.sum(flops[timed] / rates[timed]))
    moved, bw = dram_bytes(wl, hw), hw.dram.bandwidth_bps
    touched = float(np.sum(((o["bytes_read"] + o["bytes_written"]).to_numpy(dtype=float) * count)[own]))
    on_bw = max((m.bandwidth_bps for m in hw.memory if not m.off_chip), default=0.0)
    t_on = touched / on_bw if on_bw > 0 else 0.0
    if t_flops > 0 and t_flops >= max(moved / bw, t_on):
        return t_flops, f"{flops[timed].sum():.3g} FLOP at {flops[timed].sum() / t_flops / TERA:.4g} TFLOP/s"
    if t_on > moved / bw:
        return t_on, f"{touched:.3g} bytes through the fastest on-chip level at {on_bw / 1e12:.4g} TB/s"
    return moved / bw, f"{moved:.3g} DRAM bytes at {bw / 1e9:.4g} GB/s"


def measured_time(case: RowCase) -> float:
    """Seconds per pass the row's measurement implies (a rate turned into time as :func:`metric_from_time`
    defines it); NaN when the metric has nothing to divide (e.g. TFLOP/s of a workload without FLOPs)."""
    if case.metric == "time_s":
        return case.measured
    per_second = float(metric_from_time(case.metric, case.workload, case.hardware, np.array([1.0]))[0])
    return per_second / case.measured if per_second > 0 and math.isfinite(per_second) else float("nan")


def roof_warning(case: RowCase) -> str | None:
    """Why a row's measurement is faster than the chip's roof (:func:`roof_time`), or None."""
    roof, binding = roof_time(case.workload, case.hardware)
    t = measured_time(case)
    if not (t < roof * (1 - ROOF_SLACK)):
        return None
    measured = f"{t:.3g} s" if case.metric == "time_s" else f"{case.measured:.4g} {case.metric}, {t:.3g} s"
    return (f"measured {measured} per pass, faster than the roof of {case.hardware.name} ({roof:.3g} s: {binding}); "
            "check the value, metric, dtype and hardware")


def roof_warnings(header: list[str], records: list[Record], templates: Mapping[str, Hardware] | None,
                  file: str, prepared: dict[str, Any] | None = None) -> list[str]:
    """One line per row measured faster than its roof, ``FILE: line N (ID): ...``; rows the model cannot cover
    are not judged. ``prepared``, where given, receives each row's :func:`prepare_row` (or the error it raised) by
    id, for :func:`run_suite` to reuse."""
    out = []
    for rec in records:
        row = dict(zip(header, rec.cells, strict=True))
        try:
            case = prepare_row(row, templates)
        except (NotCoveredError, DseError) as exc:
            if prepared is not None:
                prepared[str(row.get("id"))] = exc
            continue
        if prepared is not None:
            prepared[str(row.get("id"))] = case
        if (why := roof_warning(case)):
            out.append(f"{file}: {rec.where(header)}: {why}")
    return out


def check_measurements(path: str | Path | None = None, templates: Mapping[str, Hardware] | None = None,
                       prepared: dict[str, Any] | None = None, chips: Collection[str] | None = None,
                       others: str = OTHER_NAMES) -> tuple[pd.DataFrame, list[str]]:
    """A measurements file checked whole before anything is predicted: the frame :func:`run_suite` takes and
    the roof warnings (:func:`roof_warnings`). Raises :class:`DseMultiError` with one line per bad cell, ragged row
    or repeated id (:func:`row_errors`); the file-level lines (missing, empty, no rows, a missing column) are
    :func:`load_measurements`'s. ``templates``: names given with ``--template`` besides the shipped ones;
    ``prepared``: filled with each row's prepared case by id (:func:`roof_warnings`), for :func:`run_suite`;
    ``chips``: only these chips' rows are judged against their roofs (every cell is still checked); ``others``:
    how the command names a template that is not shipped (the bad-hardware message)."""
    path = Path(path) if path else default_path()
    file = str(path)
    header, records = read_records(path)
    if not records or any(c not in header for c in REQUIRED):
        load_measurements(path)  # the file's one line (empty, header only, missing columns)
    hardware = set(list_templates()) | set(templates or {})
    errors = header_errors(header, file) or row_errors(header, records, hardware, file, others)
    if errors:
        raise DseMultiError(capped(errors, file))
    if chips is not None and "hardware" in header:
        at = header.index("hardware")
        records = [r for r in records if r.cells[at].strip() in chips]
    return load_measurements(path), roof_warnings(header, records, templates, file, prepared)
