"""Energy coefficients of a design batch at its node: per FLOP, per byte per memory level, leakage.

Shared by the power model (``dse.cost.power``) and the predictor's power cap (a clock that derates
when an operator would draw more than ``power_limit_w``), so both price the same joules::

    E_op = FLOPs x e_flop[dtype] + sum_l traffic_l x e_byte[l] + traffic_0 x e_register
    P_static = f_leak / (1 - f_leak) x ( peak FLOP/s x e_flop[ref] + sum_l BW_l x e_byte[l] )

Coefficients and their sources are in ``hw_templates/nodes/*.yaml`` (Horowitz, ISSCC 2014, scaled by
node; the TPUv4i per-op table for systolic processing elements). They hold at the template's clock and voltage.
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
from dse.hardware.schema import Node
from dse.units import DTYPES, element_of, fallback_dtype

PJ = 1e-12


def level_energy_per_byte(d: DesignBatch, node: Node) -> np.ndarray:
    """[L] joules per byte crossing each level: the node coefficient its kind names
    (``dse.hardware.memory_kinds``), ``energy_private`` for a level with ``instances > 1``, else
    ``energy_shared`` (sram: local / global SRAM; dram: DRAM either way)."""
    out = []
    for level in d.base.memory:
        k = level.spec
        out.append(getattr(node, k.energy_private if level.instances > 1 else k.energy_shared).value)
    return np.asarray(out) * PJ


def flop_energy(node: Node, systolic: bool = False) -> np.ndarray:
    """[n_dtypes] joules per FLOP by dtype (a dtype without its own figure takes the next wider one; a block-scaled
    format its element's, ``dse.units.BlockFormat.element``):
    the node's whole-chip GPU fit, or with ``systolic`` the energy of a systolic processing element."""
    vals = (node.energy_pj_per_flop_systolic if systolic else node.energy_pj_per_flop).values
    out = np.empty(len(DTYPES))
    for i, dt in enumerate(DTYPES):
        mode = fallback_dtype(element_of(dt), vals)
        out[i] = vals[mode] if mode is not None else max(vals.values())
    return out * PJ


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
    peak_dyn = (d.peak_flops * flop_energy(node, is_systolic(d))[d.ref_index]
                + d.bandwidth @ level_energy_per_byte(d, node))
    return f / (1.0 - f) * peak_dyn
