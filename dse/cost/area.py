"""Die area of a batch of designs, vectorized, with a per-component breakdown (mm^2).

    area = matrix + vector + sram + noc + dram_phy + dram_controller + serdes + fixed
    matrix          = max over the MAC array's native modes d of peak_d (TFLOP/s) x dtype factor_d
                      x (node calibration clock / design clock) x node.matrix_mm2_per_tflops
                      (a multi-precision array is sized by its most expensive mode; the factor is
                      1 for bf16/fp16, 0.5 for 8-bit, 2 for tf32 ...; area follows the MAC count)
    vector          = vector fp32 peak (TFLOP/s) x (calibration clock / clock) x node.vector_mm2_per_tflops
    sram            = on-chip capacity over all sram levels (MiB) x node.sram_mm2_per_mib
    noc             = on-chip network bandwidth (TB/s; ``noc_bandwidth``) x node.noc_mm2_per_tbps
    dram_phy/ctrl   = stacks x per-stack area, stacks = ceil(DRAM bandwidth / per-stack bandwidth)
    serdes          = chip-to-chip links x node.serdes_mm2_per_link x (link bandwidth / the template's)
    fixed           = control, IO and the rest (node.fixed_mm2)

The 7 nm coefficients come from the A100 die-shot component areas (LLMCompass, Zhang et al.,
ISCA 2024); other nodes scale them by logic density, and the 5 nm and 16 nm matrix coefficients are
fitted on H100 and V100. Every coefficient and its source is in ``hw_templates/nodes/*.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dse.hardware.designs import DesignBatch
from dse.hardware.schema import Hardware, Node
from dse.hardware.templates import list_templates, load_hardware, load_node
from dse.units import DTYPE_INDEX, DTYPES, MIB, TERA

COMPONENTS = ("matrix", "vector", "sram", "noc", "dram_phy", "dram_controller", "serdes", "fixed")


@dataclass(frozen=True)
class AreaBreakdown:
    """Per-component area arrays ``[D]`` in mm^2, and the node they were priced at."""

    node: Node
    parts: dict[str, np.ndarray]
    dram_stacks: np.ndarray

    @property
    def total(self) -> np.ndarray:
        return np.sum([self.parts[c] for c in COMPONENTS], axis=0)

    @property
    def total_mm2(self) -> float:
        """Total of design 0 (the single-design API)."""
        return float(self.total[0])

    @property
    def breakdown(self) -> dict[str, float]:
        """Component -> mm^2 for design 0."""
        return {c: float(self.parts[c][0]) for c in COMPONENTS}


def dram_stacks(d: DesignBatch) -> np.ndarray:
    """[D] DRAM stacks (or channels) needed for the outermost bandwidth: ceil(BW / per-stack BW)."""
    level = d.base.memory[-1]
    if level.kind != "dram" or level.stack_bandwidth_gbps is None:
        return np.zeros(d.n)
    per_stack = level.stack_bandwidth_gbps * 1e9
    return np.ceil(d.dram_bandwidth / per_stack - 1e-9)


def noc_bandwidth(d: DesignBatch) -> np.ndarray:
    """[D] byte/s the on-chip network carries: the outermost shared (single-instance) on-chip level's
    bandwidth, or the DRAM bandwidth when every on-chip level is private to a core (TPU VMEM)."""
    shared = np.flatnonzero(~d.offchip & (d.instances == 1))
    return d.bandwidth[:, shared[-1]] if shared.size else d.bandwidth[:, -1]


def clock_factor(d: DesignBatch, node: Node) -> np.ndarray:
    """[D] calibration clock / design clock: area follows the MAC count, and a slower clock needs
    more MACs for the same TFLOP/s (peak = MACs x 2 x clock)."""
    return node.calibration_clock_ghz.value / (d.base.compute.clock_ghz * d.clock_scale)


def matrix_tflops_equivalent(d: DesignBatch, node: Node) -> np.ndarray:
    """[D] bf16-equivalent TFLOP/s that sizes the MAC arrays: max over native modes of peak x factor."""
    native = d.base.compute.matrix.peak_tflops
    idx = [DTYPE_INDEX[dt] for dt in native]
    factors = np.array([node.matrix_dtype_area_factor.values.get(dt, 1.0) for dt in native])
    return (d.matrix_peak[:, idx] * factors[None, :]).max(axis=1) / TERA * clock_factor(d, node)


def area(d: DesignBatch | Hardware, node: Node | None = None) -> AreaBreakdown:
    """Area of every design in ``d`` at the base template's process node (or ``node``)."""
    if isinstance(d, Hardware):
        d = DesignBatch.from_hardware(d)
    node = node or load_node(d.base.process_node)
    stacks = dram_stacks(d)
    onchip = ~d.offchip
    sram_mib = d.capacity[:, onchip].sum(axis=1) / MIB
    noc_bw = noc_bandwidth(d) / TERA
    vec_fp32 = np.nan_to_num(d.vector_peak[:, DTYPES.index("fp32")]) / TERA * clock_factor(d, node)
    parts = {
        "matrix": matrix_tflops_equivalent(d, node) * node.matrix_mm2_per_tflops.value,
        "vector": vec_fp32 * node.vector_mm2_per_tflops.value,
        "sram": sram_mib * node.sram_mm2_per_mib.value,
        "noc": noc_bw * node.noc_mm2_per_tbps.value,
        "dram_phy": stacks * node.dram_phy_mm2_per_stack.value,
        "dram_controller": stacks * node.dram_controller_mm2_per_stack.value,
        "serdes": d.links * link_lane_factor(d) * node.serdes_mm2_per_link.value,
        "fixed": np.full(d.n, node.fixed_mm2.value),
    }
    return AreaBreakdown(node=node, parts=parts, dram_stacks=stacks)


def calibration_table() -> pd.DataFrame:
    """Predicted vs published die area for every shipped template that has one."""
    rows = []
    for name in list_templates():
        hw = load_hardware(name)
        if hw.published is None or hw.published.die_area_mm2 is None:
            continue
        pred = area(hw).total_mm2
        actual = hw.published.die_area_mm2
        rows.append({"die": name, "node": hw.process_node, "predicted_mm2": pred, "actual_mm2": actual,
                     "error_pct": (pred / actual - 1) * 100})
    return pd.DataFrame(rows)


def link_lane_factor(d: DesignBatch) -> np.ndarray:
    """[D] SerDes area per link relative to the template's link: a link searched to a higher bandwidth
    carries proportionally more lanes at the same signalling rate (1 without a system)."""
    if not d.n_net or not d.net_chip_linked.any() or d.base.network is None:
        return np.ones(d.n)
    j = int(np.flatnonzero(d.net_chip_linked)[0])
    return d.net_link_bw[:, j] / (d.base.network.link_bandwidth_gbps * 1e9)
