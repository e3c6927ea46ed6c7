"""Predictor: hierarchical roofline over a batch of designs x operators (see ``roofline``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from pydantic import ValidationError

from dse.errors import DseError, from_validation_error
from dse.hardware.designs import DesignBatch
from dse.hardware.schema import Hardware
from dse.hardware.system import System, default_system, load_system
from dse.predict.network import sent_per_op
from dse.predict.roofline import BatchResult, evaluate, evaluate_times
from dse.predict.traffic import OpArrays
from dse.workloads.library import Workload
from dse.workloads.mix import Mix
from dse.workloads.parallel import Plan

__all__ = ["BatchResult", "MixArrays", "OpArrays", "Prediction", "chunk_designs", "evaluate", "evaluate_times",
           "mix_arrays", "mix_times", "predict", "step_times"]

FAR_BELOW = 0.5  #: roof utilization under which an op is "far below the roof"


def bound_names(levels: list[str]) -> list[str]:
    """Names of the bound codes: compute, one per memory level, network, overhead."""
    return ["compute", *levels, "network", "overhead"]


@dataclass(frozen=True)
class Prediction:
    """One workload on one design (one chip of a system under a plan). ``ops`` adds per-op results to
    the operator table; ``total_time_s`` is each row's share of the step (count x scale, overlap applied)."""

    workload: Workload
    hardware: Hardware
    ops: pd.DataFrame
    system: System | None = None
    capacity_bytes: float = float("inf")  #: DRAM (outermost level) bytes per chip

    @property
    def time_s(self) -> float:
        """Time of one step (one inference / one decode step / one prefill / one training step), seconds."""
        return float(self.ops["total_time_s"].sum())

    @property
    def chips(self) -> int:
        return self.workload.chips

    @property
    def memory(self) -> dict[str, float]:
        """Bytes one chip must hold, by part."""
        return dict(self.workload.memory)

    @property
    def fits(self) -> bool:
        """Whether one chip's weights, KV cache, activations and optimizer state fit its DRAM."""
        return self.workload.memory_bytes <= self.capacity_bytes

    @property
    def infeasible_reason(self) -> str:
        """Empty when it fits; else what does not fit, in GB."""
        if self.fits:
            return ""
        parts = ", ".join(f"{k} {v / 1e9:.1f}" for k, v in self.workload.memory.items() if v)
        return (f"{self.workload.label()} needs {self.workload.memory_bytes / 1e9:.1f} GB per chip ({parts}) "
                f"> {self.capacity_bytes / 1e9:.1f} GB of {self.hardware.dram.name} on {self.hardware.name}")

    @property
    def network_s(self) -> float:
        """Exposed time of the collective operators, seconds."""
        return float(self.ops.loc[self.ops["coll"] != "", "total_time_s"].sum())

    @property
    def bubble_s(self) -> float:
        """Pipeline fill-and-drain time (the bubble), seconds."""
        o = self.ops
        return float((o["time_s"] * o["count"] * (o["scale"] - 1.0)).sum())

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


def _single_table(wl: Workload, d: DesignBatch, o: OpArrays, r: BatchResult) -> pd.DataFrame:
    levels = d.level_names
    names = bound_names(levels)
    df = wl.ops.copy()
    flops = df["flops"].to_numpy(dtype=float)
    compulsory = (df["bytes_read"] + df["bytes_written"]).to_numpy(dtype=float)
    t = r.time[0]
    df["time_s"] = t
    total = t * df["count"].to_numpy() * df["scale"].to_numpy()
    ovl = (df["overlap"] & (df["coll"] != "")).to_numpy()
    if ovl.any():  # overlapped collectives show only their exposed share
        hidden_behind = total[(df["coll"] == "").to_numpy()].sum()
        exposed = max(0.0, total[ovl].sum() - hidden_behind)
        total[ovl] *= exposed / total[ovl].sum()
    df["total_time_s"] = total
    df["t_compute_s"] = r.t_compute[0]
    for j, lv in enumerate(levels):
        df[f"traffic_{lv}_bytes"] = r.traffic[0, :, j]
        df[f"t_{lv}_s"] = r.t_memory[0, :, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            df[f"ai_{lv}"] = np.where(r.traffic[0, :, j] > 0, flops / r.traffic[0, :, j], np.inf)
    df["t_network_s"] = r.t_network[0] if r.t_network is not None else 0.0
    sent = o.to_table_order(sent_per_op(o, d.system)[None, :])[0] if d.system is not None else 0.0
    df["net_sent_bytes"] = sent  # bytes this chip injects into the network per instance
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
    df["clock_fraction"] = r.clock[0] if r.clock is not None else 1.0
    kind = np.where(df["bound"] == "compute", "compute-bound",
                    np.where(df["bound"] == "overhead", "overhead-bound",
                             np.where(df["bound"] == "network", "network-bound", "memory-bound")))
    df["region"] = np.where(df["utilization"] < FAR_BELOW, "far below roof", kind)
    return df


def predict(wl: Workload, hw: Hardware | DesignBatch, *, system: System | None = None, chips: int | None = None,
            **plan: Any) -> Prediction:
    """Predict one workload on one hardware template (or a one-design batch).

    With ``chips``/``tp``/``pp``/``dp``/``ep`` (and any other :class:`~dse.workloads.parallel.Plan`
    field) the workload is rebuilt as one chip's share under that plan and predicted on ``system``
    (default: the shipped system of this chip, resized to the chip count); ``time_s`` stays the time
    of one step and ``ops`` gains the collective operators."""
    d = hw if isinstance(hw, DesignBatch) else DesignBatch.from_hardware(hw)
    if d.n != 1:
        raise ValueError("predict() takes one design; use evaluate() or mix_times() for batches")
    if chips is not None or plan:
        keys = {k: v for k, v in plan.items() if v is not None}
        if chips is not None and not ({"tp", "pp", "dp"} & set(keys)):
            keys["tp"] = chips  # chips alone: tensor parallel over all of them
        try:
            p = Plan.model_validate({"chips": chips, **keys} if chips is not None else keys)
        except ValidationError as exc:
            raise from_validation_error(exc, file=None, model=Plan, prefix="plan") from None
        if wl.plan is not None and not wl.plan.trivial:
            raise DseError(f"{wl.label()} already has a plan; accepted: a single-chip workload", field="plan")
        if not wl.spec and wl.name.split(":")[0] in ("gemm", "copy", "elementwise"):
            raise DseError(f"{wl.name} is a single operator; accepted: a library model for a plan", field="plan")
        from dse.workloads.library import workload as build

        wl = build(wl.origin or wl.name, plan=p, **wl.spec)
    if wl.chips > 1 or wl.ops["coll"].ne("").any():
        sysm = system or d.system or default_system(d.base)
        if isinstance(sysm, str):
            sysm = load_system(sysm)
        d = d.with_system(sysm.resized(wl.chips))
    o = OpArrays.from_table(wl.ops)
    r = evaluate(d, o)
    return Prediction(workload=wl, hardware=d.base, ops=_single_table(wl, d, o, r), system=d.system,
                      capacity_bytes=float(d.capacity[0, -1]))


class MixArrays(NamedTuple):
    """A mix as the predictor reads it; every [O, W] matrix in the sorted op order of ``o``.

    Step time of workload ``w`` = ``T @ member + max(0, T @ overlap - T @ window)``: ``member`` holds
    count x scale (the pipeline bubble) of every row not overlapped, ``overlap`` the overlapped
    collectives, ``window`` the computation they hide behind (``None`` when nothing overlaps).
    ``counts`` is count alone (energy counts work done, not time waited)."""

    o: OpArrays
    member: np.ndarray
    counts: np.ndarray
    overlap: np.ndarray | None
    window: np.ndarray | None


def mix_arrays(mix: Mix) -> MixArrays:
    """Build once per mix and pass to :func:`mix_times` / ``dse.cost.power.mix_energy`` in loops."""
    o = OpArrays.from_table(mix.ops)
    scale = mix.ops["scale"].to_numpy(dtype=float)
    ovl = mix.ops["overlap"].to_numpy(dtype=bool) & (mix.ops["coll"] != "").to_numpy()
    member = mix.membership(scale * ~ovl)[o.perm]
    counts = mix.membership()[o.perm]
    if not ovl.any():
        return MixArrays(o, member, counts, None, None)
    window = mix.membership(scale * (mix.ops["coll"] == "").to_numpy())[o.perm]
    return MixArrays(o, member, counts, mix.membership(scale * ovl)[o.perm], window)


def step_times(t: np.ndarray, a: MixArrays) -> np.ndarray:
    """[D, W] step time from [D, O] per-op times (see :class:`MixArrays`)."""
    out = t @ a.member
    if a.overlap is not None:
        out += np.maximum(0.0, t @ a.overlap - t @ a.window)
    return out


#: bytes of one [chunk, O] float64 temporary (384 KiB): the few live ones stay in a core's L2 cache (2 MiB here), so the
#: predictor's ~20 array steps run from cache instead of faulting in fresh pages (issue 17)
CHUNK_BYTES = 3 << 17


def chunk_designs(n_ops: int, chunk_bytes: int = CHUNK_BYTES) -> int:
    """Designs per chunk so that one [chunk, n_ops] float64 array takes about ``chunk_bytes`` (at least 16)."""
    return max(16, chunk_bytes // (8 * max(n_ops, 1)))


def mix_times(d: DesignBatch, mix: Mix, chunk: int | None = None, arrays: MixArrays | None = None) -> np.ndarray:
    """[D, W] seconds per step of each workload of ``mix`` on each design (chunked over designs; the chunk
    defaults to :func:`chunk_designs` of the operator count)."""
    a = arrays or mix_arrays(mix)
    out = np.empty((d.n, a.member.shape[1]))
    chunk = chunk or chunk_designs(a.o.n)
    for start in range(0, d.n, chunk):
        sl = slice(start, min(start + chunk, d.n))
        out[sl] = step_times(evaluate_times(d.take(sl), a.o, table_order=False), a)
    return out
