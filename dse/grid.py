"""Full-grid sweeps over the knobs of a study's search space, evaluated vectorized in chunks.

``dse sweep CONFIG --points N`` takes each searched knob's range (log-spaced, ``N`` points; SRAM with
``--sram-points``) and scores every combination with the same evaluator as the search (score, area,
cost, power, constraints), ``chunk`` designs at a time so memory stays bounded; the grid is refused
above ``MAX_DESIGNS`` rows (designs x mixes) with its size in the message. A config with ``mixes:``
is swept once per mix (each mix scored against the base on that mix); the grid gets a ``mix`` column.

Every grid row also carries its binding ceiling (:func:`binding_ceiling`): the ceiling (compute, a
memory level, launch overhead) under which the mix spends the largest share of its time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dse.config import StudyConfig
from dse.cost.area import dram_stacks
from dse.errors import DseError
from dse.hardware.designs import DesignBatch
from dse.predict import bound_names, evaluate
from dse.search.space import base_knobs, designs_from_params
from dse.study import Context, score_designs

MAX_DESIGNS = 5_000_000
#: a single-mix config's label in the ``mix`` column
ONE_MIX = "workloads"
#: elements of one [designs, ops, levels] temporary in the binding-ceiling pass (~64 MB of float64)
BOUND_ELEMENTS = 8_000_000


@dataclass(frozen=True)
class SweepResult:
    grid: pd.DataFrame  # one row per (mix, design): knobs, score, area, cost, power, ridge, feasible, binding
    axes: dict[str, np.ndarray]
    ctxs: dict[str, Context]  # mix label -> its context (one entry, ONE_MIX, for a config with workloads:)

    @property
    def mixes(self) -> list[str]:
        return list(self.ctxs)


def contexts(config: str | Path) -> tuple[StudyConfig, dict[str, Context]]:
    """The config and a prepared context per mix (one, ``ONE_MIX``, for a config without ``mixes:``)."""
    from dse.config import load_study
    from dse.study import load_context

    cfg, _ = load_study(config)
    if cfg.mixes is None:
        return cfg, {ONE_MIX: load_context(config)[1]}
    return cfg, {m: load_context(config, mix=m)[1] for m in cfg.mix_names}


def axes_for(cfg: StudyConfig, ctx: Context, points: int, sram_points: int) -> dict[str, np.ndarray]:
    """Grid values per knob: the search space's ranges, or the base value when a knob is not searched."""
    kb = base_knobs(ctx.base)
    if points * points * sram_points > MAX_DESIGNS:
        raise DseError(f"got {points} x {points} x {sram_points} = {points * points * sram_points:,} designs; "
                       f"accepted: at most {MAX_DESIGNS:,} (fewer --points)", field="--points")
    out = {}
    for knob, n in (("peak_tflops", points), ("dram_bandwidth_tbps", points), ("sram_mib", sram_points)):
        r = getattr(cfg.search.space, knob)
        out[knob] = (np.geomspace(r.low, r.high, n) if r.log else np.linspace(r.low, r.high, n)) if r else \
            np.array([kb[knob]])
    return out


def binding_ceiling(ctx: Context, designs: DesignBatch, member: np.ndarray | None = None,
                    budget: int = BOUND_ELEMENTS) -> tuple[np.ndarray, np.ndarray]:
    """[D] binding ceiling of the mix on each design (code into ``dse.predict.bound_names``) and its share.

    Per workload ``w``, ``share_b,w = sum of op time bound by b / workload time`` (op times and bounds
    from :func:`dse.predict.evaluate`, counts applied); the mix share is ``sum_w weight_w * share_b,w``
    (the weights of the score) and the binding ceiling is the ceiling with the largest mix share (the
    time-weighted majority). Evaluated in sub-batches of at most ``budget`` design x op x level
    elements, so memory stays bounded for large mixes.
    """
    o = ctx.arrays[0]
    member = ctx.mix.membership() if member is None else member  # [O, W], table order (as evaluate returns)
    n_bounds = len(bound_names(designs.level_names))
    step = max(1, budget // max(o.n * n_bounds, 1))
    codes = np.empty(designs.n, dtype=int)
    shares = np.empty(designs.n)
    for start in range(0, designs.n, step):
        sl = slice(start, min(start + step, designs.n))
        r = evaluate(designs.take(sl), o)
        total = r.time @ member  # [d, W]
        by = np.stack([np.where(r.bound == b, r.time, 0.0) @ member for b in range(n_bounds)], axis=2)  # [d, W, B]
        mix_share = np.einsum("dwb,w->db", by / total[:, :, None], ctx.mix.weights)
        codes[sl] = mix_share.argmax(axis=1)
        shares[sl] = mix_share.max(axis=1)
    return codes, shares


def _sweep_one(ctx: Context, flat: dict[str, np.ndarray], chunk: int) -> pd.DataFrame:
    names = np.array(bound_names(ctx.base.level_names))
    member = ctx.mix.membership()
    parts = []
    n = len(flat["peak_tflops"])
    for start in range(0, n, chunk):
        sl = slice(start, min(start + chunk, n))
        params = {k: v[sl] for k, v in flat.items()}
        d = designs_from_params(ctx.base, params)
        sc, _ = score_designs(ctx, d)
        code, share = binding_ceiling(ctx, d, member)
        parts.append(pd.DataFrame({**params, "score": sc.score, "objective": sc.objective, "area_mm2": sc.area_mm2,
                                   "cost_usd": sc.cost_usd, "power_w": sc.power_w, "ridge_flop_per_byte": d.ridge,
                                   "dram_stacks": dram_stacks(d), "dram_bandwidth_tbps_built": d.dram_bandwidth / 1e12,
                                   "binding": names[code], "binding_time_share": share,
                                   "feasible": sc.feasible, "infeasible_reason": sc.reason}))
    grid = pd.concat(parts, ignore_index=True)
    grid["score_per_mm2"] = grid["score"] / (grid["area_mm2"] / ctx.base_area_mm2)
    return grid


def run_sweep(ctx: Context | dict[str, Context], axes: dict[str, np.ndarray], chunk: int = 4096) -> SweepResult:
    """Score every grid point of every mix (``chunk`` designs per vectorized call)."""
    ctxs = ctx if isinstance(ctx, dict) else {ONE_MIX: ctx}
    per_mix = len(axes["peak_tflops"]) * len(axes["dram_bandwidth_tbps"]) * len(axes["sram_mib"])
    n = per_mix * len(ctxs)  # counted before anything is allocated
    if n > MAX_DESIGNS:
        raise DseError(f"the grid has {n:,} designs ({per_mix:,} per mix x {len(ctxs)} mix(es)); accepted: at most "
                       f"{MAX_DESIGNS:,} (fewer --points)", field="--points")
    P, B, S = np.meshgrid(axes["peak_tflops"], axes["dram_bandwidth_tbps"], axes["sram_mib"], indexing="ij")
    if chunk < 1:
        raise DseError(f"got {chunk}; accepted: a positive integer", field="--chunk")
    flat = {"peak_tflops": P.ravel(), "dram_bandwidth_tbps": B.ravel(), "sram_mib": S.ravel()}
    grids = [_sweep_one(c, flat, chunk).assign(mix=m) for m, c in ctxs.items()]
    grid = pd.concat(grids, ignore_index=True)
    grid = grid[["mix", *[c for c in grid.columns if c != "mix"]]]
    return SweepResult(grid, axes, ctxs)


def best_row(res: SweepResult, column: str = "score", mix: str | None = None) -> pd.Series:
    """The feasible row with the highest ``column`` (of one mix, or the first mix)."""
    g = res.grid[res.grid["mix"] == (mix or res.mixes[0])]
    ok = g[g["feasible"]]
    if ok.empty:
        raise DseError(f"no feasible design in the grid of mix {mix or res.mixes[0]!r}; accepted: larger budgets "
                       "or other ranges")
    return ok.loc[ok[column].idxmax()]


def write_sweep(res: SweepResult, folder: Path, title: str) -> list[Path]:
    """sweep.csv and one heatmap figure per SRAM value: a 2 x 2 block of panels per mix (score,
    score/mm2, area, binding ceiling), each mix's best feasible point starred on its own SRAM's figure."""
    from dse.report.plots import sweep_heatmaps
    from dse.yamlio import atomic_write

    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(folder / "sweep.csv", lambda p: res.grid.to_csv(p, index=False))
    paths = [folder / "sweep.csv"]
    ctx0 = next(iter(res.ctxs.values()))
    budget = ctx0.cfg.search.area_budget_mm2
    kb = base_knobs(ctx0.base)
    best = {m: best_row(res, mix=m) for m in res.mixes}
    srams = np.asarray(res.axes["sram_mib"], dtype=float)
    nearest_base = int(np.argmin(np.abs(np.log(srams / kb["sram_mib"]))))
    for k, s in enumerate(srams):
        at = np.isclose(res.grid["sram_mib"], s)
        rows = {m: res.grid[at & (res.grid["mix"] == m)] for m in res.mixes}
        paths.append(sweep_heatmaps(rows, res.axes, budget, best, (kb["peak_tflops"], kb["dram_bandwidth_tbps"]),
                                    folder / f"sweep_sram{k}.png", f"{title}: sweep at {s:.0f} MiB SRAM",
                                    sram_mib=float(s), base_sram_mib=kb["sram_mib"], show_base=k == nearest_base))
    return paths
