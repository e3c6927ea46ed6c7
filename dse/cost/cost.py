"""Unit cost of a batch of designs (USD), vectorized over designs.

* Gross dies per 300 mm wafer, with edge loss (ttm-cas ``dies_per_wafer_area``; Ning et al.,
  "Supply Chain Aware Computer Architecture", ISCA 2023)::

      DPW = pi * (d/2)^2 / A  -  pi * d / sqrt(2 * A)          (d = 300 mm, A = die area in mm^2)

* Yield, negative binomial with defect density ``D0`` (per cm^2) and clustering ``alpha``
  (Stapper 1983; the same source)::

      Y = (1 + A * D0 / alpha) ** (-alpha)                      (A in cm^2)

* Die cost = wafer cost / (DPW * Y); unit cost = die cost + DRAM (USD per GB x capacity)
  + package + interposer (USD per mm^2 of die plus DRAM-stack footprints, for HBM parts).

Coefficients per node in ``hw_templates/nodes/*.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dse.cost.area import AreaBreakdown
from dse.hardware.designs import DesignBatch
from dse.hardware.schema import Node

WAFER_DIAMETER_MM = 300.0
COST_COMPONENTS = ("die", "dram", "package", "interposer")


def dies_per_wafer(area_mm2: np.ndarray | float, diameter_mm: float = WAFER_DIAMETER_MM) -> np.ndarray:
    """Gross dies per wafer: pi*(d/2)^2/A - pi*d/sqrt(2A) (edge loss), floored at 0."""
    a = np.asarray(area_mm2, dtype=float)
    dpw = np.pi * (diameter_mm / 2) ** 2 / a - np.pi * diameter_mm / np.sqrt(2 * a)
    return np.maximum(dpw, 0.0)


def negative_binomial_yield(area_mm2: np.ndarray | float, d0_per_cm2: float, alpha: float) -> np.ndarray:
    """Fraction of good dies: (1 + A*D0/alpha)^-alpha with A in cm^2."""
    a_cm2 = np.asarray(area_mm2, dtype=float) / 100.0
    return (1.0 + a_cm2 * d0_per_cm2 / alpha) ** (-alpha)


def interposer_mm2(die_mm2: np.ndarray, stacks: np.ndarray, node: Node) -> np.ndarray:
    """Silicon interposer under the die and its DRAM stacks (2.5D, CoWoS-class): die + stacks x footprint."""
    return die_mm2 + stacks * node.dram_stack_footprint_mm2.value


@dataclass(frozen=True)
class CostBreakdown:
    """Per-design arrays ``[D]``: USD per good part by component, plus yield and dies per wafer."""

    parts: dict[str, np.ndarray]
    yield_: np.ndarray
    dies_per_wafer: np.ndarray

    @property
    def total(self) -> np.ndarray:
        return np.sum([self.parts[c] for c in COST_COMPONENTS], axis=0)

    @property
    def total_usd(self) -> float:
        return float(self.total[0])

    @property
    def breakdown(self) -> dict[str, float]:
        return {c: float(self.parts[c][0]) for c in COST_COMPONENTS}


def unit_cost(d: DesignBatch, ar: AreaBreakdown, node: Node | None = None) -> CostBreakdown:
    """USD per good part for every design of ``d`` with areas ``ar``."""
    node = node or ar.node
    a = ar.total
    dpw = dies_per_wafer(a)
    y = negative_binomial_yield(a, node.defect_density_per_cm2.value, node.yield_alpha.value)
    good = dpw * y
    die = np.where(good > 0, node.wafer_cost_usd.value / np.where(good > 0, good, 1.0), np.inf)
    bought = [j for j, m in enumerate(d.base.memory) if m.spec.usd_per_gb]  # kinds priced per GB
    dram_gb = d.capacity[:, bought].sum(axis=1) / 1e9 if bought else np.zeros(d.n)
    parts = {
        "die": die,
        "dram": dram_gb * node.dram_usd_per_gb.value,
        "package": np.full(d.n, node.package_usd.value),
        "interposer": np.where(ar.dram_stacks > 0, interposer_mm2(a, ar.dram_stacks, node)
                               * node.interposer_usd_per_mm2.value, 0.0),
    }
    return CostBreakdown(parts=parts, yield_=y, dies_per_wafer=dpw)
