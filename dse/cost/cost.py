"""Unit cost of a batch of designs (USD), vectorized over designs.

* Gross dies per 300 mm wafer, with edge loss (ttm-cas ``dies_per_wafer_area``; Ning et al.,
  "Supply Chain Aware Computer Architecture", ISCA 2023)::

      DPW = pi * (d/2)^2 / A  -  pi * d / sqrt(2 * A)          (d = 300 mm, A = die area in mm^2)

* Yield, negative binomial with defect density ``D0`` (per cm^2) and clustering ``alpha``
  (Stapper 1983; the same source)::

      Y = (1 + A * D0 / alpha) ** (-alpha)                      (A in cm^2)

* A harvested die (``compute.spare_cores``: cores fused off for yield) is good with up to ``S`` of its ``M`` core
  tiles faulty and no fault elsewhere; in the same model (the die's defect density gamma-distributed, faults
  Poisson given it; Koren & Koren, Proc. IEEE 1998, yield with redundancy)::

      Y = E_lambda[ exp(-lambda A_rest) x P(Binomial(M, 1 - exp(-lambda A_tile)) <= S) ]     (:func:`harvested_yield`)

* Die cost = wafer cost / (DPW * Y); unit cost = die cost + DRAM (USD per GB x capacity, at the price of each
  level's kind: ``dram_usd_per_gb`` for HBM, ``ddr_usd_per_gb`` for board GDDR/LPDDR/DDR; the main memory's times
  its DRAM part's premium over HBM3, ``dse.hardware.dram_parts.StackPart.price_factor``)
  + package + interposer (USD per mm^2 of die plus DRAM-stack footprints, for HBM parts).
* A multi-die package (``package.dies``) buys every die kind's known-good dies at that kind's area and
  node, and divides dies and interposer by the assembly yield, prod over dies of the link's bond yield
  (Chiplet Actuary, Feng & Ma, DAC 2022: 0.99 per die on an organic substrate, 0.95 on a silicon
  interposer, compounding); dies bonded on another die take no interposer area.

Coefficients per node in ``hw_templates/nodes/*.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dse.cost.area import AreaBreakdown, DieArea
from dse.hardware.designs import DesignBatch
from dse.hardware.schema import Hardware, Node

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


#: nodes of the generalized Gauss-Laguerre rule that takes the expectation over the die's defect density
YIELD_QUADRATURE_NODES = 64


def expected_over_density(f, d0_per_cm2: float, alpha: float) -> np.ndarray:
    """E[f(lambda)] for lambda ~ Gamma(shape alpha, mean D0) per cm^2, the negative-binomial model's defect density
    (Stapper 1983): a generalized Gauss-Laguerre rule in x = lambda alpha / D0 (weight x^(alpha-1) e^-x).
    ``f`` maps an array of lambdas [..., Q] to values of the same shape."""
    from scipy.special import gamma as gamma_fn
    from scipy.special import roots_genlaguerre

    x, w = roots_genlaguerre(YIELD_QUADRATURE_NODES, alpha - 1.0)
    return f(x * d0_per_cm2 / alpha) @ w / gamma_fn(alpha)


def harvested_yield(area_mm2: np.ndarray, tile_mm2: np.ndarray, tiles: np.ndarray, spare: np.ndarray,
                    d0_per_cm2: float, alpha: float) -> np.ndarray:
    """[D] fraction of good dies when a die is good with up to ``spare`` of its ``tiles`` identical core tiles (each
    ``tile_mm2``) faulty and no fault in the rest of its ``area_mm2`` (harvesting: A100 ships GA100 dies with at
    least 108 of 128 good SMs), in :func:`negative_binomial_yield`'s model::

        Y = E_lambda[ exp(-lambda A_rest) x P(Binomial(tiles, 1 - exp(-lambda A_tile)) <= spare) ]
        A_rest = area - tiles x A_tile,   P(Binomial(n, 1 - g) <= s) = I_g(n - s, s + 1)

    (Koren & Koren, 'Defect tolerance in VLSI circuits: techniques and yield analysis', Proc. IEEE 86(9), 1998:
    yield with spare modules under the compound-Poisson defect model); with ``spare`` 0 it is
    ``(1 + area x D0 / alpha)^-alpha``. The expectation is :func:`expected_over_density`."""
    from scipy.special import betainc

    a, t = np.asarray(area_mm2, dtype=float)[:, None] / 100.0, np.asarray(tile_mm2, dtype=float)[:, None] / 100.0
    n, s = np.asarray(tiles, dtype=float)[:, None], np.asarray(spare, dtype=float)[:, None]
    rest = np.maximum(a - n * t, 0.0)

    def good(lam: np.ndarray) -> np.ndarray:  # P(at most s of n tiles faulty) is 1 where every tile may fail
        most = np.where(s >= n, 1.0, betainc(np.maximum(n - s, 1.0), s + 1.0, np.exp(-lam * t)))
        return np.exp(-lam * rest) * most

    return expected_over_density(good, d0_per_cm2, alpha)


def die_yield(area_mm2: np.ndarray, node: Node, tile_mm2: np.ndarray | None = None, tiles: np.ndarray | None = None,
              spare: np.ndarray | None = None) -> np.ndarray:
    """[D] yield of dies of ``area_mm2`` at ``node``: :func:`harvested_yield` where a die has spare cores, else
    :func:`negative_binomial_yield`."""
    d0, alpha = node.defect_density_per_cm2.value, node.yield_alpha.value
    y = negative_binomial_yield(area_mm2, d0, alpha)
    if spare is None or tiles is None or tile_mm2 is None or not np.any(spare > 0):
        return y
    k = np.flatnonzero(spare > 0)
    y = np.array(np.broadcast_to(y, np.shape(spare)), dtype=float)
    a = np.broadcast_to(np.asarray(area_mm2, dtype=float), y.shape)
    y[k] = harvested_yield(a[k], tile_mm2[k], tiles[k], spare[k], d0, alpha)
    return y


def interposer_mm2(die_mm2: np.ndarray, stacks: np.ndarray, node: Node) -> np.ndarray:
    """Silicon interposer under the die and its DRAM stacks (2.5D, CoWoS-class): die + stacks x footprint."""
    return die_mm2 + stacks * node.dram_stack_footprint_mm2.value


@dataclass(frozen=True)
class CostBreakdown:
    """Per-design arrays ``[D]``: USD per good part by component, plus yield and dies per wafer (of the first
    die kind; ``die_yields`` has every kind's) and the fraction of assemblies that survive bonding."""

    parts: dict[str, np.ndarray]
    yield_: np.ndarray
    dies_per_wafer: np.ndarray
    die_yields: dict[str, np.ndarray] | None = None
    assembly_yield: np.ndarray | None = None

    @property
    def total(self) -> np.ndarray:
        return np.sum([self.parts[c] for c in COST_COMPONENTS], axis=0)

    @property
    def total_usd(self) -> float:
        return float(self.total[0])

    @property
    def breakdown(self) -> dict[str, float]:
        return {c: float(self.parts[c][0]) for c in COST_COMPONENTS}


def known_good_die_usd(area_mm2: np.ndarray, node: Node, die: DieArea | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """([D] USD per good die, yield, gross dies per wafer) at ``node``: wafer cost / (DPW x Y), Y of a harvested
    die where ``die`` has spare cores (:func:`die_yield`)."""
    dpw = dies_per_wafer(area_mm2)
    y = (die_yield(area_mm2, node) if die is None else die_yield(area_mm2, node, die.tile_mm2, die.tiles, die.spare))
    good = dpw * y
    return np.where(good > 0, node.wafer_cost_usd.value / np.where(good > 0, good, 1.0), np.inf), y, dpw


def assembly_yield(ar: AreaBreakdown) -> np.ndarray:
    """[D] fraction of multi-die assemblies that survive bonding: prod over die kinds of bond_yield ** count
    (Chiplet Actuary's per-chip bonding yield, compounding; ``dse.hardware.d2d``); 1 for a single die, whose
    assembly is in ``package_usd``."""
    out = np.ones(len(ar.total))
    for g in ar.dies:
        if g.link is not None:
            out = out * g.link.bond_yield ** g.count
    return np.where(ar.die_total > 1, out, 1.0)


def package_usd(hw: Hardware, node: Node) -> float:
    """USD of one package's substrate and assembly: the template's ``package.package_usd`` where it says one, else the
    node file's ``package_usd``."""
    pkg = hw.package
    return float(pkg.package_usd) if pkg is not None and pkg.package_usd is not None else node.package_usd.value


def unit_cost(d: DesignBatch, ar: AreaBreakdown, node: Node | None = None) -> CostBreakdown:
    """USD per good part for every design of ``d`` with areas ``ar``: every die kind's known-good dies at its
    own node (a die kind's node, else ``node`` or the template's), over the assembly yield::

        die = sum_kinds count x KGD(A_die, node_die) / Y_assembly
        interposer = (footprint of the dies + stacks x stack footprint) x USD/mm2 / Y_assembly
    """
    node = node or ar.node
    dies = ar.dies or ()
    y_asm = assembly_yield(ar)
    if not dies:  # an AreaBreakdown built without dies (a calibration die): one die of the total
        kgd, y, dpw = known_good_die_usd(ar.total, node)
        die, yields, footprint = kgd, {"die": y}, ar.total
    else:
        die, yields, footprint = np.zeros(d.n), {}, np.zeros(d.n)
        for g in dies:
            kgd, y_g, _ = known_good_die_usd(g.mm2, g.node if g.node.name != ar.node.name else node, g)
            die = die + g.count * kgd
            yields[g.name] = y_g
            footprint = footprint + g.footprint
        y, dpw = yields[dies[0].name], dies_per_wafer(dies[0].mm2)
    dram_usd = np.zeros(d.n)  # each level bought per GB at its kind's price (HBM, board DRAM), the main memory's
    for j, m in enumerate(d.base.memory):  # times its part's premium (``DesignBatch.dram_price_factor``)
        if m.spec.usd_per_gb is not None:
            premium = d.dram_price_factor if j == d.offchip_index else 1.0
            dram_usd = dram_usd + d.capacity[:, j] / 1e9 * getattr(node, m.spec.usd_per_gb).value * premium
    on_silicon = (ar.dram_stacks > 0) | ((ar.die_total > 1) & any(
        g.link is not None and g.link.integration != "organic" for g in dies))
    parts = {
        "die": die / y_asm,
        "dram": dram_usd,
        "package": np.full(d.n, package_usd(d.base, node)),
        "interposer": np.where(on_silicon, interposer_mm2(footprint, ar.dram_stacks, node)
                               * node.interposer_usd_per_mm2.value, 0.0) / y_asm,
    }
    return CostBreakdown(parts=parts, yield_=y, dies_per_wafer=dpw, die_yields=yields, assembly_yield=y_asm)
