"""Predictor: hierarchical roofline over a batch of designs x operators (see ``roofline``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from dse.hardware.designs import LEVEL_LIMITS, DesignBatch
from dse.hardware.schema import Hardware
from dse.hardware.system import System, default_system, load_system
from dse.predict import fused
from dse.predict.network import sent_per_op
from dse.predict.roofline import BatchResult, evaluate, evaluate_bound, evaluate_times, unpacked
from dse.predict.traffic import OpArrays, on_chip_shares
from dse.workloads.library import Workload, with_plan
from dse.workloads.mix import Mix

__all__ = ["BatchResult", "MixArrays", "OpArrays", "Prediction", "binding_summary", "chunk_designs", "evaluate",
           "evaluate_times", "mix_arrays", "mix_bindings", "mix_times", "mix_times_bounds", "predict", "step_times"]

FAR_BELOW = 0.5  #: roof utilization under which an op is "far below the roof"


def gb(n_bytes: float) -> str:
    """Bytes as GB for a message: one decimal from 1 GB up (``80.0``), three significant digits below (a 32 MiB
    SRAM is ``0.0336``, not ``0.0``)."""
    v = n_bytes / 1e9
    return f"{v:.1f}" if v >= 1 else f"{v:.3g}"


def bound_names(levels: list[str]) -> list[str]:
    """Names of the bound codes: compute, one per memory level, network, overhead (the fixed costs: launch, eager
    dispatch, a scratchpad NPU's exposed pipeline fill and drain, ``dse.predict.roofline.fixed_times``), array
    (compute bound by MAC-array fill; ``dse.predict.roofline``)."""
    return ["compute", *levels, "network", "overhead", "array"]


class Prediction:
    """One workload on one design (one chip of a system under a plan). ``ops`` adds per-op results to
    the operator table; ``total_time_s`` is each row's share of the step (count x scale, overlap applied).

    ``ops`` is built on first use (``build_ops``): ``time_s`` and ``fits`` come from numpy arrays alone, so a
    loop that reads only them pays no pandas (issue 17)."""

    def __init__(self, workload: Workload, hardware: Hardware, ops: pd.DataFrame | None = None,
                 system: System | None = None, capacity_bytes: float = float("inf"), *,
                 total_time_s: np.ndarray | None = None, build_ops: Callable[[], pd.DataFrame] | None = None) -> None:
        if ops is None and build_ops is None:
            raise ValueError("Prediction needs ops or build_ops")
        self.workload, self.hardware, self.system = workload, hardware, system
        self.capacity_bytes = capacity_bytes  #: main-memory (off-chip level) bytes per chip
        self._ops, self._build, self._total = ops, build_ops, total_time_s

    @property
    def ops(self) -> pd.DataFrame:
        if self._ops is None:
            self._ops, self._build = self._build(), None
        return self._ops

    def __repr__(self) -> str:
        return f"Prediction({self.workload.label()} on {self.hardware.name}: {self.time_s * 1e3:.4g} ms)"

    @property
    def time_s(self) -> float:
        """Time of one step (one inference / one decode step / one prefill / one training step / one serving
        pass), seconds: the operators' share plus, for ``phase: serving`` with a ``serving_engine``, the engine's
        host time of the pass (``dse.workloads.serving``; not an operator, the same on every design)."""
        ops_s = self._total.sum() if self._total is not None else self.ops["total_time_s"].sum()
        return float(ops_s) + self.workload.host_s

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
        parts = ", ".join(f"{k} {gb(v)}" for k, v in self.workload.memory.items() if v)
        return (f"{self.workload.label()} needs {gb(self.workload.memory_bytes)} GB per chip ({parts}) "
                f"> {gb(self.capacity_bytes)} GB of {self.hardware.dram.name} on {self.hardware.name}")

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
    def serving(self) -> dict[str, float]:
        """``phase: serving`` only: output tokens/s, ttft_s, tpot_s (mean), tpot_max_s, decode_step_s
        (``dse.workloads.serving``); empty for other phases."""
        if self.workload.scenario.get("phase") != "serving":
            return {}
        from dse.workloads.serving import metrics

        plan = self.workload.plan
        return metrics(self.ops, self.workload.scenario, plan.dp if plan is not None else 1)  # dp replicas

    @property
    def throughput(self) -> float:
        """Passes per second."""
        return 1.0 / self.time_s

    @property
    def achieved_flops(self) -> float:
        return self.workload.flops / self.time_s

    def time_by_bound(self) -> pd.Series:
        """Share of the step's time under each binding ceiling (fractions summing to 1), a Series named
        ``time_share`` indexed by ceiling (``bound``)."""
        s = self.ops.groupby("bound")["total_time_s"].sum()
        return (s / s.sum()).rename("time_share")


class TableArrays(NamedTuple):
    """What a single prediction reads from a workload's operator table, once per table (table row order)."""

    o: OpArrays
    count_scale: np.ndarray  # [O] count x scale
    overlapped: np.ndarray  # [O] share of each collective that may hide behind compute (0 for compute rows)
    compute: np.ndarray  # [O] bool: not a collective


#: ops table -> (table, its arrays); the table is held so its id stays unique while cached
_TABLES: dict[int, tuple[pd.DataFrame, TableArrays]] = {}


def table_arrays(ops: pd.DataFrame) -> TableArrays:
    """:class:`TableArrays` of an operator table, kept for the last 256 tables (``dse.workload`` returns the
    same table for the same call, so a loop over designs converts it once)."""
    hit = _TABLES.get(id(ops))
    if hit is not None and hit[0] is ops:
        return hit[1]
    coll = ops["coll"].to_numpy() != ""
    ta = TableArrays(OpArrays.from_table(ops), ops["count"].to_numpy(dtype=float) * ops["scale"].to_numpy(dtype=float),
                     np.where(coll, ops["overlap"].to_numpy(dtype=float), 0.0), ~coll)
    if len(_TABLES) >= 256:
        _TABLES.pop(next(iter(_TABLES)))
    _TABLES[id(ops)] = (ops, ta)
    return ta


def hides_collectives(d: DesignBatch) -> bool:
    """Whether the chip's collectives may hide behind its computation as the plan's ``overlap`` says: yes unless its
    template runs them on the compute core (``network.collective_engine: compute_core``). XLA on a TPU v4-v6e
    executes a collective as continuation fusions on the TensorCore that also computes ('Continuation Fusion is a
    form of parallelizing compute work with collectives', ``--xla_tpu_overlap_compute_collective_tc``), while
    TPU7x offloads all-gathers, reduce-scatters and all-reduces to its SparseCores by default ('Either one of CF or
    SC can be enabled at a time'; AI-Hypercomputer/maxtext@e591f30 benchmarks/xla_flags_library.py): a core that
    runs the collective is not computing meanwhile, so its time adds to the step."""
    net = d.base.network
    return net is None or net.collective_engine != "compute_core"


def serial_collectives(a: MixArrays, d: DesignBatch) -> MixArrays:
    """``a`` as design batch ``d`` runs it: unchanged where the chip hides collectives (:func:`hides_collectives`),
    else every collective's hideable share counted in full (``member + overlap``, nothing to hide behind)."""
    if a.overlap is None or hides_collectives(d):
        return a
    return a._replace(member=a.member + a.overlap, overlap=None, window=None)


def total_times(ta: TableArrays, t: np.ndarray, hide: bool = True) -> np.ndarray:
    """[O] each row's share of the step from per-instance times ``t`` [O]: count x scale, and each collective
    reduced to its exposed share: ``(1 - f) T`` always, plus the part of the hideable ``f T`` that the
    computation does not cover (``dse.workloads.parallel.Overlap``); with ``hide`` false (a chip that runs its
    collectives on the compute core, :func:`hides_collectives`) every collective in full."""
    total = t * ta.count_scale
    f = ta.overlapped
    if hide and f.any():
        hideable = total * f
        h = hideable.sum()
        if h > 0.0:  # a share so small its time underflows to 0 hides nothing (and must not divide 0 by 0)
            exposed = max(0.0, h - total[ta.compute].sum())
            total = total - hideable + hideable * (exposed / h)
    return total


def _single_table(wl: Workload, d: DesignBatch, o: OpArrays, r: BatchResult, total: np.ndarray | None = None
                  ) -> pd.DataFrame:
    """The workload's operator table with the prediction's columns, built as one block and joined once (a column
    set at a time costs a pandas insert each: ~8 ms per table, ``dse explore`` pays it per workload per update)."""
    levels = d.level_names
    names = np.array(bound_names(levels))
    src = wl.ops
    flops = src["flops"].to_numpy(dtype=float)
    compulsory = (src["bytes_read"] + src["bytes_written"]).to_numpy(dtype=float)
    t = r.time[0]
    n = len(src)
    col: dict[str, Any] = {"time_s": t,
                           "total_time_s": total_times(table_arrays(src), t) if total is None else total,
                           "t_compute_s": r.t_compute[0]}
    for j, lv in enumerate(levels):
        col[f"traffic_{lv}_bytes"] = r.traffic[0, :, j]
        col[f"t_{lv}_s"] = r.t_memory[0, :, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            col[f"ai_{lv}"] = np.where(r.traffic[0, :, j] > 0, flops / r.traffic[0, :, j], np.inf)
    col["t_network_s"] = r.t_network[0] if r.t_network is not None else np.zeros(n)
    sent = o.to_table_order(sent_per_op(o, d.system)[None, :])[0] if d.system is not None else np.zeros(n)
    col["net_sent_bytes"] = sent  # bytes this chip injects into the network per instance
    col["t_overhead_s"] = r.t_overhead[0]
    pipe = r.t_pipeline[0] if r.t_pipeline is not None else np.zeros(n)
    col["t_pipeline_s"] = pipe  # the part of t_overhead that is a scratchpad pipeline's fill and drain
    with np.errstate(divide="ignore", invalid="ignore"):
        col["ai"] = np.where(compulsory > 0, flops / compulsory, np.inf)
    bound = names[r.bound[0]]
    col["bound"] = bound
    # a level-bound op whose level the on-chip network or die-to-die links hold below its own bandwidth says which
    code = r.bound[0]
    level = (code >= 1) & (code <= len(levels))
    limit = np.array(LEVEL_LIMITS)[d.level_limit[0][np.clip(code - 1, 0, len(levels) - 1)]]
    # an overhead-bound op whose fixed cost is mostly its GEMM pipeline's fill and drain (dse.predict.pipeline)
    col["bound_via"] = np.where(level, limit, np.where((bound == "overhead") & (pipe > 0.5 * r.t_overhead[0]),
                                                       "pipeline", ""))
    with np.errstate(divide="ignore", invalid="ignore"):  # an op decoded for free (unpacks) takes no time
        col["achieved_flops"] = np.where(t > 0, flops / t, 0.0)
    # Attainable roof for this op: min(raw peak, min over levels of raw BW * AI at that level).
    roof_times = np.concatenate([
        np.where(flops > 0, flops / np.where(flops > 0, r.peak[0], 1.0), 0.0)[:, None],
        r.t_memory[0] * d.bw_eff[0][None, :],  # traffic (writes weighted, write_weighted) / raw bandwidth
    ], axis=1)
    t_roof = roof_times.max(axis=1)
    col["roof_flops"] = np.where(t_roof > 0, flops / np.where(t_roof > 0, t_roof, 1.0), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        col["utilization"] = np.where(t > 0, t_roof / t, 0.0)
    col["fill"] = r.fill[0]
    # the unit each op ran on (dse.predict.roofline.on_matrix: the one that finishes it first among those able to)
    col["ran_on"] = np.where(r.on_matrix[0], "matrix", "vector") if r.on_matrix is not None else src["unit"].to_numpy()
    free = o.to_table_order(unpacked(o, d)[None, :])[0]  # decoded in the matrix unit's operand path (unpacks)
    col["ran_on"] = np.where(free, "unpacker", col["ran_on"])
    col["ran_on"] = np.where(src["kind"].to_numpy() == "collective", "network", col["ran_on"])  # a collective's links
    col["clock_fraction"] = r.clock[0] if r.clock is not None else np.ones(n)
    # what stays on chip at the main memory's boundary (dse.predict.traffic residency): shares of the op's
    # activation bytes and of its held tensor (weights or KV cache, the ``held`` column)
    act, held = on_chip_shares(d, o)
    col["act_on_chip"] = o.to_table_order(act)[0]
    col["held_on_chip"] = o.to_table_order(held)[0]
    kind = np.where(bound == "compute", "compute-bound", np.where(bound == "array", "array-bound",
                    np.where(bound == "overhead", "overhead-bound",
                             np.where(bound == "network", "network-bound", "memory-bound"))))
    col["region"] = np.where(col["utilization"] < FAR_BELOW, "far below roof", kind)
    keep = src.drop(columns=[c for c in col if c in src.columns])
    return pd.concat([keep, pd.DataFrame(col, index=src.index)], axis=1)


_DESIGNS: dict[int, tuple[Hardware, DesignBatch]] = {}


def _one_design(hw: Hardware) -> DesignBatch:
    """``DesignBatch.from_hardware(hw)``, kept per template object (templates are frozen) for the last 64."""
    hit = _DESIGNS.get(id(hw))
    if hit is not None and hit[0] is hw:
        return hit[1]
    d = DesignBatch.from_hardware(hw)
    if len(_DESIGNS) >= 64:
        _DESIGNS.pop(next(iter(_DESIGNS)))
    _DESIGNS[id(hw)] = (hw, d)
    return d


def predict(wl: Workload, hw: Hardware | DesignBatch, *, system: System | None = None, chips: int | None = None,
            **plan: Any) -> Prediction:
    """Predict one workload on one hardware template (or a one-design batch), the workload as given.

    A planned workload (``dse.workload(..., plan=...)``: one chip's share with its collectives) runs on
    ``system`` (default: the shipped system of this chip, resized to the plan's chip count); ``time_s`` stays
    the time of one step. ``chips``/``tp``/``pp``/... (any :class:`~dse.workloads.parallel.Plan` field) are
    the older call form: the workload is first built once under that plan
    (:func:`dse.workloads.library.with_plan`), then predicted."""
    d = hw if isinstance(hw, DesignBatch) else _one_design(hw)
    if d.n != 1:
        raise ValueError("predict() takes one design; use evaluate() or mix_times() for batches")
    if chips is not None or plan:
        wl = with_plan(wl, chips=chips, **plan)
    ta = table_arrays(wl.ops)
    o = ta.o
    if wl.chips > 1 or o.coll_idx.size:
        sysm = system or d.system or default_system(d.base)
        if isinstance(sysm, str):
            sysm = load_system(sysm)
        d = d.with_system(sysm.resized(wl.chips))
    r = evaluate(d, o)
    total = total_times(ta, r.time[0], hides_collectives(d))
    return Prediction(workload=wl, hardware=d.base, system=d.system, capacity_bytes=float(d.offchip_capacity[0]),
                      total_time_s=total, build_ops=partial(_single_table, wl, d, o, r, total.copy()))


class MixArrays(NamedTuple):
    """A mix as the predictor reads it; every [O, W] matrix in the sorted op order of ``o``.

    Step time of workload ``w`` = ``T @ member + max(0, T @ overlap - T @ window)``: ``member`` holds
    count x scale (the pipeline bubble) of every row, less the hideable share ``f`` of each collective
    (``dse.workloads.parallel.Overlap``), ``overlap`` that share, ``window`` the computation it hides
    behind (``None`` when nothing overlaps).
    ``counts`` is count alone (energy counts work done, not time waited)."""

    o: OpArrays
    member: np.ndarray
    counts: np.ndarray
    overlap: np.ndarray | None
    window: np.ndarray | None
    #: [W] seconds of host time each workload's step adds (a serving pass's engine, ``Workload.host_s``; the same on
    #: every design), None when none has any: ``dse.predict`` adds it to ``time_s``, so every batch path does too
    host: np.ndarray | None = None


def mix_arrays(mix: Mix) -> MixArrays:
    """Build once per mix and pass to :func:`mix_times` / ``dse.cost.power.mix_energy`` in loops."""
    o = OpArrays.from_table(mix.ops)
    scale = mix.ops["scale"].to_numpy(dtype=float)
    coll = (mix.ops["coll"] != "").to_numpy()
    f = np.where(coll, mix.ops["overlap"].to_numpy(dtype=float), 0.0)
    member = mix.membership(scale * (1.0 - f))[o.perm]
    counts = mix.membership()[o.perm]
    host = np.array([w.host_s for w in mix.workloads], dtype=float)
    host = host if host.any() else None
    if not f.any():
        return MixArrays(o, member, counts, None, None, host)
    window = mix.membership(scale * ~coll)[o.perm]
    return MixArrays(o, member, counts, mix.membership(scale * f)[o.perm], window, host)


def step_times(t: np.ndarray, a: MixArrays) -> np.ndarray:
    """[D, W] step time from [D, O] per-op times (see :class:`MixArrays`), with each workload's host time."""
    out = t @ a.member
    if a.overlap is not None:
        out += np.maximum(0.0, t @ a.overlap - t @ a.window)
    if a.host is not None:
        out += a.host
    return out


def mix_times_bounds(d: DesignBatch, mix: Mix, arrays: MixArrays | None = None, chunk: int | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """([D, W] step times as :func:`mix_times`, [D, W, B] time of each workload's ops under each binding ceiling
    (``bound_names`` order; op time x count, as ``dse.grid.binding_ceiling`` always weighed them)) in one
    lean pass over chunks of designs (:func:`dse.predict.roofline.evaluate_bound`)."""
    a = serial_collectives(arrays or mix_arrays(mix), d)
    n_b = len(bound_names(d.level_names))
    chunk = chunk or chunk_designs(a.o.n)
    W = a.counts.shape[1]
    owner, weight = _owners(a)
    if fused.applies(d, a.o):  # the same terms in one compiled loop (the ``fast`` extra); ``by`` a [D, W, B] view
        times, by = fused.mix_step_bounds(d, a.o, a.member, a.overlap, a.window, owner, weight, n_b)
        if a.host is not None:
            times = times + a.host
    else:
        times = np.empty((d.n, a.member.shape[1]))
        by = np.empty((d.n, a.member.shape[1], n_b))
        for start in range(0, d.n, chunk):
            sl = slice(start, min(start + chunk, d.n))
            t, code = evaluate_bound(d.take(sl), a.o, table_order=False)
            times[sl] = step_times(t, a)
            k = sl.stop - sl.start  # one weighted histogram over (design, workload, ceiling) instead of B matmuls
            idx = np.add(_bin_offsets(a.o, k, W, n_b, owner), code, dtype=np.intp)
            by[sl] = np.bincount(idx.ravel(), weights=(t * weight).ravel(), minlength=k * W * n_b).reshape(k, W, n_b)
    for ap in mix.auto:  # each design at its own best plan, with that plan's ceilings
        parts = [mix_times_bounds(d, sub, arr, chunk) for sub, arr in _auto_chunks(ap)]
        tc, bc = np.concatenate([t for t, _ in parts], axis=1), np.concatenate([b for _, b in parts], axis=1)
        pick, ok = auto_pick(tc, ap.memory, d.offchip_capacity)
        rows = np.flatnonzero(ok)
        times[rows, ap.index] = tc[rows, pick[ok]]
        by[rows, ap.index] = bc[rows, pick[ok]]
    return times, by


def binding_summary(by: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From ``by`` [D, W, B] of :func:`mix_times_bounds`: ([W, D] int8 each workload's binding ceiling, the one under
    which its ops spend the most time, the first on ties; [D] int8 the mix's: the ceiling with the largest share
    ``sum_w weights_w x by[d, w, b] / sum_b by[d, w, b]``; [D] that share)."""
    byT = by.transpose(1, 2, 0)  # [W, B, D]: each ceiling's times of a workload a row over the designs
    share = np.einsum("wbd,w->bd", byT / byT.sum(axis=1, keepdims=True), weights)
    return byT.argmax(axis=1).astype(np.int8), share.argmax(axis=0).astype(np.int8), share.max(axis=0)


def mix_bindings(d: DesignBatch, mix: Mix, weights: np.ndarray, arrays: MixArrays | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """([D, W] step times, then :func:`binding_summary` of the ceilings' times weighted by ``weights`` [W]) in one
    pass; the compiled path (``dse.predict.fused``) never builds the [D, W, B] array."""
    a = serial_collectives(arrays or mix_arrays(mix), d)
    if not mix.auto and fused.applies(d, a.o):
        return fused.mix_step_bindings(d, a.o, a.member, a.overlap, a.window, *_owners(a),
                                       len(bound_names(d.level_names)), np.asarray(weights, dtype=float))
    times, by = mix_times_bounds(d, mix, a)
    return (times, *binding_summary(by, np.asarray(weights, dtype=float)))


def _owners(a: MixArrays) -> tuple[np.ndarray, np.ndarray]:
    """([O] the workload each row of a mix's table belongs to (one each), [O] its count there)."""
    owner = a.counts.argmax(axis=1)
    return owner, a.counts[np.arange(a.o.n), owner]


def _bin_offsets(o: OpArrays, k: int, W: int, n_b: int, owner: np.ndarray) -> np.ndarray:
    """[k, O] intp histogram bin of (design row, owning workload) before the ceiling code is added:
    ``row x W x B + owner x B``, kept in ``o.cache`` per chunk size (every chunk of a batch reuses it)."""
    key = ("bin-offsets", k, W, n_b, owner.tobytes())
    hit = o.cache.get(key)
    if hit is None:
        hit = (np.arange(k, dtype=np.intp) * (W * n_b))[:, None] + (owner * n_b).astype(np.intp)[None, :]
        hit.flags.writeable = False
        o.cache[key] = hit
    return hit

#: bytes of one [chunk, O] float64 temporary (512 KiB): the few live ones stay within a core's L2 cache (2 MiB here) and
#: below the sizes glibc hands back to the system on free, so the predictor's ~20 array steps run from cache instead
#: of faulting in fresh pages (issue 17: 384 KiB -> 512 KiB cut the fixed per-chunk Python cost by a quarter,
#: ~8 % of mix_times; at >= 640 KiB chunks some runs fault ~6,000 pages per call and take 2x as long)
CHUNK_BYTES = 1 << 19


def chunk_designs(n_ops: int, chunk_bytes: int = CHUNK_BYTES) -> int:
    """Designs per chunk so that one [chunk, n_ops] float64 array takes about ``chunk_bytes`` (at least 16)."""
    return max(16, chunk_bytes // (8 * max(n_ops, 1)))


def mix_times(d: DesignBatch, mix: Mix, chunk: int | None = None, arrays: MixArrays | None = None,
              choices: dict[int, tuple[np.ndarray, np.ndarray]] | None = None) -> np.ndarray:
    """[D, W] seconds per step of each workload of ``mix`` on each design (chunked over designs; the chunk
    defaults to :func:`chunk_designs` of the operator count). A ``plan: auto`` entry takes each design's fastest
    candidate that fits; ``choices``, when given, receives per entry index ([D] candidate, [D] whether one fits)."""
    a = serial_collectives(arrays or mix_arrays(mix), d)
    out = np.empty((d.n, a.member.shape[1]))
    chunk = chunk or chunk_designs(a.o.n)
    if fused.applies(d, a.o):  # the same terms in one compiled loop (the ``fast`` extra)
        out[:] = fused.mix_step_times(d, a.o, a.member, a.overlap, a.window)
        if a.host is not None:
            out += a.host
    else:
        for start in range(0, d.n, chunk):
            sl = slice(start, min(start + chunk, d.n))
            out[sl] = step_times(evaluate_times(d.take(sl), a.o, table_order=False), a)
    for ap in mix.auto:  # each design at its own best plan
        tc = auto_times(d, ap, chunk)
        pick, ok = auto_pick(tc, ap.memory, d.offchip_capacity)
        out[ok, ap.index] = tc[np.flatnonzero(ok), pick[ok]]
        if choices is not None:
            choices[ap.index] = (pick, ok)
    return out


#: candidate workloads per :class:`MixArrays` (:func:`candidate_mixes`): one mix of many alternatives (the plans of
#: ``dse plan``, of a ``plan: auto`` entry) holds an [ops, workloads] membership matrix that grows as the square of
#: their number (Mixtral on 8 H100, 2616 candidate plans: 7 GB; on 16 the process was killed)
CANDIDATE_CHUNK = 128


def candidate_mixes(wls: list[Any]) -> list[tuple[Mix, MixArrays]]:
    """``wls`` as mixes of at most :data:`CANDIDATE_CHUNK` workloads, in order, each with its :class:`MixArrays`."""
    subs = [Mix.of(list(wls[i:i + CANDIDATE_CHUNK])) for i in range(0, len(wls), CANDIDATE_CHUNK)]
    return [(m, mix_arrays(m)) for m in subs]


def _auto_chunks(ap: Any) -> list[tuple[Mix, MixArrays]]:
    """:func:`candidate_mixes` of a ``plan: auto`` entry's candidates, built once per ``AutoPlan``."""
    if "chunks" not in ap.cache:
        ap.cache["chunks"] = candidate_mixes(list(ap.candidates.workloads))
    return ap.cache["chunks"]


def auto_times(d: DesignBatch, ap: Any, chunk: int | None = None) -> np.ndarray:
    """[D, P] step time of each candidate plan of a ``plan: auto`` entry on each design (candidate order)."""
    return np.concatenate([mix_times(d, sub, chunk, arr) for sub, arr in _auto_chunks(ap)], axis=1)


def auto_pick(tc: np.ndarray, memory: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """([D] index of the fastest candidate plan whose per-chip footprint ``memory`` [P] fits ``capacity`` [D], [D]
    whether one fits) from the candidates' step times ``tc`` [D, P]. Equal times pick the first (the candidates come
    simplest first)."""
    fits = memory[None, :] <= capacity[:, None]
    masked = np.where(fits, tc, np.inf)
    pick = masked.argmin(axis=1)
    return pick, fits.any(axis=1)


def auto_choice(d: DesignBatch, mix: Mix) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """For each ``plan: auto`` entry of ``mix`` (by its index): ([D] chosen candidate, [D] whether any fits)."""
    out = {}
    for ap in mix.auto:
        out[ap.index] = auto_pick(auto_times(d, ap), ap.memory, d.offchip_capacity)
    return out
