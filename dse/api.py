"""The public API (a contract: tests and outside scripts call it).

    import dse
    wl = dse.workload("llama2-7b", phase="decode", batch=1, context=1024, dtype="bf16")
    hw = dse.hardware("a100-80gb")          # template name, YAML path, or a mapping
    p = dse.predict(wl, hw)                 # p.time_s, p.ops (per-operator DataFrame)
    dse.predict_many([wl, ...], knobs_df, base="npu-7nm")   # designs x workloads times, binding ceilings
    a = dse.area(hw)                        # a.total_mm2, a.breakdown
    dse.list_workloads(); dse.gemm(1024, 1024, 1024, dtype="fp32")

The commands that study a config have Python twins that return DataFrames and write nothing:
``dse.comparison(config, ratios=["1:2", "1:1"])``, ``dse.grid(config, points=12)``,
``dse.whatif_stages(config)``; ``dse.Study.from_yaml(config).run()`` runs a search.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dse.cost.area import AreaBreakdown
from dse.cost.area import area as _area
from dse.hardware.designs import DesignBatch
from dse.hardware.dram_parts import searchable_names
from dse.hardware.fields import KNOBS, domain_text, in_domain, is_part_field, knob_values, part_codes
from dse.hardware.schema import Hardware
from dse.hardware.system import System, is_system, load_system
from dse.hardware.templates import list_templates, load_hardware
from dse.predict import Prediction
from dse.predict import predict as _predict
from dse.workloads.library import Workload, elementwise, gemm, list_workloads, plan_for, with_plan, workload

__all__ = [
    "AreaBreakdown", "DesignBatch", "Hardware", "Prediction", "Workload", "area", "best_plan", "elementwise", "gemm",
    "hardware", "list_hardware", "list_workloads", "predict", "predict_many", "workload",
]


def hardware(spec: str | Path | Mapping[str, Any] | Hardware) -> Hardware:
    """A hardware template by name (``"a100-80gb"``), YAML path, or mapping (validated the same way)."""
    return load_hardware(spec)


def list_hardware() -> list[str]:
    """Names of the shipped hardware templates."""
    return list_templates()


def predict(wl: Workload | str, hw: Hardware | str | Mapping[str, Any], *, chips: int | None = None,
            tp: int | None = None, pp: int | None = None, dp: int | None = None, ep: int | None = None,
            system: str | System | None = None, **plan: Any) -> Prediction:
    """Predict one workload on one design: ``p.time_s`` and the per-operator ``p.ops``.

    ``hw`` is a chip template, or a system template (``dgx-h100``: its chip on its network). The workload
    is predicted as given: a plan belongs to it from construction (``dse.workload(..., plan={"tp": 8})``).
    The older form with ``chips``, ``tp``, ``pp``, ``dp``, ``ep`` (and ``sp``, ``microbatches``, ``zero``,
    ``recompute``, ``overlap``) here builds the planned workload once (``dse.workloads.library.with_plan``),
    then predicts it; ``p.time_s`` is one step, ``p.fits`` / ``p.infeasible_reason`` the per-chip memory
    check, ``p.ops`` includes the collectives. ``wl`` may be a model name or YAML path (its defaults:
    ``dse.workload(name)``), as ``hw`` may be a template name."""
    from dse.errors import DseError

    if isinstance(wl, str | Path):
        wl = workload(str(wl))
    elif not isinstance(wl, Workload):
        raise DseError(f"got {type(wl).__name__}; accepted: a dse.workload(...) result, a model name or a YAML path",
                       field="workload")
    if system is not None and not isinstance(system, str | Path | System):  # 5 raised an AttributeError
        raise DseError(f"got {system!r}; accepted: a system name, a YAML path or a System", field="system")
    if isinstance(hw, str) and is_system(hw):
        named = load_system(hw)
        if system is not None:  # the same system twice is that system; another one is refused
            other = load_system(system) if isinstance(system, str | Path) else system
            if other.name != named.name:
                raise DseError(f"got {hw!r} as the hardware and {other.name!r} as the system; accepted: one system "
                               f"(a chip template with --system, or a system name alone)", field="system")
        system = named
        hw = system.chip
    hwm = hw if isinstance(hw, Hardware | DesignBatch) else load_hardware(hw)
    sysm = load_system(system) if isinstance(system, str | Path) else system
    degrees = {k: v for k, v in dict(tp=tp, pp=pp, dp=dp, ep=ep, **plan).items() if v is not None}
    if chips is not None or degrees:
        wl = with_plan(wl, chips=chips, **degrees)
    return _predict(wl, hwm, system=sysm)


def predict_many(workloads: Workload | list[Workload], designs: DesignBatch | Any, *,
                 base: Hardware | str | Mapping[str, Any] | None = None, weights: list[float] | None = None,
                 system: str | System | None = None):
    """Step time of every workload on every design in one vectorized call (no Python loop over designs).

    ``designs`` is a :class:`DesignBatch` or a DataFrame of knobs, one row per design, on the template
    ``base``: ``peak_tflops``, ``dram_bandwidth_tbps``, ``sram_mib`` (as a search's shorthand knobs, built as a
    study builds them: whole cores, whole DRAM stacks, whole SRAM macros) and any hardware field a search accepts
    (``compute.clock_ghz``, ``memory.hbm.bandwidth_tbps``, ...; each a finite number > 0). Returns a DataFrame, one
    row per design (the knob columns first when given, each knob then as built, ``<knob>_built``): ``time_s.<workload>``
    (seconds per step), ``binding.<workload>`` (the ceiling under which that workload spends most of its
    time: compute, a memory level, network or overhead), and for the whole set ``binding`` and
    ``binding_time_share`` (time shares weighted by ``weights``, default equal)."""
    import numpy as np
    import pandas as pd

    from dse.errors import DseError
    from dse.predict import bound_names, mix_bindings, table_arrays

    wls = [workloads] if isinstance(workloads, Workload) else list(workloads)
    if not wls or not all(isinstance(w, Workload) for w in wls):
        raise DseError("got no workloads or a non-workload; accepted: dse.workload(...) results", field="workloads")
    knobs = None
    if isinstance(designs, DesignBatch):
        d = designs
    elif isinstance(designs, pd.DataFrame):
        if base is None:
            raise DseError("a DataFrame of knobs needs base=; accepted: a template name, path or Hardware", field="base")
        knobs = designs.reset_index(drop=True)
        d = DesignBatch.from_hardware(base if isinstance(base, Hardware) else load_hardware(base), len(knobs))
        fields_ok = d.searchable_fields()
        col = {}
        for name in knobs.columns:
            if name not in KNOBS and name not in fields_ok:
                raise DseError(f"got column {name!r}; accepted: {', '.join(KNOBS)}, {', '.join(fields_ok)}",
                               field="designs")
            if is_part_field(name):  # the main memory's DRAM part, by name (with_part checks its kind)
                try:
                    col[name] = part_codes(knobs[name].astype(str).to_numpy())
                except ValueError:
                    raise DseError(f"got {sorted(set(knobs[name].astype(str)))}; accepted: DRAM parts "
                                   f"{', '.join(searchable_names())}", field=f"designs.{name}") from None
                continue
            try:
                col[name] = knobs[name].to_numpy(dtype=float)
            except (TypeError, ValueError):
                raise DseError(f"got a non-numeric column {name!r}; accepted: numbers", field=f"designs.{name}") from None
            bad = ~(np.isfinite(col[name]) & in_domain(name, col[name]))  # compute.spare_cores may be 0
            if bad.any():  # -5 TFLOP/s was taken as 5, 0 TB/s as the smallest build: one line instead
                raise DseError(f"got {col[name][bad][0]:g} in row {int(np.flatnonzero(bad)[0])}; accepted: a finite "
                               f"number {domain_text(name)}", field=f"designs.{name}")
        from dse.search.space import designs_from_params  # optuna loads on first use, not on import dse

        try:
            d = designs_from_params(d, col)  # the study's one parameter rule (build fields, knobs, other fields)
        except ValueError as exc:  # a DRAM part of another kind than the base's main memory
            field, _, message = str(exc).partition(": ")
            raise DseError(message, field=f"designs.{field}") from None
        for name, values in col.items():  # each column's ends build designs the schema accepts (a study's range does)
            for i in dict.fromkeys((int(np.argmin(values)), int(np.argmax(values)))):
                try:
                    d.to_hardware(i, "probe", prefer=name if "." in name else None)
                except DseError as exc:
                    shown = knobs[name][i] if is_part_field(name) else f"{values[i]:g}"
                    raise DseError(f"got {shown} in row {i}: the design it builds has {exc.field or 'a field'} "
                                   f"{exc.message}", field=f"designs.{name}") from None
    else:
        raise DseError(f"got {type(designs).__name__}; accepted: a DesignBatch or a pandas DataFrame of knobs",
                       field="designs")
    chips = max(w.chips for w in wls)
    if system is not None or chips > 1 or any(table_arrays(w.ops).o.coll_idx.size for w in wls):
        from dse.hardware.system import default_system

        sysm = load_system(system) if isinstance(system, str) else (system or d.system or default_system(d.base))
        d = d.with_system(sysm.resized(chips))
    mix, arrays = _mix_arrays(wls, weights)
    times, top, bind, share = mix_bindings(d, mix, mix.weights, arrays)  # [D, W], [W, D], [D], [D]
    names = np.array(bound_names(d.level_names))
    labels = mix.labels
    labels = [lab if labels.count(lab) == 1 else f"{lab}#{i}" for i, lab in enumerate(labels)]
    cols = {**{f"time_s.{lab}": times[:, i] for i, lab in enumerate(labels)},
            **{f"binding.{lab}": _named(top[i], names) for i, lab in enumerate(labels)},
            "binding": _named(bind, names), "binding_time_share": share}
    if knobs is None:
        return pd.DataFrame(cols, copy=False)  # columns over this call's own arrays: no consolidating copy
    built = {f"{k}_built": v for k, v in knob_values(d).items() if k in knobs.columns}  # whole cores, stacks, macros
    return pd.DataFrame({**{k: knobs[k].to_numpy() for k in knobs.columns}, **built, **cols}, copy=False)


def _named(codes: Any, names: Any) -> Any:
    """A categorical column of ceiling names from integer codes (a string per design costs pandas ~1 ms per
    10,000 rows and column; the categories are every ceiling name, in ``bound_names`` order)."""
    import pandas as pd

    return pd.Categorical.from_codes(codes, dtype=_ceiling_dtype(tuple(names)), validate=False)


@functools.cache
def _ceiling_dtype(names: tuple[str, ...]) -> Any:
    """The categorical dtype of the ceiling names, built once (``from_codes`` given a list of categories builds and
    checks one on every call: ~45 us per column of 10,000 rows)."""
    import pandas as pd

    return pd.CategoricalDtype(list(names))


#: the last few mixes predict_many built (key: the workload objects and weights), with their op arrays and the
#: caches on them (tile and fill rows): calling it again on the same workloads (a sweep in a loop, an explorer)
#: skips rebuilding them, as the study's own evaluator does; workloads are immutable, each kept with its key
_MIXES: dict[tuple, tuple[list, Any, Any]] = {}


def _mix_arrays(wls: list[Workload], weights: list[float] | None) -> tuple[Any, Any]:
    """The Mix of ``wls`` and its :class:`dse.predict.MixArrays`, built once per list of workload objects."""
    from dse.predict import mix_arrays
    from dse.workloads.mix import Mix

    key = (tuple(id(w) for w in wls), None if weights is None else tuple(float(x) for x in weights))
    hit = _MIXES.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], wls, strict=True)):
        return hit[1], hit[2]
    mix = Mix.of(wls, weights)
    arrays = mix_arrays(mix)
    if len(_MIXES) >= 8:
        _MIXES.pop(next(iter(_MIXES)))
    _MIXES[key] = (list(wls), mix, arrays)
    return mix, arrays


def area(hw: Hardware | str | Mapping[str, Any]) -> AreaBreakdown:
    """Area of a design: ``a.total_mm2`` and ``a.breakdown`` (component -> mm^2)."""
    return _area(hw if isinstance(hw, Hardware | DesignBatch) else load_hardware(hw))


def compare(config: str | Path | Mapping[str, Any] | Any, ratios: list[str] | None = None, hold: str | None = None,
            samples: int | None = None):
    """``dse compare`` as data: the config's ``compare:`` candidates, or ``ratios`` (e.g. ``["1:2", "1:1"]``)
    at fixed ``hold`` (compute, area or score). Returns ``dse.comparison.Comparison`` (``.table`` per workload,
    ``.designs_table`` per candidate with the Monte Carlo columns, ``.breakdown`` area/cost/power by component,
    ``.ceilings`` binding-ceiling shares, ``.robust`` the samples and sensitivities); ``samples`` overrides
    ``compare.samples`` (0: no robustness analysis)."""
    from dse.comparison import compare_config
    from dse.study import load_context

    cfg, ctx = load_context(config, one_mix="compare")
    from dse.config import config_label

    return compare_config(cfg, ctx, config_label(config), ratios, hold, field="ratios", samples=samples)[0]


def compare_chips(config: str | Path | Mapping[str, Any] | Any, chips: list[str | Path | Hardware]):
    """``dse compare CONFIG --hardware ...`` as data: the config's mix on whole chips (template names, YAML paths or
    Hardware) beside its base design, one row per chip, the base first (``dse.comparison.chip_table``: ``score``
    against the base, ``area_mm2``, ``cost_usd``, ``power_w``, ``feasible`` and ``reason`` under the study's limits,
    ``binding`` and ``binding_share_pct``, ``system``, and per workload ``time_s.<label>`` and ``fits.<label>``)."""
    from dse.comparison import chip_table
    from dse.study import load_context

    _, ctx = load_context(config, one_mix="compare")
    hws = [c if isinstance(c, Hardware) else load_hardware(c) for c in chips]
    labels = [str(c) if isinstance(c, Path | str) and str(c).endswith((".yaml", ".yml")) else h.name
              for c, h in zip(chips, hws, strict=True)]
    where = Path(config).parent if isinstance(config, str | Path) else Path(".")
    return chip_table(ctx, list(zip(labels, hws, strict=True)), where)


def sweep(config: str | Path | Mapping[str, Any] | Any, points: int = 12, sram_points: int = 1):
    """``dse sweep`` as data: one row per design (and per mix) of the full grid over the config's search
    space: knobs, score, area, cost, power, ridge, HBM stacks, binding ceiling, feasibility."""
    from dse.grid import axes_for, contexts, run_sweep

    cfg, ctxs = contexts(config)
    return run_sweep(ctxs, axes_for(cfg, next(iter(ctxs.values())), points, sram_points)).grid


def whatif(config: str | Path | Mapping[str, Any] | Any):
    """``dse whatif`` as data: one row per stage (FLOPs, DRAM bytes, AI, time, speedup, binding ceiling)
    of a what-if file or of a study config's ``whatif:`` section."""
    from dse.whatif_stages import load_whatif, run_whatif

    spec, _, hw = load_whatif(config)
    return run_whatif(spec, hw).table


def best_plan(workload: Workload | str, system: str | System, chips: int, **fixed: Any):
    """The fastest parallelism plan of a single-chip ``workload`` on ``chips`` chips of ``system`` whose per-chip
    memory fits (``dse.plan_search.best_plan``): ``.best`` (a Plan), ``.prediction``, ``.table`` (every candidate,
    fastest first). ``fixed`` holds plan fields (``tp=8``, ``zero=1``, ``recompute="full"``, ...)."""
    from dse.plan_search import best_plan as _best_plan

    return _best_plan(workload, system, chips, **fixed)


def best_batch(name: str, hardware: Any, tpot_limit_s: float, *, batches: list[int] | None = None,
               **kwargs: Any) -> tuple[int | None, Any]:
    """The batch with the most output tokens/s whose mean TPOT stays under ``tpot_limit_s`` and whose
    KV cache and weights fit one chip; and the table over ``batches`` (default 1, 2, 4 .. 1024).

    ``kwargs`` go to ``dse.workload`` (``input_len``, ``output_len``, ``chunk``, ``dtype``, ...) and
    ``dse.predict`` (``chips``, ``tp``, ...). Returns ``(None, table)`` when no batch qualifies."""
    import pandas as pd

    from dse.workloads.parallel import Plan

    wl_kw = {k: v for k, v in kwargs.items() if k not in Plan.model_fields and k not in ("chips", "system")}
    keys = {k: v for k, v in kwargs.items() if k in Plan.model_fields and k != "chips" and v is not None}
    chips = kwargs.get("chips")
    plan = plan_for(chips, **keys) if chips is not None or keys else None  # applied once, at construction
    recs = []
    for b in batches or [2**k for k in range(11)]:
        p = predict(workload(name, plan=plan, phase="serving", batch=b, **wl_kw), hardware, system=kwargs.get("system"))
        recs.append({"batch": b, **p.serving, "fits": p.fits})
    table = pd.DataFrame(recs)
    ok = table[(table["tpot_s"] <= tpot_limit_s) & table["fits"]]
    best = int(ok.loc[ok["tokens_per_s"].idxmax(), "batch"]) if len(ok) else None
    return best, table
