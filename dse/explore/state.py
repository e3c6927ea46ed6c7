"""What the explorer shows for one set of knob values: pure functions from a study's context to numbers.

No web framework here (``dse.explore.app`` draws what this returns), so everything the page shows is tested
without a browser. One update (:func:`evaluate`) builds the design from the knobs by the study's one rule
(:func:`dse.search.space.designs_from_params`: whole cores, whole DRAM stacks, whole SRAM macros), scores it
against the base (:func:`dse.study.score_designs`) and predicts every workload once
(:func:`dse.study.evaluate_design`), which gives what stays on chip too (:func:`dse.report.residency.residency_table`).

The ratio knob ``ratio_x`` is the compute:bandwidth ratio 1:x relative to the base, as ``dse compare --ratios``
spells it: DRAM bandwidth target ``B = P x x / R_base`` (``P`` the peak, ``R_base`` the base ridge in FLOP/byte;
``dse.comparison.ladder``). Setting it moves the bandwidth knob; setting peak or bandwidth moves it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dse.errors import DseError
from dse.hardware.designs import DesignBatch
from dse.hardware.fields import KNOB, built_values
from dse.report.residency import residency_table
from dse.study import Context, evaluate_design, heatmap_grid, score_designs
from dse.units import TERA

#: name of the ratio knob (1:x to the base)
RATIO = "ratio_x"


@dataclass(frozen=True)
class KnobSpec:
    """One knob of the page: a searched parameter of the config (or the ratio), its range and base value."""

    name: str  # peak_tflops, memory.global.capacity_mib, split_compute, ratio_x
    label: str  # with its unit
    low: float
    high: float
    log: bool
    base: float  # value on the base design (a split weight: the middle of its range)
    integer: bool = False
    choices: tuple[float, ...] | None = None
    choice_labels: tuple[str, ...] | None = None  # what the dropdown shows for each choice (DRAM part names)

    def check(self, value: Any) -> float:
        """``value`` as a float inside the range (or one of the choices); else a :class:`DseError` naming the knob."""
        try:
            v = float(value)
        except (TypeError, ValueError):
            v = math.nan
        accepted = (", ".join(f"{c:g}" for c in self.choices) if self.choices is not None
                    else f"{self.low:g}..{self.high:g}{' (whole numbers)' if self.integer else ''}")
        ok = math.isfinite(v) and (v in self.choices if self.choices is not None
                                   else self.low * (1 - 1e-9) <= v <= self.high * (1 + 1e-9))
        if ok and self.integer and v != round(v):
            ok = False
        if not ok:
            got = "an empty box" if value is None or (isinstance(value, str) and not value.strip()) else repr(value)
            raise DseError(f"got {got}; accepted: {accepted}", field=f"knob {self.name}")
        return v


def field_value(hw: Any, path: str) -> float | None:
    """A template field's value by its config path (``compute.clock_ghz``, ``memory.global.capacity_mib``);
    memory and network levels are looked up by name; None where the template does not give one."""
    node: Any = hw.model_dump(mode="python")
    for part in path.split("."):
        if isinstance(node, list):
            node = next((x for x in node if isinstance(x, dict) and x.get("name") == part), None)
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return None
        if node is None:
            return None
    if isinstance(node, dict) and "value" in node:  # a sourced number
        node = node["value"]
    return float(node) if isinstance(node, int | float) else None


def _middle(low: float, high: float, log: bool) -> float:
    return math.sqrt(low * high) if log else 0.5 * (low + high)


def knob_specs(ctx: Context) -> list[KnobSpec]:
    """Every searched parameter of the config's space (``dse.search.space.distributions``), in its order, then
    the ratio 1:x where the base has an off-chip memory and bandwidth is a knob."""
    import optuna

    from dse.hardware.fields import field_unit, is_part_field, part_codes
    from dse.search.space import base_knobs, distributions

    kb = base_knobs(ctx.base)
    specs: list[KnobSpec] = []
    for name, dist in distributions(ctx.cfg.search.space).items():
        if name in KNOB:
            label = KNOB[name].label
        elif name.startswith("split_"):
            label = f"{name.removeprefix('split_')} weight of the area split (fraction)"
        else:
            unit = field_unit(name)
            label = f"{name} ({unit})" if unit else name
        if isinstance(dist, optuna.distributions.CategoricalDistribution):
            part = is_part_field(name)  # DRAM parts by name, carried as their codes
            choices = tuple(float(c) for c in (part_codes(dist.choices) if part else dist.choices))
            own = ctx.base_hw.offchip_level.generation
            base = (float(part_codes([own])[0]) if own else None) if part else field_value(ctx.base_hw, name)
            specs.append(KnobSpec(name, label, min(choices), max(choices), False,
                                  base if base in choices else choices[0], choices=choices,
                                  choice_labels=tuple(dist.choices) if part else None))
            continue
        integer = isinstance(dist, optuna.distributions.IntDistribution)
        base = kb.get(name, field_value(ctx.base_hw, name))
        if base is None and name == "compute.noc.link_bytes":  # auto in the template: the width the base is built with
            base = float(ctx.base.noc().link_bytes[0])
            base = float(round(base)) if integer else base
        if base is None or not dist.low <= base <= dist.high:
            base = _middle(dist.low, dist.high, dist.log)
            base = float(round(base)) if integer else base
        specs.append(KnobSpec(name, label, float(dist.low), float(dist.high), bool(dist.log), float(base), integer))
    names = [s.name for s in specs]
    if "dram_bandwidth_tbps" in names and "peak_tflops" in names:
        p, b = specs[names.index("peak_tflops")], specs[names.index("dram_bandwidth_tbps")]
        r = base_ridge(ctx)
        specs.append(KnobSpec(RATIO, "compute:bandwidth ratio 1:x vs the base (x, bandwidth per FLOP)",
                              b.low * r / p.high, b.high * r / p.low, True, b.base * r / p.base))
    return specs


def base_ridge(ctx: Context) -> float:
    """The base design's ridge (FLOP/byte): peak / main-memory bandwidth (TFLOP/s per TB/s)."""
    return float(ctx.base.ridge[0])


def ratio_of(values: Mapping[str, float], ctx: Context) -> float:
    """x of 1:x for the given peak and bandwidth: ``x = B x R_base / P``."""
    return float(values["dram_bandwidth_tbps"]) * base_ridge(ctx) / float(values["peak_tflops"])


def bandwidth_at_ratio(peak_tflops: float, x: float, ctx: Context) -> float:
    """Bandwidth (TB/s) of ratio 1:x at ``peak_tflops``: ``B = P x x / R_base`` (``dse.comparison.ladder``)."""
    return peak_tflops * x / base_ridge(ctx)


def checked(specs: list[KnobSpec], values: Mapping[str, Any]) -> dict[str, float]:
    """The knob values of a request, each checked against its spec (a missing knob takes its base value);
    every out-of-range or unknown knob is one line of one :class:`DseError`."""
    known = {s.name: s for s in specs}
    bad = [k for k in values if k not in known]
    if bad:
        raise DseError(f"got {bad[0]!r}; accepted: {', '.join(known)}", field="knob")
    return {s.name: s.check(values.get(s.name, s.base)) for s in specs}


@dataclass(frozen=True)
class View:
    """Everything one update shows (config units, labels with units)."""

    values: dict[str, float]  # the knobs as used (ratio recomputed from peak and bandwidth)
    design: DesignBatch  # one design, as built
    score: float  # mix score vs the base (weighted geomean speedup, x)
    feasible: bool
    reason: str  # why not, '' when feasible
    built: dict[str, float]  # cores, array, clock, knobs as built, stacks, capacity
    summary: dict[str, float]  # area_mm2, cost_usd, power_w, ridge_flop_per_byte
    workloads: pd.DataFrame  # per workload: base and current time, speedup, binding ceiling
    ceilings: dict[str, float]  # binding ceiling -> mix-weighted time share
    breakdown: dict[str, dict[str, float]]  # area_mm2 / cost_usd / power_w -> component -> value
    ops: pd.DataFrame  # per operator of every workload: the roofline's dots
    roofs: dict[str, Any]  # peak_tflops, vector_tflops, level -> TB/s, overhead
    ridges: dict[str, float] = field(default_factory=dict)  # current and base ridge (FLOP/byte)
    # what stays on chip (dse.report.residency.residency_table): a line naming the resident level, one row per workload
    residency_level: str = ""
    residency: pd.DataFrame | None = None


def design_of(ctx: Context, values: Mapping[str, float]) -> DesignBatch:
    """The buildable design of the knob values (the ratio knob is not a parameter: it moved the bandwidth)."""
    from dse.search.space import designs_from_params

    params = {k: np.array([v]) for k, v in values.items() if k != RATIO}
    return designs_from_params(ctx.base, params, ctx.cfg.search.space)


def op_rows(ctx: Context, ev: Any, labels: list[str]) -> pd.DataFrame:
    """One row per operator of every workload with the roofline's coordinates: ``ai_<level>`` at every memory
    level (FLOP per byte of that level's traffic), ``achieved_tflops``, and what the hover shows (FLOPs and bytes
    over the operator's ``count`` repeats). Columns are concatenated as numpy arrays, one frame built at the end."""
    levels = ev.design.level_names
    tabs = [p.ops for p in ev.predictions]

    def cat(name: str) -> np.ndarray:
        return np.concatenate([t[name].to_numpy() for t in tabs])

    count = cat("count").astype(float)
    flops = cat("flops") * count
    sizes = [len(t) for t in tabs]
    col: dict[str, Any] = {
        "workload": np.repeat(labels, sizes), "mix_weight": np.repeat(np.asarray(ctx.mix.weights, float), sizes),
        "name": cat("name"), "unit": cat("ran_on").astype(str), "bound": cat("bound").astype(str), "flops": flops,
        "bytes": (cat("bytes_read") + cat("bytes_written")) * count, "time_s": cat("total_time_s"),
        "achieved_tflops": cat("achieved_flops") / TERA, "count": count, "overhead_s": cat("t_overhead_s") * count}
    with np.errstate(divide="ignore", invalid="ignore"):
        for lv in levels:
            t = cat(f"traffic_{lv}_bytes") * count
            col[f"traffic_{lv}_bytes"] = t
            col[f"ai_{lv}"] = np.where(t > 0, flops / t, np.nan)
        col["ai_compulsory"] = np.where(col["bytes"] > 0, flops / col["bytes"], np.nan)
    return pd.DataFrame(col)


def power_by_component(ev: Any, weights: np.ndarray, labels: list[str]) -> dict[str, float]:
    """Average power (W) per component over the mix: each workload's (``dse.report.write.power_parts``: dynamic
    energy / its time, plus static) weighted by the mix weights (normalized)."""
    from dse.report.write import power_parts

    w = np.asarray(weights, dtype=float) / np.sum(weights)
    parts = power_parts(ev.energy, labels)
    return {k: float(sum(wi * parts[lab][k] for wi, lab in zip(w, labels, strict=True))) for k in parts[labels[0]]}


def evaluate(ctx: Context, specs: list[KnobSpec], values: Mapping[str, Any]) -> View:
    """The :class:`View` of one set of knob values (checked first: :func:`checked`)."""
    v = checked(specs, values)
    if RATIO in v:
        v[RATIO] = ratio_of(v, ctx)
    d = design_of(ctx, v)
    sc, times = score_designs(ctx, d)
    ev = evaluate_design(at_own_plans(ctx, d), d, times[0])
    labels = unique_labels(ctx)
    by_bound = [p.time_by_bound() for p in ev.predictions]  # share of each workload's time per ceiling
    binding = [str(b.idxmax()) for b in by_bound]
    ceilings: dict[str, float] = {}
    for b, w in zip(by_bound, ctx.mix.weights, strict=True):  # as DesignEval.binding_shares, from the shares above
        for k, x in b.items():
            ceilings[str(k)] = ceilings.get(str(k), 0.0) + float(w) * float(x)
    wl = pd.DataFrame({"workload": labels, "mix_weight": ctx.mix.weights,
                       "base_time_ms": ctx.base_times * 1e3, "time_ms": times[0] * 1e3,
                       "speedup_x": ctx.base_times / times[0], "binding": binding})
    built = {k: float(np.asarray(x)[0]) for k, x in built_values(d).items()}
    ridge = float(d.ridge[0])
    summary = {"area_mm2": float(sc.area_mm2[0]), "cost_usd": float(sc.cost_usd[0]), "power_w": float(sc.power_w[0]),
               "ridge_flop_per_byte": ridge}
    breakdown = {"area_mm2": {k: float(x[0]) for k, x in ev.area.parts.items()},
                 "cost_usd": {k: float(x[0]) for k, x in ev.cost.parts.items()},
                 "power_w": power_by_component(ev, ctx.mix.weights, labels)}
    ops = op_rows(ctx, ev, labels)
    roofs = {"peak_tflops": float(d.peak_flops[0]) / TERA,
             "vector_tflops": float(np.nanmax(d.vector_peak[0])) / TERA,
             "levels": {lv: float(d.bandwidth[0, j]) / TERA for j, lv in enumerate(d.level_names)},
             "main": d.offchip_name, "launch_us": float(np.median(ops["overhead_s"] / ops["count"])) * 1e6,
             "median_op_flops": float(ops.loc[ops["flops"] > 0, "flops"].div(ops["count"]).median())}
    level_line, on_chip = residency_table(d, ev.predictions, labels)
    return View(v, d, float(sc.score[0]), bool(sc.feasible[0]), sc.reason[0], built, summary, wl,
                ceilings, breakdown, ops, roofs,
                {"current": ridge, "base": base_ridge(ctx)}, level_line, on_chip)


def at_own_plans(ctx: Context, d: DesignBatch) -> Context:
    """``ctx`` with each ``plan: auto`` workload at design ``d``'s own plan (``dse.study.with_choice``), so the
    per-operator views show the plan its time comes from; ``ctx`` itself when there is none."""
    if not ctx.mix.auto:
        return ctx
    from dataclasses import replace

    from dse.predict import mix_arrays
    from dse.study import with_choice

    mix = with_choice(ctx.mix, d)
    return replace(ctx, mix=mix, arrays=mix_arrays(mix))


def unique_labels(ctx: Context) -> list[str]:
    """The mix's workload labels, a repeated one suffixed ``#i``."""
    labels = ctx.mix.labels
    return [lab if labels.count(lab) == 1 else f"{lab}#{i}" for i, lab in enumerate(labels)]


@dataclass(frozen=True)
class Heatmap:
    """Score over the config's compute x bandwidth ranges at the other knobs' values."""

    peak_tflops: np.ndarray  # [nx]
    bw_tbps: np.ndarray  # [ny]
    score: np.ndarray  # [ny, nx]
    feasible: np.ndarray  # [ny, nx] bool


def heatmap(ctx: Context, values: Mapping[str, float], n: int) -> Heatmap | None:
    """The score heatmap (``dse.study.heatmap_grid``, rows bandwidth, columns compute) at the design of
    ``values``; None where peak or bandwidth is not a knob of the space."""
    if not {"peak_tflops", "dram_bandwidth_tbps"} <= set(values):
        return None
    g = heatmap_grid(ctx, design_of(ctx, values), n)
    return Heatmap(g["peak"], g["bw"], g["score"], g["feasible"])


def template_yaml(view: View, name: str) -> str:
    """The shown design as a hardware template (``DesignBatch.to_hardware``), YAML text."""
    import yaml

    hw = view.design.to_hardware(0, name, note="saved from dse explore")
    return yaml.safe_dump(hw.model_dump(mode="json", exclude_none=True), sort_keys=False)
