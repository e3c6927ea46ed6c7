"""Traffic per memory level: how many bytes cross each level's boundary for each op on each design.

Level ``l`` serves the traffic the storage inside it cannot keep. The reuse capacity ``S`` inside
level 0 is the register/accumulator storage of one core; inside level ``l >= 1`` it is one instance
of level ``l-1`` (a private L1 is per core, a shared L2 is whole), or of a cluster of them that
multicasts its tiles (``reuse_group``). Models (``docs/design.md``):

* ``tiled`` (GEMM, conv): square output tiles of side ``t = sqrt(S / (e_a + e_b + e_out))``
  elements, capped by ``M`` and ``N``; A is re-read once per column block and B once per row
  block: ``traffic = A*ceil(N/t_n) + B*ceil(M/t_m) + C``. Never below the compulsory A + B + C.
  This is the classic tiled upper bound matching Hong and Kung's lower bound
  ``~2*M*N*K*e/sqrt(S/e)`` up to a constant (Hong & Kung, STOC 1981).
* ``attention`` (flash-style, Dao et al., NeurIPS 2022): Q tiles of ``t_q = S / (4*d*e)`` rows
  stream K and V once each: ``traffic = Q + O + (K + V)*ceil(M/t_q)``. Where the storage inside the level is a
  core's own, a tile stacks at most ``head_rows`` query rows (one query head's, for a kernel that runs a CTA per
  query head of a GQA group: each re-reads its KV head there, while a shared L2 serves the repeats).
* ``stream`` (elementwise, norm, softmax, pool, embedding): every byte once at every level;
  an op fused into its producer never reaches off-chip levels.

Ops are held sorted by traffic model so each model works on a contiguous slice (no gathers);
``OpArrays.perm`` maps back to the table's row order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import get_args

import numpy as np
import pandas as pd

from dse.hardware.designs import DesignBatch
from dse.units import DTYPE_INDEX, GemmKernel
from dse.workloads.ops import attention_ctas

REUSE_CODES = {"tiled": 0, "attention": 1, "stream": 2}
#: ``gemm_kernel`` column -> code, by the names' order in :data:`dse.units.GemmKernel` (``auto`` first: 0, as is an
#: empty cell, the template's ``compute.matrix.gemm_kernel``)
GEMM_KERNEL_CODES = {"": 0} | {name: code for code, name in enumerate(get_args(GemmKernel))}


@dataclass(frozen=True)
class OpArrays:
    """The operator-table columns the predictor needs, as ``[O]`` arrays sorted by traffic model.

    Row ``i`` here is row ``perm[i]`` of the table; :meth:`to_table_order` undoes the sort.
    """

    perm: np.ndarray
    flops: np.ndarray
    count: np.ndarray
    M: np.ndarray
    N: np.ndarray
    a_bytes: np.ndarray
    b_bytes: np.ndarray
    c_bytes: np.ndarray
    tile_elem_bytes: np.ndarray  # e_a + e_b + e_out
    head_bytes: np.ndarray  # attention: 4 * head_dim * e_a (bytes per query row of a flash tile)
    compulsory: np.ndarray  # bytes_read + bytes_written
    matrix: np.ndarray  # bool: runs on the matrix unit
    dtype_idx: np.ndarray  # int index into DTYPES
    fused: np.ndarray  # bool
    eager: np.ndarray  # bool: dispatched one at a time by a host framework
    tiled: slice
    attn: slice
    stream: slice
    # Collective rows (``coll`` != ""), in sorted order: their positions and what the network models need.
    coll_idx: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    coll: tuple[str, ...] = ()
    net_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    group: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    stride: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    cache: dict = field(default_factory=dict, compare=False, repr=False)  # network coefficients per system
    # CTAs of a fused attention kernel (ops.attention_ctas) and of the softmax inside it; 0 elsewhere
    units: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # for the softmax row inside a fused attention kernel: the (sorted) index of its attention row; -1 elsewhere
    kernel_of: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    K: np.ndarray = field(default_factory=lambda: np.zeros(0))  # reduction length (GEMM/conv)
    batch: np.ndarray = field(default_factory=lambda: np.zeros(0))  # independent products of a GEMM row
    elem_ab: np.ndarray = field(default_factory=lambda: np.zeros(0))  # mean operand element bytes (e_a + e_b)/2
    # GEMM kernel of each row (ops.GemmKernel): GEMM_KERNEL_CODES, 0 where the template's default applies
    gemm_kernel: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    # attention rows: the query rows a tile may stack (``head_rows``: M, or one query head's rows where a kernel runs
    # a CTA per query head, ``attention_gqa: per_head``); inf elsewhere
    head_rows: np.ndarray = field(default_factory=lambda: np.zeros(0))
    kind: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))  # op kind (gemm, conv, attention, ...)

    @classmethod
    def from_table(cls, ops: pd.DataFrame) -> OpArrays:
        reuse = ops["reuse"].map(REUSE_CODES)
        if reuse.isna().any():
            bad = sorted(set(ops["reuse"]) - set(REUSE_CODES))
            raise ValueError(f"unknown reuse model(s) {bad}; accepted: {sorted(REUSE_CODES)}")
        codes = reuse.to_numpy(dtype=int)
        perm = np.argsort(codes, kind="stable")
        codes = codes[perm]
        s = ops.iloc[perm]

        def f(col: str) -> np.ndarray:
            return s[col].to_numpy(dtype=float)

        bounds = np.searchsorted(codes, [0, 1, 2, 3])
        coll = s["coll"].to_numpy() if "coll" in s.columns else np.full(len(s), "")
        cidx = np.flatnonzero(coll != "")
        net = {}
        if cidx.size:
            net = dict(coll_idx=cidx, coll=tuple(str(c) for c in coll[cidx]),
                       net_bytes=s["net_bytes"].to_numpy(dtype=float)[cidx],
                       group=s["group"].to_numpy(dtype=int)[cidx], stride=s["stride"].to_numpy(dtype=int)[cidx])
        kind = s["kind"].to_numpy() if "kind" in s.columns else np.full(len(s), "")
        in_kernel = (codes == REUSE_CODES["attention"]) | ((kind == "softmax") & s["fused"].to_numpy(dtype=bool))
        bt = s["batch"].to_numpy(dtype=float) if "batch" in s.columns else np.ones(len(s))
        attn = codes == REUSE_CODES["attention"]
        given = f("ctas") if "ctas" in s.columns else np.zeros(len(s))  # tables from before the column: by K
        ctas = np.where(given > 0, given,
                        np.where(attn, attention_ctas(np.maximum(bt, 1.0), f("M"), f("K")), np.maximum(bt, 1.0)))
        gk = s["gemm_kernel"].map(GEMM_KERNEL_CODES).fillna(0).to_numpy(dtype=int) if "gemm_kernel" in s.columns \
            else np.zeros(len(s), dtype=int)  # tables from before the column: the template's kernels
        hr = f("head_rows") if "head_rows" in s.columns else np.zeros(len(s))  # tables from before it: M
        return cls(**net, units=np.where(in_kernel, ctas, 0.0), kernel_of=_kernel_links(ops, perm), gemm_kernel=gk,
            kind=np.asarray(kind, dtype=object),
            head_rows=np.where(attn, np.where(hr > 0, hr, np.maximum(f("M"), 1.0)), np.inf),
            batch=np.maximum(bt, 1.0),
            K=np.maximum(f("K"), 1), elem_ab=(f("elem_a") + f("elem_b")) / 2,
            perm=perm, flops=f("flops"), count=f("count"), M=np.maximum(f("M"), 1), N=np.maximum(f("N"), 1),
            a_bytes=f("a_bytes"), b_bytes=f("b_bytes"), c_bytes=f("c_bytes"),
            tile_elem_bytes=f("elem_a") + f("elem_b") + f("elem_out"),
            head_bytes=4.0 * f("N") * f("elem_a"),
            compulsory=f("bytes_read") + f("bytes_written"),
            matrix=(s["unit"] == "matrix").to_numpy(),
            dtype_idx=s["dtype"].map(DTYPE_INDEX).to_numpy(dtype=int),
            fused=s["fused"].to_numpy(dtype=bool),
            eager=(s["eager"].to_numpy(dtype=bool) if "eager" in s.columns else np.zeros(len(s), dtype=bool)),
            tiled=slice(bounds[0], bounds[1]), attn=slice(bounds[1], bounds[2]), stream=slice(bounds[2], bounds[3]),
        )

    @property
    def n(self) -> int:
        return int(self.flops.shape[0])

    def to_table_order(self, arr: np.ndarray, axis: int = 1) -> np.ndarray:
        """Reorder an array whose ``axis`` runs over ops from sorted order back to table order."""
        inv = np.empty_like(self.perm)
        inv[self.perm] = np.arange(self.perm.size)
        return np.take(arr, inv, axis=axis)


def _kernel_links(ops: pd.DataFrame, perm: np.ndarray) -> np.ndarray:
    """[O] sorted index of the attention row whose kernel each in-kernel softmax row runs in, -1 elsewhere:
    ``dse.workloads.ops.attention`` emits the softmax right after its attention row, with the same CTAs (a
    softmax row that does not follow one keeps -1)."""
    n = len(ops)
    link = np.full(n, -1, dtype=int)
    if n < 2 or "ctas" not in ops.columns:
        return link
    kind = ops["kind"].to_numpy()
    reuse = ops["reuse"].to_numpy()
    ctas = ops["ctas"].to_numpy()
    fused = ops["fused"].to_numpy(dtype=bool)
    j = np.arange(1, n)
    ok = (kind[j] == "softmax") & fused[j] & (reuse[j - 1] == "attention") & (ctas[j] == ctas[j - 1]) & (ctas[j] > 0)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size)  # table row -> sorted index
    link[j[ok]] = inv[j[ok] - 1]
    return link[perm]


def inner_capacity(d: DesignBatch) -> np.ndarray:
    """[D, L] bytes of reuse storage just inside each level: one instance of the level inside (a per-core level has
    one per core of the design, ``DesignBatch.level_instances``), times its
    ``reuse_group`` (instances that share tiles by multicast, e.g. a Hopper cluster of 2 SMs)."""
    inner = np.empty_like(d.capacity)
    inner[:, 0] = d.reg_bytes
    inner[:, 1:] = d.capacity[:, :-1] / d.level_instances[:, :-1] * d.reuse_group[None, :-1]
    return inner


def level_traffic(S: np.ndarray, o: OpArrays, offchip: bool, private: bool = False) -> np.ndarray:
    """[K, O] bytes crossing one level, for ``K`` inner capacities ``S`` [K] (bytes). ``private``: the storage
    inside the level is a core's own (registers, an SM's shared memory), so a fused attention kernel's query tile
    there holds at most the rows one of its CTAs stacks (``OpArrays.head_rows``: one query head's where a CTA runs
    one head); a shared inner level (the L2) keeps the tiles of the CTAs that run side by side, which read the same
    KV head once between them."""
    out = np.empty((S.shape[0], o.n))
    Sc = S[:, None]
    ti = o.tiled
    if ti.stop > ti.start:  # the formula below, step by step in place (the same roundings, no temporaries)
        teb, a_cls, a_N, a_inv, b_cls, b_M, b_inv = _tile_classes(o)
        t = np.sqrt(Sc / teb)  # [K, classes] tile side
        np.maximum(t, 1.0, out=t)
        a_passes = np.take(t, a_cls, axis=1)  # ceil(N / min(t, N)), once per distinct (class, N)
        np.minimum(a_passes, a_N, out=a_passes)
        np.divide(a_N, a_passes, out=a_passes)
        np.ceil(a_passes, out=a_passes)
        b_passes = np.take(t, b_cls, axis=1)  # ceil(M / min(t, M)), once per distinct (class, M)
        np.minimum(b_passes, b_M, out=b_passes)
        np.divide(b_M, b_passes, out=b_passes)
        np.ceil(b_passes, out=b_passes)
        tr = np.take(a_passes, a_inv, axis=1)  # A*a_passes + B*b_passes + C per op (row-ordered gathers)
        tr *= o.a_bytes[ti]
        b = np.take(b_passes, b_inv, axis=1)
        b *= o.b_bytes[ti]
        tr += b
        np.add(tr, o.c_bytes[ti], out=out[:, ti])
    at = o.attn
    if at.stop > at.start:
        M = o.M[at]
        tq = np.clip(Sc / o.head_bytes[at], 1.0, np.minimum(M, o.head_rows[at]) if private else M)
        out[:, at] = o.a_bytes[at] + o.c_bytes[at] + o.b_bytes[at] * np.ceil(M / tq)
    st = o.stream
    out[:, st] = np.where(o.fused[st], 0.0, o.compulsory[st]) if offchip else o.compulsory[st]
    return out


def _tile_classes(o: OpArrays) -> tuple[np.ndarray, ...]:
    """Tiled ops share a few ``e_a + e_b + e_out`` values (one sqrt per value) and fewer (value, N) and (value, M)
    pairs than ops (one pass count per pair): the distinct values, each pair's value index and N or M, and each
    op's pair, kept in ``o.cache``."""
    if "tile-classes" not in o.cache:
        ti = o.tiled
        teb, cls = np.unique(o.tile_elem_bytes[ti], return_inverse=True)
        out: list[np.ndarray] = [teb]
        for dim in (o.N[ti], o.M[ti]):
            pairs, inv = np.unique(np.stack([cls.astype(float), dim]), axis=1, return_inverse=True)
            out += [pairs[0].astype(np.intp), np.ascontiguousarray(pairs[1]), inv.reshape(-1)]
        o.cache["tile-classes"] = tuple(out)
    return o.cache["tile-classes"]


def per_level(d: DesignBatch, o: OpArrays):
    """Yield (level, traffic [D or 1, O]): levels whose inner capacity is the same for every design
    are computed once and broadcast (the common case in a search that sizes one level)."""
    S = inner_capacity(d)
    for lv in range(S.shape[1]):
        col = S[:, lv]
        private = lv == 0 or bool(d.instances[lv - 1] > 1)  # registers, or a level with a copy per core
        if np.all(col == col[0]):
            yield lv, shared_level_traffic(float(col[0]), o, bool(d.offchip[lv]), private)
        else:
            yield lv, level_traffic(col, o, bool(d.offchip[lv]), private)


def shared_level_traffic(S: float, o: OpArrays, offchip: bool, private: bool = False) -> np.ndarray:
    """[1, O] :func:`level_traffic` of one inner capacity, kept in ``o.cache`` (chunks and trials of a batch
    reuse it; at most 256 capacities are kept). Read-only: callers must not write into it."""
    key = ("traffic", S, offchip, private)
    row = o.cache.get(key)
    if row is None:
        if len(o.cache) > 256:
            for k in [k for k in o.cache if k[0] == "traffic"]:
                del o.cache[k]
        row = level_traffic(np.array([S]), o, offchip, private)
        row.flags.writeable = False
        o.cache[key] = row
    return row


def traffic(d: DesignBatch, o: OpArrays) -> np.ndarray:
    """[D, O, L] bytes crossing each level for one instance of each op (sorted op order)."""
    out = np.empty((d.n, o.n, d.capacity.shape[1]))
    for lv, tr in per_level(d, o):
        out[:, :, lv] = tr
    return out


def max_memory_time(d: DesignBatch, o: OpArrays, out: np.ndarray | None = None) -> np.ndarray:
    """Max over levels of traffic / (BW * eta), no [D, O, L] temporary; ``out`` [D, O] <- max(out, that).

    Without ``out`` a level whose traffic and bandwidth are the same on every design is computed once
    as a shared [1, O] row; the result is [1, O] when every level is shared, else [D, O]."""
    rate = d.bandwidth * d.bw_eff
    shared = full = None
    later = []  # a shared [1, O] traffic over per-design bandwidths (a per-core level): after the fresh ones
    for lv, tr in per_level(d, o):
        bw = rate[:, lv : lv + 1]
        if out is None and tr.shape[0] == 1 and bw.size and (bw == bw[0]).all():
            x = tr / bw[:1]
            shared = x if shared is None else np.maximum(shared, x, out=shared)
        elif tr.flags.writeable and tr.shape == (bw.shape[0], o.n):  # a fresh per-design level, divided in place
            x = np.divide(tr, bw, out=tr)
            full = x if full is None else np.maximum(full, x, out=full)
        else:
            later.append((tr, bw))
    for tr, bw in later:  # into one scratch [D, O] kept in o.cache: no fresh pages per chunk
        if full is None:
            full = tr / bw
            continue
        key = ("scratch", full.shape)
        scratch = o.cache.get(key)
        if scratch is None:
            scratch = o.cache[key] = np.empty(full.shape)
        np.maximum(full, np.divide(tr, bw, out=scratch), out=full)
    if out is not None:
        return np.maximum(out, full, out=out) if full is not None else out
    if full is None:
        return shared if shared is not None else np.zeros((1, o.n))
    return np.maximum(full, shared, out=full) if shared is not None else full
