"""Validation suite: published measurements (``validation/measurements.csv``) against predictions.

Each row names a workload (a library model, ``gemm:MxNxK``, ``copy:N`` or ``attention:BxHxSQxSKxD``), a scenario
(``key=value;...``), a hardware template, a system size, a metric and the measured value with its
source; ``timing=isolated`` (or ``isolated:HARNESS`` naming the benchmark script when one source times
operators through different harnesses) marks a single call timed on its own with a host synchronisation, which
adds the template's ``sync_overhead_us`` (a property of the measurement, not of a workload).
A row the model cannot cover yet (several chips, a missing template, a scenario keyword not
supported) is listed as not covered with the reason; a malformed row is an error with the reason;
neither stops the other rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dse.errors import DseError
from dse.hardware.designs import DesignBatch
from dse.hardware.schema import Hardware
from dse.hardware.system import System, default_system
from dse.hardware.templates import list_templates, load_hardware
from dse.predict import MixArrays, evaluate_times, mix_arrays, step_times
from dse.units import repo_root
from dse.validate.families import family_of, out_of_sample
from dse.workloads.library import Workload, workload
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
    a = arrays or case_arrays(case)
    return step_times(evaluate_times(d, a.o, table_order=False), a)[:, 0] + case.workload.host_s


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


def prepare_row(row: Mapping[str, str], templates: Mapping[str, Hardware] | None = None) -> RowCase:
    """Build one row's case, or raise ``DseError`` (bad row) / ``NotCoveredError`` (model cannot cover it)."""
    rid = row.get("id") or "?"
    metric = row["metric"].strip()
    if metric not in METRICS:
        raise DseError(f"row {rid}: metric {metric!r}; accepted: {', '.join(METRICS)}", field="metric")
    try:
        value = float(row["value"])
    except ValueError:
        raise DseError(f"row {rid}: value {row['value']!r} is not a number", field="value") from None
    if not (value > 0 and math.isfinite(value)):
        raise DseError(f"row {rid}: value {value}; accepted: a finite number > 0", field="value")
    chips_text = (row.get("n_chips") or "1").strip() or "1"
    if not chips_text.isdigit() or not 1 <= int(chips_text) <= MAX_CHIPS:
        raise DseError(f"row {rid}: n_chips {chips_text!r:.40}; accepted: an integer 1..{MAX_CHIPS}",
                       field="n_chips")
    chips = int(chips_text)
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
        plan = {k: scen.pop(k) for k in list(scen) if k in Plan.model_fields}
        if chips > 1 and not ({"tp", "pp", "dp"} & set(plan)):
            plan["tp"] = chips
        if plan:
            plan["chips"] = chips
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
    timing = (row.get("timing") or "steady").strip() or "steady"
    isolated = timing == "isolated" or (timing.startswith("isolated:") and len(timing) > len("isolated:"))
    if timing != "steady" and not isolated:
        raise DseError(f"row {rid}: timing {timing!r}; accepted: steady, isolated, isolated:HARNESS", field="timing")
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


def harness_sync_us(pred_s: np.ndarray, meas_s: np.ndarray) -> np.ndarray:
    """[n] host-synchronisation time of each isolated call, each estimated from the OTHER isolated rows
    of the same template (leave-one-out): ``s_i = argmin_s sum_{j != i} ln((p_j + s) / m_j)^2`` over
    0..1000 us. It is a property of the timing harness (launch + synchronise + host timer), used only
    when the template sets no ``sync_overhead_us`` of its own."""
    from scipy.optimize import minimize_scalar

    out = np.zeros(pred_s.size)
    for i in range(pred_s.size):
        p, m = np.delete(pred_s, i), np.delete(meas_s, i)
        if not p.size:
            continue
        res = minimize_scalar(lambda s, p=p, m=m: float(np.sum(np.log((p + s * 1e-6) / m) ** 2)),
                              bounds=(0.0, 1000.0), method="bounded")
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


def run_suite(df: pd.DataFrame, templates: Mapping[str, Hardware] | None = None) -> pd.DataFrame:
    """One result row per measurement: status (covered / not covered / error), predicted, error %.

    Isolated rows (one host-synchronised call) on a template without ``sync_overhead_us`` get the
    harness time estimated leave-one-out from the other isolated rows of the same template and the same
    harness (:func:`harness_of`; :func:`harness_sync_us`, column ``sync_us_loo``): never from the row itself."""
    out = []
    loo_sync: dict[int, float] = {}
    isolated: dict[str, list[tuple[int, float, float]]] = {}
    for k, (_, row) in enumerate(df.iterrows()):
        try:
            case = prepare_row(row, templates)
        except (NotCoveredError, DseError):
            continue
        if case.isolated and case.metric == "time_s" and case.hardware.compute.sync_overhead_us == 0:
            key = f"{case.hardware.name} {harness_of(row)}"
            isolated.setdefault(key, []).append((k, predict_case(case), case.measured))
    for rows in isolated.values():
        if len(rows) > 1:
            s = harness_sync_us(np.array([r[1] for r in rows]), np.array([r[2] for r in rows]))
            loo_sync.update({r[0]: float(v) for r, v in zip(rows, s, strict=True)})
    for k, (_, row) in enumerate(df.iterrows()):
        rec = {"id": row["id"], "workload": row["workload"], "hardware": row["hardware"], "metric": row["metric"],
               "scenario": str(row.get("scenario") or ""), "n_chips": str(row.get("n_chips") or ""), "style": "",
               "family": "", "fitted_into": (row.get("fitted_into") or "").strip(),
               "measured": pd.to_numeric(row["value"], errors="coerce"), "predicted": np.nan, "error_pct": np.nan,
               "time_error_pct": np.nan, "status": "covered", "reason": ""}
        try:
            case = prepare_row(row, templates)
            rec["style"] = chip_style(case.hardware)
            rec["family"] = family_of(case.workload)
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
