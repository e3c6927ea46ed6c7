"""Named candidate designs side by side: per-workload speedups, mix score, area/cost/power deltas.

Candidates are compute:bandwidth ratios relative to the base design: ``1:x`` has x times the base's
bandwidth per FLOP. ``hold="compute"`` keeps the base's peak compute and scales DRAM bandwidth by x;
``hold="area"`` also scales bandwidth by x relative to the base's bytes per FLOP, then picks the largest
peak compute whose die area does not exceed the base's (the same silicon spent differently).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from dse.cost.area import area
from dse.errors import DseError
from dse.hardware.designs import DesignBatch
from dse.predict import mix_times
from dse.search.space import base_knobs, designs_from_params
from dse.study import Context, score_designs


def parse_ratio(text: str) -> float:
    """``"1:2"`` -> 2.0 (bandwidth per FLOP relative to the base)."""
    try:
        a, b = (float(x) for x in text.split(":"))
    except ValueError:
        raise DseError(f"got {text!r}; accepted: a ratio like 1:1 or 1:2", field="--ratios") from None
    if a <= 0 or b <= 0:
        raise DseError(f"got {text!r}; accepted: positive numbers", field="--ratios")
    return b / a


def candidate(ctx: Context, x: float, hold: Literal["compute", "area"]) -> DesignBatch:
    """The base design at ratio 1:x, at fixed compute or at the base's area."""
    kb = base_knobs(ctx.base)
    if hold == "compute":
        return designs_from_params(ctx.base, [{"dram_bandwidth_tbps": kb["dram_bandwidth_tbps"] * x}])
    peaks = np.geomspace(kb["peak_tflops"] / 16, kb["peak_tflops"] * 4, 4000)
    bws = peaks * kb["dram_bandwidth_tbps"] / kb["peak_tflops"] * x
    d = designs_from_params(ctx.base, {"peak_tflops": peaks, "dram_bandwidth_tbps": bws})
    a = area(d).total
    ok = np.flatnonzero(a <= ctx.base_area_mm2 * (1 + 1e-9))
    if ok.size == 0:
        raise DseError(f"no design at ratio 1:{x:g} fits the base's {ctx.base_area_mm2:.0f} mm2", field="--ratios")
    return d.take([int(ok[-1])])


@dataclass(frozen=True)
class Comparison:
    names: list[str]
    designs: list[DesignBatch]
    times: np.ndarray  # [C, W] seconds
    table: pd.DataFrame  # per workload: time per candidate and speedup vs the first
    designs_table: pd.DataFrame  # per candidate: knobs, ridge, score, area, cost, power and deltas


def compare(ctx: Context, ratios: list[str], hold: Literal["compute", "area"] = "compute") -> Comparison:
    names = list(ratios)
    designs = [candidate(ctx, parse_ratio(r), hold) for r in ratios]
    times = np.vstack([mix_times(d, ctx.mix)[0] for d in designs])
    table = pd.DataFrame({"workload": ctx.mix.labels, "weight": ctx.mix.weights})
    for n, t in zip(names, times, strict=True):
        table[f"{n}_ms"] = t * 1e3
    for n, t in zip(names[1:], times[1:], strict=True):
        table[f"speedup_{n}_vs_{names[0]}"] = times[0] / t
    rows = []
    for n, d in zip(names, designs, strict=True):
        sc, _ = score_designs(ctx, d)
        k = base_knobs(d)
        rows.append({"candidate": n, "peak_tflops": k["peak_tflops"], "dram_bandwidth_tbps": k["dram_bandwidth_tbps"],
                     "ridge_flop_per_byte": float(d.ridge[0]), "score_vs_base": float(sc.score[0]),
                     "area_mm2": float(sc.area_mm2[0]), "cost_usd": float(sc.cost_usd[0]),
                     "power_w": float(sc.power_w[0])})
    dt = pd.DataFrame(rows)
    for col in ("score_vs_base", "area_mm2", "cost_usd", "power_w"):
        dt[f"{col}_change_pct"] = (dt[col] / dt[col].iloc[0] - 1) * 100
    return Comparison(names, designs, times, table, dt)
