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

The library is modelled as picking the best: ``fill = max over tiles (m, n) and s in {1, 2, 4, 8, 16} of
q * r``, split-K (``s > 1``) only when the unsplit grid has fewer CTAs than cores (the case split-K exists
for: a small output grid with a long K) and each split keeps ``ceil(K/s) >= 64`` (one k-block of the tiles).
The split counts (powers of two) and the "grid < cores" rule are assumptions (no library documents its
heuristic); they were chosen among a few variants by the validation rows (see README, model selection).
The tile set is the template's ``compute.matrix.cta_tiles`` (the A100 templates list the tensor-op tiles
CUTLASS instantiates for sm80 and the tile sizes in cuBLAS's sm80 kernel names); templates without it keep
the MAC-array quantization of ``dse.predict.roofline.array_fill``. The fix-up of split-K's fp32 partial
tiles is not costed. Computed from the template (``DesignBatch.base``, not per design) once per op table,
as one ``[O]`` row.
"""

from __future__ import annotations

import numpy as np

from dse.hardware.designs import DesignBatch
from dse.predict.traffic import OpArrays

SPLITS = (1, 2, 4, 8, 16)
MIN_K_SLICE = 64  # the k-block of CUTLASS's sm80 tensor-op tiles: a split never reduces fewer


def _shared_rate(d: DesignBatch) -> float:
    """Bytes/s of the outermost on-chip (sram) level, after its efficiency: the bandwidth tiles stream from."""
    hw = d.base
    sram = [lv for lv in hw.memory if not lv.off_chip]
    if not sram:
        return float("inf")
    lv = sram[-1]
    return float(lv.bandwidth_tbps) * 1e12 * float(lv.efficiency)


def tile_fill(o: OpArrays, d: DesignBatch) -> np.ndarray | None:
    """[O] best tile-and-wave efficiency ``max q * r`` of each op (1 where it does not apply: ops with no
    ``K``), or None when the template names no ``cta_tiles``."""
    unit = d.base.compute.matrix
    tiles = unit.cta_tiles
    if not tiles or o.K.size != o.n:
        return None
    key = ("cta-tiles", d.base.name, tuple(map(tuple, tiles)), int(d.base.compute.cores))
    row = o.cache.get(key)
    if row is not None:
        return row
    C = float(d.base.compute.cores)
    from dse.units import DTYPES

    peaks = np.array([unit.peak_tflops.get(dt, np.nan) for dt in DTYPES], dtype=float) * 1e12 * unit.efficiency
    peak = peaks[o.dtype_idx]  # [O] achievable FLOP/s of the op's mode (NaN: no mode; its fill is unused)
    bw = _shared_rate(d)
    M, N, K, b = o.M, o.N, o.K, o.batch
    e = np.maximum(o.elem_ab, 1e-9)
    useful = b * M * N * K
    best = np.zeros(o.n)
    with np.errstate(invalid="ignore", divide="ignore"):
        for m, n in tiles:
            grid = b * np.ceil(M / m) * np.ceil(N / n)
            r = np.minimum(1.0, bw * 2.0 * m * n / ((m + n) * e) / peak)
            r = np.where(np.isnan(r), 1.0, r)
            for s in SPLITS:
                ks = np.ceil(K / s)
                ok = (s == 1) | ((grid < C) & (ks >= MIN_K_SLICE))
                waves = np.ceil(grid * s / C)
                q = useful / (waves * C * m * n * ks)
                best = np.where(ok, np.maximum(best, q * r), best)
    row = np.where(K > 1, np.clip(best, 0.0, 1.0), 1.0)
    row.flags.writeable = False
    o.cache[key] = row
    return row
