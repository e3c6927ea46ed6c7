"""Tile-and-wave efficiency of a GEMM on a GPU-style chip whose library picks a CTA tile per shape.

A GEMM of ``b`` products ``[M, K] x [K, N]`` is cut into output tiles of ``m x n`` (one CTA each), optionally
split ``s`` ways along ``K`` (split-K: ``s`` CTAs per tile each reduce ``ceil(K/s)``). The ``b * ceil(M/m) *
ceil(N/n) * s`` CTAs run in ``waves = ceil(CTAs / C)`` over the ``C`` cores, each CTA as long as a full tile,
so the fraction of the cores' work that is useful is::

    q(m, n, s) = b M N K / (waves * C * m * n * ceil(K/s))        (tile and wave quantization)

A CTA streams its operand panels, ``(m + n) * e`` bytes per unit of ``K`` (``e`` the operand element size)
for ``2 m n`` FLOPs, from the shared cache level outside the cores (the L2 on a GPU), whose bandwidth the
cores share; a small tile's intensity ``2 m n / ((m + n) e)`` can leave the core starved::

    r(m, n) = min(1, (BW_shared * eta / C) * 2 m n / ((m + n) e) / (P * eta_P / C))

A split tile (``s > 1``) pays a fix-up: its ``s`` peers' fp32 partials are reduced into one tile, which
CUTLASS's own split/stream-K cost model charges ``2`` k-block iterations per wave plus ``2`` per peer
(``threadblock_swizzle_streamk.h``, ``get_sk_blocks``: ``base_cost = 2 * sk_waves``, ``peer_cost = 2 *
num_peers``). The fix-up moves the tile's valid outputs only (a predicated epilogue), so it is scaled by the
tile's valid fraction ``v = min(M, m) min(N, n) / (m n)`` (a 1-row GEMV tile reduces 1/m of a full one),
and each split CTA is as long as ``ceil(K/s) + 64 * (2 + 2 s) * v`` of ``K``::

    q(m, n, s) = b M N K / (waves * C * m * n * (ceil(K/s) + [s > 1] 64 (2 + 2 s) v))

A CTA of a one-tile-per-CTA kernel (``gemm_kernel: one_tile``: sm80 libraries, TileLang's grids) writes its output
tile in an epilogue after its mainloop, and nothing else runs on its tensor cores meanwhile: overlapping one tile's
epilogue with the next tile's mainloop is what persistent kernels (``persistent``: CUTLASS 3 / cuBLAS on sm90) add
(Colfax Research, "Dynamic persistent tile scheduling with Cluster Launch Control (CLC) on NVIDIA Blackwell GPUs",
research.colfax-intl.com: with one tile per CTA "we can't overlap across work tiles ..., such as overlapping one
work tile's epilogue with another's mainloop", which is "the main benefit of persistent tile scheduling";
FlashAttention-3, Shah et al. 2024, App. B.6: during the prologue and epilogue "the Tensor Cores are not running").
The CTAs of a wave run the same mainloop and reach their epilogues together, so each drains its ``m n e_out`` bytes
at its ``1/C`` share of the DRAM write rate ``BW_dram * eta``, where the output reaches DRAM at all. In the steady state of
repeated calls (what a benchmark loop, or a model's layer after layer, times) an op whose unique bytes per call
``a + b + c`` exceed the last on-chip level (the write-back L2, ``L`` bytes) finds the L2 full of its previous
call's dirty lines, and every line of its output was evicted before it is written again (its reuse distance is
the whole call, more than ``L``: the LRU cliff), so each write evicts a dirty line to DRAM: ``spill = 1``; an op
whose bytes fit rewrites its output in the L2: ``spill = 0``. (A single cold call would let the L2 absorb its first
``L`` bytes; that is not what is timed.) In K units (the epilogue takes as long as ``k_epi`` more k of the
mainloop at the achievable peak ``P eta_P``)::

    k_epi = [one_tile] * e_out * spill * P * eta_P / (2 * BW_dram * eta)
    q(m, n, s) = b M N K / (waves * C * m * n * (ceil(K/s) + [s > 1] 64 (2 + 2 s) v + k_epi))

so a GEMM with a short K and an output far larger than the L2 (a batched attention-score product: K =
128, a 1.6 GB output) runs at about ``K / (K + k_epi)`` of the roof, one with a long K barely notices.

The library is modelled as picking the best: ``fill = max over tiles (m, n) and s in {1, 2, 4, 8, 16} of
q * r``, split-K (``s > 1``) only when the unsplit grid has fewer CTAs than cores (the case split-K exists
for: a small output grid with a long K) and each split keeps ``ceil(K/s) >= 64`` (one k-block of the tiles).
The split counts (powers of two) and the "grid < cores" rule are assumptions (no library documents its
heuristic); they were chosen among a few variants by the validation rows (docs/validation.md, "Single-chip rows").
The tile set is the template's ``compute.matrix.cta_tiles`` (the A100 templates list the tensor-op tiles
CUTLASS instantiates for sm80 and the tile sizes in cuBLAS's sm80 kernel names, the H100/H200 templates CUTLASS's
sm90 WGMMA tiles) and its kernel structure ``compute.matrix.gemm_kernel`` (a workload's ``gemm_kernel`` overrides
it per GEMM); templates without tiles keep
the MAC-array quantization of ``dse.predict.roofline.array_fill``. The fix-up of split-K's fp32 partial
tiles is costed as above. Each design's rates are its own (:func:`tile_params`: its cores, its achievable peaks, its
shared level's and main memory's rates and its last on-chip level's bytes), one ``[O]`` row per distinct set of them
kept per op table: a design written out as a template and loaded again (``best_design.yaml``) predicts what the study
that chose it did (an H200 design with its L2 at 0.08 TB/s was timed at the template's 11.5 TB/s and ran 2x slower
once written).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

from dse.hardware.designs import DesignBatch, dtype_efficiency_ratio, peak_vector
from dse.hardware.schema import Hardware, MemoryLevel
from dse.predict.traffic import GEMM_KERNEL_CODES, OpArrays, masked_work
from dse.units import DTYPES
from dse.workloads.ops import FLASH_Q_TILE

SPLITS = (1, 2, 4, 8, 16)
MIN_K_SLICE = 64  # the k-block of CUTLASS's sm80 tensor-op tiles: a split never reduces fewer
#: fix-up cost of a split tile in k-block iterations: 2 per wave of split CTAs plus 2 per peer CTA of a tile
#: (CUTLASS's own split/stream-K cost model, include/cutlass/gemm/threadblock/threadblock_swizzle_streamk.h,
#: get_sk_blocks: base_cost = 2 * sk_waves, peer_cost = 2 * num_peers; NVIDIA/cutlass@49f8555)
FIXUP_BASE_ITERS = 2.0
FIXUP_PEER_ITERS = 2.0


def _on_chip(hw: Hardware) -> list[MemoryLevel]:
    """The template's on-chip levels (by kind, ``dse.hardware.memory_kinds``), inner to outer."""
    return [lv for lv in hw.memory if not lv.off_chip]


def _shared_rate(d: DesignBatch) -> float:
    """Bytes/s of the outermost on-chip (sram) level, after its efficiency: the bandwidth tiles stream from."""
    sram = _on_chip(d.base)
    if not sram:
        return float("inf")
    lv = sram[-1]
    return float(lv.bandwidth_bps) * float(lv.efficiency)


def _achievable_peaks(d: DesignBatch) -> np.ndarray:
    """[n_dtypes] achievable FLOP/s of the template's matrix unit per dtype (``dse.units.DTYPES`` order): the
    peak of the mode each dtype runs in (a missing mode takes the next wider native one, as the roofline's
    ``DesignBatch.matrix_peak``) times ``efficiency`` times the dtype's ``dtype_efficiency`` ratio
    (:func:`dse.hardware.designs.dtype_efficiency_ratio`), the same rate the roofline's compute term uses;
    NaN for a dtype the unit has no mode for."""
    unit = d.base.compute.matrix
    return peak_vector(unit.peak_tflops) * unit.efficiency * dtype_efficiency_ratio(unit)


def _drain(d: DesignBatch) -> tuple[float, float]:
    """(bytes/s of the main memory after its efficiency, bytes of the last on-chip level): the rate a tile's
    output drains to DRAM at and the cache that absorbs writes first (from ``DesignBatch.base``)."""
    hw = d.base
    if not any(lv.off_chip for lv in hw.memory):
        return float("inf"), 0.0
    sram, dram = _on_chip(hw), hw.offchip_level
    cache = sram[-1].capacity_bytes if sram else 0.0
    return dram.bandwidth_bps * float(dram.efficiency), float(cache)


#: columns of :func:`tile_params`
PARAMS = ("cores", "peak_factor", "shared_rate", "drain_rate", "cache_bytes")


def tile_params(d: DesignBatch) -> np.ndarray:
    """[D, 5] what the tile model reads of each design (:data:`PARAMS`): its cores ``C``, its achievable matrix
    peaks as a factor of the template's (:func:`_achievable_peaks`; every mode scales together: cores, clock, array
    and ``matrix_eff`` multiply all), the bytes/s of its outermost on-chip level and of its main memory after their
    efficiencies (:func:`_shared_rate`, :func:`_drain`) and the bytes of that on-chip level. The template's own design
    gives exactly the template's figures; a template without ``cta_tiles`` reads the cores alone (the rest 0)."""
    C = np.asarray(d.cores, dtype=float)
    if not d.base.compute.matrix.cta_tiles:
        return np.column_stack([C, np.zeros((C.size, len(PARAMS) - 1))])
    hw = d.base
    unit = hw.compute.matrix
    on_chip = _on_chip(hw)
    j = hw.memory.index(on_chip[-1]) if on_chip else None
    ref = DTYPES.index(hw.reference_dtype)
    f = d.matrix_peak[:, ref] * d.matrix_eff / (peak_vector(unit.peak_tflops)[ref] * unit.efficiency)
    shared = d.bandwidth[:, j] * d.bw_eff[:, j] if j is not None else np.full(C.size, np.inf)
    drain, cache = np.full(C.size, np.inf), np.zeros(C.size)
    if any(lv.off_chip for lv in hw.memory):
        k = hw.offchip_index
        drain = d.bandwidth[:, k] * d.bw_eff[:, k]
        cache = d.capacity[:, j] if j is not None else cache
    return np.column_stack([C, f, shared, drain, cache])


#: ``OpArrays.cache`` key of an op table whose tile model reads the template's rates for every design
FROZEN = "tile-rates-frozen"


def freeze_rates(o: OpArrays) -> None:
    """Let the tile model of op table ``o`` read the template's peaks and rates (at each design's cores) for every
    design: a calibration's steps move efficiencies only, thousands of times, and its fit keeps the template's
    tile choice (``dse.validate.calibrate``; docs/validation.md)."""
    o.cache[FROZEN] = True


def reads_rates(o: OpArrays, d: DesignBatch) -> bool:
    """Whether the tile model reads each design's own rates (:func:`tile_params`): a template with ``cta_tiles``
    and an op table not frozen (:func:`freeze_rates`)."""
    return bool(d.base.compute.matrix.cta_tiles) and not o.cache.get(FROZEN)


def _base_params(d: DesignBatch, C: float) -> tuple[float, ...]:
    """:data:`PARAMS` of the template itself at ``C`` cores (a template without ``cta_tiles``: the cores alone)."""
    if not d.base.compute.matrix.cta_tiles:
        return (C, 0.0, 0.0, 0.0, 0.0)
    rate, cache = _drain(d)
    return (C, 1.0, _shared_rate(d), rate, cache)


#: template_key per template object (id -> (template, key)): the key is read for every core count of every chunk,
#: and a template is immutable; the template is kept so its id is not reused while cached
_TEMPLATE_KEYS: dict[int, tuple[object, tuple]] = {}


def template_key(d: DesignBatch) -> tuple:
    """What the tile model reads of a batch's template, as a cache key: its name, the drain (:func:`_drain`), the
    shared level's rate (:func:`_shared_rate`) and the achievable peaks (:func:`_achievable_peaks`). Two templates
    of one name with other efficiencies (a calibration's steps) never share a cached row."""
    hit = _TEMPLATE_KEYS.get(id(d.base))
    if hit is not None and hit[0] is d.base:
        return hit[1]
    key = (d.base.name, _drain(d), _shared_rate(d), _achievable_peaks(d).tobytes(),
           str(d.base.compute.matrix.array_shapes), d.base.compute.matrix.dataflow, d.base.compute.matrix.stream_rows,
           d.base.compute.matrix.conv_lowering, d.base.compute.causal_attention)
    if len(_TEMPLATE_KEYS) > 256:
        _TEMPLATE_KEYS.clear()
    _TEMPLATE_KEYS[id(d.base)] = (d.base, key)
    return key


def _spill(o: OpArrays, rows: slice, cache_bytes: float) -> np.ndarray:
    """[rows] 1 where an op's tensors reach DRAM in a steady state of repeated calls, 0 where the last on-chip level
    of ``cache_bytes`` keeps them: ``[a + b + c > L]``, the op's unique bytes per call against the cache (module
    docstring, "steady state")."""
    working = o.a_bytes[rows] + o.b_bytes[rows] + o.c_bytes[rows]
    return (working > cache_bytes).astype(float)


def _keys_per_query(o: OpArrays, rows: slice | int) -> np.ndarray:
    """Keys a query row of attention ``rows`` computes on average: ``flops / (4 batch M N)`` (one key of a query
    row is ``4 head_dim`` FLOPs over ``N = head_dim`` outputs)."""
    return o.flops[rows] / (4.0 * np.maximum(o.batch[rows] * o.M[rows] * o.N[rows], 1.0))


def epilogue_k(o: OpArrays, peak: np.ndarray, write_rate: float, cache_bytes: float) -> np.ndarray:
    """[O] ``k_epi``: the K-equivalent of a tile's serial epilogue (module docstring): its output elements'
    bytes ``e_out`` at the core's share of the DRAM write rate where the op's output reaches DRAM (:func:`_spill`),
    in MACs at the core's share of ``peak`` (FLOP/s)."""
    e_out = o.c_bytes / np.maximum(o.batch * o.M * o.N, 1.0)
    with np.errstate(invalid="ignore"):
        k = e_out * _spill(o, slice(None), cache_bytes) * peak / (2.0 * write_rate)
    return np.where(np.isfinite(k), k, 0.0)


def serial_epilogue(o: OpArrays, default: str) -> np.ndarray:
    """[O] 1 where a row's GEMM kernel writes each tile after its mainloop (``one_tile``), 0 where a persistent kernel
    overlaps it with the next tile's mainloop (``persistent``); rows without a kernel of their own take the template's
    ``default`` (``compute.matrix.gemm_kernel``; ``dse.workloads.ops.GemmKernel``)."""
    one_tile = np.where(o.gemm_kernel == 0, default == "one_tile", o.gemm_kernel == GEMM_KERNEL_CODES["one_tile"])
    return one_tile.astype(float)


#: most CTAs a kernel's dispatch is simulated for; beyond, the tail of one CTA is < 1/300 of the kernel on 108 cores
#: and the uniform wave fill stands in
MAX_SIMULATED_CTAS = 1 << 15


def list_schedule_fill(durations: np.ndarray, cores: int) -> float:
    """Useful fraction ``sum(durations) / (cores * makespan)`` of CTAs dispatched in launch order, each to the
    first core that frees up (the GPU's block scheduler hands out a grid's CTAs in linear block-index order as
    resources free: greedy list scheduling, Graham 1966). Equal durations give the wave fill
    ``u / (ceil(u / C) C)``; unequal ones (a causal kernel's query tiles) a tail the wave count misses."""
    heap = [0.0] * min(cores, len(durations))
    for t in durations:
        heapq.heapreplace(heap, heap[0] + float(t))
    makespan = max(heap) if heap else 0.0
    return float(durations.sum()) / (cores * makespan) if makespan > 0 else 1.0


def _ramp(o: OpArrays, i: int) -> np.ndarray | None:
    """Keys each CTA of causal flash attention row ``i`` computes, in launch order, or None for a row whose
    CTAs all compute the same keys. The row's keys per query run from ``k_min`` to ``K`` in steps of one
    query tile (FlashAttention-2's grid: query tiles fastest, ascending, for each head in turn; see
    ``dse.workloads.ops.causal_pairs``); ``k_min = 2 k_mean - K`` from the row's mean keys per query."""
    K, u = float(o.K[i]), float(o.units[i])
    k_mean = float(_keys_per_query(o, i))
    if not k_mean < K * (1.0 - 1e-9) or u <= 0 or u > MAX_SIMULATED_CTAS:
        return None
    k_min = max(2.0 * k_mean - K, 1.0)
    n = int(round((K - k_min) / FLASH_Q_TILE)) + 1  # query tiles per head
    reps = max(int(round(u / n)), 1)  # heads x sequences (query heads of a KV group each run their own tiles)
    return np.tile(np.linspace(k_min, K, n), reps)


def per_core_rows(o: OpArrays, d: DesignBatch, kind: str, row_of: Callable[[tuple], np.ndarray],
                  rows_of: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(rows [K, O], which [D]): ``row_of(p)`` for each of the ``K`` distinct :func:`tile_params` ``p`` seen so far
    for this template and each design's row. A template without ``cta_tiles`` (or a frozen op table,
    :func:`freeze_rates`) reads the core count alone (tens in a
    search; the sorted counts and their stacked rows kept in ``o.cache`` and grown when a batch brings a new count): a
    chunk of a batch whose counts are all known costs one ``searchsorted``, no ``unique`` and no re-stacking per
    chunk. A template with them reads each design's rates too (:func:`per_design_rows`)."""
    if reads_rates(o, d):
        return per_design_rows(o, d, kind, row_of, rows_of)
    key = (kind, *template_key(d))
    known = o.cache.get(key)
    cores = d.cores
    if known is not None:
        counts, rows = known
        which = _count_index(o, key, counts, cores)
        if which is not None:
            return rows, which
    new = np.unique(cores) if known is None else np.union1d(known[0], cores)
    rows = np.stack([row_of(_base_params(d, float(c))) for c in new])
    rows.flags.writeable = False
    o.cache[key] = (new, rows)
    return rows, np.searchsorted(new, cores)


def per_design_rows(o: OpArrays, d: DesignBatch, kind: str, row_of: Callable[[tuple], np.ndarray],
                    rows_of: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(rows [U, O], which [D]): ``row_of(p)`` for each distinct :func:`tile_params` row ``p`` of the batch (a search's
    batch: a handful; a sweep's grid: hundreds), each computed once per op table (kept in ``o.cache`` by ``p``), the
    new ones in one ``rows_of`` call where given, and each design's row."""
    key = (kind, "per-design", *template_key(d))
    known = o.cache.setdefault(key, {})
    uniq, which = np.unique(tile_params(d), axis=0, return_inverse=True)
    params = list(map(tuple, uniq.tolist()))
    missing = [p for p in params if p not in known]
    if missing and rows_of is not None:
        known.update(zip(missing, rows_of(np.array(missing, dtype=float)), strict=True))
    rows = []
    for p in params:
        row = known.get(p)
        if row is None:
            row = known[p] = row_of(p)
        rows.append(row)
    return np.stack(rows), which.reshape(-1)


def _count_index(o: OpArrays, key: tuple, counts: np.ndarray, cores: np.ndarray) -> np.ndarray | None:
    """[D] index of each design's core count in the sorted ``counts``, or None where one is not there: a lookup table
    over whole core counts (kept in ``o.cache`` with the counts it was built for; ~20x a ``searchsorted``), else a
    search."""
    lut_key = ("count-index", *key)
    hit = o.cache.get(lut_key)
    if hit is None or hit[0] is not counts:
        whole = counts.size and (counts == np.round(counts)).all() and counts[0] >= 0 and counts[-1] < 1 << 20
        lut = None
        if whole:
            lut = np.full(int(counts[-1]) + 2, -1, dtype=np.intp)
            lut[counts.astype(np.intp)] = np.arange(counts.size)
        hit = o.cache[lut_key] = (counts, lut)
    lut = hit[1]
    if lut is not None and cores.size and cores.min() >= 0 and cores.max() < lut.size - 1:
        i = cores.astype(np.intp)
        which = lut[i]
        if (which >= 0).all() and (i == cores).all():
            return which
        return None
    which = np.minimum(np.searchsorted(counts, cores), counts.size - 1)
    return which if (counts[which] == cores).all() else None


def per_core_count(o: OpArrays, d: DesignBatch, kind: str, row_of: Callable[[tuple], np.ndarray],
                   rows_of: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """[1, O] when no op's row depends on the core count (or every design has the same), else [D, O]
    (:func:`per_core_rows` gathered per design)."""
    return _gathered(*per_core_rows(o, d, kind, row_of, rows_of))


def kernel_fill(o: OpArrays, d: DesignBatch) -> np.ndarray:
    """[1 or D, O] :func:`kernel_fill_at` each design's core count."""
    return per_core_count(o, d, "kernel-fills", lambda p: kernel_fill_at(o, d, p))


def kernel_fill_sparse(o: OpArrays, d: DesignBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`kernel_fill` as (row [O], cols [k], values [D, k]): the first core count's row with the ``k`` columns
    that differ between core counts (attention kernels' CTAs: a handful) given per design. The lean path multiplies
    those columns per design instead of building a [D, O] fill (columns and values per core count kept in
    ``o.cache``)."""
    rows, which = per_core_rows(o, d, "kernel-fills", lambda p: kernel_fill_at(o, d, p))
    key = ("kernel-fills-sparse", id(rows))
    part = o.cache.get(key)
    if part is None or part[0] is not rows:
        cols = np.flatnonzero((rows != rows[:1]).any(axis=0))
        part = o.cache[key] = (rows, cols, rows[:, cols])
    _, cols, sub = part
    return rows[0], cols, sub[which]


def kernel_fill_at(o: OpArrays, d: DesignBatch, p: tuple) -> np.ndarray:
    """[O] fraction of the ``C`` cores (``p``: :func:`tile_params`) a kernel of ``units`` CTAs keeps busy (1 for ops
    without ``units``): the wave fill ``u / (ceil(u/C) C)`` over the design's ``C`` cores, or, for a causal flash
    attention kernel whose query tiles compute different numbers of keys (plus each CTA's serial Q/O keys,
    :func:`attention_fill`), :func:`list_schedule_fill` of them in launch order. The softmax row inside a kernel
    takes its kernel's (``OpArrays.kernel_of``)."""
    C = p[0]
    key = ("kernel-fill", *template_key(d), p)
    row = o.cache.get(key)
    if row is not None:
        return row
    u = o.units
    row = np.where(u > 0, u / np.maximum(np.ceil(u / C) * C, 1.0), 1.0)
    k_io = _io_keys(o, d, p)
    for i in range(o.attn.start, o.attn.stop):  # attention rows only: a handful per table, never per design
        keys = _ramp(o, i)
        if keys is not None:
            row[i] = list_schedule_fill(keys + k_io[i - o.attn.start], int(C))
    link = o.kernel_of
    inside = link >= 0
    row[inside] = row[link[inside]]
    row.flags.writeable = False
    o.cache[key] = row
    return row


def _io_keys(o: OpArrays, d: DesignBatch, p: tuple) -> np.ndarray:
    """[attention rows] ``k_io`` of :func:`attention_fill` on a design of :func:`tile_params` ``p``: the serial Q load
    and O store of a CTA in keys of its loop (zeros on a template without ``cta_tiles``)."""
    at = o.attn
    n = at.stop - at.start
    if not d.base.compute.matrix.cta_tiles or n <= 0:
        return np.zeros(max(n, 0))
    rate, cache = p[3], p[4]
    peak = _achievable_peaks(d)[o.dtype_idx[at]] * p[1]
    elems = np.maximum(o.batch[at] * o.M[at] * o.N[at], 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        io_bytes = (o.a_bytes[at] + o.c_bytes[at]) * _spill(o, at, cache)
        k_io = io_bytes / elems * peak / (4.0 * rate)
    return np.where(np.isfinite(k_io), k_io, 0.0)


def attention_fill(o: OpArrays, d: DesignBatch) -> np.ndarray | None:
    """[1 or D, O] :func:`attention_fill_at` each design's :func:`tile_params`, or None when the template names no
    ``cta_tiles`` (the CTA model applies to GPU-style chips only)."""
    if not d.base.compute.matrix.cta_tiles or o.attn.stop <= o.attn.start:
        return None
    rows, which = per_core_rows(o, d, "attention-io", lambda p: attention_fill_at(o, d, p))
    return _gathered(rows, which)


def _gathered(rows: np.ndarray, which: np.ndarray) -> np.ndarray:
    """[1, O] where every design reads one row, else [D, O]."""
    if rows.shape[0] == 1 or (rows == rows[:1]).all():
        return rows[:1]
    if which.size and (which == which[0]).all():  # every design has one row: that row alone
        return rows[which[0] : which[0] + 1]
    return np.take(rows, which, axis=0)


def attention_fill_at(o: OpArrays, d: DesignBatch, p: tuple) -> np.ndarray:
    """[O] fraction of a fused attention kernel's time its tensor cores work (1 off the attention rows) on a design
    of :func:`tile_params` ``p``.

    A fused attention CTA (one per query tile, ``ctas``) loads its query tile before its key loop and writes
    its output tile after it, and its tensor cores wait meanwhile (FlashAttention-3, Shah et al. 2024,
    App. B.6: during the prologue and epilogue "the Tensor Cores are not running"; FlashAttention-2's
    sm80 kernel, one tile per CTA, overlaps neither with another tile). As for a GEMM's serial epilogue
    (:func:`epilogue_k`), the CTAs of a wave do this together, each at its ``1/C`` share of the DRAM rate, when
    the op's Q, K, V and O do not fit the last on-chip level (:func:`_spill`, steady state). In keys of the loop
    (one key of a query row is ``4 * head_dim`` FLOPs over ``head_dim`` outputs: half a GEMM's ``2`` per
    output per unit of K)::

        k_io = (e_q + e_o) * spill * P * eta_P / (4 * BW_dram * eta)
        fill = k_mean / (k_mean + k_io)

    with ``k_mean = flops / (4 * batch * M * N)`` the keys a query row computes on average (x ``full_ratio`` where
    the kernel computes the masked blocks, ``dse.predict.traffic.masked_work``)."""
    at = o.attn
    k_io = _io_keys(o, d, p)
    with np.errstate(invalid="ignore", divide="ignore"):
        k_mean = _keys_per_query(o, at) * masked_work(o, d)[at]  # the keys its loop runs, masked ones included
        fill = k_mean / (k_mean + k_io)
    row = np.ones(o.n)
    row[at] = np.where(np.isfinite(fill) & (fill > 0), fill, 1.0)
    row.flags.writeable = False
    return row


def tile_fill(o: OpArrays, d: DesignBatch) -> np.ndarray | None:
    """[1 or D, O] :func:`tile_fill_at` each design's core count, or None when the template names no ``cta_tiles``."""
    if not d.base.compute.matrix.cta_tiles or o.K.size != o.n:
        return None
    return per_core_count(o, d, "tile-fills", lambda p: tile_fill_at(o, d, p), lambda P: tile_fill_many(o, d, P))


def tile_fill_at(o: OpArrays, d: DesignBatch, p: tuple) -> np.ndarray:
    """[O] best tile-and-wave efficiency ``max q * r`` of each op on a design of :func:`tile_params` ``p`` (its ``C``
    cores, peaks and rates; 1 where it does not apply: ops with no ``K``): :func:`tile_fill_many` of one design."""
    unit = d.base.compute.matrix
    key = ("cta-tiles", *template_key(d), tuple(map(tuple, unit.cta_tiles)), p, unit.gemm_kernel)
    row = o.cache.get(key)
    if row is None:
        row = o.cache[key] = tile_fill_many(o, d, np.array([p], dtype=float))[0]
    return row


def tile_fill_many(o: OpArrays, d: DesignBatch, P: np.ndarray) -> np.ndarray:
    """[U, O] :func:`tile_fill_at` of ``U`` designs at once, ``P`` their :func:`tile_params` rows [U, 5] (the same
    products in the same order: each row equals the one-design call)."""
    unit = d.base.compute.matrix
    tiles = unit.cta_tiles
    C, f, bw, rate, cache = (P[:, i : i + 1] for i in range(5))
    peak = _achievable_peaks(d)[o.dtype_idx][None, :] * f  # [U, O] achievable FLOP/s of the op's mode (NaN: none)
    M, N, K, b = o.M, o.N, o.K, o.batch
    e = np.maximum(o.elem_ab, 1e-9)
    useful = b * M * N * K
    k_epi = epilogue_k(o, peak, rate, cache) * serial_epilogue(o, unit.gemm_kernel)
    best = np.zeros((P.shape[0], o.n))
    with np.errstate(invalid="ignore", divide="ignore"):
        for m, n in tiles:
            grid = b * np.ceil(M / m) * np.ceil(N / n)
            r = np.minimum(1.0, bw * 2.0 * m * n / ((m + n) * e) / peak)
            r = np.where(np.isnan(r), 1.0, r)
            valid = np.minimum(M, m) * np.minimum(N, n) / (m * n)  # outputs a split tile's fix-up moves
            for s in SPLITS:
                ks = np.ceil(K / s)
                ok = (s == 1) | ((grid < C) & (ks >= MIN_K_SLICE))
                waves = np.ceil(grid * s / C)
                fix = 0.0 if s == 1 else MIN_K_SLICE * (FIXUP_BASE_ITERS + FIXUP_PEER_ITERS * s) * valid
                q = useful / (waves * C * m * n * (ks + fix + k_epi))
                best = np.where(ok, np.maximum(best, q * r), best)
    rows = np.where(K > 1, np.clip(best, 0.0, 1.0), 1.0)
    rows.flags.writeable = False
    return rows
