"""Ratio sensitivity: the best feasible mix score at each compute:bandwidth ratio under the budgets.

For each ratio ``r`` (FLOP/byte) on a log grid, designs with peak compute ``P`` across the searched
range and DRAM bandwidth ``P / r`` (kept inside its searched range), everything else as in a given
design (the search's best), are
evaluated in one vectorized call; the curve is the best feasible score per ratio. It answers the
reviewer's question "how much do we lose if we pick 1:1 instead of 1:2?" directly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dse.hardware.fields import knob_values
from dse.search.space import designs_from_params, knob_range
from dse.study import score_designs


def ratio_curve(ctx, design, n_ratio: int = 32, n_peak: int = 48) -> pd.DataFrame:
    """Best feasible score (and its design) per ridge ratio, all other fields as in ``design`` (a
    one-design DesignBatch, e.g. the search's best); ``ctx`` is a :class:`dse.study.Context`. The peak, bandwidth,
    cores and ridge reported are the built design's (whole cores and stacks), beside the grid's ratio."""
    space = ctx.cfg.search.space
    p_lo, p_hi = knob_range(space, ctx.base, "peak_tflops")
    b_lo, b_hi = knob_range(space, ctx.base, "dram_bandwidth_tbps")
    ratios = np.geomspace(p_lo / b_hi, p_hi / b_lo, n_ratio)  # TFLOP/s per TB/s = FLOP/byte
    peaks = np.geomspace(p_lo, p_hi, n_peak)
    R, P = np.meshgrid(ratios, peaks, indexing="ij")
    B = P / R
    ok = (b_lo <= B) & (b_hi >= B)
    params = {"peak_tflops": P[ok], "dram_bandwidth_tbps": B[ok]}
    designs = designs_from_params(design, params)  # DRAM bandwidth built as whole stacks: report what is built
    sc, _ = score_designs(ctx, designs)
    score = np.full(R.shape, np.nan)
    score[ok] = np.where(sc.feasible, sc.score, np.nan)
    ridge, bw, pk, cores = (np.full(R.shape, np.nan) for _ in range(4))
    built = knob_values(designs)
    ridge[ok], bw[ok], pk[ok], cores[ok] = designs.ridge, built["dram_bandwidth_tbps"], built["peak_tflops"], designs.cores
    rows = []
    for i, r in enumerate(ratios):
        if np.all(np.isnan(score[i])):
            rows.append({"grid_ridge_flop_per_byte": r, "ridge_flop_per_byte": np.nan, "best_score": np.nan,
                         "peak_tflops": np.nan, "dram_bandwidth_tbps": np.nan, "cores": np.nan})
            continue
        j = int(np.nanargmax(score[i]))
        rows.append({"grid_ridge_flop_per_byte": r, "ridge_flop_per_byte": ridge[i, j], "best_score": score[i, j],
                     "peak_tflops": pk[i, j], "dram_bandwidth_tbps": bw[i, j], "cores": cores[i, j]})
    df = pd.DataFrame(rows)
    df["bw_per_flop_vs_base"] = float(ctx.base.ridge[0]) / df["ridge_flop_per_byte"]
    return df
