"""Energy coefficients of a design batch at its node: per FLOP, per byte per memory level, leakage.

Shared by the power model (``dse.cost.power``) and the predictor's power cap (a clock that derates
when an operator would draw more than ``power_limit_w``), so both price the same joules::

    E_op = FLOPs x e_flop[dtype] + sum_l traffic_l x e_byte[l] + traffic_0 x e_register
    P_static = f_leak / (1 - f_leak) x ( peak FLOP/s x e_flop[ref] + sum_l BW_l x e_byte[l] )

Coefficients and their sources are in ``hw_templates/nodes/*.yaml`` (Horowitz, ISSCC 2014, scaled by
node; the TPUv4i per-op table for systolic processing elements). A systolic processing element also latches, every
MAC, the operands it passes on to its neighbours (Kung, 'Why systolic architectures?', IEEE Computer 15(1), 1982:
data moves one PE per cycle through registers; TPU v1's matrix unit, Jouppi et al., ISCA 2017): the activation and
the partial sum in a weight-stationary array, both operands in an output-stationary one; each latched byte is
charged the node's register energy per byte (:func:`forwarding_bytes`), so e_flop[systolic] = e_PE + bytes / 2 x
e_register. They hold at the template's clock and voltage.
A design built at another clock (``compute.clock_ghz``, ``DesignBatch.clock_scale`` s) runs its logic at another
voltage: CMOS dynamic energy is C V^2 per transition and in the DVFS range V tracks f (Rabaey, Chandrakasan &
Nikolic, *Digital Integrated Circuits*, 2nd ed., ch. 5; the rule ``dse.predict.power_cap`` derates by), so every
on-chip energy per operation or byte is ``x s^2`` (:func:`dvfs_factor`); DRAM and SerDes are on their own rails and
keep theirs. Leakage ``P_static`` follows the peaks at the design's clock (x s through the FLOP/s term: ``V x
I_leak`` with V ~ f, its rise with V through DIBL ignored, conservative).
"""

from __future__ import annotations

import numpy as np

from dse.hardware.designs import DesignBatch
from dse.hardware.dram_parts import energy_per_byte
from dse.hardware.schema import Node
from dse.units import DTYPE_BYTES, DTYPES, element_of, fallback_dtype

PJ = 1e-12

#: bytes of the partial sum a systolic PE hands on: fp32 accumulation for the floating-point modes (TPUv4i Table 2
#: prices the fp32 accumulate-add), 32-bit integer for int8 and int4 (TPU v1: 32-bit accumulators, Jouppi et al.,
#: ISCA 2017)
ACCUMULATOR_BYTES = 4.0


def forwarding_bytes(mode: str, dataflow: str) -> float:
    """Bytes a systolic processing element latches for its neighbours per MAC in array mode ``mode``:
    weight-stationary, the activation operand (passed along the row) and the partial sum (passed down the column),
    ``e + ACCUMULATOR_BYTES``; output-stationary, both operands (the sum stays), ``2 e``; ``e`` the mode's element
    bytes (a block-scaled format's element, :func:`dse.units.element_of`)."""
    e = DTYPE_BYTES[element_of(mode)]
    return e + ACCUMULATOR_BYTES if dataflow == "weight_stationary" else 2.0 * e


def level_energy_per_byte(d: DesignBatch, node: Node) -> np.ndarray:
    """[L] joules per byte crossing each level: a DRAM level that names its ``generation`` pays that part's energy
    (``dse.hardware.dram_parts``); any other level the node coefficient its kind names (``dse.hardware.memory_kinds``),
    ``energy_private`` for a level with ``instances > 1``, else ``energy_shared`` (sram: local / global SRAM; dram:
    DRAM either way, the generation typical of the node)."""
    out = []
    for level in d.base.memory:
        if level.generation is not None:
            out.append(energy_per_byte(level.generation))
            continue
        k = level.spec
        out.append(getattr(node, k.energy_private if level.instances > 1 else k.energy_shared).value * PJ)
    return np.asarray(out)


def design_level_energy(d: DesignBatch, node: Node) -> np.ndarray:
    """[1 or D, L] joules per byte crossing each level of each design: :func:`level_energy_per_byte`, with the main
    memory of a design built on a chosen DRAM part (``DesignBatch.with_part``) at that part's energy. One shared row
    when no design chose a part."""
    e = level_energy_per_byte(d, node)[None, :]
    if not d.chosen_part.any():
        return e
    out = np.repeat(e, d.n, axis=0)
    j = d.offchip_index
    out[:, j] = d.part_figure("energy", float(e[0, j]))
    return out


def flop_energy(node: Node, systolic: bool = False, dataflow: str = "output_stationary") -> np.ndarray:
    """[n_dtypes] joules per FLOP by dtype (a dtype without its own figure takes the next wider one; a block-scaled
    format its element's, ``dse.units.BlockFormat.element``): the node's whole-chip GPU fit, or with ``systolic`` the
    energy of a systolic processing element plus the bytes it forwards per MAC in that ``dataflow``
    (:func:`forwarding_bytes`, in the mode it runs) at the register energy, over the MAC's 2 FLOPs."""
    vals = (node.energy_pj_per_flop_systolic if systolic else node.energy_pj_per_flop).values
    e_reg = node.energy_pj_per_byte_register.value
    out = np.empty(len(DTYPES))
    for i, dt in enumerate(DTYPES):
        mode = fallback_dtype(element_of(dt), vals) or max(vals, key=vals.__getitem__)  # none: the costliest mode
        out[i] = vals[mode] + (forwarding_bytes(mode, dataflow) / 2.0 * e_reg if systolic else 0.0)
    return out * PJ


def matrix_flop_energy(d: DesignBatch, node: Node) -> np.ndarray:
    """[n_dtypes] joules per FLOP on ``d``'s matrix units: :func:`flop_energy` of its style and dataflow."""
    return flop_energy(node, is_systolic(d), d.base.compute.matrix.dataflow)


def dvfs_factor(d: DesignBatch) -> np.ndarray:
    """[D] on-chip dynamic energy per operation relative to the template's, ``s^2`` with ``s`` = design clock /
    the template's energy clock (``compute.energy_clock_ghz``, default its ``clock_ghz``; V tracks f in the DVFS
    range, dynamic energy C V^2): a design clocked 20 % above its template pays 1.44x per FLOP and per on-chip byte,
    one clocked 20 % below 0.64x. 1 at the template's own clock unless it says it runs off its energy clock."""
    c = d.base.compute
    ref = c.energy_clock_ghz or c.clock_ghz
    return (c.clock_ghz * np.asarray(d.clock_scale, dtype=float) / ref) ** 2


def is_systolic(d: DesignBatch) -> bool:
    return d.base.compute.matrix.style == "systolic"


def static_power(d: DesignBatch, node: Node) -> np.ndarray:
    """[D] watts of leakage: f/(1-f) x dynamic power with every unit and level at its peak rate."""
    f = node.leakage_fraction.value
    peak_dyn = (d.peak_flops * matrix_flop_energy(d, node)[d.ref_index]
                + (d.bandwidth * design_level_energy(d, node)).sum(axis=1))
    return f / (1.0 - f) * peak_dyn
