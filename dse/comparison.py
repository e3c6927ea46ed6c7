"""Named candidate designs side by side: per-workload speedups, mix score, area/cost/power deltas.

A candidate is a compute:bandwidth ratio relative to the base design, or absolute values
(:class:`dse.config.Candidate`; ``dse compare --ratios`` builds ratio candidates, a config's ``compare:``
section may mix both). ``1:x`` has x times the base's bandwidth per FLOP, i.e. a ridge of
``base ridge / x`` FLOP/byte:

* ``hold="compute"`` keeps the (candidate's) peak compute ``P`` and sets DRAM bandwidth
  ``BW = P * x / base ridge`` (the base's bandwidth times x when the peak is the base's);
* ``hold="area"`` takes the largest peak compute, at that ratio, whose die area does not exceed the
  base's (the same silicon spent differently; peaks searched on a fine geometric grid); a candidate
  with ``area_of: NAME`` fills the area of that earlier candidate instead.

Hardware ``fields`` of a candidate (``DesignBatch.with_field``) apply first, then the ratio (whole cores at that
ratio, so per-core levels scale with the cores); an absolute candidate's knobs and fields are built as a study's
parameters are (``dse.search.space.designs_from_params``). Every candidate is a buildable design: whole cores,
whole DRAM stacks with their capacity, whole SRAM macros (``DesignBatch.with_knobs``).
The first candidate is the reference of every speedup and every % change.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from dse.config import Candidate, Compare, Hold
from dse.config import parse_ratio as _parse_ratio
from dse.cost.area import COMPONENTS, area
from dse.cost.cost import COST_COMPONENTS, unit_cost
from dse.cost.power import mix_energy
from dse.document import Document, Figure, Table
from dse.errors import DseError
from dse.hardware.designs import DesignBatch
from dse.hardware.fields import is_part_field, knob_values, part_codes
from dse.predict import bound_names, mix_bindings, mix_times
from dse.search.optimize import tie_key
from dse.search.space import base_knobs, designs_from_params, knob_range
from dse.study import Context, attach_system, has_dram, score_designs
from dse.workloads.intensity import family_of


def parse_ratio(text: str, field: str = "--ratios") -> float:
    """``"1:2"`` -> 2.0 (bandwidth per FLOP relative to the base); bad text is a one-line error."""
    try:
        return _parse_ratio(text)
    except ValueError as exc:
        raise DseError(f"got {text!r}; {exc}", field=field) from None


#: a held area is met when the built design is within this fraction of it (issue 28: "within 0.5 %")
AREA_HELD = 0.005


def ladder(start: DesignBatch, x: float, base_ridge: float) -> DesignBatch:
    """``start`` built with 1..64x its cores at ratio 1:x of the base (DRAM bandwidth target ``peak x x / base
    ridge``, bought as whole stacks): every buildable design of that ratio and ``start``'s array and clock, smallest
    first (``DesignBatch.with_knobs``)."""
    cores = np.arange(1, int(64 * max(float(start.cores[0]), 1.0)) + 1, dtype=float)
    peaks = cores * float(start.core_peak_flops[0])
    return DesignBatch.stack([start] * cores.size).with_knobs(peak_flops=peaks, dram_bandwidth=peaks * x / base_ridge)


def at_ratio(ctx: Context, start: DesignBatch, x: float, hold: Hold, field: str = "--ratios",
             area_mm2: float | None = None, notes: list[str] | None = None) -> DesignBatch:
    """``start`` (the base, or the base with a candidate's fields) moved to ratio 1:x of the base design,
    at ``start``'s peak compute or at a die area (``area_mm2``, default the base's).

    At an area: the largest buildable design of that ratio (:func:`ladder`) whose area does not exceed it by more than
    :data:`AREA_HELD`. When that
    design is infeasible (a shoreline, package, budget or capacity limit), the largest feasible one below it is taken
    instead; when the area is missed by more than :data:`AREA_HELD`, or a fallback was taken, a line appended to
    ``notes`` says why (the discrete step that prevented it, and the next buildable design)."""
    base_ridge = float(ctx.base.ridge[0])
    peak = float(start.peak_flops[0])
    if hold == "compute":
        return start.with_knobs(dram_bandwidth=np.array([peak * x / base_ridge]))
    target = ctx.base_area_mm2 if area_mm2 is None else area_mm2
    d = ladder(start, x, base_ridge)
    a = area(d).total
    ok = np.flatnonzero(a <= target * (1 + AREA_HELD))  # area grows with the cores at a fixed ratio
    if ok.size == 0:
        raise DseError(f"no design at ratio 1:{x:g} fits {target:.0f} mm2 (one core at this ratio takes "
                       f"{a[0]:.0f} mm2)", field=field)
    i = int(ok[-1])
    sc, _ = score_designs(ctx, d.take(ok))
    feas = np.asarray(sc.feasible, dtype=bool)
    note = ""
    if not feas[-1]:
        good = np.flatnonzero(feas)
        if good.size:
            j = int(ok[good[-1]])
            note = (f"the largest design at 1:{x:g} within {target:.0f} mm2 (+{AREA_HELD:.1%}; {d.cores[i]:.0f} cores, "
                    f"{a[i]:.1f} mm2) "
                    f"is infeasible ({sc.reason[-1]}); shown: the nearest feasible design at this ratio, "
                    f"{d.cores[j]:.0f} cores and {d.dram_stacks[j]:.0f} DRAM stacks, {a[j]:.0f} mm2")
            i = j
    if not note and a[i] < target * (1 - AREA_HELD) and i + 1 < d.n:
        nxt = d.take([i + 1])
        step = "core" if d.dram_stacks[i + 1] == d.dram_stacks[i] else "core and DRAM stack"
        note = (f"area {a[i]:.1f} of {target:.1f} mm2 held ({(a[i] / target - 1) * 100:+.1f} %): the next whole {step} "
                f"({nxt.cores[0]:.0f} cores, {nxt.dram_stacks[0]:.0f} stacks) needs {a[i + 1]:.1f} mm2")
    best = d.take([i])
    if note and notes is not None:
        notes.append(note)
    return best


def candidate(ctx: Context, x: float, hold: Hold) -> DesignBatch:
    """The base design at ratio 1:x, at fixed compute or at the base's area."""
    return at_ratio(ctx, ctx.base, x, hold)


#: relative score gap under which a design reaches a held score: 0.1 %, far inside any prediction's error band, so a
#: design that ties the target (the base at 1:1 against a 1:2 candidate 0.003 % ahead) is not grown by a whole core
SCORE_TIE = 1e-3


def at_score(ctx: Context, start: DesignBatch, x: float, target: float, field: str,
             notes: list[str] | None = None) -> DesignBatch:
    """The smallest design at ratio 1:x (``start``'s fields) whose mix score reaches ``target``: the fewest whole
    cores (:func:`ladder`) with ``score >= target`` (within :data:`SCORE_TIE`); area grows with the cores at a
    fixed ratio, so that is the smallest die. Scores come from one vectorized ``mix_times``. When no design of the
    ladder reaches it (the mix saturates on a ceiling that compute and bandwidth at this ratio do not lift), the
    highest-scoring one is shown and a line appended to ``notes`` says so."""
    from dse.score import mix_score

    d = ladder(start, x, float(ctx.base.ridge[0]))
    s = mix_score(mix_times(d, ctx.mix, arrays=ctx.arrays), ctx.base_times, ctx.mix.weights)
    ok = np.flatnonzero(s >= target * (1 - SCORE_TIE))
    if ok.size == 0:
        i = int(np.argmax(s))
        if notes is None:
            raise DseError(f"no design at ratio 1:{x:g} reaches score {target:.3g} (up to "
                           f"{d.peak_flops[-1] / 1e12:.0f} TFLOP/s)", field=field)
        notes.append(f"no design at 1:{x:g} reaches score {target:.3g} (up to {d.cores[-1]:.0f} cores, "
                     f"{d.peak_flops[-1] / 1e12:.0f} TFLOP/s); shown: the highest-scoring one, {d.cores[i]:.0f} cores, "
                     f"score {s[i]:.3g}")
        return d.take([i])
    return d.take([int(ok[0])])


def ratio_of(ctx: Context, cand: Candidate, field: str) -> float:
    """x of a relative candidate: its ``ratio`` 1:x, or ``base ridge / ridge`` for an absolute ridge."""
    if cand.ridge is not None:
        return float(ctx.base.ridge[0]) / cand.ridge
    return parse_ratio(cand.ratio, f"{field}.ratio")


def build_candidate(ctx: Context, cand: Candidate, hold: Hold, field: str,
                    earlier: dict[str, DesignBatch] | None = None, notes: list[str] | None = None) -> DesignBatch:
    """One candidate's design: fields first, then its ratio or ridge (at ``cand.hold`` or ``hold``, at the
    area of the earlier candidate ``cand.area_of``, at the first candidate's score, or with ``reinvest``)
    or its knobs.

    ``reinvest: F``: at fixed compute the candidate has area ``A_c``; the first candidate (the base for the
    first itself) has ``A_ref``; the candidate takes the largest peak at its ratio within
    ``A_c + F * max(A_ref - A_c, 0)`` (F = 0: fixed compute; F = 1: the first candidate's area). ``notes`` collects
    what an area hold could not meet (:func:`at_ratio`)."""
    earlier = earlier or {}
    d = ctx.base
    if cand.dram_bandwidth_tbps is not None and not has_dram(ctx.base_hw):
        hw = ctx.base_hw
        raise DseError(f"got {cand.dram_bandwidth_tbps:g} TB/s; accepted: peak_tflops, sram_mib or fields (e.g. "
                       f"memory.{hw.offchip_level.name}.bandwidth_tbps) on {hw.name}, a chip without a DRAM level",
                       field=f"{field}.dram_bandwidth_tbps")
    for name, value in cand.fields.items():
        try:
            d = d.with_field(name, part_codes([value]) if is_part_field(name) else np.array([value], dtype=float))
        except ValueError as exc:
            raise DseError(f"got {name!r}; {str(exc).split('; ', 1)[-1]}", field=f"{field}.fields") from None
        try:  # the schema's physical limits, as a study's searched field (a 50 GHz clock was built and compared)
            d.to_hardware(0, "probe")
        except DseError as exc:
            accepted = exc.message.split("; ", 1)[1] if "; " in exc.message else exc.message
            shown = value if isinstance(value, str) else f"{value:g}"
            raise DseError(f"got {shown} for {name}; {accepted}", field=f"{field}.fields.{name}") from None
    if not cand.relative:  # the one parameter rule of a study: build fields, knobs, then the other fields
        return designs_from_params(ctx.base, [{**cand.fields, **cand.knobs}]) if cand.knobs else d
    x = ratio_of(ctx, cand, field)
    first = next(iter(earlier.values()), None)
    if cand.area_of is not None:
        return at_ratio(ctx, d, x, "area", field, float(area(earlier[cand.area_of]).total[0]), notes)
    if cand.reinvest is not None:
        fixed = at_ratio(ctx, d, x, "compute", field)
        a_c = float(area(fixed).total[0])
        a_ref = float(area(first).total[0]) if first is not None else ctx.base_area_mm2
        target = a_c + cand.reinvest * max(a_ref - a_c, 0.0)
        if target <= a_c * (1 + 1e-9):
            return fixed
        grown = at_ratio(ctx, d, x, "area", field, target, notes)  # whole cores and stacks: the next may not fit
        return grown if grown.peak_flops[0] > fixed.peak_flops[0] else fixed
    h = cand.hold or hold
    if h == "score":
        if first is None:
            raise DseError(f"got {h!r} on the first candidate {cand.name!r}; accepted: hold: score on a later "
                           "candidate (it matches the first candidate's score; give the first hold: compute or area)",
                           field=f"{field}.hold")
        target, _ = score_designs(ctx, first)
        return at_score(ctx, d, x, float(target.score[0]), field, notes)
    return at_ratio(ctx, d, x, h, field, notes=notes)


@dataclass(frozen=True)
class OpStats:
    """One design's per-op view of the mix: ``fill`` and ``bound`` per operator row (table order), and per
    workload the FLOP-weighted MAC-array fill of its matrix ops and the time share of each ceiling."""

    fill: np.ndarray  # [O] MAC-array fill (1 off the matrix unit)
    bound: np.ndarray  # [O] bound code (``dse.predict.bound_names``)
    time: np.ndarray  # [O] predicted seconds of one instance of each operator
    wl_fill: np.ndarray  # [W] FLOP-weighted fill of the workload's matrix ops (nan without any)
    shares: np.ndarray  # [W, B] share of each workload's time under each ceiling
    feasible: bool | None = None  # the candidate's feasibility (set by ``compare``), marked in ceilings.csv


def op_stats(ctx: Context, d: DesignBatch) -> OpStats:
    """Per-op fill and binding ceiling of design ``d`` (one design) on the mix, per-workload fill and
    ceiling shares: ``fill_w = sum_o F_o c_ow u_o / sum_o F_o c_ow`` over matrix ops (FLOPs F, counts c),
    ``share_bw = sum_{o bound by b} t_o c_ow / sum_o t_o c_ow``."""
    from dse.predict import bound_names, evaluate
    from dse.predict.roofline import on_matrix

    o = ctx.arrays[0]
    r = evaluate(d, o)
    member = ctx.mix.membership()  # [O, W], table order
    mat = o.to_table_order(on_matrix(o, d))[0]
    flops = ctx.mix.ops["flops"].to_numpy(dtype=float) * mat
    with np.errstate(divide="ignore", invalid="ignore"):
        wl_fill = (flops * r.fill[0]) @ member / (flops @ member)
    n_b = len(bound_names(d.level_names))
    by = np.stack([np.where(r.bound[0] == b, r.time[0], 0.0) @ member for b in range(n_b)], axis=1)  # [W, B]
    total = by.sum(axis=1, keepdims=True)
    return OpStats(r.fill[0], r.bound[0], r.time[0], wl_fill, by / np.where(total > 0, total, 1.0))


def achieved(ops: pd.DataFrame, st: OpStats) -> np.ndarray:
    """[O] FLOP/s each operator reaches on the design of ``st``: its FLOPs over its predicted time."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(st.time > 0, ops["flops"].to_numpy(dtype=float) / st.time, np.nan)


def ceiling_table(ctx: Context, names: list[str], stats: list[OpStats], designs: list[DesignBatch]) -> pd.DataFrame:
    """Per candidate: the mix-weighted share of time under each ceiling (``sum_w weight_w share_bw``; the
    weights of the score) and the binding one (the largest share)."""
    from dse.predict import bound_names

    bn = bound_names(designs[0].level_names)
    rows = []
    for n, st in zip(names, stats, strict=True):
        mix = ctx.mix.weights @ st.shares
        rows.append({"candidate": n, "binding": bn[int(mix.argmax())], "feasible": st.feasible,
                     **{f"share_{b}": float(v) for b, v in zip(bn, mix, strict=True)}})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Comparison:
    names: list[str]
    designs: list[DesignBatch]
    times: np.ndarray  # [C, W] seconds
    table: pd.DataFrame  # per workload: time per candidate and speedup vs the first
    designs_table: pd.DataFrame  # per candidate: knobs, ridge, ratio, score, area, cost, power and % changes
    breakdown: pd.DataFrame  # area / cost / power by component per candidate, % change vs the first
    ceilings: pd.DataFrame | None = None  # per candidate: mix time share under each ceiling, binding ceiling
    stats: list[OpStats] | None = None  # per candidate: per-op fill and bound
    robust: object | None = None  # dse.robustness.Robustness (None with samples=0)


def breakdown_table(ctx: Context, names: list[str], designs: list[DesignBatch], times: np.ndarray) -> pd.DataFrame:
    """Rows ``area: <component> (mm2)``, ``cost: <part> (USD)``, ``power: <part> (W)`` and totals; one
    column per candidate and ``<name> vs <first> (%)`` for the others. Power is the mix-weighted average
    over the workloads of (dynamic energy of the part per pass / pass time), plus static power."""
    cols: dict[str, dict[str, float]] = {}
    for n, d, t in zip(names, designs, times, strict=True):
        ar = area(d)
        c = unit_cost(d, ar)
        e = mix_energy(d, ctx.mix, times=t[None, :], node=ar.node, arrays=ctx.arrays)
        w = ctx.mix.weights
        col = {f"area: {k} (mm2)": float(ar.parts[k][0]) for k in COMPONENTS}
        col["area: total (mm2)"] = float(ar.total[0])
        col |= {f"cost: {k} (USD)": float(c.parts[k][0]) for k in COST_COMPONENTS}
        col["cost: total (USD)"] = float(c.total[0])
        col |= {f"power: {k} (W)": float((v[0] / e.time_s[0]) @ w) for k, v in e.parts_j.items()}
        col["power: static (W)"] = float(e.static_w[0])
        col["power: mix average (W)"] = float(e.power_w[0] @ w)
        col["power: highest workload (W)"] = float(e.peak_power_w[0])
        cols[n] = col
    df = pd.DataFrame(cols)
    ref = df[names[0]]
    for n in names[1:]:
        with np.errstate(divide="ignore", invalid="ignore"):
            df[f"{n} vs {names[0]} (%)"] = np.where(ref != 0, (df[n] / ref - 1) * 100, np.nan)
    return df.rename_axis("quantity").reset_index()


def compare(ctx: Context, candidates: list[str | Candidate], hold: Hold = "compute",
            field: str = "--ratios", samples: int = 0, seed: int = 0) -> Comparison:
    """Every candidate's design, per-workload times and speedups vs the first, score and resources.

    ``candidates`` are ratio strings (``"1:2"``) or :class:`~dse.config.Candidate`; ``field`` names where
    they came from in error messages (``compare.candidates`` for a config section). With ``samples`` > 0
    the candidates table gains the Monte Carlo columns of :mod:`dse.robustness` (``p_beats_first``,
    ``objective_p10``, ``objective_p90``, ``p_less_area_than_first``)."""
    if len(candidates) < 2:
        raise DseError(f"got {len(candidates)} candidate(s); accepted: two or more", field=field)
    cands = []
    for c in candidates:
        if isinstance(c, str):
            parse_ratio(c, field)  # bad text -> a one-line error before the model sees it
            c = Candidate(name=c, ratio=c)
        cands.append(c)
    if hold == "score" and cands[0].relative and cands[0].hold is None:
        # the later candidates match the first one's score; the first, which has nothing to match, keeps its compute
        cands[0] = cands[0].model_copy(update={"hold": "compute"})
    names = [c.name for c in cands]
    if len(set(names)) != len(names):
        raise DseError(f"got {names}; accepted: distinct candidate names", field=field)
    built: dict[str, DesignBatch] = {}
    notes: dict[str, list[str]] = {}
    for i, c in enumerate(cands):
        notes[c.name] = []
        built[c.name] = build_candidate(ctx, c, hold, f"{field}.{i}" if field != "--ratios" else field, built,
                                        notes[c.name])
    designs = list(built.values())
    times = np.vstack([mix_times(d, ctx.mix, arrays=ctx.arrays)[0] for d in designs])
    table = pd.DataFrame({"workload": ctx.mix.labels, "family": [family_of(w.name) for w in ctx.mix.workloads],
                          "weight": ctx.mix.weights})
    for n, t in zip(names, times, strict=True):
        table[f"{n}_ms"] = t * 1e3
    for n, t in zip(names[1:], times[1:], strict=True):
        table[f"speedup_{n}_vs_{names[0]}"] = times[0] / t
    stats = [op_stats(ctx, d) for d in designs]
    wl_flops = ctx.mix.ops["flops"].to_numpy(dtype=float) @ ctx.mix.membership()  # [W]
    for n, d, t, st in zip(names, designs, times, stats, strict=True):
        table[f"array_fill_{n}"] = st.wl_fill  # FLOP-weighted over the workload's matrix ops
        table[f"compute_util_{n}"] = wl_flops / t / float(d.peak_flops[0])  # achieved / matrix peak
    table["does_not_fit_on"] = unfit_on(ctx, names, designs)
    base_ridge = float(ctx.base.ridge[0])
    rows = []
    for c, d in zip(cands, designs, strict=True):
        sc, _ = score_designs(ctx, d)
        k = base_knobs(d)
        given = "absolute" if not c.relative else (
            f"ratio {c.ratio}, " if c.ridge is None else f"ridge {c.ridge:g} FLOP/B, ") + (
            f"area of {c.area_of}" if c.area_of else f"{c.reinvest:.0%} of the saved area into compute"
            if c.reinvest is not None else f"score of {names[0]} held" if (c.hold or hold) == "score"
            else f"{c.hold or hold} held")
        rows.append({"candidate": c.name, "given_as": given, "peak_tflops": k["peak_tflops"],
                     "dram_bandwidth_tbps": k["dram_bandwidth_tbps"], "sram_mib": k["sram_mib"],
                     "cores": int(d.cores[0]), "array": f"{d.array_rows[0]:.0f}x{d.array_cols[0]:.0f}",
                     "clock_ghz": float(d.base.compute.clock_ghz * d.clock_scale[0]),
                     "dram_stacks": int(d.dram_stacks[0]), "dram_capacity_gb": float(d.offchip_capacity[0]) / 1e9,
                     "dram_part": d.part_name(0) or "",
                     "hold_note": "; ".join(notes[c.name]),
                     "ridge_flop_per_byte": float(d.ridge[0]),
                     "bw_per_flop_vs_base": f"1:{base_ridge / float(d.ridge[0]):.3g}",
                     "score_vs_base": float(sc.score[0]), "area_mm2": float(sc.area_mm2[0]),
                     "cost_usd": float(sc.cost_usd[0]), "power_w": float(sc.power_w[0]),
                     "feasible": bool(sc.feasible[0]), "infeasible_reason": sc.reason[0]})
    dt = pd.DataFrame(rows)
    stats = [replace(st, feasible=bool(f)) for st, f in zip(stats, dt["feasible"], strict=True)]
    for col in ("score_vs_base", "area_mm2", "cost_usd", "power_w"):
        dt[f"{col}_change_pct"] = (dt[col] / dt[col].iloc[0] - 1) * 100
    robust = None
    if samples > 0:
        from dse.robustness import robustness

        robust = robustness(ctx, names, designs, samples, seed)
        dt["objective"] = ctx.cfg.search.objective
        dt = dt.merge(robust.table, on="candidate", how="left")
    br = breakdown_table(ctx, names, designs, times)
    flag = pd.DataFrame([{"quantity": "feasible (1 yes, 0 no)", **{n: float(f) for n, f in zip(names, dt["feasible"],
                                                                                               strict=True)}}])
    return Comparison(names, designs, times, table, dt, pd.concat([br, flag], ignore_index=True),
                      ceiling_table(ctx, names, stats, designs), stats, robust)


def unfit_on(ctx: Context, names: list[str], designs: list[DesignBatch]) -> list[str]:
    """Per workload, the candidates whose main memory cannot hold its per-chip footprint (weights,
    KV cache, activations; ``Mix.memory_bytes``), comma-separated ("" when it fits every candidate)."""
    need = ctx.mix.memory_bytes  # [W]
    cap = np.array([float(d.offchip_capacity[0]) for d in designs])  # [C]
    over = need[:, None] > cap[None, :]  # [W, C]
    return [", ".join(n for n, o in zip(names, row, strict=True) if o) for row in over]


def infeasible_lines(cmp: Comparison) -> list[str]:
    """One line per infeasible candidate (its reason) and per workload that does not fit some candidate."""
    dt = cmp.designs_table
    lines = [f"infeasible candidate {r['candidate']!r}: {r['infeasible_reason'] or 'a constraint is broken'}"
             for _, r in dt[~dt["feasible"].astype(bool)].iterrows()]
    lines += [f"infeasible workload {w!r}: does not fit the memory of {on}"
              for w, on in zip(cmp.table["workload"], cmp.table["does_not_fit_on"], strict=True) if on]
    return lines


def shown_names(cmp: Comparison) -> dict[str, str]:
    """Candidate name -> its label in charts: infeasible ones carry `` [infeasible]``."""
    ok = cmp.designs_table["feasible"].astype(bool).to_numpy()
    return {n: n if f else f"{n} [infeasible]" for n, f in zip(cmp.names, ok, strict=True)}


def check_strict(cmp: Comparison, config: str) -> None:
    """``--strict``: any infeasible candidate is a one-line error naming each one and its reason."""
    dt = cmp.designs_table
    bad = dt[~dt["feasible"].astype(bool)]
    if len(bad):
        why = "; ".join(f"{r['candidate']} ({r['infeasible_reason']})" for _, r in bad.iterrows())
        raise DseError(f"got infeasible candidate(s) {why}; accepted: feasible candidates (or drop --strict)",
                       file=str(config), field="compare.candidates")


def pareto_mask(area_mm2: np.ndarray, score: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """[N] bool: feasible points no other feasible point beats (area <= and score >=, one strictly)."""
    a, s = area_mm2[:, None], score[:, None]
    dominated = ((area_mm2[None, :] <= a) & (score[None, :] >= s)
                 & ((area_mm2[None, :] < a) | (score[None, :] > s)) & ok[None, :]).any(axis=1)
    return ok & ~dominated


def front_table(ctx: Context, cmp: Comparison, points: int = 16, line_points: int = 24,
                chunk: int = 256) -> pd.DataFrame:
    """The area-vs-score plane of the search: a ``points x points`` grid over the search space's peak
    compute and DRAM bandwidth (log-spaced, whole DRAM stacks, at the first candidate's SRAM), flagged
    ``pareto`` where no feasible grid point has less area and more score; plus, per candidate, its ratio
    line (``line`` = the candidate's name: ``line_points`` peaks across the range at the candidate's ridge).
    Rows: ``line`` ("" for the grid), peak_tflops, dram_bandwidth_tbps, ridge, score, area_mm2, feasible,
    pareto."""
    space = ctx.cfg.search.space
    kb = base_knobs(cmp.designs[0])
    p_lo, p_hi = knob_range(space, cmp.designs[0], "peak_tflops")
    b_lo, b_hi = knob_range(space, cmp.designs[0], "dram_bandwidth_tbps")
    P, B = np.meshgrid(np.geomspace(p_lo, p_hi, points), np.geomspace(b_lo, b_hi, points), indexing="ij")
    grid = designs_from_params(ctx.base, {"peak_tflops": P.ravel(), "dram_bandwidth_tbps": B.ravel(),
                                          "sram_mib": np.full(P.size, kb["sram_mib"])})
    peaks = np.geomspace(p_lo, p_hi, line_points) * 1e12
    lines = []
    for d in cmp.designs:  # whole cores first, then the fewest whole stacks that hold the ridge at the built peak
        cores = DesignBatch.stack([d] * line_points).with_knobs(peak_flops=peaks)
        lines.append(cores.with_knobs(dram_bandwidth=cores.peak_flops / float(d.ridge[0])))
    labels = [""] * grid.n + [n for n in cmp.names for _ in range(line_points)]
    allp = DesignBatch.stack([grid, *lines])
    cols: dict[str, list[np.ndarray]] = {"score": [], "area_mm2": [], "feasible": []}
    for start in range(0, allp.n, chunk):
        sc, _ = score_designs(ctx, allp.take(slice(start, min(start + chunk, allp.n))))
        cols["score"].append(sc.score)
        cols["area_mm2"].append(sc.area_mm2)
        cols["feasible"].append(sc.feasible)
    kv = knob_values(allp)
    df = pd.DataFrame({"line": labels, "peak_tflops": kv["peak_tflops"],
                       "dram_bandwidth_tbps": kv["dram_bandwidth_tbps"], "ridge_flop_per_byte": allp.ridge,
                       **{k: np.concatenate(v) for k, v in cols.items()}})
    on_grid = (df["line"] == "").to_numpy()
    df["pareto"] = on_grid & pareto_mask(df["area_mm2"].to_numpy(), df["score"].to_numpy(),
                                         on_grid & df["feasible"].to_numpy(dtype=bool))
    return df


#: the AI band of the reference story (operator intensity concentrated at 4-16 FLOP/byte)
BAND = (4.0, 16.0)


def ai_table(ctx: Context, cmp: Comparison, band: tuple[float, float] = BAND) -> pd.DataFrame:
    """AI distribution of the mix (``dse.workloads.intensity``): p10/p50/p90 and the share inside ``band``,
    of whole workloads (one AI per pass, at mix weight), then of operators FLOP-weighted at compulsory bytes
    and at DRAM traffic on the first candidate, and time-weighted at DRAM traffic on each candidate (where
    the time goes)."""
    from dse.predict.intensity import op_intensity
    from dse.workloads.intensity import band_share, summary, weighted_percentiles

    key = f"share_{band[0]:g}_{band[1]:g}"
    whole = np.array([w.ai for w in ctx.mix.workloads])
    p10, p50, p90 = weighted_percentiles(whole, ctx.mix.weights)
    rows = [{"weighting": "per workload (whole-pass AI, compulsory bytes; at mix weight)", "p10": p10, "p50": p50,
             "p90": p90, key: band_share(whole, ctx.mix.weights, *band)},
            {"weighting": "per operator, FLOP-weighted, compulsory bytes", **summary(op_intensity(ctx.mix),
                                                                                     "compulsory", "share_flops", band)}]
    for k, (n, d) in enumerate(zip(cmp.names, cmp.designs, strict=True)):
        df = op_intensity(ctx.mix, d)
        dram = d.offchip_name
        if k == 0:
            rows.append({"weighting": f"per operator, FLOP-weighted, {dram} traffic on {n}",
                         **summary(df, dram, "share_flops", band)})
        rows.append({"weighting": f"per operator, time-weighted, {dram} traffic on {n}",
                     **summary(df, dram, "share_time", band)})
    out = pd.DataFrame(rows).rename(columns={"p10": "p10_flop_per_byte", "p50": "p50_flop_per_byte",
                                             "p90": "p90_flop_per_byte"})
    return out.rename(columns={key: f"share_in_{band[0]:g}_{band[1]:g}_flop_per_byte"})


def pick_candidate(obj: pd.Series, feasible: pd.Series, area_mm2: pd.Series, cost_usd: pd.Series) -> int:
    """Position of the recommended candidate: the feasible one with the highest objective, on equal objectives the
    smaller die, then the cheaper one; the first when none is feasible."""
    ok = np.flatnonzero(feasible.to_numpy())
    if not ok.size:
        return 0
    o, a, c = obj.to_numpy(), area_mm2.to_numpy(), cost_usd.to_numpy()
    return int(max(ok, key=lambda i: tie_key(o[i], {"area_mm2": a[i], "cost_usd": c[i]})))  # the first of equals


def decision_memo(ctx: Context, cmp: Comparison, ai: pd.DataFrame, ceilings: pd.DataFrame) -> str:
    """Markdown: the recommendation (the feasible candidate with the highest objective; the first when none is
    feasible), the evidence (AI share in 4-16 FLOP/byte with each ridge, binding-ceiling shares, the area parts
    that change most) and the robustness (probability of beating the first, p10-p90, the inputs that decide)."""
    dt = cmp.designs_table
    kind = ctx.cfg.search.objective
    first = cmp.names[0]
    obj = dt["score_vs_base"] if kind == "score" else dt["score_vs_base"] / (
        dt[{"score_per_mm2": "area_mm2", "score_per_usd": "cost_usd", "score_per_w": "power_w"}[kind]]
        / ctx.base_resources[{"score_per_mm2": "area_mm2", "score_per_usd": "cost_usd", "score_per_w": "power_w"}[kind]])
    feas = dt["feasible"].astype(bool)
    pick = pick_candidate(obj, feas, dt["area_mm2"], dt["cost_usd"])
    r, r0 = dt.iloc[pick], dt.iloc[0]
    name = r["candidate"]
    lines = ["## Decision memo", ""]
    if not feas.any():
        lines.append("**No candidate is feasible** (see *Infeasible* below); the figures compare them anyway.")
    elif pick == 0:
        lines.append(f"**Recommendation: keep {first}** — no feasible candidate beats it on {kind}.")
    else:
        lines.append(f"**Recommendation: {name}** over {first}"
                     + (f" (which is infeasible: {r0['infeasible_reason']})" if not feas.iloc[0] else "") + ": "
                     + (f"{kind} {obj.iloc[pick] / obj.iloc[0] * 100 - 100:+.1f} %, " if kind != "score" else "")
                     + f"score {r['score_vs_base_change_pct']:+.1f} %, die area {r['area_mm2_change_pct']:+.1f} % "
                     f"({r0['area_mm2']:.0f} -> {r['area_mm2']:.0f} mm²), power {r['power_w_change_pct']:+.1f} %, "
                     f"ridge {r0['ridge_flop_per_byte']:.0f} -> {r['ridge_flop_per_byte']:.0f} FLOP/byte.")
    lines.append("")
    for n, note in zip(dt["candidate"], dt.get("hold_note", pd.Series([""] * len(dt))), strict=True):
        if note:
            lines.append(f"- *Held as built* ({n}): {note}.")
    band = [c for c in ai.columns if c.startswith("share_in_")][0]
    op = ai[ai["weighting"] == "per operator, FLOP-weighted, compulsory bytes"].iloc[0]
    ridges = ", ".join(f"{n} {float(d.ridge[0]):.0f}" for n, d in zip(cmp.names, cmp.designs, strict=True))
    lines.append(f"- *Evidence, intensity* (`ai_histogram.png`): {op[band]:.0%} of the mix's FLOPs are in operators at "
                 f"4-16 FLOP/byte (p10 {op['p10_flop_per_byte']:.3g}, p50 {op['p50_flop_per_byte']:.3g}, p90 "
                 f"{op['p90_flop_per_byte']:.3g}); ridges (FLOP/byte): {ridges}.")
    share = ceilings.set_index("candidate").filter(like="share_")
    top = lambda n: ", ".join(f"{c.removeprefix('share_')} {v:.0%}" for c, v in  # noqa: E731
                              share.loc[n].sort_values(ascending=False).items() if v >= 0.05)
    lines.append(f"- *Evidence, binding ceilings* (time share; `ceilings.csv`, `rooflines.png`): {first}: {top(first)}"
                 + (f"; {name}: {top(name)}" if pick else "") + ".")
    if pick:
        br = cmp.breakdown.set_index("quantity")
        col = f"{name} vs {first} (%)"
        parts = br.loc[[q for q in br.index if q.startswith("area: ") and "total" not in q]]
        diff = (parts[name] - parts[first]).sort_values(key=abs, ascending=False)
        lines.append("- *Evidence, area* (`area_breakdown.png`): " + ", ".join(
            f"{q.removeprefix('area: ').removesuffix(' (mm2)')} {v:+.0f} mm² ({parts.loc[q, col]:+.0f} %)"
            for q, v in diff.head(3).items() if abs(v) > 0.05) + ".")
    rb = cmp.robust
    if rb is not None and len(cmp.names) > 1:
        if not pick:  # keeping the first: how sure, against the second candidate
            r, name = dt.iloc[1], cmp.names[1]
        lines.append(f"- *Robustness* ({len(rb.samples)} Monte Carlo samples over the node's sourced area ranges "
                     f"and the efficiency bands; `robustness.csv`, `tornado.png`): P({name} beats {first} on {kind}) "
                     f"= {r['p_beats_first']:.0%}; {kind} p10-p90 {r['objective_p10']:.3g}-{r['objective_p90']:.3g} "
                     f"vs {r0['objective_p10']:.3g}-{r0['objective_p90']:.3g}; P(less area) "
                     f"{r['p_less_area_than_first']:.0%}. " + deciders(rb, name))
    return "\n".join(lines) + "\n\n"


def deciders(rb, name: str) -> str:  # noqa: ANN001 - a dse.robustness.Robustness
    """'Decided most by: ...' with the (at most three) inputs whose first-order index stands above the sampling
    noise (``dse.robustness.noise_floor``), or that none does at this many samples."""
    s = rb.sensitivity[rb.sensitivity["candidate"] == name]
    top = s[s["above_noise"]].head(3)
    if not len(top):
        floor = float(s["noise_floor"].iloc[0]) if len(s) else float("nan")
        return (f"No input moves it beyond the sampling noise at {len(rb.samples)} samples (first-order index "
                f"floor {floor:.2f}; more samples resolve smaller effects).")
    return "Decided most by: " + ", ".join(f"{x['input']} (S1 {x['first_order_index']:.2f})"
                                          for _, x in top.iterrows()) + "."


def comparison_document(ctx: Context, cmp: Comparison, heading: str, config_text: str | None = None,
                        plots: bool = True) -> Document:
    """The comparison's report, computed once (``dse.report.render.render`` writes it): compare.csv (per
    workload), candidates.csv, breakdown.csv, ai_summary.csv, ceilings.csv, front.csv (and robustness.csv,
    mc_samples.csv with Monte Carlo samples); speedup / AI histogram / rooflines / area breakdown / area vs
    score (and tornado) figures; the summary with the decision memo."""
    from dse.predict import bound_names

    ai = ai_table(ctx, cmp)
    ceilings = cmp.ceilings if cmp.ceilings is not None else ceiling_table(ctx, cmp.names, [op_stats(ctx, d) for d in
                                                                                          cmp.designs], cmp.designs)
    stats = cmp.stats or [op_stats(ctx, d) for d in cmp.designs]
    title = ctx.cfg.name
    shown = shown_names(cmp)  # infeasible candidates and workloads that do not fit are marked in every chart
    names = [shown[n] for n in cmp.names]
    plot_table = cmp.table.rename(columns={f"speedup_{n}_vs_{cmp.names[0]}": f"speedup_{shown[n]}_vs_{names[0]}"
                                           for n in cmp.names[1:]})
    plot_table["workload"] = [w + (f" [does not fit {on}]" if on else "")
                              for w, on in zip(cmp.table["workload"], cmp.table["does_not_fit_on"], strict=True)]
    wl = ctx.mix.ops["workload"].to_numpy()
    fams = [family_of(w.name) for w in ctx.mix.workloads]
    ops = ctx.mix.ops.assign(workload=[ctx.mix.labels[i] for i in wl], mix_weight=ctx.mix.weights[wl],
                             family=[fams[i] for i in wl])
    many = len(ctx.mix.workloads) > 12
    bn = np.array(bound_names(cmp.designs[0].level_names))
    fills = []
    for st in stats:  # FLOP-weighted fill of each candidate's array-bound ops
        fl = ctx.mix.ops["flops"].to_numpy(dtype=float) * ctx.mix.ops["count"].to_numpy(dtype=float) * (bn[st.bound]
                                                                                                        == "array")
        fills.append(float(fl @ st.fill / fl.sum()) if fl.sum() > 0 else float("nan"))
    parts = {shown[n]: {k.removeprefix("area: ").removesuffix(" (mm2)"): v
                 for k, v in zip(cmp.breakdown["quantity"], cmp.breakdown[n], strict=True)
                 if k.startswith("area: ") and "total" not in k} for n in cmp.names}
    front = front_table(ctx, cmp)
    figures = [
        Figure("speedup.png", "speedup_bars", (plot_table, names), f"{title}: per-workload speedup over {names[0]}"),
        Figure("ai_histogram.png", "ai_histogram",
               (ops, {n: float(d.ridge[0]) for n, d in zip(names, cmp.designs, strict=True)}),
               f"{title}: operator AI of the mix ({len(ctx.mix.workloads)} workloads"
               f"{', stacked by family' if many else ''}) with each candidate's ridge",
               {"group": "family" if many else "workload", "band": BAND}),
        Figure("rooflines.png", "rooflines",
               (cmp.designs, names, ops.assign(fill=stats[0].fill, bound=bn[stats[0].bound],
                                               achieved_flops=achieved(ops, stats[0]))),
               f"{title}: every candidate's roofs (dotted: lowered by MAC-array fill), the mix's operators at "
               f"{names[0]}'s predicted TFLOP/s", {"array_fills": fills}),
        Figure("area_breakdown.png", "stacked_bars", (parts,), f"{title}: die area by component",
               {"ylabel": "area (mm²)"}),
        Figure("area_vs_score.png", "area_score_front", (front, cmp.designs_table),
               f"{title}: area vs score of the search space, Pareto front and each candidate's ratio line"),
    ]
    if not plots:  # the config's output.plots: false
        figures = []
    tables = [Table("compare.csv", cmp.table), Table("candidates.csv", cmp.designs_table),
              Table("breakdown.csv", cmp.breakdown), Table("ai_summary.csv", ai), Table("ceilings.csv", ceilings),
              Table("front.csv", front)]
    rb = cmp.robust
    if rb is not None:
        tables += [Table("robustness.csv", rb.sensitivity), Table("mc_samples.csv", rb.samples)]
        if plots:
            figures.append(Figure("tornado.png", "tornado",
                                  (rb.sensitivity, cmp.names[1], cmp.names[0], ctx.cfg.search.objective),
                                  f"{title}: what moves {cmp.names[1]} vs {cmp.names[0]} ({len(rb.samples)} Monte "
                                  "Carlo samples)"))
    mix_row = pd.DataFrame([{"workload": "mix score (weighted geomean)", "family": "", "weight": 1.0,
                             **{f"speedup_{n}_vs_{cmp.names[0]}": s / cmp.designs_table["score_vs_base"].iloc[0]
                                for n, s in zip(cmp.names[1:], cmp.designs_table["score_vs_base"].iloc[1:],
                                                strict=True)}}])
    per_wl = pd.concat([cmp.table, mix_row], ignore_index=True)
    per_wl = per_wl.astype(object).where(per_wl.notna(), "")
    bad = infeasible_lines(cmp)
    body = (f"# Comparison `{title}`: {heading}\n\n"
            + decision_memo(ctx, cmp, ai, ceilings)
            + "'1:x' = x times the base design's bandwidth per FLOP; % changes are relative to the first candidate "
            f"({cmp.names[0]}); scores are relative to the base design `{ctx.base_hw.name}`. Units of the columns whose "
            "names carry none: `score_vs_base`, `speedup_*` and `objective_*` are ratios (x); `share_*`, "
            "`compute_util_*`, `array_fill_*`, `p_*` and `weight` are fractions (0-1).\n\n"
            + (("**Infeasible** (marked in every table and chart):\n\n" + "\n".join(f"- {x}" for x in bad) + "\n\n")
               if bad else "")
            + "## Candidates\n\n", cmp.designs_table,
            "\n\n## Binding ceilings (mix-weighted share of time)\n\n", ceilings,
            "\n\n(array = compute-bound at a MAC-array fill below 0.5, or where a full array would not be "
            "compute-bound; per-workload fill and compute utilisation in `compare.csv`)\n\n"
            "## Area, cost and power by component\n\n", cmp.breakdown,
            "\n\n## Arithmetic intensity of the mix\n\n", ai,
            "\n\n## Per workload (times in ms)\n\n", per_wl,
            "\n\nFiles: `compare.csv`, `candidates.csv`, `breakdown.csv`, `ai_summary.csv`, `ceilings.csv`, `front.csv`; "
            "figures: " + ", ".join(f"`{f.file}`" for f in figures) + "\n")
    return Document(f"dse comparison {title}", body, tuple(tables), tuple(figures), config_text)


def compare_config(cfg, ctx: Context, config: str, ratios: list[str] | None = None, hold: Hold | None = None,
                   field: str = "--ratios", samples: int | None = None) -> tuple[Comparison, str]:
    """The comparison a config asks for, and a heading that says what was compared: ``ratios`` at fixed
    ``hold`` when given (or when the config has no ``compare:`` section; default 1:2 vs 1:1), else the
    section's candidates. Errors in the section name the config file ``config``."""
    holds = typing.get_args(Hold)
    if hold is not None and hold not in holds:  # the CLI's choices, for the API too (it ran area-held as 'foo held')
        raise DseError(f"got {hold!r}; accepted: {', '.join(holds)}", field="hold")
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int | np.integer)
                                or not 0 <= samples <= 100_000):
        raise DseError(f"got {samples!r}; accepted: 0 (no robustness analysis) to 100000 samples", field="samples")
    section = cfg.compare
    if ratios is not None or section is None:
        if isinstance(ratios, str):  # "1:2,1:1" (the CLI's spelling) was read one character at a time
            ratios = [r.strip() for r in ratios.split(",") if r.strip()]
        ratios = list(ratios or ["1:2", "1:1"])
        hold = hold or (section.hold if section else "compute")
        n, seed = (section.samples, section.seed) if section else (Compare.model_fields["samples"].default, 0)
        return (compare(ctx, ratios, hold, field=field, samples=n if samples is None else samples, seed=seed),
                f"ratios {', '.join(ratios)} at fixed {hold}")
    hold = hold or section.hold
    try:
        cmp = compare(ctx, list(section.candidates), hold, field="compare.candidates",
                      samples=section.samples if samples is None else samples, seed=section.seed)
    except DseError as exc:
        raise DseError(exc.message, file=exc.file or str(config), field=exc.field) from None
    return cmp, f"candidates of the config's compare section (ratio candidates at fixed {hold} unless they say)"


def chip_table(ctx: Context, chips: list[tuple[str, typing.Any]], cfg_dir: typing.Any = None) -> pd.DataFrame:
    """The study's mix on whole chips as built (templates: ``(label, Hardware)``), the base design first: one row
    per chip with its mix score against the base (the study's score: weighted geometric-mean speedup, so the base
    scores 1), area, unit cost and peak average power as a study prices them, whether it meets the study's
    limits (and why not), the ceiling under which the mix spends the most of its weighted time and that share,
    and each workload's step time (``time_s.<label>``) and fit (``fits.<label>``). How sure: ``score_measured_lo``
    .. ``score_measured_hi``, the score over the band of the published speedups between the two chips
    (:func:`dse.validate.bands.speedup_band`, ``Band.interval``: every pair's where the two have none; a mix score
    averages speedups, each as sure as one pair), and ``score_band`` in words. A multi-chip mix runs each
    chip on the config's system where it names one (another chip in that system's network: a what-if), else on
    the chip's shipped system (``dse.study.attach_system``)."""
    from pathlib import Path

    from dse.validate.bands import speedup_band

    rows = []
    labels = ctx.mix.labels
    for i, (name, hw) in enumerate([("base: " + ctx.base_hw.name, ctx.base_hw), *chips]):
        d = ctx.base if i == 0 else attach_system(ctx.cfg, Path(cfg_dir or "."), DesignBatch.from_hardware(hw),
                                                   ctx.mix)
        times, _, binding, share = mix_bindings(d, ctx.mix, ctx.mix.weights, ctx.arrays)
        sc, _ = score_designs(ctx, d, times)
        need, cap = ctx.mix.memory_bytes, float(d.offchip_capacity[0])
        score = float(sc.score[0])
        band = None if i == 0 else speedup_band(ctx.base_hw, hw)
        span = band.interval(score) if band else (np.nan, np.nan)
        rows.append({"chip": name, "system": d.system.name if d.system is not None else "-",
                     "score": score, "score_measured_lo": span[0], "score_measured_hi": span[1],
                     "score_band": f"{band.span()} ({band.family})" if band else "",
                     "area_mm2": float(sc.area_mm2[0]),
                     "cost_usd": float(sc.cost_usd[0]), "power_w": float(sc.power_w[0]),
                     "feasible": bool(sc.feasible[0]), "reason": sc.reason[0],
                     "binding": bound_names(d.level_names)[int(binding[0])], "binding_share_pct": 100 * float(share[0]),
                     **{f"time_s.{lb}": float(t) for lb, t in zip(labels, times[0], strict=True)},
                     **{f"fits.{lb}": bool(n <= cap) for lb, n in zip(labels, need, strict=True)}})
    return pd.DataFrame(rows)
