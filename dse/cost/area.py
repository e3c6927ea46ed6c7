"""Die area of a batch of designs, vectorized, with a per-component breakdown (mm^2).

Two steps: :func:`inventory` counts what a design instantiates (MAC arrays, SRAM by organisation,
DRAM stacks, links; ``[D]`` arrays), :func:`price` turns counts into mm^2 with the node's sourced
coefficients. Calibration dies (``dse.cost.dies``) give inventories directly, so the model that
prices a design is the model fitted and checked on public dies::

    matrix (simt)     = bf16-eq TFLOP/s x (node calibration clock / clock) x node.matrix_mm2_per_tflops
                        (GPU tensor cores: a whole-SM coefficient per TFLOP/s; the array is sized by its
                        costliest native mode, factor 1 for bf16, 0.5 for 8-bit, 2 for tf32 ...)
    matrix (systolic) = PEs x node.systolic_pe_um2[bf16] x (1 + node.systolic_control_fraction)
                        PEs = max over native modes d of peak_d / (2 x clock) x pe_um2[d] / pe_um2[bf16]
                        (a processing element per MAC of the full-rate mode; control = sequencers and
                        array control, a fraction of the array from the TPU v1 floorplan)
    vector            = fp32 TFLOP/s x (calibration clock / clock) x node.vector_mm2_per_tflops
    sram              = scratchpad MiB x node.scratchpad_mm2_per_mib + cache MiB x node.cache_mm2_per_mib
                        (levels whose kind's area class is sram; ``dse.hardware.memory_kinds``)
    noc               = on-chip network bandwidth (TB/s; ``noc_bandwidth``) x node.noc_mm2_per_tbps
    dram_phy/ctrl     = stacks x per-stack area, stacks = ceil(DRAM bandwidth / per-stack bandwidth) summed
                        over levels whose kind's area class is dram_phy
    serdes            = chip-to-chip links x node.serdes_mm2_per_link x (link bandwidth / the template's)
    fixed             = control, IO and the rest (node.fixed_mm2)

The shoreline (:func:`shoreline`) checks that the die edge, from its area and aspect ratio, holds
the HBM PHYs and SerDes, and that the package holds the stacks. Every coefficient and its source
is in ``hw_templates/nodes/*.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dse.hardware.designs import DesignBatch
from dse.hardware.schema import Hardware, Node
from dse.hardware.templates import load_node
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


def level_stacks(d: DesignBatch, j: int) -> np.ndarray:
    """[D] stacks (or channels) level ``j`` needs for its bandwidth, ceil(BW / per-stack BW), when its kind
    is priced by PHY stacks (``area == "dram_phy"``) and it names ``stack_bandwidth_gbps``; else 0."""
    level = d.base.memory[j]
    if level.spec.area != "dram_phy" or level.stack_bandwidth_gbps is None:
        return np.zeros(d.n)
    per_stack = level.stack_bandwidth_gbps * 1e9
    return np.ceil(d.bandwidth[:, j] / per_stack - 1e-9)


def dram_stacks(d: DesignBatch) -> np.ndarray:
    """[D] DRAM stacks (or channels) of the die: :func:`level_stacks` summed over its levels."""
    out = np.zeros(d.n)
    for j in range(len(d.base.memory)):
        if d.base.memory[j].spec.area == "dram_phy":
            out = out + level_stacks(d, j)
    return out


def noc_bandwidth(d: DesignBatch) -> np.ndarray:
    """[D] byte/s the on-chip network carries: the outermost shared (single-instance) on-chip level's
    bandwidth, or the main-memory bandwidth when every on-chip level is private to a core (TPU VMEM)."""
    shared = np.flatnonzero(~d.offchip & (d.instances == 1))
    return d.bandwidth[:, shared[-1]] if shared.size else d.dram_bandwidth


def clock_factor(d: DesignBatch, node: Node) -> np.ndarray:
    """[D] calibration clock / design clock: area follows the MAC count, and a slower clock needs
    more MACs for the same TFLOP/s (peak = MACs x 2 x clock)."""
    return node.calibration_clock_ghz.value / (d.base.compute.clock_ghz * d.clock_scale)


def matrix_tflops_equivalent(d: DesignBatch, node: Node) -> np.ndarray:
    """[D] bf16-equivalent TFLOP/s that sizes the MAC arrays: max over native modes of peak x factor."""
    native = d.base.compute.matrix.peak_tflops
    idx = [DTYPE_INDEX[dt] for dt in native]
    factors = np.array([node.matrix_dtype_area_factor.values.get(dt, 1.0) for dt in native])
    return (np.take(d.matrix_peak, idx, axis=1) * factors[None, :]).max(axis=1) / TERA * clock_factor(d, node)


def pe_ratio(node: Node, dtype: str) -> float:
    """PE area of a native mode relative to a bf16 PE (a mode without its own figure counts as bf16)."""
    pe = node.systolic_pe_um2.values
    return pe.get(dtype, pe["bf16"]) / pe["bf16"]


def systolic_pes(d: DesignBatch, node: Node) -> np.ndarray:
    """[D] bf16-equivalent processing elements: max over native modes of MACs_d x PE_d / PE_bf16,
    MACs_d = peak_d / (2 FLOP x clock)."""
    native = d.base.compute.matrix.peak_tflops
    idx = [DTYPE_INDEX[dt] for dt in native]
    ratio = np.array([pe_ratio(node, dt) for dt in native])
    clock_hz = d.base.compute.clock_ghz * 1e9 * d.clock_scale
    macs = np.take(d.matrix_peak, idx, axis=1) / (2.0 * clock_hz[:, None])
    return (macs * ratio[None, :]).max(axis=1)


@dataclass(frozen=True)
class Inventory:
    """What a die instantiates, ``[D]`` arrays; :func:`price` turns it into mm^2 at a node."""

    simt_tflops: np.ndarray  # bf16-eq matrix TFLOP/s at the node's calibration clock (simt arrays)
    systolic_pes: np.ndarray  # bf16-equivalent processing elements (systolic arrays)
    vector_tflops: np.ndarray  # fp32 vector TFLOP/s at the calibration clock
    scratchpad_mib: np.ndarray
    cache_mib: np.ndarray
    noc_tbps: np.ndarray
    dram_stacks: np.ndarray
    serdes_links: np.ndarray  # link equivalents (links x lane factor)
    ddr_channels: np.ndarray | None = None  # 32-bit GDDR/LPDDR channels (calibration dies; designs use HBM stacks)
    fixed_blocks: np.ndarray | None = None  # die-level fixed area charged (None: one; 0 for a repeated tile)


def sram_mib(d: DesignBatch) -> tuple[np.ndarray, np.ndarray]:
    """[D] on-chip MiB held as scratchpad and as cache (by each level's ``organization``)."""
    sram = np.array([m.spec.area == "sram" for m in d.base.memory], dtype=bool)
    org = np.array([m.organization == "scratchpad" for m in d.base.memory]) & sram
    cache = sram & ~org
    return d.capacity[:, org].sum(axis=1) / MIB, d.capacity[:, cache].sum(axis=1) / MIB


def level_mm2_per_mib(d: DesignBatch, node: Node, j: int) -> float:
    """mm^2 per MiB of memory level ``j`` (scratchpad or cache density of the node)."""
    org = d.base.memory[j].organization
    return (node.scratchpad_mm2_per_mib if org == "scratchpad" else node.cache_mm2_per_mib).value


def inventory(d: DesignBatch, node: Node) -> Inventory:
    """Count what every design of ``d`` instantiates."""
    systolic = d.base.compute.matrix.style == "systolic"
    zero = np.zeros(d.n)
    scratch, cache = sram_mib(d)
    return Inventory(
        simt_tflops=zero if systolic else matrix_tflops_equivalent(d, node),
        systolic_pes=systolic_pes(d, node) if systolic else zero,
        vector_tflops=np.nan_to_num(d.vector_peak[:, DTYPES.index("fp32")]) / TERA * clock_factor(d, node),
        scratchpad_mib=scratch,
        cache_mib=cache,
        noc_tbps=noc_bandwidth(d) / TERA,
        dram_stacks=dram_stacks(d),
        serdes_links=d.links * link_lane_factor(d),
    )


def price(inv: Inventory, node: Node) -> dict[str, np.ndarray]:
    """mm^2 per component of every inventory at ``node`` (the module docstring's formulas)."""
    return {
        "matrix": inv.simt_tflops * node.matrix_mm2_per_tflops.value
        + inv.systolic_pes * node.systolic_pe_um2.values["bf16"] * 1e-6 * (1.0 + node.systolic_control_fraction.value),
        "vector": inv.vector_tflops * node.vector_mm2_per_tflops.value,
        "sram": inv.scratchpad_mib * node.scratchpad_mm2_per_mib.value + inv.cache_mib * node.cache_mm2_per_mib.value,
        "noc": inv.noc_tbps * node.noc_mm2_per_tbps.value,
        "dram_phy": inv.dram_stacks * node.dram_phy_mm2_per_stack.value,
        "dram_controller": inv.dram_stacks * node.dram_controller_mm2_per_stack.value
        + (0.0 if inv.ddr_channels is None else inv.ddr_channels * node.ddr_phy_mm2_per_channel.value),
        "serdes": inv.serdes_links * node.serdes_mm2_per_link.value,
        "fixed": np.full(inv.dram_stacks.shape, node.fixed_mm2.value)
        * (1.0 if inv.fixed_blocks is None else inv.fixed_blocks),
    }


def area(d: DesignBatch | Hardware, node: Node | None = None) -> AreaBreakdown:
    """Area of every design in ``d`` at the base template's process node (or ``node``)."""
    if isinstance(d, Hardware):
        d = DesignBatch.from_hardware(d)
    node = node or load_node(d.base.process_node)
    inv = inventory(d, node)
    return AreaBreakdown(node=node, parts=price(inv, node), dram_stacks=inv.dram_stacks)


def link_lane_factor(d: DesignBatch) -> np.ndarray:
    """[D] SerDes area per link relative to the template's link: a link searched to a higher bandwidth
    carries proportionally more lanes at the same signalling rate (1 without a system)."""
    if not d.n_net or not d.net_chip_linked.any() or d.base.network is None:
        return np.ones(d.n)
    j = int(np.flatnonzero(d.net_chip_linked)[0])
    return d.net_link_bw[:, j] / (d.base.network.link_bandwidth_gbps * 1e9)


def die_sides_mm(area_mm2: np.ndarray, aspect_ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """(long, short) side of a rectangular die: long = sqrt(A x r), short = sqrt(A / r)."""
    a = np.asarray(area_mm2, dtype=float)
    return np.sqrt(a * aspect_ratio), np.sqrt(a / aspect_ratio)


@dataclass(frozen=True)
class Shoreline:
    """Die-edge and package checks, ``[D]`` arrays (a value <= 0 holds).

    * ``edge_over_mm`` = stacks x hbm_edge_mm_per_stack + links x serdes_edge_mm_per_link
      + io_edge_reserve_mm - perimeter, perimeter = 2 (long + short): PHYs sit on the die edge.
    * ``stacks_over`` = stacks - min(package limit, stacks the two long edges hold), the long edges
      holding 2 x floor(long / hbm_edge_mm_per_stack): HBM stacks sit beside the die's long sides
      (A100, H100, MI250X packages).
    """

    edge_need_mm: np.ndarray
    perimeter_mm: np.ndarray
    stacks: np.ndarray
    max_stacks: np.ndarray

    @property
    def edge_over_mm(self) -> np.ndarray:
        return self.edge_need_mm - self.perimeter_mm

    @property
    def stacks_over(self) -> np.ndarray:
        return self.stacks - self.max_stacks

    def reasons(self) -> list[str]:
        """Per design: why it breaks the shoreline or the package ('' when it holds)."""
        out = [""] * len(self.stacks)
        idx = np.flatnonzero((self.stacks_over > 0) | (self.edge_over_mm > 0))  # only the designs that break one
        cols = (self.stacks[idx].tolist(), self.max_stacks[idx].tolist(), self.edge_need_mm[idx].tolist(),
                self.perimeter_mm[idx].tolist())  # Python floats: the same text, formatted faster
        for i, st, mx, need, per in zip(idx.tolist(), *cols, strict=True):
            why = [f"package: {st:.0f} DRAM stacks > {mx:.0f} the die's long edges and package hold"] if st > mx else []
            if need > per:
                why.append(f"shoreline: PHYs need {need:.0f} mm of die edge > {per:.0f} mm perimeter")
            out[i] = "; ".join(why)
        return out


def shoreline(d: DesignBatch, ar: AreaBreakdown) -> Shoreline:
    """Edge and package checks of every design of ``d`` at its area ``ar`` (see :class:`Shoreline`)."""
    node = ar.node
    pkg = d.base.package
    aspect = pkg.aspect_ratio if pkg else 1.0
    long, short = die_sides_mm(ar.total, aspect)
    e_hbm = node.hbm_edge_mm_per_stack.value
    limit = float(pkg.max_dram_stacks) if pkg and pkg.max_dram_stacks else node.max_dram_stacks.value
    need = (ar.dram_stacks * e_hbm + d.links * link_lane_factor(d) * node.serdes_edge_mm_per_link.value
            + node.io_edge_reserve_mm.value)
    return Shoreline(edge_need_mm=need, perimeter_mm=2.0 * (long + short), stacks=ar.dram_stacks,
                     max_stacks=np.minimum(limit, 2.0 * np.floor(long / e_hbm + 1e-9)))
