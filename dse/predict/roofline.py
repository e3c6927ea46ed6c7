"""The hierarchical roofline: time of every op on every design, and which ceiling binds it.

For op ``o`` on design ``d`` (``docs/design.md``; Williams, Waterman & Patterson, CACM 2009;
hierarchical form after Yang et al., "Hierarchical Roofline", 2020)::

    t = max( FLOPs / (P_unit,dtype * eta_unit * u_array),
             max_l traffic_l / (BW_l * eta_l),
             t_network )  + t_overhead      (t_overhead = 0 for fused ops)

``t_network`` is the alpha-beta time of a collective operator (``dse.predict.network``; 0 otherwise).
An op of an eager workload takes at least the host's dispatch time ``eager_overhead_us`` (the
overhead ceiling then binds). With a ``power_limit_w`` the compute term is divided by the op's clock fraction under the cap
(``dse.predict.power_cap``).

``u_array`` is the MAC-array fill: an op of ``M x N`` outputs on an ``r x c`` array fills
``M/(ceil(M/r)*r) * N/(ceil(N/c)*c)`` of it (an M = 1 decode GEMM uses one row; a fused attention row's ``M``
is the query rows one of its tiles stacks, ``OpArrays.head_rows``: one query head's where a CTA runs one head).
The binding ceiling is the largest term; the overhead binds when it alone exceeds the roofline time. A compute-bound
op is *array*-bound (its own ceiling, the roof lowered to ``P * eta * u_array``) when the fill is what makes
compute bind: ``u_array < ARRAY_FILL`` (more than half the array idles), or a full array would have left
it under a memory or network ceiling (``t_compute * u_array < max(t_memory, t_network)``).
Everything is ``[D, O]`` numpy; there is no Python loop over designs or ops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dse.errors import DseError
from dse.hardware.designs import DesignBatch, array_modes_at, dtype_efficiency_ratio, stream_rows_at
from dse.predict.network import network_times
from dse.predict.pipeline import pays, pipeline_exposed, staging_level, workers
from dse.predict.power_cap import apply_cap
from dse.predict.tiles import (
    attention_fill,
    kernel_fill,
    kernel_fill_sparse,
    reads_rates,
    template_key,
    tile_fill,
    tile_params,
)
from dse.predict.traffic import (
    OpArrays,
    level_rows,
    masked_work,
    max_memory_time,
    per_level,
    tiled_time,
    traffic,
    write_weighted,
)
from dse.units import DTYPE_INDEX


@dataclass(frozen=True)
class BatchResult:
    """Per-op arrays ``[D, O]`` (time of ONE instance of the op) and ``[D, O, L]`` traffic."""

    time: np.ndarray
    t_compute: np.ndarray
    t_memory: np.ndarray  # [D, O, L]
    t_overhead: np.ndarray  # [D, O]
    traffic: np.ndarray  # [D, O, L]
    bound: np.ndarray  # [D, O] int: 0 compute, 1..L level, L+1 network, L+2 overhead, L+3 array (fill-limited)
    peak: np.ndarray  # [D, O] raw peak FLOP/s of the unit for the op's dtype
    fill: np.ndarray  # [D, O] MAC-array fill
    t_network: np.ndarray | None = None  # [D, O] collective time (0 for other ops)
    clock: np.ndarray | None = None  # [D, O] clock fraction under the power cap (1 without one)
    on_matrix: np.ndarray | None = None  # [D, O] bool: the op ran on the MAC arrays (else the vector units)
    t_pipeline: np.ndarray | None = None  # [D, O] the scratchpad pipeline's exposed fill and drain, in t_overhead


#: fill under which a compute-bound op is called array-bound (more than half the MAC array idles)
ARRAY_FILL = 0.5


def array_bound(compute_binds: np.ndarray, fill: np.ndarray, t_compute: np.ndarray, other: np.ndarray,
                matrix: np.ndarray | bool = True) -> np.ndarray:
    """[D, O] bool: a compute-bound op on the MAC arrays (``matrix``) whose fill decides it (``fill < ARRAY_FILL``,
    or a full array would have left it under the largest memory/network term ``other``: ``t_compute * fill <
    other``). An op on the vector units is never array-bound: its fill there is the cores' wave fill (a fused
    softmax's CTAs), which slows it but is no MAC array's."""
    return compute_binds & matrix & (fill < 1.0) & ((fill < ARRAY_FILL) | (t_compute * fill < other))


def on_matrix(o: OpArrays, d: DesignBatch) -> np.ndarray:
    """[D, O] (or [1, O]) bool: the op runs on the MAC arrays.

    A matrix op (gemm, conv, attention) runs on the unit that finishes it first among the units able to run it
    (``runs`` of each unit, default both; a dtype the unit has a mode for), as NPU graph compilers place work (Gaudi's
    MME vs TPC, TPU's MXU vs VPU, Neuron's TensorE vs VectorE). Both see the same traffic, so the faster compute term
    decides: the arrays keep the op unless ``P_vector,dtype x eta_vector > P_matrix,dtype x eta_matrix x u_array``
    (``u_array`` the op's array fill without the wave fill, which both units share; a tie stays on the arrays). An
    M = 1 decode GEMV on a 256x256 MME fills 1/256 of it: the vector cores finish it first."""
    capable = _matrix_capable(o, d)
    vec = _vector_may_run(o, d)
    if not vec.any():
        return capable
    fill = _fill_row(o, d, capable, wave=False)
    if fill is None:
        fill = array_fill(o, d, capable, wave=False)
    m_rate = d.matrix_peak * _matrix_eff(d)  # [D, n_dtypes] achievable FLOP/s (NaN: no mode)
    v_rate = d.vector_peak * _vector_eff(d)
    ratio = np.where(np.isnan(v_rate), 0.0, v_rate) / np.where(np.isnan(m_rate), np.inf, m_rate)
    if (ratio == ratio[:1]).all():
        ratio = ratio[:1]
    faster = np.take(ratio, o.dtype_idx, axis=1) > fill  # the vector units finish first
    return capable & ~(vec[None, :] & faster)


def _fill_row(o: OpArrays, d: DesignBatch, matrix: np.ndarray, wave: bool) -> np.ndarray | None:
    """:func:`array_fill` (with or without the wave fill) as a read-only [1, O] row kept in ``o.cache``, or None where
    it is not one row for every design: the capable ops or the array shape differ between designs, or the core count
    does while the row depends on it (the wave fill, or the library's tile choice of a template with ``cta_tiles``).
    Every chunk of a search reads the same row."""
    r, c, n = d.array_rows, d.array_cols, d.cores
    tiles = d.base.compute.matrix.cta_tiles
    per_cores = wave or bool(tiles)
    if (matrix.shape[0] != 1 or not r.size or not ((r == r[0]).all() and (c == c[0]).all())
            or (per_cores and not (n == n[0]).all())):
        return None
    rates = None
    if reads_rates(o, d):  # the library's tile choice reads each design's peaks and rates (dse.predict.tiles)
        p = tile_params(d)
        if not (p == p[:1]).all():
            return None
        rates = tuple(p[0].tolist())
    key = ("fill", wave, float(r[0]), float(c[0]), float(n[0]) if per_cores else None, *template_key(d), str(tiles),
           rates, matrix.tobytes())
    row = o.cache.get(key)
    if row is None:
        row = array_fill(o, d.take([0]), matrix, wave=wave)
        row.flags.writeable = False
        o.cache[key] = row
    return row


def _matrix_capable(o: OpArrays, d: DesignBatch) -> np.ndarray:
    """[D or 1, O] bool: a matrix op the MAC arrays can run (its kind in ``matrix.runs``, a mode for its dtype; an
    fp32 GEMM on an NPU with bf16/int8 arrays runs on the vector units instead)."""
    nan = np.isnan(d.matrix_peak)
    kinds = d.base.compute.matrix.runs
    mat = o.matrix if kinds is None else o.matrix & np.isin(o.kind, kinds)
    if d.n and (nan == nan[:1]).all():  # the same modes on every design: one shared [1, O] row
        return mat[None, :] & ~nan[:1, o.dtype_idx]
    return mat[None, :] & ~np.take(nan, o.dtype_idx, axis=1)  # row-ordered gather (C layout)


def _vector_may_run(o: OpArrays, d: DesignBatch) -> np.ndarray:
    """[O] bool: a matrix op the vector units may take instead (its kind in ``vector.runs``, default every kind)."""
    kinds = d.base.compute.vector.runs
    return o.matrix.copy() if kinds is None else o.matrix & np.isin(o.kind, kinds)


def array_fill(o: OpArrays, d: DesignBatch, matrix: np.ndarray, wave: bool = True) -> np.ndarray:
    """[D, O] (or [1, O] when every design has the same arrays) MAC-array fill; 1 off the matrix unit. ``wave=False``
    leaves out the wave fill over the cores (:func:`wave_fill`)."""
    r, c = d.array_rows, d.array_cols
    if np.all(r == r[0]) and np.all(c == c[0]) and np.all(matrix == matrix[:1]):
        r, c, matrix = r[:1], c[:1], matrix[:1]
    r, c = r[:, None], c[:, None]
    M = np.minimum(o.M, o.head_rows)[None, :]  # an attention tile's rows (inf off the attention rows)
    N = o.N[None, :]
    unit = d.base.compute.matrix
    K = o.K[None, :] if unit.dataflow == "weight_stationary" else None
    if K is not None and unit.conv_lowering == "taps":  # one matmul per kernel tap: it contracts over C_in alone
        K = np.maximum(K / o.taps[None, :], 1.0)
    s = stream_rows_at(unit, r) if unit.stream_rows else r  # rows that hide a tile's load
    fill = _quantized_fill(M, N, r, c, K, s)
    for fr, fc, whole in array_modes_at(unit, r, c):  # a configurable array: the geometry that fills best
        fill = np.where(whole, np.maximum(fill, _quantized_fill(M, N, r * fr, c * fc, K, s * fr)), fill)
    tiles = tile_fill(o, d)
    if tiles is not None:  # the library's tile-and-wave choice replaces the array quantization of GEMMs/convs
        gemm = np.zeros(o.n, dtype=bool)
        gemm[o.tiled] = True
        fill = np.where(gemm[None, :], tiles, fill)
    io = attention_fill(o, d)
    if io is not None:  # a fused attention CTA's serial Q load and O store (dse.predict.tiles.attention_fill)
        fill = fill * io
    out = np.where(matrix, fill, 1.0)
    if not wave:  # the unit choice compares the units without the wave fill and the masked blocks, which both pay
        return out
    return out * wave_fill(o, d) / masked_work(o, d)[None, :]


def _quantized_fill(M: np.ndarray, N: np.ndarray, r: np.ndarray, c: np.ndarray,
                    K: np.ndarray | None = None, s: np.ndarray | None = None) -> np.ndarray:
    """Fill of an ``r x c`` array by an ``M x N x K`` product.

    Output-stationary (``K`` None: an ``M x N`` output tile per pass while ``K`` streams):
    ``M/(ceil(M/r) r) * N/(ceil(N/c) c)``.

    Weight-stationary (a ``K x N`` weight tile per pass, the ``M`` activation rows streaming through it one per
    cycle, the next tile shifted in behind them): ``K/(ceil(K/r) r) * N/(ceil(N/c) c) * min(1, M/s)``, ``s`` the
    rows that hide the next tile's load. By default ``s = r``: shifting a tile in takes ``r`` cycles, hidden by double
    buffering only while at least ``r`` rows stream (Jouppi et al., "In-Datacenter Performance Analysis of a Tensor
    Processing Unit", ISCA 2017: a second weight tile buffers "to hide the 256 cycles it takes to shift a tile in";
    jax-ml/scaling-book@0819a7d tpus.md Appendix B: the MXU holds the RHS weights while the LHS streams, with no
    bubble after the first tile). NeuronCore-v2's TensorE has ``s = 64``: it issues a MultiplyMoving every
    ``max(N, 64)`` cycles and loads the next stationary tile in the background (aws-neuron-sdk@81ce03a
    nki/guides/architecture/trainium_inferentia2_arch.rst). ``K`` = 0 (a table without it) counts as a full
    reduction side."""
    cols = N / (np.ceil(N / c) * c)
    if K is None:
        return (M / (np.ceil(M / r) * r)) * cols
    k = np.where(K > 0, K / (np.ceil(np.maximum(K, 1.0) / r) * r), 1.0)
    return k * cols * np.minimum(1.0, M / (r if s is None else s))


def wave_fill(o: OpArrays, d: DesignBatch) -> np.ndarray:
    """[1 or D, O] fraction of the cores a kernel of ``u`` CTAs keeps busy over its waves: ``u / (ceil(u/C) * C)``
    for the ``C`` cores of each design (1 for ops without ``units``), or the list-scheduling fill of a causal
    flash kernel's unequal query tiles (:func:`dse.predict.tiles.kernel_fill`).

    Applies to a fused attention kernel and the softmax inside it (``units`` = their CTAs,
    :func:`dse.workloads.ops.attention_ctas`): TensorRT's whole-row kernels run one CTA per (head, sequence)
    looping over all queries (NVIDIA TensorRT-LLM ``cpp/kernels/fmha_v2/setup.py``, launcher
    ``dim3 grid(params.h, params.b)``; TensorRT's BERT plugin), so at batch 1 BERT-Large's 16 heads keep 16 of an
    A100's 108 SMs busy; a flash kernel runs a CTA per 128-query tile."""
    return kernel_fill(o, d)


def unit_peak(o: OpArrays, d: DesignBatch, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[D, O] raw peak FLOP/s and efficiency of the unit each op runs on, at its dtype."""
    col = _unit_columns(o, d, matrix)
    peak = _gather(np.concatenate([d.matrix_peak, d.vector_peak], axis=1), col)
    m_eff = _matrix_eff(d)
    if m_eff.shape[1] > 1:  # per dtype: each op's column
        m_eff = np.take(m_eff, o.dtype_idx, axis=1)
    eff = np.where(matrix, m_eff, _vector_eff(d))
    _check_modes(o, peak)
    return peak, eff


def _matrix_eff(d: DesignBatch) -> np.ndarray:
    """[D, 1] matrix-unit efficiency per design, or [D, n_dtypes] where the template sets ``dtype_efficiency``
    (a dtype whose GEMMs reach another fraction of its peak: ``efficiency x dtype_efficiency_ratio``)."""
    m_eff = d.matrix_eff[:, None] * worker_fraction(d)
    if d.base.compute.matrix.dtype_efficiency:
        m_eff = m_eff * dtype_efficiency_ratio(d.base.compute.matrix)[None, :]
    return m_eff


def _vector_eff(d: DesignBatch) -> np.ndarray:
    """[D, 1] vector-unit efficiency per design, on the cores that run operators (:func:`worker_fraction`)."""
    return d.vector_eff[:, None] * worker_fraction(d)


def worker_fraction(d: DesignBatch) -> np.ndarray | float:
    """[D, 1] share of the cores that run operators (1.0, no array, without reserved cores: the hot path multiplies
    by it): ``(cores - reserved) / cores``, ``reserved`` the template's
    ``compute.reserved_cores`` (a runtime's dispatch cores, a fixed count whatever the design's core count).
    tt-metal runs a Wormhole n150's operators on an 8x8 worker grid of its 72 Tensix and a Blackhole p150's on 13x10
    of 140 (tt-metal tech_reports/GEMM_FLOPS: 'full grid size (8x8 in Wormhole and 13x10 in Blackhole)')."""
    if not d.base.compute.reserved_cores:
        return 1.0
    return (workers(d) / d.cores)[:, None]


def _unit_columns(o: OpArrays, d: DesignBatch, matrix: np.ndarray) -> np.ndarray:
    """[1 or D, O] column of each op in ``[matrix_peak | vector_peak]`` (its unit at its dtype)."""
    return np.where(matrix, o.dtype_idx, o.dtype_idx + d.matrix_peak.shape[1])


def _gather(table: np.ndarray, col: np.ndarray) -> np.ndarray:
    """[D, O] ``table[d, col[d or 0, o]]`` as a C-ordered array (a row-ordered gather, not a column pick)."""
    if col.shape[0] == 1:
        return np.take(table, col[0], axis=1)
    return np.take_along_axis(table, col, axis=1)


def _check_modes(o: OpArrays, peak: np.ndarray) -> None:
    if np.isnan(peak[:, o.flops > 0]).any():
        raise DseError("an op uses a dtype that neither unit has a mode for; accepted: add it to peak_tflops")


def rate_table(d: DesignBatch) -> np.ndarray:
    """[D, 2 n_dtypes + 2] peak x efficiency of the matrix units per dtype, then of the vector units, then 1.0 (the
    column ops without FLOPs read), then inf (the column a block-scaled weight's dequantization reads where the matrix
    unit ``unpacks`` the format: no time)."""
    K = d.matrix_peak.shape[1]
    table = np.empty((d.n, 2 * K + 2))
    np.multiply(d.matrix_peak, _matrix_eff(d), out=table[:, :K])
    np.multiply(d.vector_peak, _vector_eff(d), out=table[:, K : 2 * K])
    table[:, 2 * K] = 1.0
    table[:, 2 * K + 1] = np.inf
    return table


def unpacked(o: OpArrays, d: DesignBatch) -> np.ndarray:
    """[O] the ``.dequant`` rows of block-scaled weights that the template's matrix unit decodes in its operand path
    (``compute.matrix.unpacks``: Tensix's unpackers convert BFP8/BFP4 tiles as they feed the FPU, docs.tenstorrent.com
    pybuda dataformats), so they take no time (their conversion FLOPs are still counted, and the energy model
    still charges them)."""
    native = [DTYPE_INDEX[dt] for dt in d.base.compute.matrix.unpacks]
    if not native or o.decodes.size == 0:
        return np.zeros(o.n, dtype=bool)
    return np.isin(o.decodes, native)


def rate_columns(o: OpArrays, d: DesignBatch, matrix: np.ndarray, table: np.ndarray) -> np.ndarray:
    """[1 or D, O] column of :func:`rate_table` each op reads (its unit at its dtype; ``2 n_dtypes`` for ops without
    FLOPs; ``2 n_dtypes + 1``, infinite, for a dequantization the matrix unit does in its operand path,
    :func:`unpacked`), checked: an op whose unit has no mode for its dtype raises."""
    K = d.matrix_peak.shape[1]
    if matrix.shape[0] == 1:  # the same units on every design: the columns are one row, kept per unit pattern
        free = unpacked(o, d)
        key = ("unit-columns", matrix.tobytes(), free.tobytes())
        if key not in o.cache:
            col = np.where(free, 2 * K + 1, np.where(o.flops > 0, _unit_columns(o, d, matrix)[0], 2 * K))
            o.cache[key] = (col, np.unique(col))
        col, used = o.cache[key]
        if np.isnan(table[:, used]).any():
            _check_modes(o, _gather(table, col[None, :]))
        return col[None, :]
    col = np.where(unpacked(o, d), 2 * K + 1, np.where(o.flops > 0, _unit_columns(o, d, matrix), 2 * K))
    _check_modes(o, _gather(table, col))
    return col


def _unit_rate(o: OpArrays, d: DesignBatch, matrix: np.ndarray) -> np.ndarray:
    """[D, O] peak x efficiency of each op's unit (the same products as ``peak * eff`` of :func:`unit_peak`,
    taken per design and mode first, then gathered by row); ops without FLOPs read 1.0."""
    table = rate_table(d)
    return _gather(table, rate_columns(o, d, matrix, table))


def fill_parts(o: OpArrays, d: DesignBatch, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`array_fill` as (``F`` [1 or D, O], ``cols`` [k], ``V`` [D, k]): the fill is ``F`` except in the ``k``
    columns ``cols``, where design ``d`` has ``V[d]``. When every design has the same arrays ``F`` is a read-only
    [1, O] row kept in ``o.cache``; when only the core count differs (and no ``cta_tiles``), that row without the wave
    fill times the wave fill's first row, and the few columns whose wave fill depends on the cores
    (:func:`dse.predict.tiles.kernel_fill_sparse`) per design: no [D, O] fill is built."""
    none = np.zeros(0, dtype=np.intp)
    n = d.cores
    same_cores = bool((n == n[0]).all()) if n.size else True
    row = _fill_row(o, d, matrix, wave=same_cores)  # without the wave fill where the core count differs
    if row is None:
        return array_fill(o, d, matrix), none, np.zeros((d.n, 0))
    if same_cores:
        return row, none, np.zeros((d.n, 0))
    wave, cols, vals = kernel_fill_sparse(o, d)
    masked = masked_work(o, d)  # the row left out both (array_fill divides its full fill by the masked work)
    return row * (wave / masked)[None, :], cols, row[:, cols] * vals / masked[cols]


def _lean_fill(o: OpArrays, d: DesignBatch, matrix: np.ndarray, rate: np.ndarray, want: bool = False
               ) -> np.ndarray | None:
    """``rate *= ``:func:`array_fill` in place, from :func:`fill_parts` (no [D, O] fill is built where it is a row).
    With ``want`` the fill is returned too ([1, O] or [D, O])."""
    first, cols, per_fill = fill_parts(o, d, matrix)
    per = rate[:, cols] * per_fill if cols.size else None  # the same products array_fill makes
    rate *= first
    if cols.size:
        rate[:, cols] = per
    if not want or not cols.size:
        return first
    fill = np.repeat(first, d.n, axis=0)
    fill[:, cols] = per_fill
    return fill


def evaluate(d: DesignBatch, o: OpArrays) -> BatchResult:
    """Predict every op on every design (one instance each; multiply by ``o.count`` for totals).

    Arrays come back in the operator table's row order."""
    matrix = on_matrix(o, d)
    peak, eff = unit_peak(o, d, matrix)
    needs = ((o.flops > 0) & ~unpacked(o, d))[None, :]  # a block-scaled weight the matrix unit decodes: no time
    fill = np.broadcast_to(array_fill(o, d, matrix), peak.shape)
    t_compute = np.where(needs, o.flops[None, :] / np.where(needs, peak * eff * fill, 1.0), 0.0)
    tr = traffic(d, o)
    ratio = d.write_ratio
    t_mem = np.stack([write_weighted(tr[:, :, lv], o, ratio[lv]) for lv in range(tr.shape[2])], axis=2) / (
        d.delivered_bandwidth * d.bw_eff)[:, None, :]
    t_net = np.zeros_like(t_compute)
    if o.coll_idx.size:
        t_net[:, o.coll_idx] = network_times(d, o)
    main = main_level(d, o)
    t_main = None if main is None else t_mem[:, o.tiled, main]
    over = overhead_times(d, o, matrix, tr)
    t_pipe = pipeline_exposed(d, o, matrix, t_compute, t_main)  # None where no op pays one: nothing to add or keep
    t_over = np.broadcast_to(over if t_pipe is None else over + t_pipe, t_compute.shape)  # fixed_times, parts kept
    clock = apply_cap(d, o, matrix, t_compute, np.maximum(t_mem.max(axis=2), t_net), t_over,
                      ((lv, tr[:, :, lv]) for lv in range(tr.shape[2])))
    t_compute = t_compute / clock
    t_roof = np.maximum(np.maximum(t_compute, t_mem.max(axis=2)), t_net)
    time = t_roof + t_over
    if o.eager.any():  # the host dispatches eager ops one at a time: each takes at least its dispatch time
        t_host = np.where(o.eager[None, :], d.host_s[:, None], 0.0)
        t_over = np.maximum(t_over, t_host - t_roof)
        time = t_roof + t_over
    terms = np.concatenate([t_compute[:, :, None], t_mem, t_net[:, :, None]], axis=2)
    bound = terms.argmax(axis=2)
    array = array_bound(bound == 0, fill, t_compute, terms[:, :, 1:].max(axis=2), matrix)
    bound = np.where(array, terms.shape[2] + 1, bound)
    bound = np.where(t_over > t_roof, terms.shape[2], bound)
    back = o.to_table_order
    return BatchResult(time=back(time), t_compute=back(t_compute), t_memory=back(t_mem), t_overhead=back(t_over),
                       traffic=back(tr), bound=back(bound), peak=back(peak), fill=back(fill), t_network=back(t_net),
                       clock=back(clock), on_matrix=back(np.broadcast_to(matrix, time.shape)),
                       t_pipeline=None if t_pipe is None else back(np.broadcast_to(t_pipe, time.shape)))


def _lean_terms(d: DesignBatch, o: OpArrays) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sorted-order ``[D, O]`` pieces of the lean path: the op's unit (matrix or not), its compute time at
    full clock, the largest memory/network time and the launch overhead."""
    matrix = on_matrix(o, d)
    rate = _unit_rate(o, d, matrix)  # ops without FLOPs read 1.0: they get 0, not 0/NaN
    _lean_fill(o, d, matrix, rate)
    t_compute = np.divide(o.flops, rate, out=rate)
    main = main_level(d, o)  # [1, O] below when no level differs between designs
    rest, t_main = (max_memory_time(d, o), None) if main is None else max_memory_time(d, o, keep=main)
    if o.coll_idx.size:
        rest = np.array(np.broadcast_to(rest, t_compute.shape))
        rest[:, o.coll_idx] = np.maximum(rest[:, o.coll_idx], network_times(d, o))
    return matrix, t_compute, rest, fixed_times(d, o, matrix, t_compute, t_main)


def main_level(d: DesignBatch, o: OpArrays) -> int | None:
    """The main memory's level whose time the software pipeline reads (:func:`dse.predict.pipeline.pays`), or
    None where no op pays a pipeline fill and drain."""
    return staging_level(d) + 1 if pays(d, o) else None


def _memory_max(d: DesignBatch, o: OpArrays, keep: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """([D or 1, O] the largest memory term ``traffic_l / (BW_l * eta_l)`` over the levels, [D or 1, O] int8 the
    bound code ``l + 1`` of the level that sets it, the first (innermost) on ties, as argmax picks, and level
    ``keep``'s time of the tiled ops [D or 1, T] (None without ``keep``)), folded level by level: leading levels the
    same on every design merge into one [1, O] row first, no [D, O, L] array is kept."""
    bw = d.delivered_bandwidth * d.bw_eff
    other = code = kept = None  # arrays of our own (each division makes a fresh one): written in place once full
    for lv, tr in per_level(d, o):
        col = bw[:, lv : lv + 1]
        tr = write_weighted(tr, o, d.write_ratio[lv])
        if lv == keep:
            kept = tiled_time(tr, col, o)
        x = tr / (col[:1] if tr.shape[0] == 1 and bool((col == col[0]).all()) else col)
        c = np.int8(lv + 1)
        if other is None:
            other, code = x, np.full(x.shape, c)
            continue
        wins = x > other  # strict: the earlier level keeps ties
        if wins.shape != other.shape:  # a [1, O] row meets the first per-design level: grow to [D, O] once
            other, code = np.maximum(other, x), np.where(wins, c, code)
            continue
        np.copyto(code, c, where=wins)
        np.maximum(other, x, out=other)
    if other is None:
        return np.zeros((1, o.n)), np.zeros((1, o.n), dtype=np.int8), kept
    return other, code, kept


def overhead_times(d: DesignBatch, o: OpArrays, matrix: np.ndarray, tr: np.ndarray | None = None) -> np.ndarray:
    """[D or 1, O] fixed time of each op (0 for a fused one): the launch overhead ``t_l`` of the template, or, where
    it gives the time ``t_g`` of a kernel whose bytes stay on chip (``compute.graph_kernel_us``), for an op on the
    vector units ``t_g + (t_l - t_g) x s`` with ``s`` the share of its compulsory bytes that cross the main memory
    (``min(1, traffic / compulsory)`` at the innermost off-chip level): a streaming kernel that reads main memory pays
    its memory pipeline's ramp and drain, one whose tensors stay on chip (residency, ``dse.predict.traffic``) only
    the launch of its grid. ``t_l`` comes from a real model's kernels (Hazy Research's measured cost of ~100 kernel
    boundaries of a decode step), ``t_g`` from a trivial streaming kernel replayed in a graph (gpu-benches
    gpu-small-kernels). A collective keeps ``t_l`` (no measurement splits it), and so does an op on the MAC arrays
    (``matrix`` [D or 1, O]): its first operand tiles,
    pipeline fill and epilogue cost it the same wherever its bytes come from (XLA's table times a 1024^3 fp8 GEMM
    whose operands sit in an H100's L2 at 6.5 us, cuBLASLt on Azure's H100 alike). ``tr`` [D, O, L]: the traffic
    where the caller has it (else the main memory's level is computed here)."""
    base = _shared(d.overhead_s)[:, None]
    g = d.graph_s
    off = np.flatnonzero(d.offchip)
    if g is None or np.isnan(g).all() or not off.size:
        return np.where(o.fused, 0.0, base)
    lv = int(off[0])
    main = level_rows(d, o, lv) if tr is None else tr[:, :, lv]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.clip(np.where(o.compulsory > 0, main / o.compulsory, 0.0), 0.0, 1.0)
    gs = np.where(np.isnan(g), d.overhead_s, g)[:, None]
    ramp = np.maximum(d.overhead_s[:, None] - gs, 0.0)
    streams = ~matrix & (o.compulsory > 0)[None, :]  # a streaming kernel (a collective moves no local bytes here)
    return np.where(o.fused, 0.0, np.where(streams, gs + ramp * share, d.overhead_s[:, None]))


def fixed_times(d: DesignBatch, o: OpArrays, matrix: np.ndarray, t_compute: np.ndarray,
                t_main: np.ndarray | None = None, tr: np.ndarray | None = None) -> np.ndarray:
    """[D or 1, O] time each op adds to its roofline: :func:`overhead_times` plus, on a scratchpad NPU, the
    software pipeline's exposed fill and drain (:func:`dse.predict.pipeline.pipeline_exposed`; ``t_compute`` [D, O]
    the ops' compute times at full clock, ``t_main`` [D or 1, T] the main memory's time of the tiled ops and ``tr``
    [D, O, L] the traffic where the caller has them)."""
    over = overhead_times(d, o, matrix, tr)
    ex = pipeline_exposed(d, o, matrix, t_compute, t_main)
    return over if ex is None else over + ex


def _shared(x: np.ndarray) -> np.ndarray:
    """``x`` [D], or its first entry [1] when every design has the same value (one shared row)."""
    return x[:1] if x.size and (x == x[0]).all() else x


def op_clocks(d: DesignBatch, o: OpArrays) -> np.ndarray:
    """[D, O] clock fraction of each op under ``power_limit_w`` (ones without a cap), sorted op order."""
    if d.base.power_limit_w is None:
        return np.ones((d.n, o.n))
    matrix, t_compute, rest, t_over = _lean_terms(d, o)
    return apply_cap(d, o, matrix, t_compute, rest, t_over, per_level(d, o))


def evaluate_times(d: DesignBatch, o: OpArrays, table_order: bool = True) -> np.ndarray:
    """[D, O] time of one instance of each op; the lean path used by search and sweeps.

    With ``table_order=False`` the columns stay in ``o``'s sorted order (see ``OpArrays.perm``)."""
    matrix, t, rest, t_over = _lean_terms(d, o)
    if d.base.power_limit_w is not None:  # the compute term at each op's capped clock
        t /= apply_cap(d, o, matrix, t, rest, t_over, per_level(d, o))
    np.maximum(t, rest, out=t)
    t += t_over
    if o.eager.any():  # the host dispatches eager ops one at a time: each takes at least its dispatch time
        np.maximum(t, np.where(o.eager, _shared(d.host_s)[:, None], 0.0), out=t)
    return o.to_table_order(t) if table_order else t


def evaluate_bound(d: DesignBatch, o: OpArrays, table_order: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """([D, O] time as :func:`evaluate_times`, [D, O] int8 binding ceiling as :func:`evaluate`'s ``bound``) in
    one lean pass: the terms are compared level by level as they are made, no [D, O, L] array is kept.
    (Under a power cap the bound comes from :func:`evaluate`.)"""
    if d.base.power_limit_w is not None:
        bound = evaluate(d, o).bound.astype(np.int8)  # table order
        return evaluate_times(d, o, table_order), bound if table_order else np.take(bound, o.perm, axis=1)
    matrix = on_matrix(o, d)
    rate = _unit_rate(o, d, matrix)
    fill = _lean_fill(o, d, matrix, rate, want=True)
    t_c = np.divide(o.flops, rate, out=rate)  # the compute term
    # the largest memory term, the level that sets it (first on ties), the main memory's time of the tiled ops
    other, mcode, t_main = _memory_max(d, o, main_level(d, o))
    t_over = fixed_times(d, o, matrix, t_c, t_main)  # before the roof overwrites t_c
    L = d.capacity.shape[1]
    if o.coll_idx.size:  # a collective's network term joins after the memory levels (first on ties loses)
        x = network_times(d, o)
        other = np.array(np.broadcast_to(other, t_c.shape))
        mcode = np.array(np.broadcast_to(mcode, t_c.shape))
        sub = other[:, o.coll_idx]
        mcode[:, o.coll_idx] = np.where(x > sub, np.int8(L + 1), mcode[:, o.coll_idx])
        other[:, o.coll_idx] = np.maximum(sub, x)
    wins = np.greater(other, t_c)  # strict: compute, the first term, binds on ties (as argmax does)
    code = np.where(wins, mcode, np.int8(0))
    roof = np.maximum(t_c, other, out=t_c)
    # where compute still binds (code 0) the running max is the compute term itself
    np.copyto(code, np.int8(L + 3), where=array_bound(code == 0, fill, roof, other, matrix))
    time = roof + t_over
    if o.eager.any():
        t_host = np.where(o.eager, _shared(d.host_s)[:, None], 0.0)
        np.maximum(time, t_host, out=time)
        t_over = np.maximum(t_over, t_host - roof)
    np.copyto(code, np.int8(L + 2), where=t_over > roof)
    if table_order:
        return o.to_table_order(time), o.to_table_order(code)
    return time, code
