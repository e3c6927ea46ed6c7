"""A study's results folder: trials.csv, best_design.yaml, summary.md, PNG figures, report.html.

:func:`study_document` lays out the report as a :class:`dse.document.Document` from what the study evaluated
once (``StudyResult.base_eval`` / ``best_eval`` / ``heatmap`` / ``sram``, :func:`dse.study.evaluated`): it calls
no predictor and prices neither design again (only the node's die-cost-vs-area curve is drawn from its
formula). :func:`write_results` writes best_design.yaml and renders the document (``dse.report.render``; every
file atomic).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import optuna
import pandas as pd

from dse.cost.cost import dies_per_wafer, negative_binomial_yield
from dse.document import Document, Figure, Table
from dse.hardware.fields import KNOB, bandwidth_label
from dse.report.render import render, write_table
from dse.report.summary import (
    coefficient_table,
    design_table,
    summary_markdown,
    terminal_summary,
    workload_table,
)
from dse.score import OBJECTIVES
from dse.search import optimize
from dse.search.space import base_knobs
from dse.study import HEATMAP_KNOBS, StudyResult
from dse.yamlio import write_yaml

OBJECTIVE_LABELS = {f"objective_{n}": o.label for n, o in OBJECTIVES.items()}


#: trials.csv columns that count whole things
WHOLE_COLUMNS = ("cores", "array_rows", "array_cols", "dram_stacks", "worker")


def trials_frame(study) -> pd.DataFrame:
    """One row per trial: number, state, objective value(s), knobs (config units), metrics, feasibility."""
    trials = study.get_trials(deepcopy=False)
    names = study.user_attrs.get("objective_names") or [f"{k}" for k in range(len(study.directions))]
    rows = []
    for t in trials:
        vals = t.values or [None] * len(study.directions)
        obj = {f"objective_{n}": v for n, v in zip(names, vals, strict=True)}
        rows.append({"number": t.number, "state": t.state.name, **obj, **t.params, **optimize.metrics(t)})
    df = pd.DataFrame(rows)
    # counts stay whole numbers (the trial attributes are stored as floats: 'cores 27.0', 'dram_stacks 6.0')
    for name in WHOLE_COLUMNS:
        if name in df and df[name].dtype.kind == "f" and np.allclose(df[name].dropna() % 1, 0):
            df[name] = df[name].round().astype("Int64")
    df["constraint"] = [optimize.constraint_value(t) for t in trials]
    df["feasible"] = (df["constraint"] <= 0) & (df["state"] == "COMPLETE")
    # the objective columns are what the sampler saw, infeasible trials included (a design over a budget can score
    # higher than the best); 'rank' orders the feasible ones by the first objective, 1 = the study's best, so sorting
    # by it never picks a design that cannot be built
    first = f"objective_{names[0]}"
    if first in df and len(df):
        ascending = study.directions[0] == optuna.study.StudyDirection.MINIMIZE
        df["rank"] = df[first].where(df["feasible"]).rank(ascending=ascending, method="min").astype("Int64")
    return df


def write_csv(path: Path, df: pd.DataFrame) -> Path:
    """Write ``df`` atomically; infinities become empty cells (a CSV holds no inf)."""
    return write_table(df, path, blank_infinite=True)


def power_parts(e, labels: list[str]) -> dict[str, dict[str, float]]:
    """Workload -> component -> average watts (dynamic parts over the pass time, plus static)."""
    out = {}
    for w, lab in enumerate(labels):
        t = float(e.time_s[0, w])
        parts = {k: float(v[0, w]) / t for k, v in e.parts_j.items()}
        parts["static"] = float(e.static_w[0])
        out[lab] = parts
    return out


def cost_curve(result: StudyResult, node, n: int = 200) -> dict[str, np.ndarray]:
    """Die cost per good die and yield over die areas from 50 mm^2 to 1.2x the reticle."""
    a = np.linspace(50, 1.2 * node.reticle_limit_mm2.value, n)
    y = negative_binomial_yield(a, node.defect_density_per_cm2.value, node.yield_alpha.value)
    return {"area": a, "yield": y, "die_cost": node.wafer_cost_usd.value / (dies_per_wafer(a) * y)}


def cost_marks(costs: dict, curve: dict) -> dict[str, tuple[float, float]]:
    """Where each design sits on the die cost curve: (die area mm^2, cost per good die USD). A one-die design at its
    area and die cost; a multi-die package at its largest die, on the curve (its package silicon and all dies'
    cost sat past the reticle of a per-die curve), labelled as one of its dies."""
    out = {}
    for n, (ar, cost, *_) in costs.items():
        dies = float(ar.die_total[0])
        if dies > 1:
            a = float(ar.largest_die_mm2[0])
            out[f"{n} (largest of {dies:.0f} dies)"] = (a, float(np.interp(a, curve["area"], curve["die_cost"])))
        else:
            out[n] = (float(ar.total[0]), float(cost.parts["die"][0]))
    return out


def study_document(result: StudyResult, plots_on: bool = True) -> Document:
    """The study's report (``dse.report.render.render`` writes it): trials.csv (pareto.csv with several
    objectives), workloads.csv, ops_best.csv; rooflines, AI histogram, score heatmap, area / power breakdowns,
    cost vs area (and the Pareto chart) with ``plots_on``; summary.md; the results folder's config.yaml."""
    folder = result.folder
    ctx = result.ctx
    trials = trials_frame(result.study)
    tables = [Table("trials.csv", trials, blank_infinite=True)]
    names = ctx.cfg.search.objective_names
    front_df = None
    if len(names) > 1:
        front = optimize.pareto_front(result.study)
        front_df = trials[trials["number"].isin([t.number for t in front])].copy()
        tables.append(Table("pareto.csv", front_df, blank_infinite=True))

    labels = ctx.mix.labels
    evals = result.evaluations()  # the report predicts nothing itself
    best_preds = evals["best"].predictions
    costs = {name: (e.area, e.cost, e.energy) for name, e in evals.items()}
    e_best = costs["best"][2]
    wl_df = workload_table(labels, ctx.mix.weights, ctx.base_times, result.best_times, best_preds,
                           e_best.energy_j[0], e_best.power_w[0])
    ops_best = pd.concat([p.ops.assign(workload=lab, mix_weight=w)
                          for p, lab, w in zip(best_preds, labels, ctx.mix.weights, strict=True)], ignore_index=True)
    tables += [Table("workloads.csv", wl_df, blank_infinite=True), Table("ops_best.csv", ops_best, blank_infinite=True)]

    figures: list[Figure] = []
    if plots_on:
        base_preds = evals["base"].predictions
        kb, kx = base_knobs(ctx.base), base_knobs(result.best)
        ops_base = pd.concat([p.ops.assign(workload=lab) for p, lab in zip(base_preds, labels, strict=True)],
                             ignore_index=True)
        g = result.heatmap
        node = costs["base"][0].node
        curve = cost_curve(result, node)
        marks = cost_marks(costs, curve)
        title = ctx.cfg.name
        objective = OBJECTIVES[ctx.cfg.search.objective_names[0]]
        figures = [
            Figure("roofline_best.png", "roofline_chart", (ops_best, result.best),
                   f"{title}: best design, one dot per operator (size ~ time share)"),
            Figure("roofline_base.png", "roofline_chart", (ops_base, ctx.base), f"{title}: base design {ctx.base_hw.name}"),
            Figure("ai_histogram.png", "ai_histogram",
                   (ops_best, {"base ridge": float(ctx.base.ridge[0]), "best ridge": float(result.best.ridge[0])}),
                   f"{title}: arithmetic intensity of the mix"),
            Figure("score_heatmap.png", "score_heatmap",
                   (g["peak"], g["bw"], g.get("objective", g["score"]), g["area"], ctx.cfg.search.area_budget_mm2,
                    tuple(kx[k] for k in HEATMAP_KNOBS), tuple(kb[k] for k in HEATMAP_KNOBS)),
                   f"{title}: {objective.label.split(' (')[0]} at {kx['sram_mib']:.0f} MiB SRAM",
                   {"labels": (KNOB[HEATMAP_KNOBS[0]].label, bandwidth_label(ctx.base_hw)),
                    "feasible": g.get("feasible"), "value_label": objective.label,
                    "budgets": {fmt: (g[key], limit) for fmt, key, limit in (
                        ("cost budget {v:.0f} USD", "cost", ctx.cfg.search.cost_budget_usd),
                        ("power budget {v:.0f} W", "power", ctx.cfg.search.power_budget_w))
                        if limit is not None and key in g}}),
            Figure("area_breakdown.png", "stacked_bars",
                   ({f"{n} ({ctx.base_hw.name})" if n == "base" else n: costs[n][0].breakdown for n in costs},),
                   f"{title}: die area by component", {"ylabel": "area (mm²)"}),
            Figure("power_breakdown.png", "stacked_bars", (power_parts(e_best, labels),),
                   f"{title}: average power per workload on the best design", {"ylabel": "power (W)"}),
            Figure("cost_vs_area.png", "cost_vs_area",
                   (curve["area"], curve["die_cost"], curve["yield"], marks, node.reticle_limit_mm2.value),
                   f"{title}: die cost and yield at {node.name}"),
        ]
        if front_df is not None:
            pts = trials[trials["state"] == "COMPLETE"]
            figures.append(Figure("pareto.png", "pareto_chart",
                                  (pts, front_df, f"objective_{names[1]}", f"objective_{names[0]}", OBJECTIVE_LABELS),
                                  f"{title}: {names[0]} vs {names[1]}"
                                  + (f", colour {names[2]}" if len(names) > 2 else ""),
                                  {"others": tuple(f"objective_{n}" for n in names[2:])}))

    design_df = design_table(ctx.base, result.best, costs)
    coef_df = coefficient_table(costs["base"][0].node)
    md = summary_markdown(result, design_df, wl_df, [f.file for f in figures], coef_df, trials)
    cfg_path = folder / "config.yaml"
    return Document(f"dse study {ctx.cfg.name}", (md,), tuple(tables), tuple(figures),
                    cfg_path.read_text(encoding="utf-8") if cfg_path.is_file() else None)


def write_results(result: StudyResult, plots_on: bool = True) -> str:
    """best_design.yaml and the study's Document (:func:`study_document`, rendered); return the terminal summary."""
    result.evaluations()  # a result of dse.study.evaluated: the written design and system were built and checked there
    write_yaml(result.folder / "best_design.yaml", result.best_template.model_dump(mode="json", exclude_none=True))
    if result.best_system is not None:  # the system it ran on, with the network fields it searched (beside its chip)
        write_yaml(result.folder / "best_system.yaml", result.best_system.model_dump(mode="json", exclude_none=True))
    if result.written_check:  # the study checked the written design against its own times (dse.study.evaluated)
        print(f"warning: {result.written_check}", file=sys.stderr)
    doc = study_document(result, plots_on)
    render(doc, result.folder)
    wl_df = next(t.frame for t in doc.tables if t.file == "workloads.csv")
    trials = next((t.frame for t in doc.tables if t.file == "trials.csv"), None)
    return terminal_summary(result, wl_df, trials)
