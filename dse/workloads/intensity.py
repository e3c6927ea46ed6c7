"""Arithmetic-intensity distributions of workloads and mixes.

Each operator contributes its AI = FLOPs / bytes with a weight: its FLOPs (FLOP-weighted, what the
work looks like) or its predicted time on a design (time-weighted, where the time goes). AI is taken
at the compulsory bytes (``"compulsory"``, the workload alone) or at a memory level of a design
(FLOPs / traffic across that level: ``dse.predict.intensity``, above the predictor; this module
knows no design). Workloads of a mix count at their mix
weight: each workload's weights are normalised to 1, then scaled.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dse.workloads.mix import Mix


def compulsory_intensity(mix: Mix) -> pd.DataFrame:
    """One row per operator with FLOPs and bytes (counts applied), compulsory AI
    (``ai_compulsory = FLOPs / (bytes read + written)``) and ``share_flops``, the mix-weighted FLOP
    share (sums to 1). The design-dependent columns are ``dse.predict.intensity.op_intensity``'s."""
    o = mix.ops
    cnt = o["count"].to_numpy(dtype=float)
    flops = o["flops"].to_numpy(dtype=float) * cnt
    comp = (o["bytes_read"] + o["bytes_written"]).to_numpy(dtype=float) * cnt
    labels = mix.labels
    fams = [family_of(w.origin or w.name) for w in mix.workloads]  # a YAML of one's own: its path, not its name
    df = pd.DataFrame({"workload": [labels[i] for i in o["workload"]], "wl": o["workload"].to_numpy(),
                       "family": [fams[i] for i in o["workload"]], "name": o["name"], "kind": o["kind"],
                       "flops": flops, "bytes": comp})
    with np.errstate(divide="ignore", invalid="ignore"):
        df["ai_compulsory"] = np.where(comp > 0, flops / comp, np.inf)
    w = mix.weights[df["wl"].to_numpy()]
    tot_f = df.groupby("wl")["flops"].transform("sum").to_numpy()
    df["share_flops"] = np.where(tot_f > 0, flops / np.where(tot_f > 0, tot_f, 1) * w, 0.0)
    df["share_flops"] /= df["share_flops"].sum() or 1.0
    return df


def family_of(name: str) -> str:
    """A workload's domain (vision, llm, speech, ...) from its description (a library name or a YAML path, a
    workload's ``origin``); ``other`` else (a single operator, an unreadable name)."""
    from dse.errors import DseError
    from dse.workloads.library import load_description

    try:
        d = load_description(name)
    except DseError:
        return "other"
    return d.domain or d.family


def weighted_percentiles(ai: np.ndarray, weight: np.ndarray, qs: tuple[float, ...] = (10, 50, 90)) -> list[float]:
    """Percentiles of ``ai`` with ``weight`` (ops without weight left out). An op that moves no byte across the level
    (AI infinite: its data stays on chip) counts above every finite AI: a percentile that falls among them is
    ``inf`` (they were dropped, so at a level a large SRAM keeps most operators off, the median read as the few
    operators that still reached it). Between finite ops the percentile is interpolated at the mid-weight points."""
    m = ~np.isnan(ai) & (weight > 0)
    a, w = ai[m], weight[m]
    if a.size == 0:
        return [float("nan")] * len(qs)
    order = np.argsort(a)  # inf last
    a, w = a[order], w[order]
    cum = (np.cumsum(w) - 0.5 * w) / w.sum()
    fin = np.isfinite(a)
    if not fin.any():
        return [float("inf")] * len(qs)
    top = float(np.cumsum(w)[fin][-1] / w.sum())  # the weight share of the finite ops
    return [float(np.interp(q / 100, cum[fin], a[fin])) if q / 100 <= top else float("inf") for q in qs]


def band_share(ai: np.ndarray, weight: np.ndarray, lo: float = 4.0, hi: float = 16.0) -> float:
    """Share of the weight with ``lo <= AI < hi``, of every weighted op (one that moves no byte across the level,
    AI infinite, is outside the band and counts in the total)."""
    m = ~np.isnan(ai) & (weight > 0)
    total = weight[m].sum()
    return float(weight[m & (ai >= lo) & (ai < hi)].sum() / total) if total else float("nan")


def summary(df: pd.DataFrame, level: str = "compulsory", weight: str = "share_flops",
            band: tuple[float, float] = (4.0, 16.0)) -> dict[str, float]:
    """p10/p50/p90 of AI at ``level`` weighted by ``weight``, and the share inside ``band``."""
    ai = df[f"ai_{level}"].to_numpy(dtype=float)
    w = df[weight].to_numpy(dtype=float)
    p10, p50, p90 = weighted_percentiles(ai, w)
    return {"p10": p10, "p50": p50, "p90": p90, f"share_{band[0]:g}_{band[1]:g}": band_share(ai, w, *band)}
