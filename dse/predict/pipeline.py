"""A scratchpad NPU's software pipeline: the fill and drain a GEMM cannot hide.

An NPU compiler runs a GEMM or convolution on its MAC arrays as a software pipeline over blocks staged in the
scratchpad next to the main memory (a TPU's VMEM, a Tensix core's L1, a NeuronCore's SBUF, Gaudi's SRAM): while
the arrays compute block ``i`` the DMA engines load the operands of block ``i + 1`` and store finished outputs
(JAX docs, "Pallas TPU: Pipelining"; tt-metal's double-buffered circular buffers; NKI's tiling guide). Over ``n``
steps and ``n_out`` output blocks per core, with the op's main-memory input and output times ``t_in``, ``t_out``
and its compute time ``t_c``, two chains bound the kernel: the arrays wait for the first block's load and the last
output block waits for its store after them, and the DMA engines move every byte and wait for the last block's
compute before its store::

    T = max(t_in / n + t_c + t_out / n_out,  t_in + t_out + t_c / n)

and what the roofline's ``max(t_c, t_in + t_out)`` misses, ``T - max(t_c, t_in + t_out)``, is the exposed fill
and drain. A GEMM that fits one block (``n = n_out = 1``) loads, computes and stores in series:
``t_in + t_c + t_out``.

Between operators a graph compiler hides all of it (``compute.op_boundaries: overlapped``, the default): it issues
the next operator's first loads while this one computes and keeps or drains its outputs behind the next one's work
(XLA's memory-space assignment prefetches operands into VMEM ahead of their use, Jouppi et al., "TPU v4", ISCA 2023
Sec. 3; the Neuron and SynapseAI graph compilers schedule one instruction stream for the graph), so only a lone
operator, a kernel benchmark run once, pays it, and so does every operator an eager framework dispatches on its
own (``execution: eager``). A runtime that runs every operator as its own program
(``serial``: tt-metal, whose op-by-op device profile times each op's kernels from their start to their end, and a
model's device time is their sum) starts every operator with empty buffers and ends it with its last store: each
pays.

Blocks are squares of side ``b = sqrt(S / (2 (e_a + e_b + e_out)))``, ``S`` a core's share of the staging
scratchpad (or of a larger on-chip level inside it: :func:`staging_bytes`; every block double-buffered), each side
capped by the op's own dimension (Pallas: the largest blocks that fit VMEM are best). Per core
``n_out = ceil(M N / (C b_m b_n))``, ``n = n_out ceil(K / b_k)``. A larger
scratchpad therefore means larger blocks and a longer first load and last store (what XLA's single-block 1024^3 and
2048^3 GEMMs on TPU7x show); a runtime whose per-shape block sizes do not grow with it (tt-metal's program
configs) is not modelled, so an SRAM study on a ``serial`` template sees that cost (docs/npu_validation.md).

The measured bf16 GEMMs on one TPU7x TensorCore (accelerator-microbenchmarks, 256^3-4096^3, never fitted) take
0.16, 0.51, 2.35, 5.8 and 8.7 us beyond the template's launch and roofline; this mechanism gives 0.04, 0.28, 1.96,
7.8 and 10.5 us (``tests/predict/test_pipeline.py``), no coefficient fitted, where the roofline alone was 7-38 %
fast on them. GPU-style templates (``cta_tiles``) time their tiles' prologue and epilogue in
:mod:`dse.predict.tiles` instead, and caches stage nothing the compiler places.
"""

from __future__ import annotations

import numpy as np

from dse.hardware.designs import DesignBatch
from dse.predict.traffic import OpArrays, level_rows, tiled_time, write_weighted


def staging_level(d: DesignBatch) -> int | None:
    """Index of the scratchpad that stages the main memory's blocks (the level just inside the innermost off-chip
    level), or None: no off-chip level, a cache there, or a GPU-style template (``cta_tiles``)."""
    off = np.flatnonzero(d.offchip)
    if not off.size or off[0] == 0 or d.base.compute.matrix.cta_tiles:
        return None
    lv = int(off[0]) - 1
    return lv if d.base.memory[lv].organization == "scratchpad" else None


def lone_op(o: OpArrays) -> bool:
    """Whether the step is one operator run once (a kernel benchmark): nothing runs before it to hide a prefetch."""
    return o.n == 1 and float(o.count[0]) <= 1.0


def paying(d: DesignBatch, o: OpArrays) -> np.ndarray:
    """[T] bool: the tiled ops (``o.tiled``) that pay a pipeline fill and drain on ``d``'s template (one with a
    staging scratchpad): all of them where every operator is its own program (``op_boundaries: serial``) or the
    step is one lone operator, else those an eager framework dispatches one at a time (``execution: eager``: no
    compiled graph overlaps an operator with its neighbours)."""
    t = o.tiled
    if staging_level(d) is None or t.stop <= t.start:
        return np.zeros(max(t.stop - t.start, 0), dtype=bool)
    if d.base.compute.op_boundaries == "serial" or lone_op(o):
        return np.ones(t.stop - t.start, dtype=bool)
    return o.eager[t].astype(bool)


def pays(d: DesignBatch, o: OpArrays) -> bool:
    """Whether any op of ``o`` pays a pipeline fill and drain on ``d``'s template (:func:`paying`)."""
    return bool(paying(d, o).any())


def staging_bytes(d: DesignBatch, lv: int) -> np.ndarray:
    """[D] bytes a core stages its blocks in: its share of the largest on-chip level up to the staging level ``lv``
    (``capacity / cores``, a per-core level's own copy), as :func:`dse.predict.traffic.inner_capacity` lets a small
    buffer between a core's scratchpad and the main memory pass the tiles the scratchpad keeps."""
    return (d.capacity[:, : lv + 1] / d.cores[:, None]).max(axis=1)


def workers(d: DesignBatch) -> np.ndarray:
    """[D] cores that run operators (the runtime's ``reserved_cores`` left out), over which a GEMM's output splits."""
    return np.maximum(d.cores - d.base.compute.reserved_cores, 1.0)


def block_counts(o: OpArrays, S: np.ndarray, cores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """([D or 1, T] pipeline steps ``n`` per core, [D or 1, T] output blocks ``n_out`` per core) of the tiled ops
    (``o.tiled``) for a core's staging bytes ``S`` [D or 1] and ``cores`` [D or 1] (module docstring); in place
    over fresh arrays (the hot path of a study on a template whose every operator pays)."""
    t = o.tiled
    M, N, K = o.M[None, t], o.N[None, t], np.maximum(o.K[None, t], 1.0)
    b = np.sqrt(S)[:, None] * (1.0 / np.sqrt(2.0 * o.tile_elem_bytes[t]))[None, :]  # the block side
    n_out = np.minimum(M, b)
    n_out *= np.minimum(N, b)
    n_out *= cores[:, None]  # a block of every core
    np.divide(M * N, n_out, out=n_out)
    np.ceil(n_out, out=n_out)
    np.maximum(n_out, 1.0, out=n_out)
    np.minimum(K, b, out=b)
    np.divide(K, b, out=b)
    np.ceil(b, out=b)
    b *= n_out
    return b, n_out


def pipelined(t_in: np.ndarray, t_out: np.ndarray, t_c: np.ndarray, n: np.ndarray, n_out: np.ndarray) -> np.ndarray:
    """Seconds of a software-pipelined kernel of ``n`` steps and ``n_out`` output blocks (module docstring):
    ``max(t_in / n + t_c + t_out / n_out, t_in + t_out + t_c / n)``."""
    first = t_in / n
    first += t_c
    last = t_out / n_out
    first += last
    np.divide(t_c, n, out=last)
    last += t_in
    last += t_out
    return np.maximum(first, last, out=first)


def pipeline_exposed(d: DesignBatch, o: OpArrays, matrix: np.ndarray, t_compute: np.ndarray,
                     t_main: np.ndarray | None = None) -> np.ndarray | None:
    """[D or 1, O] seconds of pipeline fill and drain each op leaves exposed (module docstring), or None where no op
    pays one (:func:`paying`). Only GEMMs and convolutions on the MAC arrays (``matrix`` [D or 1, O]) pay it;
    ``t_compute`` [D, O] is their compute time, ``t_main`` [D or 1, T] the main memory's time of the tiled ops
    (traffic / rate, ``dse.predict.traffic.tiled_time``) where the caller has it."""
    who = paying(d, o)
    if not who.any():
        return None
    lv = staging_level(d)
    t = o.tiled
    top = lv + 1
    rate = (d.delivered_bandwidth[:, top] * d.bw_eff[:, top])[:, None]
    if t_main is None:
        t_main = tiled_time(write_weighted(level_rows(d, o, top), o, d.write_ratio[top]), rate, o)
    # the output's time there: its written bytes (0 where it stays on chip) at the level's write cost
    t_out = np.minimum(o.c_bytes[None, t] * d.write_ratio[top] / rate, t_main)
    t_in = t_main - t_out
    n, n_out = block_counts(o, staging_bytes(d, lv), workers(d))
    t_c = t_compute[:, t]
    ex = pipelined(t_in, t_out, t_c, n, n_out)
    ex -= np.maximum(t_c, t_in + t_out)  # the roofline's own max(t_c, t_in + t_out)
    np.maximum(ex, 0.0, out=ex)
    ex *= matrix[:, t] & ((o.flops[t] > 0) & ~o.fused[t] & who)[None, :]
    exposed = np.zeros((ex.shape[0], o.n))
    exposed[:, t] = ex
    return exposed
