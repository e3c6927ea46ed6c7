"""Traffic per memory level: how many bytes cross each level's boundary for each op on each design.

Level ``l`` serves the traffic the storage inside it cannot keep. The reuse capacity ``S`` inside
level 0 is the register/accumulator storage of one core; inside level ``l >= 1`` it is one instance
of level ``l-1`` (a private L1 is per core, a shared L2 is whole). Models (``../shared/DESIGN.md``):

* ``tiled`` (GEMM, conv): square output tiles of side ``t = sqrt(S / (e_a + e_b + e_out))``
  elements, capped by ``M`` and ``N``; A is re-read once per column block and B once per row
  block: ``traffic = A*ceil(N/t_n) + B*ceil(M/t_m) + C``. Never below the compulsory A + B + C.
  This is the classic tiled upper bound matching Hong and Kung's lower bound
  ``~2*M*N*K*e/sqrt(S/e)`` up to a constant (Hong & Kung, STOC 1981).
* ``attention`` (flash-style, Dao et al., NeurIPS 2022): Q tiles of ``t_q = S / (4*d*e)`` rows
  stream K and V once each: ``traffic = Q + O + (K + V)*ceil(M/t_q)``.
* ``stream`` (elementwise, norm, softmax, pool, embedding): every byte once at every level;
  an op fused into its producer never reaches off-chip levels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dse.hardware.designs import DesignBatch
from dse.units import DTYPE_INDEX

REUSE_CODES = {"tiled": 0, "attention": 1, "stream": 2}


@dataclass(frozen=True)
class OpArrays:
    """The columns of an operator table the predictor needs, as float arrays of shape ``[O]``."""

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
    tiled: np.ndarray  # int indices of tiled ops
    attn: np.ndarray  # int indices of attention ops
    stream: np.ndarray  # int indices of streaming ops

    @classmethod
    def from_table(cls, ops: pd.DataFrame) -> OpArrays:
        def f(col: str) -> np.ndarray:
            return ops[col].to_numpy(dtype=float)

        reuse = ops["reuse"].map(REUSE_CODES).to_numpy()
        if np.isnan(reuse.astype(float)).any():
            bad = sorted(set(ops["reuse"]) - set(REUSE_CODES))
            raise ValueError(f"unknown reuse model(s) {bad}; accepted: {sorted(REUSE_CODES)}")
        return cls(
            flops=f("flops"), count=f("count"), M=np.maximum(f("M"), 1), N=np.maximum(f("N"), 1),
            a_bytes=f("a_bytes"), b_bytes=f("b_bytes"), c_bytes=f("c_bytes"),
            tile_elem_bytes=f("elem_a") + f("elem_b") + f("elem_out"),
            head_bytes=4.0 * f("N") * f("elem_a"),
            compulsory=f("bytes_read") + f("bytes_written"),
            matrix=(ops["unit"] == "matrix").to_numpy(),
            dtype_idx=ops["dtype"].map(DTYPE_INDEX).to_numpy(dtype=int),
            fused=ops["fused"].to_numpy(dtype=bool),
            tiled=np.flatnonzero(reuse == 0), attn=np.flatnonzero(reuse == 1),
            stream=np.flatnonzero(reuse == 2),
        )

    @property
    def n(self) -> int:
        return int(self.flops.shape[0])


def inner_capacity(d: DesignBatch) -> np.ndarray:
    """[D, L] bytes of reuse storage just inside each level (per instance)."""
    inner = np.empty_like(d.capacity)
    inner[:, 0] = d.reg_bytes
    inner[:, 1:] = d.capacity[:, :-1] / d.instances[None, :-1]
    return inner


def tiled_traffic(S: np.ndarray, o: OpArrays, idx: np.ndarray) -> np.ndarray:
    """[D, len(idx), L] bytes for tiled ops ``idx`` given inner capacities ``S`` [D, L]."""
    e = o.tile_elem_bytes[idx][None, :, None]
    t = np.sqrt(S[:, None, :] / e)
    np.maximum(t, 1.0, out=t)
    M = o.M[idx][None, :, None]
    N = o.N[idx][None, :, None]
    a_passes = np.ceil(N / np.minimum(t, N))
    b_passes = np.ceil(M / np.minimum(t, M))
    return (o.a_bytes[idx][None, :, None] * a_passes + o.b_bytes[idx][None, :, None] * b_passes
            + o.c_bytes[idx][None, :, None])


def attention_traffic(S: np.ndarray, o: OpArrays, idx: np.ndarray) -> np.ndarray:
    """[D, len(idx), L] bytes for fused attention ops ``idx``."""
    tq = S[:, None, :] / o.head_bytes[idx][None, :, None]
    M = o.M[idx][None, :, None]
    np.clip(tq, 1.0, M, out=tq)
    passes = np.ceil(M / tq)
    return o.a_bytes[idx][None, :, None] + o.c_bytes[idx][None, :, None] + o.b_bytes[idx][None, :, None] * passes


def traffic(d: DesignBatch, o: OpArrays) -> np.ndarray:
    """[D, O, L] bytes crossing each level for one instance of each op."""
    S = inner_capacity(d)
    L = S.shape[1]
    out = np.empty((d.n, o.n, L))
    if o.tiled.size:
        out[:, o.tiled, :] = tiled_traffic(S, o, o.tiled)
    if o.attn.size:
        out[:, o.attn, :] = attention_traffic(S, o, o.attn)
    if o.stream.size:
        st = np.broadcast_to(o.compulsory[o.stream][:, None], (o.stream.size, L)).copy()
        st[np.ix_(o.fused[o.stream], d.offchip)] = 0.0
        out[:, o.stream, :] = st[None]
    return out
