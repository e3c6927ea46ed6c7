"""Die area of a batch of designs, vectorized, with a per-component breakdown (mm^2).

    area = compute + sram + dram_phy + dram_controller + fixed
    compute         = matrix peak at the reference dtype (TFLOP/s) x node.compute_mm2_per_tflops
    sram            = total on-chip capacity (MiB, all sram levels) x node.sram_mm2_per_mib
    dram_phy/ctrl   = stacks x per-stack area, stacks = ceil(DRAM bandwidth / per-stack bandwidth)
    fixed           = NoC, off-chip IO, control (node.fixed_mm2)

Coefficients and their sources live in ``hw_templates/nodes/*.yaml`` (A100 die-shot component areas
from LLMCompass, Zhang et al., ISCA 2024; see each file). The compute term covers the vector units
and register files too, as the A100 'cores' area it is calibrated on does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dse.hardware.designs import DesignBatch
from dse.hardware.schema import Hardware, Node
from dse.hardware.templates import load_node
from dse.units import MIB, TERA

COMPONENTS = ("compute", "sram", "dram_phy", "dram_controller", "fixed")


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

    @property
    def over_reticle(self) -> np.ndarray:
        return self.total > self.node.reticle_limit_mm2.value

    def frame(self) -> pd.DataFrame:
        df = pd.DataFrame({f"{c}_mm2": self.parts[c] for c in COMPONENTS})
        df["total_mm2"] = self.total
        df["dram_stacks"] = self.dram_stacks
        return df


def dram_stacks(d: DesignBatch) -> np.ndarray:
    """[D] DRAM stacks (or channels) needed for the outermost bandwidth: ceil(BW / per-stack BW)."""
    level = d.base.memory[-1]
    if level.kind != "dram" or level.stack_bandwidth_gbps is None:
        return np.zeros(d.n)
    per_stack = level.stack_bandwidth_gbps * 1e9
    return np.ceil(d.dram_bandwidth / per_stack - 1e-9)


def area(d: DesignBatch | Hardware) -> AreaBreakdown:
    """Area of every design in ``d`` at the base template's process node."""
    if isinstance(d, Hardware):
        d = DesignBatch.from_hardware(d)
    node = load_node(d.base.process_node)
    stacks = dram_stacks(d)
    sram_mib = (d.capacity[:, ~d.offchip]).sum(axis=1) / MIB
    parts = {
        "compute": d.peak_flops / TERA * node.compute_mm2_per_tflops.value,
        "sram": sram_mib * node.sram_mm2_per_mib.value,
        "dram_phy": stacks * node.dram_phy_mm2_per_stack.value,
        "dram_controller": stacks * node.dram_controller_mm2_per_stack.value,
        "fixed": np.full(d.n, node.fixed_mm2.value),
    }
    return AreaBreakdown(node=node, parts=parts, dram_stacks=stacks)
