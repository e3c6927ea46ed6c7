"""The lean predictor path (:func:`dse.predict.roofline.evaluate_times` / ``evaluate_bound`` and the mix's step
sums) as one compiled loop, when the optional ``fast`` extra (numba) is installed.

numpy's path makes every term of the roofline as a ``[D, O]`` array and reads it back for the next step: about 60
whole-array passes for the default mix, however small each step. Here numpy still builds everything that is per
design or per op (the rate table, the array fill, each level's tile-pass and residency tables, the network times:
``[D, k]`` tables with ``k`` far below ``O``, from the same functions as numpy's path), and one kernel combines them
element by element in registers, summing each op's time straight into its workloads' step times: no ``[D, O]`` array
is written at all (``benchmarks/predict_passes.py`` measures it in whole-array passes). The energy model's bytes per
level and workload (:func:`level_bytes`, ``dse.cost.power.mix_energy``) are summed by the same kernel.

The kernel repeats the per-element arithmetic of numpy's path operation for operation (the same products, sums and
divisions in the same order), so each op's time and binding ceiling are bit for bit numpy's; the step sums differ
from numpy's matrix product only in summation order (a few ulp). ``tests/predict/test_fused.py`` checks both on
templates of every kind (scratchpads, caches, graph kernels, collectives, no DRAM). Without numba, under a power cap
(its clock iteration stays in numpy), or below :data:`FUSED_MIN` elements (where preparing costs more than it
saves) numpy's path runs. Set ``DSE_FUSED=0`` to force numpy's path. The compiled kernel is cached by numba next to
``_fused_kernels.py`` (or in ``NUMBA_CACHE_DIR``).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from types import ModuleType
from typing import Any

import numpy as np

from dse.hardware.designs import DesignBatch
from dse.predict.network import network_times
from dse.predict.pipeline import paying, pays, staging_bytes, staging_level, workers
from dse.predict.roofline import fill_parts, on_matrix, rate_columns, rate_table
from dse.predict.traffic import (
    OpArrays,
    _held_columns,
    _resides,
    _tile_classes,
    inner_capacity,
    level_case,
    resident_capacity,
    room_table,
    write_weighted,
)

#: design x op elements below which numpy's path runs (compiling once and the per-call preparation cost more)
FUSED_MIN = 1 << 17
#: design x op elements prepared per call of the kernel (a per-design [D, O] column or fill table, where a search
#: varies the array or the units, stays within 16 MB; the default mix's 166 ops: 12,600 designs a call)
CHUNK_ELEMENTS = 1 << 21
MIN_CHUNK = 512  #: designs a call prepares at least (one block of the kernel)


@functools.cache
def installed() -> bool:
    """Whether numba (the ``fast`` extra) is installed; it is imported only when a kernel first runs."""
    return importlib.util.find_spec("numba") is not None


def available() -> bool:
    """Whether the compiled path can run: numba is installed and ``DSE_FUSED`` is not ``0``."""
    return os.environ.get("DSE_FUSED", "1") != "0" and installed()


def describe() -> str:
    """Which batch path runs, in a few words (``dse --version`` prints it)."""
    if not installed():
        return "numpy; dse[fast] compiles it"
    from importlib.metadata import PackageNotFoundError, version

    try:
        numba_version = version("numba")
    except PackageNotFoundError:
        numba_version = "?"
    if not available():
        return f"numpy, DSE_FUSED=0 (numba {numba_version})"
    return f"compiled, numba {numba_version}"


@functools.cache
def _jit() -> ModuleType:
    """The compiled kernels (``dse.predict._fused_kernels``: importing it imports numba; numba's cache keeps the
    machine code between processes)."""
    return importlib.import_module("dse.predict._fused_kernels")


def applies(d: DesignBatch, o: OpArrays) -> bool:
    """Whether :func:`mix_times` / :func:`mix_times_bounds` take the compiled path for this batch (numba is imported,
    the first time, only once a batch is large enough)."""
    return (available() and d.base.power_limit_w is None and d.n * o.n >= FUSED_MIN and o.n > 0
            and _importable())


@functools.cache
def _importable() -> bool:
    """Whether the kernels' module imports: an installed numba that does not (built for another numpy, or with no
    writable cache location for ``cache=True``) leaves numpy's path running, with one warning, rather than failing
    every large batch."""
    try:
        _jit()
    except (ImportError, RuntimeError, OSError) as exc:  # an unsupported numpy; no writable cache location
        import warnings

        warnings.warn(f"dse: the compiled batch predictor is off (numba does not import: {exc}); numpy's path runs",
                      RuntimeWarning, stacklevel=3)
        return False
    return True


#: ``_tile_classes`` of a table without tiled ops: no classes, no pairs
_NO_TILES = (np.zeros(0), np.zeros(0, dtype=np.intp), np.zeros(0), np.zeros(0, dtype=np.intp),
             np.zeros(0, dtype=np.intp), np.zeros(0), np.zeros(0, dtype=np.intp))


def _csr(m: np.ndarray | None, n_ops: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row pointers, column indices and values of the nonzeros of ``m`` [O, W] (empty rows without ``m``)."""
    if m is None:
        return np.zeros(n_ops + 1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
    r, c = np.nonzero(m)
    ptr = np.zeros(n_ops + 1, dtype=np.int64)
    np.add.at(ptr, r + 1, 1)
    return np.cumsum(ptr), c.astype(np.int64), m[r, c].astype(float)


def _op_columns(o: OpArrays) -> tuple[np.ndarray, np.ndarray, int]:
    """([O] column of the pass table each op's A term reads, [O] its B term's, the table's width). The table is
    ``[1 | a_passes | b_passes | kv_passes]`` (``dse.predict.traffic.tile_passes`` / ``kv_passes``): a tiled op reads
    its (class, N) and (class, M) pair, an attention op 1 and its ``ceil(M / t_q)``, a stream op 1 and 1."""
    key = "fused-columns"
    if key not in o.cache:
        _, a_cls, _, a_inv, b_cls, _, b_inv = _tile_classes(o) if o.tiled.stop > o.tiled.start else _NO_TILES
        nA, nB = len(a_cls), len(b_cls)
        ia = np.zeros(o.n, dtype=np.int64)
        ib = np.zeros(o.n, dtype=np.int64)
        ia[o.tiled] = 1 + a_inv
        ib[o.tiled] = 1 + nA + b_inv
        at = o.attn
        ib[at] = 1 + nA + nB + np.arange(at.stop - at.start)
        o.cache[key] = ia, ib, 1 + nA + nB + (at.stop - at.start)
    return o.cache[key]


def _coefficients(o: OpArrays, offchip: bool, keep: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[O] each op's ``A``, ``C`` and ``B`` bytes in ``((A P_a + C) k_a + (B P_b) k_b)`` (``keep``) or
    ``((A P_a + B P_b) + C)``: :func:`dse.predict.traffic.level_traffic` term by term."""
    A, B, C = o.a_bytes.copy(), o.b_bytes.copy(), o.c_bytes.copy()
    at, st = o.attn, o.stream
    if not keep:  # (A + C) + kv
        A[at] = o.a_bytes[at] + o.c_bytes[at]
        C[at] = 0.0
    moved = np.where(o.fused[st], 0.0, o.compulsory[st]) if offchip else o.compulsory[st]
    if keep:
        held = np.where(moved > 0, o.held_bytes[st], 0.0)
        A[st], B[st] = moved - held, held
    else:
        A[st], B[st] = moved, 0.0
    C[st] = 0.0
    return A, C, B


def _buffer(o: OpArrays, name: str, shape: tuple[int, ...], dtype: type = np.float64) -> np.ndarray:
    """A buffer of ``shape`` kept in ``o.cache`` (one per name: a search's chunks reuse it instead of faulting in
    fresh pages; its contents are overwritten where read)."""
    key = ("fused-" + name,)
    buf = o.cache.get(key)
    if buf is None or buf.shape != shape or buf.dtype != dtype:
        buf = o.cache[key] = np.empty(shape, dtype=dtype)
    return buf


def _rows(o: OpArrays, name: str, x: np.ndarray) -> np.ndarray:
    """``x.T`` [k, D] as a C-ordered copy in a kept buffer (designs last: the kernel's loops run along them)."""
    buf = _buffer(o, name, x.shape[::-1], x.dtype.type)
    np.copyto(buf, x.T)
    return buf


def _prepare(dc: DesignBatch, o: OpArrays) -> dict[str, Any]:
    """The kernel's per-design tables ([k, D], designs last) and per-op rows for one chunk of designs."""
    D, O = dc.n, o.n
    matrix = on_matrix(o, dc)
    table = rate_table(dc)
    col = rate_columns(o, dc, matrix, table)
    F, fcols, FV = fill_parts(o, dc, matrix)
    fcol = np.full(O, -1, dtype=np.int64)
    fcol[fcols] = np.arange(fcols.size)
    S = inner_capacity(dc)
    res = resident_capacity(dc) if _resides(o) else None
    bw = dc.delivered_bandwidth * dc.bw_eff
    L = S.shape[1]
    ia, ib, n_p = _op_columns(o)
    lmode = np.zeros(L, dtype=np.int64)
    lkeep = np.zeros(L, dtype=np.bool_)
    XT, XX = np.zeros((L, O)), np.zeros((L, O))
    CA, CC, CB = np.zeros((L, O)), np.zeros((L, O)), np.zeros((L, O))
    cases = [level_case(dc, o, S, res, lv) for lv in range(L)]  # (shared row or None, private, keep) per level
    # per-design tables: only the levels that read them fill them (np.empty: the others are never read)
    P = _buffer(o, "P", (L, n_p if any(row is None for row, _, _ in cases) else 0, D))
    G = o.fp_weights.shape[0]
    KR, KC, KX = _buffer(o, "KR", (L, D)), _buffer(o, "KC", (L, D), np.bool_), _buffer(o, "KX", (L, D), np.bool_)
    KC[:] = False
    KW, KH = _buffer(o, "KW", (L, G, D)), _buffer(o, "KH", (L, 2 * G, D))
    for lv, (row, private, keep) in enumerate(cases):
        bcol = bw[:, lv : lv + 1]
        if row is not None:
            XT[lv] = row[0]
            if bcol.size and (bcol == bcol[0]).all():
                lmode[lv] = 0
                XX[lv] = (write_weighted(row, o, dc.write_ratio[lv]) / bcol[:1])[0]
            else:
                lmode[lv] = 1
            continue
        lmode[lv] = 2
        teb, a_cls, a_N, _, b_cls, b_M, _ = _tile_classes(o) if o.tiled.stop > o.tiled.start else _NO_TILES
        at = o.attn
        M = o.M[at]
        _jit().pass_table(np.ascontiguousarray(S[:, lv]), teb, a_cls.astype(np.int64), a_N, b_cls.astype(np.int64), b_M,
                    o.head_bytes[at], np.minimum(M, o.head_rows[at]) if private else M, M, P[lv])
        CA[lv], CC[lv], CB[lv] = _coefficients(o, bool(dc.offchip[lv]), keep)
        if keep:
            lkeep[lv] = True
            R, cache, full, steps = (np.ascontiguousarray(x[:, lv]) for x in res.storage)
            KR[lv], KC[lv], KX[lv] = R, cache, steps
            _jit().keep_table(R, cache, full, steps, *room_table(o), o.fp_weights, o.fp_kv, KW[lv], KH[lv])
    cols, idx, pinned = _held_columns(o)
    hidx = np.zeros(O, dtype=np.int64)
    hidx[cols] = idx
    pin = np.zeros(O)
    pin[cols] = pinned
    ncol = np.full(O, -1, dtype=np.int64)
    NET = np.zeros((0, D))
    if o.coll_idx.size:
        ncol[o.coll_idx] = np.arange(o.coll_idx.size)
        NET = np.ascontiguousarray(network_times(dc, o).T)
    off = np.flatnonzero(dc.offchip)
    g = dc.graph_s
    graph = g is not None and not np.isnan(g).all() and off.size > 0
    ov = np.broadcast_to(dc.overhead_s, (D,)).astype(float)
    gs = np.where(np.isnan(g), ov, g) if graph else ov
    pt, pipe = _pipeline_rows(dc, o, D)
    return dict(
        PT=pt, pipe=pipe,
        RT=_rows(o, "RT", table), col=np.ascontiguousarray(col, dtype=np.int64),
        F=np.ascontiguousarray(F, dtype=float), fcol=fcol, FV=_rows(o, "FV", FV),
        lmode=lmode, XT=XT, XX=XX, BW=_rows(o, "BW", bw), P=P, ia=ia, ib=ib, CA=CA, CC=CC, CB=CB,
        RHO=dc.write_ratio,
        lkeep=lkeep, KR=KR, KC=KC, KX=KX, KW=KW, KH=KH, hidx=hidx, pin=pin, ncol=ncol, NET=NET,
        graph=bool(graph), lmain=int(off[0]) if off.size else -1, OV=ov, GS=gs, RAMP=np.maximum(ov - gs, 0.0),
        MAT=np.ascontiguousarray(matrix, dtype=np.bool_), HOST=np.broadcast_to(dc.host_s, (D,)).astype(float))


def _pipeline_rows(dc: DesignBatch, o: OpArrays, D: int) -> tuple[np.ndarray, tuple]:
    """([O] bool: the op pays a scratchpad pipeline's fill and drain, the kernel's per-op and per-design rows of
    :func:`dse.predict.pipeline.block_counts` and ``pipeline_exposed``: M, N, K, 1 / sqrt(2 e), the output's
    read-byte equivalents, sqrt of a core's staging bytes, the worker cores, the main level's write ratio)."""
    pt = np.zeros(o.n, dtype=np.bool_)
    zeros = np.zeros(o.n)
    if not pays(dc, o):
        return pt, (zeros, zeros, zeros, zeros, zeros, np.zeros(D), np.zeros(D), 1.0)
    lv = staging_level(dc)
    t = o.tiled
    pt[t] = paying(dc, o)
    K = np.maximum(o.K, 1.0)
    ib = np.zeros(o.n)
    ib[t] = 1.0 / np.sqrt(2.0 * o.tile_elem_bytes[t])
    rho = float(dc.write_ratio[lv + 1])
    return pt, (o.M.astype(float), o.N.astype(float), K, ib, o.c_bytes * rho,
                np.ascontiguousarray(np.broadcast_to(np.sqrt(staging_bytes(dc, lv)), (D,)), dtype=float),
                np.ascontiguousarray(np.broadcast_to(workers(dc), (D,)), dtype=float), rho)


def _run(d: DesignBatch, o: OpArrays, member: np.ndarray, overlap: np.ndarray | None, window: np.ndarray | None,
         owner: np.ndarray | None = None, weight: np.ndarray | None = None, n_b: int = 0,
         mix_weights: np.ndarray | None = None, keep_by: bool = True, counts: np.ndarray | None = None
         ) -> tuple[np.ndarray, np.ndarray | None, tuple[np.ndarray, np.ndarray, np.ndarray] | None, np.ndarray | None]:
    """([D, W] step times, [D, W, B] time under each ceiling (a view of [W, B, D]; None without ``owner`` or
    ``keep_by``), the :func:`dse.predict.binding_summary` of the ceilings' times weighted by ``mix_weights`` (None
    without), [L, W, D] each level's bytes x ``counts`` [O, W] per workload (None without ``counts``,
    :func:`level_bytes`)) of the mix arrays on every design."""
    W = member.shape[1]
    want = owner is not None
    times = np.empty((d.n, W))
    byT = np.empty((W, n_b, d.n)) if want and keep_by else np.zeros((1, 1, 1))
    summary = mix_weights is not None and want
    top = np.empty((W, d.n), dtype=np.int8) if summary else np.zeros((1, 1), dtype=np.int8)
    bind = np.empty(d.n, dtype=np.int8) if summary else np.zeros(1, dtype=np.int8)
    share = np.empty(d.n) if summary else np.zeros(1)
    mw = np.asarray(mix_weights, dtype=float) if summary else np.zeros(0)
    L = d.capacity.shape[1]
    en = np.zeros((L, W, d.n)) if counts is not None else np.zeros((0, 1, 1))
    cnt = _csr(counts if counts is not None else np.zeros((o.n, W)), o.n)
    m, ov, wn = _csr(member, o.n), _csr(overlap, o.n), _csr(window, o.n)
    own = owner.astype(np.int64) if want else np.zeros(o.n, dtype=np.int64)
    wgt = weight.astype(float) if want else np.zeros(o.n)
    ia, ib, _ = _op_columns(o)
    chunk = max(CHUNK_ELEMENTS // max(o.n, 1), MIN_CHUNK)
    for start in range(0, d.n, chunk):
        sl = slice(start, min(start + chunk, d.n))
        dc = d if sl.start == 0 and sl.stop == d.n else d.take(sl)
        p = _prepare(dc, o)
        k = dc.n
        T, OVS, WIN = np.zeros((W, k)), np.zeros((W, k)), np.zeros((W, k))
        ops = (o.flops, o.live, o.fp_group.astype(np.int64), o.single, o.stay_act, o.held > 0, o.fused,
               o.compulsory, o.eager, p["fcol"], ia, ib, p["hidx"], p["pin"], p["ncol"], o.written)
        unit = (p["RT"], p["col"], p["F"], p["FV"])
        lv = tuple(p[x] for x in ("lmode", "XT", "XX", "BW", "P", "CA", "CC", "CB", "lkeep", "KR", "KC", "KX", "KW",
                                  "KH", "RHO"))
        over = (p["graph"], p["lmain"], p["OV"], p["GS"], p["RAMP"], p["MAT"], p["HOST"], p["NET"], p["PT"], p["pipe"])
        whole = k == d.n  # one call: the outputs themselves; else C-ordered pieces (one compiled signature)
        outs = [byT if not (want and keep_by) else byT if whole else np.empty((W, n_b, k)),
                top if not summary or whole else np.empty((W, k), dtype=np.int8),
                bind if not summary or whole else np.empty(k, dtype=np.int8),
                share if not summary or whole else np.empty(k),
                en if counts is None or whole else np.zeros((L, W, k))]
        _jit().kernel(ops, unit, (*lv, p["KC"].any(axis=1)), over, (*m, *ov, *wn), want, n_b, own, wgt, mw,
                      T, OVS, WIN, *outs[:4], cnt, outs[4])
        if not whole and want and keep_by:
            byT[:, :, sl] = outs[0]
        if not whole and summary:
            top[:, sl], bind[sl], share[sl] = outs[1:4]
        if not whole and counts is not None:
            en[:, :, sl] = outs[4]
        if overlap is not None:
            T += np.maximum(0.0, OVS - WIN)
        times[sl] = T.T
    return (times, byT.transpose(2, 0, 1) if want and keep_by else None,
            (top, bind, share) if summary else None, en if counts is not None else None)


def mix_step_times(d: DesignBatch, o: OpArrays, member: np.ndarray, overlap: np.ndarray | None,
                   window: np.ndarray | None) -> np.ndarray:
    """[D, W] step times (``dse.predict.step_times`` of ``evaluate_times``), compiled."""
    return _run(d, o, member, overlap, window)[0]


def mix_step_bounds(d: DesignBatch, o: OpArrays, member: np.ndarray, overlap: np.ndarray | None,
                    window: np.ndarray | None, owner: np.ndarray, weight: np.ndarray, n_b: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """([D, W] step times, [D, W, B] each workload's op time x ``weight`` under each binding ceiling), compiled."""
    times, by, _, _ = _run(d, o, member, overlap, window, owner, weight, n_b)
    return times, by


def mix_step_bindings(d: DesignBatch, o: OpArrays, member: np.ndarray, overlap: np.ndarray | None,
                      window: np.ndarray | None, owner: np.ndarray, weight: np.ndarray, n_b: int,
                      mix_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """([D, W] step times, then :func:`dse.predict.binding_summary` of the ceilings' times weighted by
    ``mix_weights``), without the [D, W, B] array."""
    times, _, summary, _ = _run(d, o, member, overlap, window, owner, weight, n_b, mix_weights, keep_by=False)
    return (times, *summary)


def level_bytes(d: DesignBatch, o: OpArrays, counts: np.ndarray) -> np.ndarray:
    """[L, D, W] bytes crossing each memory level per step of each workload (op traffic x ``counts`` [O, W], the
    energy model's work done; ``dse.cost.power.mix_energy``), compiled: ``per_level`` traffic summed by the kernel
    as it goes, no [D, O] traffic array."""
    return _run(d, o, counts, None, None, counts=counts)[3].transpose(0, 2, 1)  # (its step sums go unread)
