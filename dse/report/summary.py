"""summary.md and the terminal summary of a study."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dse.cost.power import stress_power
from dse.hardware.fields import bandwidth_label
from dse.predict import Prediction
from dse.report.residency import residency_lines
from dse.score import LIMITS, word
from dse.search.optimize import other_count
from dse.search.space import base_knobs
from dse.units import TERA, watts


def _count_of(n: float, noun: str) -> str:
    """``n`` whole ``noun``s in words: '1 board-DRAM channel', '6 board-DRAM channels'."""
    return f"{n:.0f} {noun}{'' if round(n) == 1 else 's'}"


def ratio_label(base_ridge: float, ridge: float) -> str:
    """Compute:bandwidth ratio normalised to the base: '1:2' = twice the bandwidth per FLOP of the base."""
    return f"1:{base_ridge / ridge:.2f}"


def workload_table(labels: list[str], weights, base_times, best_times, best_preds: list[Prediction],
                   best_energy_j, best_power_w) -> pd.DataFrame:
    from dse.validate.bands import FAMILIES, band_for

    rows = []
    for i, (label, w, tb, t, p) in enumerate(zip(labels, weights, base_times, best_times, best_preds, strict=True)):
        share = p.time_by_bound()
        band = band_for(p.workload, p.hardware)
        lo, hi = band.interval(float(t))
        rows.append({
            "workload": label, "weight": round(float(w), 4), "base_ms": tb * 1e3, "best_ms": t * 1e3,
            "best_band_ms": f"{lo * 1e3:.4g}-{hi * 1e3:.4g}" if band.rows or band.family in FAMILIES else "",
            "band_from": "all" if band.borrowed and band.family in FAMILIES else band.family,
            "speedup_x": tb / t, "best_achieved_tflops": p.achieved_flops / TERA,
            "best_energy_mj_per_pass": float(best_energy_j[i]) * 1e3, "best_power_w": float(best_power_w[i]),
            "binding (time share)": ", ".join(f"{k} {v:.0%}" for k, v in share.sort_values(ascending=False).items()
                                              if v >= 0.01),
            "memory_gb_per_chip": p.workload.memory_bytes / 1e9,
            "fits": "yes" if p.fits else f"NO ({p.capacity_bytes / 1e9:.0f} GB)",
        })
    return pd.DataFrame(rows)


def band_table_lines(wl_df: pd.DataFrame) -> list[str]:
    """The per-workload table for summary.md: where every workload's error band comes from the same place (a chip
    with no validation rows borrows one band for all), that source is said once under the table instead of on
    every row (``workloads.csv`` keeps the ``band_from`` column)."""
    sources = wl_df["band_from"].astype(str).unique() if "band_from" in wl_df else []
    meaning = ("`best_band_ms` is where the measured time would fall (the 10th to 90th percentile of the signed errors "
               "of validated rows turned round): where those rows' predictions ran fast, it lies above `best_ms`.")
    if len(sources) != 1:
        return [_md_table(wl_df), "", meaning]
    return [_md_table(wl_df.drop(columns="band_from")), "", f"Error bands (`best_band_ms`): {sources[0]}. {meaning}"]


def _md_table(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        cells = [format(v, floatfmt) if isinstance(v, float) else str(v) for v in r]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def design_table(base, best, costs: dict[str, tuple]) -> pd.DataFrame:
    """Base vs best: knobs, ridge, area by component, cost by component, power.

    ``costs[name] = (AreaBreakdown, CostBreakdown, MixEnergy)`` for "base" and "best"."""
    kb, kx = base_knobs(base), base_knobs(best)
    (ab, cb, eb), (ax, cx, ex) = costs["base"], costs["best"]
    rows = [
        ("peak compute (TFLOP/s, " + base.base.reference_dtype + ")", kb["peak_tflops"], kx["peak_tflops"]),
        (bandwidth_label(base.base), kb["dram_bandwidth_tbps"], kx["dram_bandwidth_tbps"]),
        (f"on-chip SRAM '{base.level_names[base.sram_level]}' (MiB)", kb["sram_mib"], kx["sram_mib"]),
        ("ridge point (FLOP/byte)", float(base.ridge[0]), float(best.ridge[0])),
        ("DRAM stacks", float(ab.dram_stacks[0]), float(ax.dram_stacks[0])),
        ("cores", float(base.cores[0]), float(best.cores[0])),
        ("clock (GHz)", base.base.compute.clock_ghz * float(base.clock_scale[0]),
         best.base.compute.clock_ghz * float(best.clock_scale[0])),
        ("on-chip network link width (bytes)", float(base.noc().link_bytes[0]), float(best.noc().link_bytes[0])),
        ("MAC array (rows)", float(base.array_rows[0]), float(best.array_rows[0])),
        ("MAC array (columns)", float(base.array_cols[0]), float(best.array_cols[0])),
    ]
    rows += [(f"dies: {kind}", float(base.die_counts[0, g]), float(best.die_counts[0, g]))  # a searched die count
             for g, kind in enumerate(base.die_kinds)]
    rows += [(f"dies: {kind}: die-to-die bandwidth per die (TB/s)", float(base.die_d2d_bps[0, g]) / 1e12,
              float(best.die_d2d_bps[0, g]) / 1e12) for g, kind in enumerate(base.die_kinds)]
    for j, lv in enumerate(base.level_names):  # every level: a searched capacity or bandwidth of any of them shows
        if bool(base.offchip[j]):  # DRAM in GB, as its parts are sold and the footprint check counts; SRAM in MiB
            rows.append((f"memory '{lv}': capacity (GB)", float(base.capacity[0, j]) / 1e9,
                         float(best.capacity[0, j]) / 1e9))
        else:
            rows.append((f"memory '{lv}': capacity (MiB)", float(base.capacity[0, j]) / 2**20,
                         float(best.capacity[0, j]) / 2**20))
        rows.append((f"memory '{lv}': bandwidth (TB/s)", float(base.bandwidth[0, j]) / 1e12,
                     float(best.bandwidth[0, j]) / 1e12))
    if base.n_net:
        for j, lv in enumerate(base.system.network):
            rows.append((f"network '{lv.name}': links per chip", float(base.net_links[0, j]), float(best.net_links[0, j])))
            rows.append((f"network '{lv.name}': GB/s per link per direction", float(base.net_link_bw[0, j]) / 1e9,
                         float(best.net_link_bw[0, j]) / 1e9))
    rows += [(f"area: {c} (mm²)", float(ab.parts[c][0]), float(ax.parts[c][0])) for c in ab.parts]
    rows.append(("area: total (mm²)", float(ab.total[0]), float(ax.total[0])))
    rows.append(("yield (%)", float(cb.yield_[0]) * 100, float(cx.yield_[0]) * 100))
    rows += [(f"cost: {c} (USD)", float(cb.parts[c][0]), float(cx.parts[c][0])) for c in cb.parts]
    rows.append(("cost: total per good part (USD)", float(cb.total[0]), float(cx.total[0])))
    rows.append(("static power (W)", float(eb.static_w[0]), float(ex.static_w[0])))
    rows.append(("peak average power over the mix (W)", float(eb.peak_power_w[0]), float(ex.peak_power_w[0])))
    rows.append(("power with every unit at its peak at once (W)", float(stress_power(base.take([0]))[0]),
                 float(stress_power(best.take([0]))[0])))
    df = pd.DataFrame(rows, columns=["quantity", "base", "best"])
    with np.errstate(divide="ignore", invalid="ignore"):  # a part both designs lack (0 -> 0) changed by 0 %
        df["change_%"] = np.where((df["base"] == 0) & (df["best"] == 0), 0.0, (df["best"] / df["base"] - 1) * 100)
    return df


def coefficient_table(node) -> pd.DataFrame:
    """Every node coefficient used, with its value, unit, confidence and source."""
    return pd.DataFrame(node.coefficients(), columns=["coefficient", "value", "unit", "confidence", "source"])


def infeasible_counts(trials: pd.DataFrame) -> dict[str, int]:
    """Complete trials that broke each limit (a trial that broke two counts under both), from the
    ``infeasible_reason`` column: area budget, reticle, cost, power, capacity, package, shoreline."""
    if "infeasible_reason" not in trials:
        return {}
    counts: dict[str, int] = {}
    for reason in trials.loc[trials["state"] == "COMPLETE", "infeasible_reason"].fillna(""):
        kinds = set()
        for clause in filter(None, (c.strip() for c in str(reason).split(";"))):
            kinds.add("reticle" if "reticle limit" in clause else clause.split()[0].rstrip(":"))
        for k in kinds:
            counts[k] = counts.get(k, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def summary_markdown(result, design_df: pd.DataFrame, wl_df: pd.DataFrame, figures: list[str],
                     coef_df: pd.DataFrame, trials: pd.DataFrame | None = None) -> str:
    ctx = result.ctx
    cfg = ctx.cfg
    base_ridge = float(ctx.base.ridge[0])
    ridge = float(result.best.ridge[0])
    s = result.best_scored
    sr = cfg.search
    budget = ", ".join(f"{word(LIMITS[k][0])} {v:g} {LIMITS[k][2].replace('mm2', 'mm²')}"
                       for k, v in sr.budgets().items()) or "none"
    budget += f" (reticle limit {ctx.limits['reticle']:g} mm² always)"
    lines = [
        f"# Study `{cfg.name}`",
        "",
        *([cfg.description.strip(), ""] if cfg.description.strip() else []),
        *([f"- System: `{ctx.base.system.name}`, {ctx.base.system.chips} chips, network levels "
           + ", ".join(f"{lv.name} ({lv.topology}, {lv.size})" for lv in ctx.base.system.network)
           + "; per-workload plans in the workload labels (tp/pp/dp/ep; a `plan: auto` workload's at each design, "
             "below)"] if ctx.base.system is not None else []),
        f"- Base design: `{ctx.base_hw.name}` ({ctx.base_hw.process_node});"
        f" objective(s): `{', '.join(cfg.search.objective_names)}`;"
        f" budgets: {budget}",
        f"- Trials: {result.n_trials} complete in the study ({result.new_trials} new this run"
        + (f", {result.recovered} interrupted trials marked failed" if result.recovered else "")
        + (f"; {others} more pruned or failed" if (others := other_count(result.study)) else "")
        + f"); sampler `{cfg.search.sampler}`, seed {cfg.search.seed}; storage `{result.storage}`",
        "",
        "## Best design",
        "",
        *([f"- **Objective `{cfg.search.objective}` {float(s.objective[0]):.4f}** relative to the base (what this "
           "study maximised)"] if cfg.search.objective != "score" else []),
        f"- **Mix score {float(s.score[0]):.4f}x** the base (weighted geometric mean of per-workload speedups)",
        f"- **Compute:bandwidth ratio: ridge {ridge:.1f} FLOP/byte, {ratio_label(base_ridge, ridge)} relative"
        f" to the base** (base ridge {base_ridge:.1f} FLOP/byte; '1:2' = twice the bandwidth per FLOP)",
        f"- Area {float(s.area_mm2[0]):.1f} mm² ({(float(s.area_mm2[0]) / ctx.base_area_mm2 - 1) * 100:+.1f} % vs base),"
        f" unit cost {float(s.cost_usd[0]):.0f} USD, peak power {watts(float(s.power_w[0]))} W;"
        f" objective `{cfg.search.objective}` = {float(s.objective[0]):.4f}"
        + (f"; Pareto front of {', '.join(cfg.search.objective_names)} in `pareto.csv` (this is its best-"
           f"{cfg.search.objective_names[0]} point)" if len(cfg.search.objective_names) > 1 else ""),
        f"- Reproducibility: dse {result.meta['dse_version']}, config hash `{result.meta['config_sha256']}`,"
        f" seed {result.meta['seed']}, {result.workers} worker(s)",
        *build_lines(result.best),
        *plan_lines(result),
        "",
        _md_table(design_df),
        "",
        "## SRAM, die edge and search bounds",
        "",
        *sram_choice_lines(result),
        *(f"- **Residency:** {w}" for w in tiles_only_warnings(cfg.search.space, result.best)),
        *residency_lines(result),
        *shoreline_lines(result),
        *spare_core_lines(result.best),
        "- Infeasible trials by limit: " + (", ".join(f"{k} {v}" for k, v in infeasible_counts(trials).items())
                                            if trials is not None and infeasible_counts(trials) else "none"),
        *([f"- **Bound:** {w}" for w in bound_warnings(cfg.search.space, result.best_params)]
          or ["- No searched knob sits on a bound of its range"]),
        *choice_lines(cfg.search.space, trials, cfg.search.objective),
        "",
        "## Per-workload results on the best design",
        "",
        *band_table_lines(wl_df),
        "",
        "## Files",
        "",
        "- `trials.csv`: every trial (parameters in config units, score, area, ridge, feasibility)",
        "- `best_design.yaml`: the best design as a hardware template (`dse.hardware('.../best_design.yaml')`)",
        *(["- `best_system.yaml`: the system it ran on, on `best_design.yaml`, with the network fields the study "
           "searched (`dse predict MODEL .../best_system.yaml`)"] if result.best.system is not None else []),
        "- `config.yaml`: the config this study ran, its file paths pointing at the copies in `inputs/` (rerun it from "
        "anywhere: a new study beside this folder); `metadata.json`: the sha256 of every input; `study.db`: the optuna "
        "study (resume with `--resume`)",
        *[f"- `{f}`" for f in figures],
        "",
        f"## Coefficients used (node `{ctx.base_hw.process_node}`, `hw_templates/nodes/{ctx.base_hw.process_node}.yaml`)",
        "",
        _md_table(coef_df),
    ]
    return "\n".join(lines) + "\n"


def infeasible_line(trials: pd.DataFrame | None) -> str:
    """``infeasible: N of M trials broke a limit (package 11, reticle 3)``, or "" when every complete trial was
    feasible: a best design at or near the base then reads as what it is, the best of few feasible trials."""
    if trials is None or "feasible" not in trials or "state" not in trials:
        return ""
    done = trials[trials["state"] == "COMPLETE"]
    bad = int((~done["feasible"].astype(bool)).sum())
    if not bad:
        return ""
    kinds = ", ".join(f"{k} {v}" for k, v in infeasible_counts(trials).items())
    return f"infeasible: {bad} of {len(done)} trials broke a limit ({kinds})"


def terminal_summary(result, wl_df: pd.DataFrame, trials: pd.DataFrame | None = None) -> str:
    ctx = result.ctx
    base_ridge = float(ctx.base.ridge[0])
    ridge = float(result.best.ridge[0])
    kx = base_knobs(result.best)
    s = result.best_scored
    obj = ctx.cfg.search.objective
    head = (f"best score {float(s.score[0]):.4f}x" if obj == "score" else
            f"best {obj} {float(s.objective[0]):.4f} (vs base 1.0; score {float(s.score[0]):.4f}x)")
    out = [
        f"study {ctx.cfg.name}: {result.n_trials} trials"
        + (f" ({others} more pruned or failed)" if (others := other_count(result.study)) else "")
        + f", {head} vs {ctx.base_hw.name}",
        f"  best: {kx['peak_tflops']:.1f} TFLOP/s, {kx['dram_bandwidth_tbps']:.3f} TB/s, {kx['sram_mib']:.1f} MiB SRAM,"
        f" area {float(s.area_mm2[0]):.0f} mm2, {float(s.cost_usd[0]):.0f} USD, {watts(float(s.power_w[0]))} W",
        f"  ratio: ridge {ridge:.1f} FLOP/byte = {ratio_label(base_ridge, ridge)} vs base ({base_ridge:.1f} FLOP/byte)",
    ]
    for k, (_, r) in enumerate(wl_df.iterrows()):
        if k == 12 and len(wl_df) > 14:
            out.append(f"  ... {len(wl_df) - 12} more workloads in summary.md / workloads.csv")
            break
        out.append(f"  {r['workload']:<45s} {r['base_ms']:9.3f} ms -> {r['best_ms']:9.3f} ms  x{r['speedup_x']:.3f}")
    out += [f"  warning: {w}" for w in bound_warnings(ctx.cfg.search.space, result.best_params)]
    out += [f"  warning: {w}" for w in tiles_only_warnings(ctx.cfg.search.space, result.best)]
    out += [f"  {line}" for line in [infeasible_line(trials)] if line]
    out.append(f"  results: {result.folder}")
    return "\n".join(out)


def tiles_only_warnings(space, best) -> list[str]:
    """One line per searched on-chip SRAM level (``sram_mib``, or a ``memory.<level>.capacity_mib`` parameter) that
    keeps only tiles (``MemoryLevel.resident_share`` 0: ``keeps: tiles``, or per-core copies that do not say
    ``keeps``): its size moves tile reuse alone and no tensor stays in it, so a flat score over its range is the
    template's residency choice, not the SRAM's worth (docs/residency.md); names the field that changes it."""
    names = [best.level_names[best.sram_level]] if "sram_mib" in space.knobs() else []
    names += [p.field.split(".")[1] for p in space.params
              if p.field.startswith("memory.") and p.field.endswith(".capacity_mib")]
    out = []
    for name in dict.fromkeys(names):
        m = next((m for m in best.base.memory if m.name == name), None)
        if m is None or m.off_chip or m.resident_share > 0:
            continue
        if m.tiles_only:
            out.append(f"searched SRAM level {name} is a per-core cache ({m.instances} copies): it keeps only tiles, "
                       "so its size moves tile reuse alone and no tensor stays in it between operators")
            continue
        who = f"its {m.instances} per-core copies keep" if m.instances > 1 else "it keeps"
        out.append(f"searched SRAM level {name}: {who} only tiles, so its size moves tile reuse alone and no tensor "
                   f"stays in it between operators; keeps: step (activations) or steps (also weights) on it lets a "
                   "larger one keep tensors (docs/residency.md; dse whatif --stages keeps=step)")
    return out


#: a value within this fraction of its range (in log space for log ranges) counts as "on the bound"
BOUND_TOL = 0.02


def bound_warnings(space, params: dict[str, float]) -> list[str]:
    """One line per searched parameter whose best value sits on a bound of its range, naming the knob,
    the bound and a wider range to try (categorical parameters are skipped)."""
    ranges = {k: (r.low, r.high, r.log) for k, r in space.knobs().items()}
    ranges.update({p.field: (p.low, p.high, p.log) for p in space.params if p.choices is None})
    out = []
    for name, (lo, hi, log) in ranges.items():
        if name not in params:
            continue
        v = float(params[name])
        f = (np.log(v / lo) / np.log(hi / lo)) if log else (v - lo) / (hi - lo)
        if f <= BOUND_TOL:
            out.append(f"best {name} = {v:.4g} sits on its lower bound {lo:g}: the optimum may lie below; "
                       f"try low: {lo / 2:g}")
        elif f >= 1 - BOUND_TOL:
            out.append(f"best {name} = {v:.4g} sits on its upper bound {hi:g}: the optimum may lie above; "
                       f"try high: {hi * 2:g}")
    return out


def choice_lines(space, trials: pd.DataFrame | None, objective: str) -> list[str]:
    """One line per categorical searched field (a DRAM part, array sides, spare cores): for each of its choices the
    best feasible objective the trials reached and how many trials (feasible / all) tried it, best first. A choice
    the sampler tried a few times has not had its own optimum searched, and the line says so."""
    col = f"objective_{objective}"
    if trials is None or col not in trials or "feasible" not in trials:
        return []
    done = trials[trials["state"] == "COMPLETE"] if "state" in trials else trials
    out = []
    for p in space.params:
        if p.choices is None or p.field not in done:
            continue
        parts = []
        for choice in p.choices:
            sel = done[done[p.field].astype(str) == str(choice)]
            ok = sel[sel["feasible"].astype(bool)]
            best = float(ok[col].max()) if len(ok) else float("nan")
            parts.append((best, f"{choice} {best:.4g}" if len(ok) else f"{choice} none feasible",
                          f"({len(ok)} of {len(sel)})"))
        parts.sort(key=lambda t: -t[0] if t[0] == t[0] else np.inf)
        out.append(f"- `{p.field}`, best feasible `{objective}` per choice (trials feasible of tried): "
                   + ", ".join(f"{text} {n}" for _, text, n in parts)
                   + "; a choice tried a few times is not searched to its own optimum")
    return out


def plan_lines(result) -> list[str]:
    """The plan the best design runs each ``plan: auto`` workload at (the trial's ``plan.<workload>`` labels, as
    trials.csv has them): each design of such a study is scored at its own best plan, so the base's labels above do
    not say it."""
    if not getattr(result.ctx.mix, "auto", None):
        return []
    from dse.search.optimize import best_feasible, metrics

    m = metrics(best_feasible(result.study))
    plans = [f"{k.removeprefix('plan.')}: {v or 'none fits'}" for k, v in m.items() if k.startswith("plan.")]
    return [f"- Plans on the best design (`plan: auto`, searched per design): {'; '.join(plans)}"] if plans else []


def build_lines(best) -> list[str]:
    """What the best design is built of (one design batch row): its cores, array, clock and DRAM stacks
    (``DesignBatch.build_text``), and its on-chip network (``dse.hardware.noc``): topology, link width and what
    its traffic gets through against what the network carries."""
    g = best.noc()
    noc = best.base.compute.noc
    if float(g.routers[0]) == 0:
        net = "none (one core)"
    else:
        width = f"{g.link_bytes[0]:.0f}-byte links" + (" (sized for the traffic)" if np.isnan(best.noc_link_bytes[0])
                                                      else "")
        net = (f"{g.topology}, {int(g.routers[0])} routers x {noc.networks} network(s) of {width}: "
               f"{g.delivered_bps[0] / TERA:.3g} TB/s under {noc.traffic} traffic for the "
               f"{best.noc_demand[0] / TERA:.3g} TB/s of `{best.level_names[best.noc_level]}` it carries"
               + (" (it binds: the predictor reads that level at the network's rate)"
                  if g.delivered_bps[0] < best.noc_demand[0] else ""))
    return [f"- Built as {best.build_text(0)}", f"- On-chip network: {net}"]


def sram_choice_lines(result) -> list[str]:
    """Why the best design has the SRAM it has: the searched level's organisation and price per MiB,
    its share of the die, and the score and area of the best design with that level halved and doubled
    (everything else held), as the study scored them (``result.sram``, ``dse.study.sram_variants``)."""
    v = result.sram
    mib, per_mib, saved, sc = v.mib, v.mm2_per_mib, v.saved_mm2, v.scored
    s0, a0 = float(result.best_scored.score[0]), float(result.best_scored.area_mm2[0])
    lines = [f"- Searched level `{v.level}` is a **{v.organization}** at {per_mib:.3g} mm²/MiB "
             f"({v.node}); {mib:.1f} MiB = {mib * per_mib:.1f} mm², {mib * per_mib / a0 * 100:.1f} % "
             "of the die"]
    labels = (f"halved ({0.5 * mib:.1f} MiB)", f"doubled ({2 * mib:.1f} MiB)",
              f"halved and its {saved:.1f} mm² put into whole cores (+{(v.grow - 1) * 100:.1f} % peak as built"
              + ("; it buys no whole core" if v.grow <= 1 + 1e-9 else "") + ")")
    for k, label in enumerate(labels):
        lines.append(f"- With it {label}: score {float(sc.score[k]) / s0 * 100 - 100:+.2f} %, "
                     f"area {float(sc.area_mm2[k]) - a0:+.1f} mm²"
                     + ("" if sc.feasible[k] else f" (infeasible: {sc.reason[k]})"))
    return lines


#: spare-core counts the summary prices the best design's die at (besides the count it was built with)
SPARE_COUNTS = (0, 1, 2, 4)


def spare_core_lines(best) -> list[str]:
    """What spare cores (``compute.spare_cores``, fused off for yield) would do to the best design's die: its yield
    and cost per good die with 0, 1, 2 and 4 spare groups (``compute.spare_granule_cores`` cores each;
    ``dse.cost.cost.harvested_yield``), the cheapest named. The score does not move: spares are in no peak."""
    from dse.cost.area import area, spare_cores
    from dse.cost.cost import unit_cost
    from dse.hardware.designs import DesignBatch

    now, g = float(spare_cores(best)[0]), best.base.compute.spare_granule_cores
    counts = np.array(sorted({now, *(g * k for k in SPARE_COUNTS)}))  # whole groups of the cores fused off together
    d = DesignBatch.stack([best] * len(counts)).with_field("compute.spare_cores", counts)
    ar = area(d)
    c = unit_cost(d, ar)
    die = c.parts["die"]
    k0, kb = int(np.flatnonzero(counts == now)[0]), int(np.argmin(die))
    cells = ", ".join(f"{n:.0f}: {float(y) * 100:.0f} % / {float(u):.0f} USD" for n, y, u in zip(counts, c.yield_, die,
                                                                                                 strict=True))
    verdict = (f"{counts[kb]:.0f} spare core{'' if counts[kb] == 1 else 's'} would cut the cost per good die by "
               f"{(1 - die[kb] / die[k0]) * 100:.1f} %"
               f" for {float(ar.total[kb] - ar.total[k0]):+.1f} mm²" if kb != k0 else
               f"its {now:.0f} spare cores are the cheapest of these")
    return [f"- Spare cores (fused off for yield, `compute.spare_cores`; no peak moves): yield / cost per good die with "
            f"{cells}; {verdict} (searchable: `{{field: compute.spare_cores, choices: [0, {g}, {2 * g}]}}`)"]


def shoreline_lines(result) -> list[str]:
    """Die edge and package of the best design: edge needed vs perimeter, stacks vs what fits."""
    from dse.cost.area import ddr_channels, shoreline
    from dse.study import has_dram

    best = result.best
    sh = shoreline(best, result.best_eval.area)  # the area the study evaluated
    edge = f"{float(sh.edge_need_mm[0]):.0f} mm of {float(sh.perimeter_mm[0]):.0f} mm perimeter"
    if not has_dram(best.base):
        return [f"- Die edge: no DRAM level (main memory: SRAM `{best.offchip_name}`); SerDes and host I/O need {edge}"]
    if best.base.offchip_level.spec.area == "ddr_phy":
        return [f"- Die edge: SerDes and host I/O need {edge}; main memory `{best.offchip_name}` is "
                f"{_count_of(float(ddr_channels(best)[0]), 'board-DRAM channel')} as priced (their PHYs' edge is not "
                "counted)"]
    stacks = _count_of(float(sh.stacks[0]), "HBM stack")
    return [f"- Die edge: HBM PHYs, SerDes and host I/O need {edge}; {stacks} of at most "
            f"{float(sh.max_stacks[0]):.0f} that the long edges and the package hold"]

