"""Write a study's results folder: trials.csv, best_design.yaml, summary.md, PNG figures.

Every file goes through :func:`dse.yamlio.atomic_write` (temp file + rename).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dse.cost.area import area
from dse.predict import predict
from dse.report import plots
from dse.report.summary import design_table, summary_markdown, terminal_summary, workload_table
from dse.search import optimize
from dse.search.space import base_knobs, designs_from_params
from dse.study import StudyResult, score_designs
from dse.yamlio import atomic_write, write_text, write_yaml


def trials_frame(study) -> pd.DataFrame:
    df = study.trials_dataframe(attrs=("number", "state", "value", "params", "user_attrs"))
    df.columns = [c.removeprefix("params_").removeprefix("user_attrs_") for c in df.columns]
    df["constraint"] = [optimize.constraint_value(t) for t in study.get_trials(deepcopy=False)]
    df["feasible"] = df["constraint"] <= 0
    return df.rename(columns={"value": "objective"})


def write_csv(path: Path, df: pd.DataFrame) -> Path:
    return atomic_write(path, lambda p: df.to_csv(p, index=False))


def heatmap_grid(result: StudyResult, n: int) -> dict[str, np.ndarray]:
    """Score and area over a compute x bandwidth grid (search ranges, else 0.25x-4x the base),
    at the best design's SRAM size, evaluated in one vectorized call."""
    space = result.ctx.cfg.search.space
    kb = base_knobs(result.ctx.base)
    kx = base_knobs(result.best)

    def axis(knob: str) -> np.ndarray:
        r = getattr(space, knob)
        lo, hi = (r.low, r.high) if r else (kb[knob] / 4, kb[knob] * 4)
        return np.geomspace(lo, hi, n)

    peak, bw = axis("peak_tflops"), axis("dram_bandwidth_tbps")
    P, B = np.meshgrid(peak, bw)
    params = {"peak_tflops": P.ravel(), "dram_bandwidth_tbps": B.ravel(), "sram_mib": np.full(P.size, kx["sram_mib"])}
    designs = designs_from_params(result.ctx.base, params)
    scored, _ = score_designs(result.ctx, designs)
    return {"peak": peak, "bw": bw, "score": scored.score.reshape(P.shape), "area": scored.area_mm2.reshape(P.shape)}


def write_results(result: StudyResult, plots_on: bool = True) -> str:
    """Write everything; return the terminal summary."""
    folder = result.folder
    ctx = result.ctx
    write_csv(folder / "trials.csv", trials_frame(result.study))
    name = f"{ctx.cfg.name}-best"
    hw = result.best.to_hardware(0, name, note=f"best design of study {ctx.cfg.name}")
    write_yaml(folder / "best_design.yaml", hw.model_dump(mode="json", exclude_none=True))

    wls = ctx.mix.workloads
    labels = ctx.mix.labels
    best_preds = [predict(w, result.best) for w in wls]
    base_preds = [predict(w, ctx.base) for w in wls]
    wl_df = workload_table(labels, ctx.mix.weights, ctx.base_times, result.best_times, best_preds)
    write_csv(folder / "workloads.csv", wl_df)
    ops_best = pd.concat([p.ops.assign(workload=lab, mix_weight=w)
                          for p, lab, w in zip(best_preds, labels, ctx.mix.weights, strict=True)], ignore_index=True)
    write_csv(folder / "ops_best.csv", ops_best)

    figures: list[str] = []
    if plots_on:
        kb, kx = base_knobs(ctx.base), base_knobs(result.best)
        plots.roofline_chart(ops_best, result.best, folder / "roofline_best.png",
                             f"{ctx.cfg.name}: best design, one dot per operator (size ~ time share)")
        ops_base = pd.concat([p.ops.assign(workload=lab) for p, lab in zip(base_preds, labels, strict=True)],
                             ignore_index=True)
        plots.roofline_chart(ops_base, ctx.base, folder / "roofline_base.png",
                             f"{ctx.cfg.name}: base design {ctx.base_hw.name}")
        plots.ai_histogram(ops_best, {"base ridge": float(ctx.base.ridge[0]), "best ridge": float(result.best.ridge[0])},
                           folder / "ai_histogram.png", f"{ctx.cfg.name}: arithmetic intensity of the mix")
        g = heatmap_grid(result, ctx.cfg.output.heatmap_points)
        plots.score_heatmap(g["peak"], g["bw"], g["score"], g["area"], ctx.cfg.search.area_budget_mm2,
                            (kx["peak_tflops"], kx["dram_bandwidth_tbps"]),
                            (kb["peak_tflops"], kb["dram_bandwidth_tbps"]), folder / "score_heatmap.png",
                            f"{ctx.cfg.name}: mix score at {kx['sram_mib']:.0f} MiB SRAM")
        figures = ["roofline_best.png", "roofline_base.png", "ai_histogram.png", "score_heatmap.png"]

    design_df = design_table(ctx.base, result.best, area(ctx.base), area(result.best))
    write_text(folder / "summary.md", summary_markdown(result, design_df, wl_df, figures))
    return terminal_summary(result, wl_df)
