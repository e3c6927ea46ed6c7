"""Full-grid sweeps over the knobs of a study's search space, evaluated vectorized in chunks.

``dse sweep CONFIG --points N`` takes each searched knob's range (log-spaced, ``N`` points; SRAM with
``--sram-points``) and scores every combination with the same evaluator as the search (score, area,
cost, power, constraints), ``chunk`` designs at a time so memory stays bounded; the grid is refused
above ``MAX_DESIGNS`` with its size in the message.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dse.config import StudyConfig
from dse.errors import DseError
from dse.search.space import base_knobs, designs_from_params
from dse.study import Context, score_designs

MAX_DESIGNS = 5_000_000


@dataclass(frozen=True)
class SweepResult:
    grid: pd.DataFrame  # one row per design: knobs, score, area, cost, power, ridge, feasible, binding
    axes: dict[str, np.ndarray]
    ctx: Context


def axes_for(cfg: StudyConfig, ctx: Context, points: int, sram_points: int) -> dict[str, np.ndarray]:
    """Grid values per knob: the search space's ranges, or the base value when a knob is not searched."""
    kb = base_knobs(ctx.base)
    out = {}
    for knob, n in (("peak_tflops", points), ("dram_bandwidth_tbps", points), ("sram_mib", sram_points)):
        r = getattr(cfg.search.space, knob)
        out[knob] = (np.geomspace(r.low, r.high, n) if r.log else np.linspace(r.low, r.high, n)) if r else \
            np.array([kb[knob]])
    return out


def run_sweep(ctx: Context, axes: dict[str, np.ndarray], chunk: int = 4096) -> SweepResult:
    """Score every grid point (chunked); the binding ceiling is the time-weighted majority over the mix."""
    P, B, S = np.meshgrid(axes["peak_tflops"], axes["dram_bandwidth_tbps"], axes["sram_mib"], indexing="ij")
    n = P.size
    if n > MAX_DESIGNS:
        raise DseError(f"the grid has {n:,} designs; accepted: at most {MAX_DESIGNS:,} (fewer --points)",
                       field="--points")
    flat = {"peak_tflops": P.ravel(), "dram_bandwidth_tbps": B.ravel(), "sram_mib": S.ravel()}
    parts = []
    for start in range(0, n, chunk):
        sl = slice(start, min(start + chunk, n))
        params = {k: v[sl] for k, v in flat.items()}
        d = designs_from_params(ctx.base, params)
        sc, _ = score_designs(ctx, d)
        parts.append(pd.DataFrame({**params, "score": sc.score, "objective": sc.objective, "area_mm2": sc.area_mm2,
                                   "cost_usd": sc.cost_usd, "power_w": sc.power_w, "ridge_flop_per_byte": d.ridge,
                                   "feasible": sc.feasible, "infeasible_reason": sc.reason}))
    grid = pd.concat(parts, ignore_index=True)
    grid["score_per_mm2"] = grid["score"] / (grid["area_mm2"] / ctx.base_area_mm2)
    return SweepResult(grid, axes, ctx)


def best_row(res: SweepResult, column: str = "score") -> pd.Series:
    ok = res.grid[res.grid["feasible"]]
    if ok.empty:
        raise DseError("no feasible design in the grid; accepted: larger budgets or other ranges")
    return ok.loc[ok[column].idxmax()]


def write_sweep(res: SweepResult, folder: Path) -> list[Path]:
    """sweep.csv and one heatmap figure per SRAM value (score, score/mm2, area panels)."""
    from dse.report.plots import sweep_heatmaps
    from dse.yamlio import atomic_write

    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(folder / "sweep.csv", lambda p: res.grid.to_csv(p, index=False))
    paths = [folder / "sweep.csv"]
    best = best_row(res)
    budget = res.ctx.cfg.search.area_budget_mm2
    for k, s in enumerate(res.axes["sram_mib"]):
        g = res.grid[np.isclose(res.grid["sram_mib"], s)]
        paths.append(sweep_heatmaps(g, res.axes, budget, best, folder / f"sweep_sram{k}.png",
                                    f"{res.ctx.cfg.name}: sweep at {s:.0f} MiB SRAM"))
    return paths
