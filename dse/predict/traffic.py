"""Traffic per memory level: how many bytes cross each level's boundary for each op on each design.

Level ``l`` serves the traffic the storage inside it cannot keep. The reuse capacity ``S`` inside
level 0 is the register/accumulator storage of one core; inside level ``l >= 1`` it is one instance
of level ``l-1`` (a private L1 is per core, a shared L2 is whole), or of a cluster of them that
multicasts its tiles (``reuse_group``), or one instance of a memory level further inside where that is larger
(a smaller level in between is a staging buffer the tiles stream through: :func:`inner_capacity`).
Models (``docs/design.md``):

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

**Residency** (:func:`residency_keep`). Bytes are charged at the level they come from. Level ``l`` is spared the
bytes of a tensor that stays in an on-chip level inside it that keeps tensors (``DesignBatch.resident_share``: a
scratchpad or a shared cache; a per-core level only where it is a scratchpad that says ``keeps: step`` or ``steps``,
its copies together holding the tensor, each core reading back the slice it wrote, as the network's local traffic
has it), of capacity ``R_l`` = the largest ``capacity x resident_share`` among them:

* an op's activations (every byte that is not ``held``) stay when they fit together, ``live <= R_l``: its
  producer wrote its input there and its consumer reads its output there (the compiler keeps a tensor in the
  innermost level that holds it until its last use: XLA's memory-space assignment into TPU VMEM/CMEM,
  Jouppi et al., ISCA 2023 Sec. 3; a GPU's L2 keeps what the next kernel re-reads);
* the held tensors (weights, then the KV cache; ``dse.workloads.ops.HELD``) stay across steps in the room
  the largest resident activation set leaves: in a scratchpad the compiler pins as much as fits (the fraction
  ``min(1, room / bytes)`` of each), as SRAM-rich chips run a whole model from on-chip memory once it fits
  (Groq TSP, Abts et al., ISCA 2020; Cerebras WSE weight streaming off, Graphcore IPU);
* a cache (a GPU's L2) chooses nothing: it keeps a step's tensors, activations and held ones alike, only when the
  step's whole working set fits (``max live + weights + kv <= R``: a benchmark loop over one buffer, a small
  model), since a least-recently-used cache re-reading a cyclic set larger than itself misses on every access
  (Qureshi et al., "Adaptive Insertion Policies for High Performance Caching", ISCA 2007, Sec. 2) and what
  streams through it evicts the rest.

The scenario's ``residency`` (``auto``, ``none``, ``weights``, ``activations``) says which kinds may stay.

Ops are held sorted by traffic model so each model works on a contiguous slice (no gathers);
``OpArrays.perm`` maps back to the table's row order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, get_args

import numpy as np
import pandas as pd

from dse.hardware.designs import DesignBatch
from dse.units import BLOCK_FORMATS, DTYPE_INDEX, GemmKernel
from dse.workloads.ops import KEEPS_ACTIVATIONS, KEEPS_HELD, attention_ctas

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
    written: np.ndarray  # bytes_written (what a level with a write bandwidth of its own absorbs, write_weighted)
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
    # convolution rows: the kernel's taps (``dse.workloads.ops`` ``taps``), the K of one per-tap matmul being K / taps;
    # 1 elsewhere
    taps: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # causal fused attention rows: whole-matrix pairs per counted pair (``dse.workloads.ops`` ``full_ratio``), the
    # FLOPs a kernel that computes masked blocks executes per useful one; 1 elsewhere
    full_ratio: np.ndarray = field(default_factory=lambda: np.zeros(0))
    kind: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))  # op kind (gemm, conv, attention, ...)
    # residency (residency_keep): what a row's held tensor is (0 none, 1 weights, 2 KV cache) and its bytes per
    # instance; the row's activation bytes (all but the held ones); which kinds its policy lets stay; its workload
    # (index into fp_weights / fp_kv, the bytes of that workload's weights and KV cache on one chip)
    held: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    held_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    live: np.ndarray = field(default_factory=lambda: np.zeros(0))
    stay_act: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    stay_held: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    fp_group: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    single: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # its workload is one kernel
    fp_weights: np.ndarray = field(default_factory=lambda: np.zeros(1))
    fp_kv: np.ndarray = field(default_factory=lambda: np.zeros(1))
    # a weight-only GEMM's ``.dequant`` row of a block-scaled format: the format's index into DTYPES (a matrix unit
    # that ``unpacks`` it decodes it for free, ``dse.predict.roofline.unpacked``); -1 elsewhere
    decodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))

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
        bt = s["batch"].to_numpy(dtype=float) if "batch" in s.columns else np.ones(len(s))
        attn = codes == REUSE_CODES["attention"]
        given = f("ctas") if "ctas" in s.columns else np.zeros(len(s))  # tables from before the column: by K
        # the softmax inside a fused attention kernel (its CTAs given); a softmax fused into its neighbours by
        # fuse_elementwise runs as its own grid (it took units = 1: one SM of an A100, a prefill 2x slower fused)
        in_kernel = attn | ((kind == "softmax") & s["fused"].to_numpy(dtype=bool) & (given > 0))
        ctas = np.where(given > 0, given,
                        np.where(attn, attention_ctas(np.maximum(bt, 1.0), f("M"), f("K")), np.maximum(bt, 1.0)))
        gk = s["gemm_kernel"].map(GEMM_KERNEL_CODES).fillna(0).to_numpy(dtype=int) if "gemm_kernel" in s.columns \
            else np.zeros(len(s), dtype=int)  # tables from before the column: the template's kernels
        hr = f("head_rows") if "head_rows" in s.columns else np.zeros(len(s))  # tables from before it: M
        return cls(**net, **_residency_columns(s, f), units=np.where(in_kernel, ctas, 0.0), decodes=_decodes(s),
            kernel_of=_kernel_links(ops, perm), gemm_kernel=gk,
            kind=np.asarray(kind, dtype=object),
            head_rows=np.where(attn, np.where(hr > 0, hr, np.maximum(f("M"), 1.0)), np.inf),
            full_ratio=np.maximum(f("full_ratio"), 1.0) if "full_ratio" in s.columns else np.ones(len(s)),
            taps=np.maximum(f("taps"), 1.0) if "taps" in s.columns else np.ones(len(s)),
            batch=np.maximum(bt, 1.0),
            K=np.maximum(f("K"), 1), elem_ab=(f("elem_a") + f("elem_b")) / 2,
            perm=perm, flops=f("flops"), count=f("count"), M=np.maximum(f("M"), 1), N=np.maximum(f("N"), 1),
            a_bytes=f("a_bytes"), b_bytes=f("b_bytes"), c_bytes=f("c_bytes"),
            tile_elem_bytes=f("elem_a") + f("elem_b") + f("elem_out"),
            head_bytes=4.0 * f("N") * f("elem_a"),
            compulsory=f("bytes_read") + f("bytes_written"), written=f("bytes_written"),
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


HELD_CODES = {"": 0, "weights": 1, "kv_cache": 2}


def _decodes(s: pd.DataFrame) -> np.ndarray:
    """:attr:`OpArrays.decodes` of the sorted table ``s``: the ``.dequant`` rows of block-scaled weights
    (``dse.workloads.ops.weight_gemm`` names the format in their ``dtype_b``)."""
    out = np.full(len(s), -1, dtype=int)
    if "dtype_b" not in s.columns:
        return out
    wdt = s["dtype_b"].astype(str).to_numpy()
    rows = s["name"].astype(str).str.endswith(".dequant").to_numpy() & np.isin(wdt, list(BLOCK_FORMATS))
    out[rows] = [DTYPE_INDEX[w] for w in wdt[rows]]
    return out


def _residency_columns(s: pd.DataFrame, f) -> dict[str, np.ndarray]:
    """:class:`OpArrays`' residency fields from the sorted table ``s`` (``dse.workloads.ops.with_residency``'s
    columns; a table without them holds nothing and lets its activations stay, the ``auto`` policy)."""
    n = len(s)
    held = (s["held"].map(HELD_CODES).fillna(0).to_numpy(dtype=np.int8) if "held" in s.columns
            else np.zeros(n, dtype=np.int8))
    hb = np.where(held > 0, f("held_bytes"), 0.0) if "held_bytes" in s.columns else np.zeros(n)
    policy = s["residency"].fillna("auto").to_numpy() if "residency" in s.columns else np.full(n, "auto")
    group = s["workload"].to_numpy(dtype=np.intp) if "workload" in s.columns else np.zeros(n, dtype=np.intp)
    g = int(group.max()) + 1 if n else 1
    fp_w, fp_kv = np.zeros(g), np.zeros(g)
    for col, out, code in (("footprint_weights", fp_w, 1), ("footprint_kv", fp_kv, 2)):
        if col in s.columns:
            out[group] = f(col)
        else:  # the held bytes the rows read, once each
            np.add.at(out, group, np.where(held == code, hb * f("count"), 0.0))
    kernels = np.zeros(g)  # launched kernels per workload (count applied): one means a one-kernel step
    np.add.at(kernels, group, np.where(s["fused"].to_numpy(dtype=bool), 0.0, f("count")))
    return dict(held=held, held_bytes=hb, live=np.maximum(f("bytes_read") + f("bytes_written") - hb, 0.0),
                single=(kernels <= 1)[group],
                stay_act=np.isin(policy, KEEPS_ACTIVATIONS), stay_held=np.isin(policy, KEEPS_HELD),
                fp_group=group, fp_weights=fp_w, fp_kv=fp_kv)


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
    """[D, L] bytes of reuse storage inside each level: one instance of the level inside (a per-core level has
    one per core of the design, ``DesignBatch.level_instances``), times its
    ``reuse_group`` (instances that share tiles by multicast, e.g. a Hopper cluster of 2 SMs), or the largest such
    instance of any level further inside where that is bigger: a level smaller than one inside it is a staging
    buffer the tiles stream through, and the outer level is re-read only as often as the storage that keeps the tiles
    makes it (a 1 KiB shared buffer between 512 KiB per-core scratchpads and HBM leaves HBM's reuse to the
    scratchpads, so adding it never makes HBM traffic grow)."""
    inner = np.empty_like(d.capacity)
    inner[:, 0] = d.reg_bytes
    # a design with fewer cores than the template's multicast group pools what it has
    n = d.level_instances[:, :-1]
    inner[:, 1:] = d.capacity[:, :-1] / n * np.minimum(d.reuse_group[None, :-1], n)
    inner[:, 1:] = np.maximum.accumulate(inner[:, 1:], axis=1)  # memory levels; the registers are the accumulators
    return inner


def level_traffic(S: np.ndarray, o: OpArrays, offchip: bool, private: bool = False,
                  keep: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """[K, O] bytes crossing one level, for ``K`` inner capacities ``S`` [K] (bytes). ``private``: the storage
    inside the level is a core's own (registers, an SM's shared memory), so a fused attention kernel's query tile
    there holds at most the rows one of its CTAs stacks (``OpArrays.head_rows``: one query head's where a CTA runs
    one head); a shared inner level (the L2) keeps the tiles of the CTAs that run side by side, which read the same
    KV head once between them. ``keep`` ([K or 1, O] each, :func:`residency_keep`): the share of each op's
    activation bytes and of its held bytes that still cross the level (0 where they stay on chip inside it)."""
    out = np.empty((S.shape[0], o.n))
    Sc = S[:, None]
    ka, kh = keep if keep is not None else (None, None)
    kb = None  # [K, tiled + attention] share of the B operand that crosses: held, or an activation
    if keep is not None and o.attn.stop > o.tiled.start:
        mat = slice(o.tiled.start, o.attn.stop)
        held = o.held[mat] > 0
        if held.all():  # every GEMM/attention B is a weight or the KV cache: a view
            kb = kh[:, mat]
        elif not held.any():
            kb = ka[:, mat]
        else:
            kb = _scratch(o, "kb", (ka.shape[0], mat.stop - mat.start))
            np.copyto(kb, ka[:, mat])
            cols = np.flatnonzero(held)
            kb[:, cols] = kh[:, mat.start + cols]
    ti = o.tiled
    if ti.stop > ti.start:  # the formula below, step by step in place (the same roundings, no temporaries)
        _, _, _, a_inv, _, _, b_inv = _tile_classes(o)
        a_passes, b_passes = tile_passes(Sc, o)
        tr = np.take(a_passes, a_inv, axis=1)  # A*a_passes + B*b_passes + C per op (row-ordered gathers)
        tr *= o.a_bytes[ti]
        b = np.take(b_passes, b_inv, axis=1)
        b *= o.b_bytes[ti]
        if keep is None:
            tr += b
            np.add(tr, o.c_bytes[ti], out=out[:, ti])
        else:  # (A*a_passes + C) x ka + B*b_passes x kb
            tr += o.c_bytes[ti]
            tr *= ka[:, ti]
            b *= kb[:, : ti.stop - ti.start]
            np.add(tr, b, out=out[:, ti])
    at = o.attn
    if at.stop > at.start:
        kv = o.b_bytes[at] * kv_passes(Sc, o, private)
        if keep is None:
            out[:, at] = o.a_bytes[at] + o.c_bytes[at] + kv
        else:
            out[:, at] = (o.a_bytes[at] + o.c_bytes[at]) * ka[:, at] + kv * kb[:, at.start - o.tiled.start:]
    st = o.stream
    moved = np.where(o.fused[st], 0.0, o.compulsory[st]) if offchip else o.compulsory[st]
    if keep is None:
        out[:, st] = moved
    else:  # a fused op's bytes never reach an off-chip level; the rest split into activations and held bytes
        held = np.where(moved > 0, o.held_bytes[st], 0.0)
        np.multiply(ka[:, st], moved - held, out=out[:, st])
        cols = np.flatnonzero(held > 0)
        if cols.size:
            out[:, st.start + cols] += held[cols] * kh[:, st.start + cols]
    return out


def tile_passes(Sc: np.ndarray, o: OpArrays) -> tuple[np.ndarray, np.ndarray]:
    """([K, pairs] ``ceil(N / min(t, N))`` per distinct (class, N), [K, pairs] ``ceil(M / min(t, M))`` per distinct
    (class, M)) of the tiled ops for inner capacities ``Sc`` [K, 1]: the tile side ``t = max(1, sqrt(S / (e_a + e_b +
    e_out)))`` (:func:`level_traffic`; ``_tile_classes`` maps each op to its pair)."""
    teb, a_cls, a_N, _, b_cls, b_M, _ = _tile_classes(o)
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
    return a_passes, b_passes


def kv_passes(Sc: np.ndarray, o: OpArrays, private: bool) -> np.ndarray:
    """[K, attention rows] times a flash kernel reads K and V: ``ceil(M / t_q)``, ``t_q = S / (4 d e)`` query rows
    per tile, at least 1, at most ``M`` (or ``head_rows`` where the storage is a core's own; :func:`level_traffic`)."""
    at = o.attn
    M = o.M[at]
    tq = np.clip(Sc / o.head_bytes[at], 1.0, np.minimum(M, o.head_rows[at]) if private else M)
    return np.ceil(M / tq)


class Resident(NamedTuple):
    """The storage that keeps tensors on chip inside each level, ``[D, L]`` each (:func:`resident_capacity`)."""

    R: np.ndarray  # bytes that may stay (capacity x resident share)
    cache: np.ndarray  # bool: that storage is a cache
    full: np.ndarray  # its whole capacity, bytes
    steps: np.ndarray  # bool: it keeps tensors across steps
    level: np.ndarray | None = None  # int: the index of that storage's level (-1 where none)

    @property
    def storage(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(R, cache, full, steps)``: what decides the traffic (``level`` only names the storage)."""
        return self.R, self.cache, self.full, self.steps


def resident_capacity(d: DesignBatch) -> Resident:
    """The resident storage inside each level: ``R_l = max over levels k < l of capacity_k x resident_share_k``
    (``DesignBatch.resident_share``: 0 off chip and for levels that keep only tiles, the per-core default), 0 where
    no on-chip level that keeps tensors lies inside
    (registers do not keep tensors), with that level's kind, whole capacity and whether it keeps tensors across
    steps."""
    L = d.capacity.shape[1]
    out = Resident(np.zeros_like(d.capacity), np.zeros(d.capacity.shape, dtype=bool), np.zeros_like(d.capacity),
                   np.zeros(d.capacity.shape, dtype=bool), np.full(d.capacity.shape, -1, dtype=np.intp))
    share = d.resident_share
    if share is None or not (share > 0).any():
        return out
    eff = d.capacity * share[None, :]
    best = np.zeros(d.n, dtype=np.intp)
    rows = np.arange(d.n)
    for lv in range(1, L):  # a handful of levels
        k = lv - 1
        best = np.where(eff[:, k] > eff[rows, best], k, best)
        out.R[:, lv] = eff[rows, best]
        has = out.R[:, lv] > 0
        out.full[:, lv] = np.where(has, d.capacity[rows, best], 0.0)
        out.cache[:, lv] = d.resident_cache[best] & has
        out.steps[:, lv] = d.resident_steps[best] & has
        out.level[:, lv] = np.where(has, best, -1)
    return out


def resident_room(R: np.ndarray, o: OpArrays) -> tuple[np.ndarray, np.ndarray]:
    """([K, G] bytes of ``R`` [K] each workload's largest resident activation set takes: the largest ``live`` of its
    rows whose policy lets activations stay and that fit, 0 where none fits; [G] its largest ``live`` of all).

    One lookup for every workload: the distinct lives ``U`` of the table (0 first) and, per ``U[j]`` and workload,
    the largest of its lives ``<= U[j]`` are kept in ``o.cache``; ``reserve = table[searchsorted(U, R) - 1]``."""
    U, table, most = room_table(o)
    return table[np.searchsorted(U, R, side="right") - 1], most


def room_table(o: OpArrays) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the distinct lives ``U`` of the table, 0 first; [U, G] each workload's largest live ``<= U[j]``; [G] its
    largest live of all) for :func:`resident_room`, kept in ``o.cache``."""
    key = "residency-live"
    if key not in o.cache:
        G = o.fp_weights.shape[0]
        lives = np.where(o.stay_act, o.live, 0.0)
        U = np.unique(np.concatenate([[0.0], lives]))
        table = np.zeros((U.size, G))
        table[np.searchsorted(U, lives), o.fp_group] = lives  # each row's live at its own place, in its column
        np.maximum.accumulate(table, axis=0, out=table)  # then the largest so far, per workload
        most = np.zeros(G)
        np.maximum.at(most, o.fp_group, o.live)
        o.cache[key] = U, table, most
    return o.cache[key]


class KeepTables(NamedTuple):
    """What decides which bytes stay inside one level, per design (:func:`residency_tables`)."""

    R: np.ndarray  # [K] bytes that may stay
    cache: np.ndarray  # [K] bool: the storage is a cache
    across: np.ndarray  # [K] bool: it keeps tensors across steps
    whole: np.ndarray | None  # [K, G] share of each workload's step a cache serves (None: no cache)
    r: np.ndarray  # [K, 2G] share of workload g's weights (column g) and KV cache (G + g) that stays


def residency_tables(res: Resident, lv: int, o: OpArrays) -> KeepTables:
    """The per-design, per-workload shares of :func:`residency_keep` before they are spread over the ops."""
    R, cache, full, steps = (x[:, lv] for x in res.storage)
    Rc = R[:, None]
    reserve, most = resident_room(R, o)
    room = np.maximum(Rc - reserve, 0.0)  # [K, G]
    w, kv = o.fp_weights[None, :], o.fp_kv[None, :]
    c, across = cache[:, None], steps[:, None]
    whole = None
    with np.errstate(divide="ignore", invalid="ignore"):
        r_w = np.clip(room / np.where(w > 0, w, 1.0), 0.0, 1.0, out=room)  # 1 for a workload without weights
        r_w[:, o.fp_weights <= 0] = 1.0
        r_kv = np.clip((Rc - reserve - w) / np.where(kv > 0, kv, 1.0), 0.0, 1.0)
        r_kv[:, o.fp_kv <= 0] = 1.0
        if c.any():  # a cache: the step's working set ws stays whole up to R, none of it from its whole capacity
            ws = most[None, :] + w + kv
            top = np.maximum(full[:, None], Rc)
            whole = np.where(ws <= Rc, 1.0, np.clip((top - ws) / (top - Rc), 0.0, 1.0))
            r_w, r_kv = np.where(c, whole, r_w), np.where(c, whole, r_kv)
    if not across.all():  # nothing held stays where the level does not keep tensors across steps
        r_w, r_kv = r_w * across, r_kv * across
    return KeepTables(R, cache, steps, whole, np.concatenate([r_w, r_kv], axis=1))


def residency_keep(res: Resident, lv: int, o: OpArrays) -> tuple[np.ndarray, np.ndarray]:
    """([K, O] share of each op's activation bytes, [K, O] share of its held bytes) that still cross level ``lv``
    with the resident storage ``res`` inside it (``R`` bytes may stay, of ``full``; a cache or a scratchpad; kept
    across steps or not), per the module's rules.

    Scratchpad: activations stay where ``live <= R``; where the level keeps tensors across steps, the room
    ``R - reserve`` (:func:`resident_room`) pins ``r_w = min(1, room / weights)`` of the weights and
    ``r_kv = min(1, (room - weights) / kv)`` of the KV cache. Cache: the step's working set
    ``ws = max live + weights + kv`` stays whole while ``ws <= R`` (the resident share) and not at all from
    ``ws >= full``; in between the share it serves falls linearly, ``h = (full - ws) / (full - R)`` (an
    interpolation between the two measured ends, confidence low: an A100's L2 serves most of a 32 MiB working set
    and none of a 40 MiB one, gpu-benches gpu-small-kernels). A one-kernel workload's activations are its step's
    inputs and outputs: they stay only in a level that keeps tensors across steps."""
    kt = residency_tables(res, lv, o)
    Rc, c, across, whole = kt.R[:, None], kt.cache[:, None], kt.across[:, None], kt.whole
    # the share of each op's activation bytes that crosses: live > R in a scratchpad, the part of the step a cache
    # does not serve; [K, O] built in scratch buffers kept in o.cache (no fresh pages per chunk)
    shape = (kt.R.shape[0], o.n)
    ka = _scratch(o, "ka", shape)
    if c.all():
        np.subtract(1.0, np.take(whole, o.fp_group, axis=1), out=ka)
    else:
        np.greater(o.live[None, :], Rc, out=ka, casting="unsafe")
        if c.any():
            np.copyto(ka, 1.0 - np.take(whole, o.fp_group, axis=1), where=c)
    if o.single.any() and not across.all():  # a one-kernel step's inputs and outputs: only across steps
        ka[:, o.single] = np.where(across, ka[:, o.single], 1.0)
    if not o.stay_act.all():
        ka[:, ~o.stay_act] = 1.0
    # held bytes: the share of each held row's tensor that does not stay (1 where its policy keeps it off chip);
    # only the held columns are written: no reader looks at the others
    kh = _scratch(o, "kh", shape)
    cols, idx, pinned = _held_columns(o)
    if cols.size:
        kh[:, cols] = 1.0 - np.take(kt.r, idx, axis=1) * pinned
    return ka, kh


def _held_columns(o: OpArrays) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted-order indices of the rows that hold a tensor, the column of ``[r_w | r_kv]`` each reads, 1 where its
    policy lets it stay else 0), kept in ``o.cache``."""
    key = "residency-held"
    if key not in o.cache:
        cols = np.flatnonzero(o.held > 0)
        idx = o.fp_group[cols] + np.where(o.held[cols] == 2, o.fp_weights.shape[0], 0)
        o.cache[key] = cols, idx, o.stay_held[cols].astype(float)
    return o.cache[key]


def _scratch(o: OpArrays, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """A float64 buffer of ``shape`` kept in ``o.cache`` under ``name`` (its contents are the caller's to overwrite:
    valid until the next call for the same name)."""
    key = ("scratch-" + name, shape)
    buf = o.cache.get(key)
    if buf is None:
        buf = o.cache[key] = np.empty(shape)
    return buf


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


def _resides(o: OpArrays) -> bool:
    """Whether any row of ``o`` may keep a tensor on chip (its policy is not ``none``)."""
    return bool(o.stay_act.any() or (o.stay_held & (o.held > 0)).any())


def per_level(d: DesignBatch, o: OpArrays):
    """Yield (level, traffic [D or 1, O]): levels whose inner capacity (and resident storage) is the same for every
    design are computed once and broadcast (the common case in a search that sizes one level)."""
    S = inner_capacity(d)
    res = resident_capacity(d) if _resides(o) else None
    for lv in range(S.shape[1]):
        yield lv, _level(d, o, S, res, lv)


def level_rows(d: DesignBatch, o: OpArrays, lv: int) -> np.ndarray:
    """[D or 1, O] traffic of level ``lv`` alone (as :func:`per_level` yields it)."""
    return _level(d, o, inner_capacity(d), resident_capacity(d) if _resides(o) else None, lv)


def level_case(d: DesignBatch, o: OpArrays, S: np.ndarray, res: Resident | None, lv: int
               ) -> tuple[np.ndarray | None, bool, bool]:
    """(the level's [1, O] traffic where its inputs are the same on every design, else None; whether the storage
    inside it is a core's own; whether resident storage inside it keeps bytes on chip)."""
    col = S[:, lv]
    private = lv == 0 or bool(d.instances[lv - 1] > 1)  # registers, or a level with a copy per core
    key: tuple = () if res is None or not (res.R[:, lv] > 0).any() else tuple(x[:, lv] for x in res.storage)
    if np.all(col == col[0]) and all(np.all(x == x[0]) for x in key):
        one = Resident(*(x[:1, lv:lv + 1] for x in res.storage)) if key else None
        return shared_level_traffic(float(col[0]), o, bool(d.offchip[lv]), private, one), private, bool(key)
    return None, private, bool(key)


def _level(d: DesignBatch, o: OpArrays, S: np.ndarray, res: Resident | None, lv: int) -> np.ndarray:
    """One level's traffic for :func:`per_level`: shared [1, O] when its inputs are the same on every design."""
    row, private, keep = level_case(d, o, S, res, lv)
    if row is not None:
        return row
    return level_traffic(S[:, lv], o, bool(d.offchip[lv]), private, residency_keep(res, lv, o) if keep else None)


def shared_level_traffic(S: float, o: OpArrays, offchip: bool, private: bool = False,
                         res: Resident | None = None) -> np.ndarray:
    """[1, O] :func:`level_traffic` of one inner capacity (and one resident storage inside, ``res`` [1, 1] each),
    kept in ``o.cache`` (chunks and trials of a batch reuse it; at most 256 are kept). Read-only: callers must not
    write into it."""
    rkey = () if res is None else tuple(x.item() for x in res.storage)
    key = ("traffic", S, offchip, private, rkey)
    row = o.cache.get(key)
    if row is None:
        if len(o.cache) > 256:
            for k in [k for k in o.cache if k[0] == "traffic"]:
                del o.cache[k]
        keep = residency_keep(res, 0, o) if res is not None else None
        row = level_traffic(np.array([S]), o, offchip, private, keep)
        row.flags.writeable = False
        o.cache[key] = row
    return row


def traffic(d: DesignBatch, o: OpArrays) -> np.ndarray:
    """[D, O, L] bytes crossing each level for one instance of each op (sorted op order)."""
    out = np.empty((d.n, o.n, d.capacity.shape[1]))
    for lv, tr in per_level(d, o):
        out[:, :, lv] = tr
    return out


def write_weighted(tr: np.ndarray, o: OpArrays, ratio: float) -> np.ndarray:
    """A level's traffic ``tr`` [D or 1, O] in read-byte equivalents, what its bandwidth divides into a time: the
    op's written bytes ``w`` (at most the level's traffic) cost ``ratio`` = read bandwidth / write bandwidth
    (``MemoryLevel.write_ratio``) read bytes each, as reads and writes share the level's port::

        t_l = (tr + (ratio - 1) x min(w, tr)) / (BW_l x eta_l)  =  reads / (BW x eta) + writes / (BW_write x eta)

    ``tr`` itself where the ratio is 1 (the default: every level but a measured one). A GPU's L2 absorbs writes
    slower than it serves reads: L2-resident copies on an A100 and an H200 run at 0.74 and 0.64 of the L2 read
    bandwidth (github.com/te42kyfo/gpu-benches gpu-small-kernels against gpu-l2-cache; docs/validation.md)."""
    if ratio == 1.0:
        return tr
    return tr + (ratio - 1.0) * np.minimum(o.written, tr)


def max_memory_time(d: DesignBatch, o: OpArrays, out: np.ndarray | None = None, keep: int | None = None
                    ) -> np.ndarray | tuple[np.ndarray, np.ndarray | None]:
    """Max over levels of traffic / (BW * eta), no [D, O, L] temporary; ``out`` [D, O] <- max(out, that).

    Without ``out`` a level whose traffic and bandwidth are the same on every design is computed once
    as a shared [1, O] row; the result is [1, O] when every level is shared, else [D, O]. With ``keep`` (a level)
    the result is a pair: that and level ``keep``'s time of the tiled ops, [D or 1, T] (:func:`tiled_time`)."""
    rate = d.delivered_bandwidth * d.bw_eff
    shared = full = kept = None
    later = []  # a shared [1, O] traffic over per-design bandwidths (a per-core level): after the fresh ones
    for lv, tr in per_level(d, o):
        tr = write_weighted(tr, o, d.write_ratio[lv])  # a fresh array where the ratio is not 1
        bw = rate[:, lv : lv + 1]
        if lv == keep:
            kept = tiled_time(tr, bw, o)
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
        res = np.maximum(out, full, out=out) if full is not None else out
    elif full is None:
        res = shared if shared is not None else np.zeros((1, o.n))
    else:
        res = np.maximum(full, shared, out=full) if shared is not None else full
    return res if keep is None else (res, kept)


def tiled_time(tr: np.ndarray, bw: np.ndarray, o: OpArrays) -> np.ndarray:
    """[D or 1, T] one level's time ``traffic / rate`` of the tiled ops (``o.tiled``) from its traffic ``tr``
    [D or 1, O] (read-byte equivalents) and rate ``bw`` [D, 1] (one shared row where both are)."""
    same = tr.shape[0] == 1 and bool((bw == bw[0]).all())
    return tr[:, o.tiled] / (bw[:1] if same else bw)


def on_chip_shares(d: DesignBatch, o: OpArrays) -> tuple[np.ndarray, np.ndarray]:
    """([D, O] share of each op's activation bytes, [D, O] share of its held bytes) that stay on chip at the main
    memory's boundary (the innermost off-chip level; 1 on a chip without one: everything lives in its SRAM)."""
    off = np.flatnonzero(d.offchip)
    if not off.size:
        return np.ones((d.n, o.n)), np.where(o.held > 0, 1.0, 0.0)[None, :].repeat(d.n, axis=0)
    ka, kh = residency_keep(resident_capacity(d), int(off[0]), o)
    return 1.0 - ka, np.where(o.held > 0, 1.0 - kh, 0.0)


def masked_work(o: OpArrays, d: DesignBatch) -> np.ndarray:
    """[O] FLOPs executed per useful FLOP because of a causal mask: ``full_ratio`` (whole-matrix pairs over causal
    pairs) on the causal fused attention rows of a template whose kernel computes the masked key blocks
    (``compute.causal_attention: compute``: QK^T and PV over every key block, the mask applied in the softmax, whose
    row keeps its causal count), 1 elsewhere and under ``skip`` (FlashAttention-2's key loop stops at the diagonal,
    ``n_block_max``). It divides the array fill: the masked products keep the MAC array busy and do nothing, as
    padding does."""
    if d.base.compute.causal_attention != "compute":
        return np.ones(o.n)
    return o.full_ratio
