"""Predictor: hierarchical roofline over a batch of designs x operators (see ``roofline``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dse.hardware.designs import DesignBatch
from dse.hardware.schema import Hardware
from dse.predict.roofline import BatchResult, evaluate, evaluate_times
from dse.predict.traffic import OpArrays
from dse.workloads.library import Workload
from dse.workloads.mix import Mix

__all__ = ["BatchResult", "OpArrays", "Prediction", "evaluate", "evaluate_times", "mix_arrays", "mix_times",
           "predict"]

FAR_BELOW = 0.5  #: roof utilization under which an op is "far below the roof"


def bound_names(levels: list[str]) -> list[str]:
    """Names of the bound codes: compute, one per memory level, network, overhead."""
    return ["compute", *levels, "network", "overhead"]


@dataclass(frozen=True)
class Prediction:
    """One workload on one design. ``ops`` adds per-op results to the operator table."""

    workload: Workload
    hardware: Hardware
    ops: pd.DataFrame

    @property
    def time_s(self) -> float:
        """Time of one pass (one inference / one decode step / one prefill), seconds."""
        return float(self.ops["total_time_s"].sum())

    @property
    def throughput(self) -> float:
        """Passes per second."""
        return 1.0 / self.time_s

    @property
    def achieved_flops(self) -> float:
        return self.workload.flops / self.time_s

    def time_by_bound(self) -> pd.Series:
        """Share of the time under each binding ceiling."""
        s = self.ops.groupby("bound")["total_time_s"].sum()
        return s / s.sum()


def _single_table(wl: Workload, d: DesignBatch, r: BatchResult) -> pd.DataFrame:
    levels = d.level_names
    names = bound_names(levels)
    df = wl.ops.copy()
    flops = df["flops"].to_numpy(dtype=float)
    compulsory = (df["bytes_read"] + df["bytes_written"]).to_numpy(dtype=float)
    t = r.time[0]
    df["time_s"] = t
    df["total_time_s"] = t * df["count"].to_numpy()
    df["t_compute_s"] = r.t_compute[0]
    for j, lv in enumerate(levels):
        df[f"traffic_{lv}_bytes"] = r.traffic[0, :, j]
        df[f"t_{lv}_s"] = r.t_memory[0, :, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            df[f"ai_{lv}"] = np.where(r.traffic[0, :, j] > 0, flops / r.traffic[0, :, j], np.inf)
    df["t_overhead_s"] = r.t_overhead[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        df["ai"] = np.where(compulsory > 0, flops / compulsory, np.inf)
    df["bound"] = [names[b] for b in r.bound[0]]
    df["achieved_flops"] = flops / t
    # Attainable roof for this op: min(raw peak, min over levels of raw BW * AI at that level).
    roof_times = np.concatenate([
        np.where(flops > 0, flops / np.where(flops > 0, r.peak[0], 1.0), 0.0)[:, None],
        r.traffic[0] / d.bandwidth[0][None, :],
    ], axis=1)
    t_roof = roof_times.max(axis=1)
    df["roof_flops"] = np.where(t_roof > 0, flops / np.where(t_roof > 0, t_roof, 1.0), 0.0)
    df["utilization"] = t_roof / t
    df["fill"] = r.fill[0]
    kind = np.where(df["bound"] == "compute", "compute-bound",
                    np.where(df["bound"] == "overhead", "overhead-bound", "memory-bound"))
    df["region"] = np.where(df["utilization"] < FAR_BELOW, "far below roof", kind)
    return df


def predict(wl: Workload, hw: Hardware | DesignBatch) -> Prediction:
    """Predict one workload on one hardware template (or a one-design batch)."""
    d = hw if isinstance(hw, DesignBatch) else DesignBatch.from_hardware(hw)
    if d.n != 1:
        raise ValueError("predict() takes one design; use evaluate() or mix_times() for batches")
    o = OpArrays.from_table(wl.ops)
    r = evaluate(d, o)
    return Prediction(workload=wl, hardware=d.base, ops=_single_table(wl, d, r))


def mix_arrays(mix: Mix) -> tuple[OpArrays, np.ndarray]:
    """The mix's operator arrays and its [O, W] membership, rows in the predictor's sorted op order.
    Build once per mix and pass to :func:`mix_times` / ``dse.cost.power.mix_energy`` in loops."""
    o = OpArrays.from_table(mix.ops)
    return o, mix.membership()[o.perm]


def mix_times(d: DesignBatch, mix: Mix, chunk: int = 2048,
              arrays: tuple[OpArrays, np.ndarray] | None = None) -> np.ndarray:
    """[D, W] seconds per pass of each workload of ``mix`` on each design (chunked over designs)."""
    o, member = arrays or mix_arrays(mix)
    out = np.empty((d.n, member.shape[1]))
    for start in range(0, d.n, chunk):
        sl = slice(start, min(start + chunk, d.n))
        out[sl] = evaluate_times(d.take(sl), o, table_order=False) @ member
    return out
