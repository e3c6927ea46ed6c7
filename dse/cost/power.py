"""Energy and power of a batch of designs running a workload mix, vectorized.

Dynamic energy of one pass (Horowitz, "Computing's energy problem", ISSCC 2014, for the
per-operation and per-access view; coefficients per node in ``hw_templates/nodes/*.yaml``)::

    E_dyn = sum_ops count * ( FLOPs * e_flop[dtype]
                              + sum_levels traffic_l * e_byte[l]
                              + traffic_0 * e_register )

``e_flop`` is the node's whole-chip GPU fit for simt designs; a systolic design's matrix ops pay the
processing-element energy ``energy_pj_per_flop_systolic`` (multiply + accumulate, TPUv4i Table 2) plus the operands
each PE latches for its neighbours per MAC at the register energy (``dse.hardware.energy.forwarding_bytes``), and
its operand traffic is charged per byte at each level like everyone's. ``traffic_l`` is the
predictor's traffic across level ``l`` (``dse.predict.traffic``), so more
on-chip reuse means less energy as well as less time. ``e_byte`` is the node's local-SRAM energy
for private levels (``instances > 1``), global-SRAM energy for shared on-chip levels and DRAM energy
for the off-chip level. Static power is the node's leakage fraction of the total at full activity::

    P_static = f_leak / (1 - f_leak) * ( peak FLOP/s * e_flop[ref] + sum_l BW_l * e_byte[l] )

In a multi-die package (``package.dies``) the bytes of each level that cross between dies also pay the
die-to-die link's energy (:func:`d2d_energy_per_byte`, part ``d2d``).

Average power of a workload = E_dyn / time + P_static; energy per pass = E_dyn + P_static * time.
A design built at another clock than its template's pays its on-chip energies x (clock ratio)^2
(``dse.hardware.energy.dvfs_factor``: the voltage follows the clock), and under a ``power_limit_w`` each op's
on-chip energy is weighted again by its clock fraction squared (``dse.predict.power_cap``); DRAM, SerDes and
die-to-die energy are not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dse.hardware.d2d import D2D
from dse.hardware.designs import DesignBatch
from dse.hardware.energy import (
    PJ,
    design_level_energy,
    dvfs_factor,
    flop_energy,
    is_systolic,
    level_energy_per_byte,
    matrix_flop_energy,
    static_power,
)
from dse.hardware.schema import Node
from dse.hardware.templates import load_node
from dse.predict import MixArrays, fused, mix_arrays, mix_times
from dse.predict.network import sent_per_op
from dse.predict.power_cap import op_flop_energy
from dse.predict.roofline import on_matrix, op_clocks
from dse.predict.traffic import per_level
from dse.workloads.library import gemm
from dse.workloads.mix import Mix

__all__ = ["PJ", "MixEnergy", "flop_energy", "gemm_mode_power", "level_energy_per_byte", "mix_energy", "static_power",
           "stress_power"]


@dataclass(frozen=True)
class MixEnergy:
    """Per design and workload ``[D, W]``: time, dynamic energy by part, and static power ``[D]``."""

    time_s: np.ndarray
    parts_j: dict[str, np.ndarray]  # "compute", "register", one per memory level
    static_w: np.ndarray

    @property
    def dynamic_j(self) -> np.ndarray:
        return np.sum(list(self.parts_j.values()), axis=0)

    @property
    def energy_j(self) -> np.ndarray:
        """[D, W] joules per pass including leakage over the pass."""
        return self.dynamic_j + self.static_w[:, None] * self.time_s

    @property
    def power_w(self) -> np.ndarray:
        """[D, W] average watts while running each workload."""
        return self.energy_j / self.time_s

    @property
    def peak_power_w(self) -> np.ndarray:
        """[D] the highest average power over the mix's workloads (what a TDP must cover)."""
        return self.power_w.max(axis=1)


def d2d_energy_per_byte(d: DesignBatch) -> np.ndarray:
    """[D, L] joules per byte of each memory level's traffic that crosses die-to-die links in a multi-die
    package: sum over the die kinds whose links it crosses of the link traversals per byte x the link's
    ``dse.hardware.d2d`` pJ/bit x 8 (:meth:`DesignBatch.d2d_crossings`: ``t_c e_c`` when the compute's kind holds the
    level, ``e_c + t_g e_g`` when another kind does; t the remote share x the mean hops). 0 for a single die (no
    crossings: one kind of one die crosses no link, t(1) = 0)."""
    out = np.zeros((d.n, len(d.base.memory)))
    links = [D2D[g.d2d_link].pj_per_bit * 8.0 * PJ for g in d.base.die_groups]
    for j, path in enumerate(d.d2d_crossings()):
        for g, f in path:
            out[:, j] += f * links[g]
    return out


def mix_energy(d: DesignBatch, mix: Mix, times: np.ndarray | None = None, node: Node | None = None,
               arrays: MixArrays | None = None) -> MixEnergy:
    """Energy of every workload of ``mix`` on every design (times from ``mix_times`` if not given;
    ``arrays`` from ``dse.predict.mix_arrays`` when the caller already has them)."""
    node = node or load_node(d.base.process_node)
    a = arrays or mix_arrays(mix)
    o, member = a.o, a.counts
    t = mix_times(d, mix, arrays=a) if times is None else times
    e_level = design_level_energy(d, node)  # [1 or D, L]
    e_reg = node.energy_pj_per_byte_register.value * PJ
    # ops on a systolic design's arrays pay the PE energy, the rest the whole-chip figure
    per_flop = op_flop_energy(d, o, on_matrix(o, d)[:1], node)
    # under a power cap each op ran at its clock fraction f: on-chip energy x f^2 (dse.predict.power_cap)
    v2 = np.ones((1, o.n)) if d.base.power_limit_w is None else op_clocks(d, o) ** 2
    compute = (o.flops * per_flop * v2) @ member
    vf = dvfs_factor(d)[:, None]  # on-chip energy at the design's clock and voltage (dse.hardware.energy)
    parts = {"compute": np.broadcast_to(compute, (d.n, member.shape[1])) * vf}
    e_d2d = d2d_energy_per_byte(d)  # [D, L] J/B crossing between dies (0 for a single die)
    d2d = np.zeros((d.n, member.shape[1]))
    for lv, per_wl, raw in _level_bytes(d, o, member, v2):
        if e_d2d[:, lv].any():
            d2d = d2d + raw * e_d2d[:, lv:lv + 1]
        if lv == 0:
            parts["register"] = np.broadcast_to(per_wl * e_reg, (d.n, member.shape[1])) * vf
        scale = 1.0 if d.offchip[lv] else vf
        parts[d.level_names[lv]] = np.broadcast_to(per_wl * e_level[:, lv:lv + 1], (d.n, member.shape[1])) * scale
    if e_d2d.any():
        parts["d2d"] = d2d
    if o.coll_idx.size and d.system is not None:  # chip-to-chip bytes through the SerDes
        sent = sent_per_op(o, d.system)
        e_net = node.energy_pj_per_byte_serdes.value * PJ
        parts["network"] = np.broadcast_to((sent @ member) * e_net, (d.n, member.shape[1])).copy()
    return MixEnergy(time_s=t, parts_j=parts, static_w=static_power(d, node))


def _level_bytes(d: DesignBatch, o, member: np.ndarray, v2: np.ndarray):
    """Yield (level, [D or 1, W] bytes per workload with the on-chip ones weighted by the clock fraction squared
    ``v2``, [D or 1, W] the same unweighted) from ``per_level`` traffic x ``member``; without a power cap, for a
    batch the compiled path takes, the kernel sums them as it goes (``dse.predict.fused.level_bytes``: no [D, O]
    traffic array; the same bytes, summed in another order)."""
    if fused.applies(d, o):  # never under a power cap: v2 is 1
        for lv, per_wl in enumerate(fused.level_bytes(d, o, member)):
            yield lv, per_wl, per_wl
        return
    for lv, tr in per_level(d, o):
        onchip = v2 if not d.offchip[lv] else 1.0
        yield lv, (tr * onchip) @ member, tr @ member


#: the square GEMM whose power stands for a chip's power at full load (the a100/h100/v100 node fits use it)
POWER_GEMM = 8192


def gemm_mode_power(d: DesignBatch, node: Node | None = None) -> dict[str, np.ndarray]:
    """{matrix mode: [D] average watts of a ``POWER_GEMM``^3 GEMM in that mode}, every mode the matrix units
    list. A power limit must cover the hungriest mode: on a multi-precision array it need not be the reference
    dtype (Tenstorrent's Tensix runs fp8 in one fidelity phase at 3.5x the rate of fp16's four, so more MACs
    toggle per second; tenstorrent/tt-isa-documentation WormholeB0 MatrixUnit.md)."""
    node = node or load_node(d.base.process_node)
    n = POWER_GEMM
    return {dt: mix_energy(d, Mix.of([gemm(n, n, n, dtype=dt)]), node=node).power_w[:, 0]
            for dt in d.base.compute.matrix.peak_tflops}


def stress_power(d: DesignBatch, node: Node | None = None) -> np.ndarray:
    """[D] watts with every unit at its peak at once (a power virus, what a chip's power delivery must carry or its
    firmware must throttle): leakage plus, at the design's clock (``dvfs_factor``)::

        max over modes (matrix peak x e_flop)  +  max over dtypes (vector peak x e_flop)   (simt: the larger only,
                                                                                           one issue port per SM)
        + sum over levels (bandwidth x e_byte) + innermost level's bandwidth x e_register
        + chip-to-chip links x link bandwidth x 2 directions x e_serdes
        + die-to-die links: sum over dies of d2d_bandwidth / 2 x e_d2d        (each die's figure counts both
                                                                              directions, each byte crosses once)

    with the same coefficients as :func:`mix_energy` (a systolic design's arrays at the processing-element energy,
    its vector units at the node's whole-chip figure). A published TDP should lie between the hungriest GEMM
    (``gemm_mode_power``) and this."""
    node = node or load_node(d.base.process_node)
    systolic = is_systolic(d)
    matrix = np.nanmax(d.matrix_peak * matrix_flop_energy(d, node)[None, :], axis=1)
    vector = np.nanmax(np.nan_to_num(d.vector_peak) * flop_energy(node)[None, :], axis=1)
    compute = matrix + vector if systolic else np.maximum(matrix, vector)
    e_level = design_level_energy(d, node)  # [1 or D, L]
    onchip = ~d.offchip
    memory_core = ((d.bandwidth * e_level)[:, onchip].sum(axis=1)
                   + d.bandwidth[:, 0] * node.energy_pj_per_byte_register.value * PJ)
    memory_io = (d.bandwidth * e_level)[:, ~onchip].sum(axis=1)
    net = d.base.network
    links = d.links * (net.link_bandwidth_gbps * 1e9 if net is not None else 0.0) * 2.0
    serdes = links * node.energy_pj_per_byte_serdes.value * PJ
    d2d = np.zeros(d.n)
    if d.die_kinds:
        per_byte = np.asarray([D2D[g.d2d_link].pj_per_bit * 8.0 * PJ for g in d.base.die_groups])
        d2d = (d.die_counts * d.die_d2d_bps / 2.0) @ per_byte
    return static_power(d, node) + dvfs_factor(d) * (compute + memory_core) + memory_io + serdes + d2d
