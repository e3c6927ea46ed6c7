"""Arithmetic-intensity distributions of workloads and mixes.

Each operator contributes its AI = FLOPs / bytes with a weight: its FLOPs (FLOP-weighted, what the
work looks like) or its predicted time on a design (time-weighted, where the time goes). AI is taken
at the compulsory bytes (``"compulsory"``, the workload alone) or at a memory level of a design
(FLOPs / traffic across that level, from ``dse.predict``). Workloads of a mix count at their mix
weight: each workload's weights are normalised to 1, then scaled.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dse.hardware.designs import DesignBatch
from dse.predict import OpArrays, evaluate
from dse.workloads.mix import Mix


def op_intensity(mix: Mix, design: DesignBatch | None = None) -> pd.DataFrame:
    """One row per operator with FLOPs and bytes (counts applied), compulsory AI and, with a
    design, the AI at every memory level and the op's time; ``share_flops`` / ``share_time`` are
    the mix-weighted weights (each sums to 1)."""
    o = mix.ops
    cnt = o["count"].to_numpy(dtype=float)
    flops = o["flops"].to_numpy(dtype=float) * cnt
    comp = (o["bytes_read"] + o["bytes_written"]).to_numpy(dtype=float) * cnt
    labels = mix.labels
    fams = [family_of(w.name) for w in mix.workloads]
    df = pd.DataFrame({"workload": [labels[i] for i in o["workload"]], "wl": o["workload"].to_numpy(),
                       "family": [fams[i] for i in o["workload"]], "name": o["name"], "kind": o["kind"],
                       "flops": flops, "bytes": comp})
    with np.errstate(divide="ignore", invalid="ignore"):
        df["ai_compulsory"] = np.where(comp > 0, flops / comp, np.inf)
    w = mix.weights[df["wl"].to_numpy()]
    tot_f = df.groupby("wl")["flops"].transform("sum").to_numpy()
    df["share_flops"] = np.where(tot_f > 0, flops / np.where(tot_f > 0, tot_f, 1) * w, 0.0)
    df["share_flops"] /= df["share_flops"].sum() or 1.0
    if design is not None:
        r = evaluate(design.take([0]), OpArrays.from_table(o))
        t = r.time[0] * cnt
        df["time_s"] = t
        for j, lv in enumerate(design.level_names):
            tr = r.traffic[0, :, j] * cnt
            with np.errstate(divide="ignore", invalid="ignore"):
                df[f"ai_{lv}"] = np.where(tr > 0, flops / tr, np.inf)
        tot_t = df.groupby("wl")["time_s"].transform("sum").to_numpy()
        df["share_time"] = t / tot_t * w
        df["share_time"] /= df["share_time"].sum() or 1.0
    return df


def family_of(name: str) -> str:
    """A workload's domain (vision, llm, speech, ...) from its library description; ``other`` else."""
    from dse.errors import DseError
    from dse.workloads.library import load_description

    try:
        d = load_description(name)
    except DseError:
        return "other"
    return d.domain or d.family


def weighted_percentiles(ai: np.ndarray, weight: np.ndarray, qs: tuple[float, ...] = (10, 50, 90)) -> list[float]:
    """Percentiles of ``ai`` with ``weight`` (ops without weight or with infinite AI left out)."""
    m = np.isfinite(ai) & (weight > 0)
    a, w = ai[m], weight[m]
    if a.size == 0:
        return [float("nan")] * len(qs)
    order = np.argsort(a)
    a, w = a[order], w[order]
    cum = (np.cumsum(w) - 0.5 * w) / w.sum()
    return [float(np.interp(q / 100, cum, a)) for q in qs]


def band_share(ai: np.ndarray, weight: np.ndarray, lo: float = 4.0, hi: float = 16.0) -> float:
    """Share of the weight with ``lo <= AI < hi``."""
    m = np.isfinite(ai) & (weight > 0)
    total = weight[m].sum()
    return float(weight[m & (ai >= lo) & (ai < hi)].sum() / total) if total else float("nan")


def summary(df: pd.DataFrame, level: str = "compulsory", weight: str = "share_flops",
            band: tuple[float, float] = (4.0, 16.0)) -> dict[str, float]:
    """p10/p50/p90 of AI at ``level`` weighted by ``weight``, and the share inside ``band``."""
    ai = df[f"ai_{level}"].to_numpy(dtype=float)
    w = df[weight].to_numpy(dtype=float)
    p10, p50, p90 = weighted_percentiles(ai, w)
    return {"p10": p10, "p50": p50, "p90": p90, f"share_{band[0]:g}_{band[1]:g}": band_share(ai, w, *band)}
