"""Power cap: the clock an operator runs at when it would draw more than the design's ``power_limit_w``.

A power-capped chip lowers its clock (and with it the core voltage) until the draw fits the cap.
Per operator (an op runs for microseconds to milliseconds, the window board power management acts
on), at clock fraction ``f``::

    t(f) = max(t_compute / f, t_memory, t_network) + t_overhead
    P(f) = (E_core x f^2 + E_io) / t(f) + P_static

``E_core`` is the on-chip dynamic energy (FLOPs, registers, SRAM levels): CMOS dynamic energy is
C V^2 per transition and in the DVFS range V tracks f, so it scales ~f^2 (Rabaey, Chandrakasan &
Nikolic, *Digital Integrated Circuits*, 2nd ed., ch. 5). ``E_io`` (DRAM) is on its own rail and does
not scale; leakage is held (conservative). ``P(f)`` rises with ``f``, so the largest ``f`` in
``[F_MIN, 1]`` with ``P(f) <= limit`` is found by bisection, vectorized over designs x operators.
Memory-bound operators barely derate; compute-bound ones slow down by ``1/f``.
"""

from __future__ import annotations

import numpy as np

from dse.hardware.designs import DesignBatch
from dse.hardware.energy import PJ, design_level_energy, dvfs_factor, flop_energy, matrix_flop_energy, static_power
from dse.hardware.schema import Node
from dse.hardware.templates import load_node
from dse.predict.traffic import OpArrays, masked_work

#: lowest clock fraction considered (a cap the chip cannot meet even here leaves the op at this clock)
F_MIN = 0.2
BISECTIONS = 30


def op_flop_energy(d: DesignBatch, o: OpArrays, matrix: np.ndarray, node: Node) -> np.ndarray:
    """[1 or D, O] joules per (useful) FLOP of each op: the node's whole-chip figure, or on a systolic design's
    arrays (``matrix``, from ``roofline.on_matrix``) the processing element's with the operands it forwards
    (``dse.hardware.energy.flop_energy``); x the FLOPs a causal attention row
    executes per useful one where the kernel computes the masked blocks (``dse.predict.traffic.masked_work``)."""
    e_flop = np.where(matrix, matrix_flop_energy(d, node)[o.dtype_idx][None, :], flop_energy(node)[o.dtype_idx][None, :])
    return e_flop * masked_work(o, d)[None, :]


def op_energies(d: DesignBatch, o: OpArrays, matrix: np.ndarray, levels) -> tuple[np.ndarray, np.ndarray]:
    """([D, O] on-chip joules at the design's clock (``dvfs_factor``), [D, O] off-chip joules) of one instance of
    each op; ``levels`` yields (level, traffic [D or 1, O]) as ``dse.predict.traffic.per_level`` does."""
    node = load_node(d.base.process_node)
    core = o.flops[None, :] * op_flop_energy(d, o, matrix, node)
    io = np.zeros((d.n, o.n))
    e_level = design_level_energy(d, node)  # [1 or D, L]
    e_reg = node.energy_pj_per_byte_register.value * PJ
    for lv, tr in levels:
        if d.offchip[lv]:
            io = io + tr * e_level[:, lv:lv + 1]
        else:
            core = core + tr * (e_level[:, lv:lv + 1] + (e_reg if lv == 0 else 0.0))
    return np.broadcast_to(core, (d.n, o.n)) * dvfs_factor(d)[:, None], np.broadcast_to(io, (d.n, o.n))


def capped_clock(e_core: np.ndarray, e_io: np.ndarray, t_compute: np.ndarray, t_rest: np.ndarray,
                 t_over: np.ndarray, p_static: np.ndarray, limit: float) -> np.ndarray:
    """[D, O] clock fraction in [F_MIN, 1]: 1 where the op fits the cap at full clock, else the largest
    fraction whose power fits (``p_static`` [D, 1])."""

    def power(f: np.ndarray) -> np.ndarray:
        t = np.maximum(t_compute / f, t_rest) + t_over
        return np.where(t > 0, (e_core * f * f + e_io) / np.where(t > 0, t, 1.0), 0.0) + p_static

    over = power(np.ones_like(t_compute)) > limit
    if not over.any():
        return np.ones_like(t_compute)
    lo = np.full_like(t_compute, F_MIN)
    hi = np.ones_like(t_compute)
    for _ in range(BISECTIONS):
        mid = 0.5 * (lo + hi)
        ok = power(mid) <= limit
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid)
    return np.where(over, lo, 1.0)


def apply_cap(d: DesignBatch, o: OpArrays, matrix: np.ndarray, t_compute: np.ndarray, t_rest: np.ndarray,
              t_over: np.ndarray, levels) -> np.ndarray:
    """[D, O] clock fraction of every op under ``d.base.power_limit_w`` (ones without a cap)."""
    limit = d.base.power_limit_w
    if limit is None:
        return np.ones_like(t_compute)
    e_core, e_io = op_energies(d, o, matrix, levels)
    p_static = static_power(d, load_node(d.base.process_node))[:, None]
    return capped_clock(e_core, e_io, t_compute, t_rest, np.broadcast_to(t_over, t_compute.shape), p_static, limit)
