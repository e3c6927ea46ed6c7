"""Arithmetic intensity of a mix's operators on a design: AI at every memory level and time shares.

The design-free columns (FLOPs, compulsory bytes and AI, FLOP shares) come from
``dse.workloads.intensity.compulsory_intensity``; this module adds, for the first design of a batch,
``ai_<level> = FLOPs / traffic across <level>`` (``dse.predict.evaluate``'s per-level traffic), the
op's time ``time_s`` and the mix-weighted ``share_time`` (each workload's time normalised to 1, then
scaled by its mix weight; the shares sum to 1).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dse.document import Document, Figure, Table
from dse.hardware.designs import DesignBatch
from dse.predict import OpArrays, evaluate
from dse.workloads.intensity import compulsory_intensity
from dse.workloads.mix import Mix


def op_intensity(mix: Mix, design: DesignBatch | None = None) -> pd.DataFrame:
    """One row per operator with FLOPs and bytes (counts applied), compulsory AI and, with a
    design, the AI at every memory level and the op's time; ``share_flops`` / ``share_time`` are
    the mix-weighted weights (each sums to 1)."""
    df = compulsory_intensity(mix)
    if design is None:
        return df
    o = mix.ops
    cnt = o["count"].to_numpy(dtype=float)
    flops = df["flops"].to_numpy(dtype=float)
    w = mix.weights[df["wl"].to_numpy()]
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


def ai_document(df: pd.DataFrame, name: str, what: str, design: DesignBatch, hardware_name: str) -> Document:
    """What ``dse workloads ai`` writes (files only): ``ai_<name>.csv`` (:func:`op_intensity`'s table) and three
    AI distributions (``dse.report.plots.ai_distribution``) against the design's ridge: FLOP-weighted at
    compulsory bytes, time-weighted at the main-memory level, FLOP-weighted by family."""
    dram = design.offchip_name
    ridges = {hardware_name: float(design.ridge[0])}
    figures = (
        Figure(f"ai_{name}_flops.png", "ai_distribution", (df, "compulsory", "share_flops", ridges),
               f"{what}: FLOP-weighted operator AI (compulsory bytes)"),
        Figure(f"ai_{name}_time.png", "ai_distribution", (df, dram, "share_time", ridges),
               f"{what}: time-weighted AI at {dram} on {hardware_name}"),
        Figure(f"ai_{name}_family.png", "ai_distribution", (df, "compulsory", "share_flops", ridges),
               f"{what}: FLOP-weighted operator AI by family", {"group": "family"}),
    )
    return Document(f"dse workloads ai {name}", (), (Table(f"ai_{name}.csv", df),), figures)
