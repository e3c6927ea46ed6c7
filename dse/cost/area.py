"""Die area of a batch of designs, vectorized, with a per-component breakdown (mm^2).

Two steps: :func:`inventory` counts what a design instantiates (MAC arrays, SRAM by organisation,
DRAM stacks, links; ``[D]`` arrays), :func:`price` turns counts into mm^2 with the node's sourced
coefficients. Calibration dies (``dse.cost.dies``) give inventories directly, so the model that
prices a design is the model fitted and checked on public dies::

    matrix (simt)     = bf16-eq TFLOP/s x (node calibration clock / clock) x node.matrix_mm2_per_tflops
                        + register MiB x node.cache_mm2_per_mib
                        (GPU SMs: a coefficient per TFLOP/s for the SM less its register file, sized by the
                        costliest native mode, factor 1 for bf16, 0.5 for 8-bit, 2 for tf32 ...; the register file,
                        compute.register_kib_per_core per core on the die, at the node's SRAM-array density:
                        it does not grow with the tensor rate, 256 KiB per SM from V100 to H100, 512 KiB per
                        MI300X CU at half an H100 SM's rate)
    matrix (systolic) = PEs x node.systolic_pe_um2[bf16] x (1 + node.systolic_control_fraction)
                        + accumulator MiB x node.scratchpad_mm2_per_mib
                        PEs = max over native modes d of peak_d / (2 x clock) x pe_um2[d] / pe_um2[bf16]
                        (a processing element per MAC of the full-rate mode; control = sequencers and
                        array control, a fraction of the array from the TPU v1 floorplan; the accumulators,
                        compute.register_kib_per_core per core on the die, at the scratchpad density, as the NPU
                        dies' records count theirs: TPU v1's 4 MiB in its 28 MiB of on-chip memory)
    vector            = fp32 TFLOP/s x (calibration clock / clock) x node.vector_mm2_per_tflops
    sram              = scratchpad MiB x node.scratchpad_mm2_per_mib + cache MiB x node.cache_mm2_per_mib
                        (levels whose kind's area class is sram; ``dse.hardware.memory_kinds``)
    noc               = routers of the on-chip network from its topology (``dse.cost.noc``): per router
                        ports^2 x link bits x crosspoint area + ports x buffer flits x link bits x bit area
    dram_phy/ctrl     = stacks x per-stack area, stacks = ceil(DRAM bandwidth / per-stack bandwidth) summed
                        over levels whose kind's area class is dram_phy (HBM)
                        + channels x node.ddr_phy_mm2_per_channel, channels = ceil(bandwidth / channel bandwidth)
                        over levels of class ddr_phy (GDDR, LPDDR, DDR on the board: :func:`ddr_channels`)
    serdes            = chip-to-chip links x node.serdes_mm2_per_link x (link bandwidth / the template's)
    fixed             = control, IO and the rest (node.fixed_mm2; a template's package.fixed_mm2 where it says its own)
    spare cores       = the matrix, vector and per-core memory terms x (cores + compute.spare_cores) / cores: cores
                        fused off for yield (harvesting) are on the die, their peaks are not (:func:`core_area_factor`)
    d2d               = per die of a multi-die package: its die-to-die bandwidth / the link kind's GB/s per mm^2
                        (``dse.hardware.d2d``)

A multi-die package (``package.dies``) splits these parts over its die kinds: each kind holds the
parts it names (a part no die names goes to the first kind), priced at the kind's own node and shared
equally by its ``count`` dies (:func:`die_areas`); a template without ``package.dies`` is one die
holding everything, so the formulas above are its whole area.

The shoreline (:func:`shoreline`) checks that each die's edge, from its area and aspect ratio, holds
its HBM PHYs, SerDes and D2D PHY, that the package holds the stacks, and that stacked dies fit on the
dies under them. Every coefficient and its source
is in ``hw_templates/nodes/*.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dse.cost.noc import noc_mm2
from dse.errors import DseError
from dse.hardware.d2d import D2D, D2DLink
from dse.hardware.designs import DesignBatch
from dse.hardware.schema import DIE_PARTS, Hardware, Node
from dse.hardware.templates import load_node
from dse.units import DTYPE_INDEX, DTYPES, MIB, TERA, element_of

COMPONENTS = ("matrix", "vector", "sram", "noc", "dram_phy", "dram_controller", "serdes", "fixed", "d2d")


@dataclass(frozen=True)
class DieArea:
    """One die kind of a package: ``count`` dies ``[D]`` of ``mm2`` each ``[D]``, its parts per die and the
    node it is priced at (a single-die design has one, ``die``, holding everything)."""

    name: str
    count: np.ndarray
    mm2: np.ndarray
    parts: dict[str, np.ndarray]  # per die, COMPONENTS keys
    node: Node
    holds: frozenset[str]  # DIE_PARTS and memory level names it holds
    link: D2DLink | None  # None: a template without package.dies
    stacked_on: str | None
    published_mm2: float | None
    d2d_tbps: np.ndarray  # [D] die-to-die bandwidth of one die, both directions (TB/s)
    tiles: np.ndarray | None = None  # [D] core tiles on one die, spares included (None: a die with no cores)
    spare: np.ndarray | None = None  # [D] spare (fused-off) cores of one die
    tile_mm2: np.ndarray | None = None  # [D] one core tile: its matrix, vector and per-core memory share

    @property
    def footprint(self) -> np.ndarray:
        """[D] interposer or substrate area the dies of this kind take (0 when bonded on another die)."""
        return np.zeros_like(self.mm2) if self.stacked_on else self.count * self.mm2


@dataclass(frozen=True)
class AreaBreakdown:
    """Per-component area arrays ``[D]`` in mm^2 summed over the package's dies, the node of the template, and
    the dies (:class:`DieArea`, one per kind)."""

    node: Node
    parts: dict[str, np.ndarray]
    dram_stacks: np.ndarray
    dies: tuple[DieArea, ...] = ()

    @property
    def total(self) -> np.ndarray:
        """[D] silicon area of the package's logic dies, all of them (mm^2)."""
        return np.sum([self.parts[c] for c in COMPONENTS], axis=0)

    @property
    def footprint_mm2(self) -> np.ndarray:
        """[D] silicon the package's heat leaves through: the dies on the interposer or substrate (a die bonded on
        another adds its power, not its footprint, :attr:`DieArea.footprint`); a single die's whole area."""
        return np.sum([g.footprint for g in self.dies], axis=0) if self.dies else self.total

    @property
    def largest_die_mm2(self) -> np.ndarray:
        """[D] the largest die (what the reticle limits)."""
        return np.max([g.mm2 for g in self.dies], axis=0) if self.dies else self.total

    @property
    def die_total(self) -> np.ndarray:
        """[D] dies in the package."""
        return np.sum([g.count for g in self.dies], axis=0) if self.dies else np.ones(len(self.total))

    @property
    def multi_die(self) -> bool:
        """Design 0 has several dies."""
        return bool(self.die_total[0] > 1)

    @property
    def total_mm2(self) -> float:
        """Total of design 0 (the single-design API)."""
        return float(self.total[0])

    @property
    def breakdown(self) -> dict[str, float]:
        """Component -> mm^2 for design 0."""
        return {c: float(self.parts[c][0]) for c in COMPONENTS}


def stack_bps(d: DesignBatch, j: int) -> np.ndarray | float | None:
    """Byte/s of one stack (or channel) of level ``j``: [D] the design's part's for the main memory
    (``DesignBatch.main_stack_bps``), else the template's ``stack_bandwidth_gbps``; None where it names none."""
    if j == d.offchip_index:
        return d.main_stack_bps()
    gbps = d.base.memory[j].stack_bandwidth_gbps
    return None if gbps is None else gbps * 1e9


def level_stacks(d: DesignBatch, j: int) -> np.ndarray:
    """[D] stacks (or channels) level ``j`` needs for its bandwidth, ceil(BW / per-stack BW), when its kind
    is priced by PHY stacks (``area == "dram_phy"``) and it names ``stack_bandwidth_gbps``; else 0."""
    level = d.base.memory[j]
    if level.spec.area != "dram_phy" or level.stack_bandwidth_gbps is None:
        return np.zeros(d.n)
    return np.ceil(d.bandwidth[:, j] / stack_bps(d, j) - 1e-9)


def dram_stacks(d: DesignBatch, phy: bool = False) -> np.ndarray:
    """[D] HBM stacks of the die: :func:`level_stacks` summed over its levels; with ``phy``, in PHY-and-controller
    units of the 1024-bit stack the node files price (the main memory's stacks x its part's interface width / 1024,
    ``DesignBatch.dram_io_factor``: an HBM4 stack's 2048-bit PHY counts 2)."""
    out = np.zeros(d.n)
    for j in range(len(d.base.memory)):
        if d.base.memory[j].spec.area == "dram_phy":
            out = out + level_stacks(d, j) * (d.dram_io_factor if phy and j == d.offchip_index else 1.0)
    return out


def ddr_channels(d: DesignBatch) -> np.ndarray:
    """[D] 32-bit board-DRAM channels (GDDR, LPDDR, DDR; kind ``ddr``) of the die: ceil(BW / channel BW) summed over
    its levels of that area class, each a PHY and controller of ``ddr_phy_mm2_per_channel`` (LLMCompass's DDR5 PHY per
    32-bit unit). They sit on the board, so they take no interposer and count against no package stack limit; the
    die-edge check does not count their PHYs' shoreline (no sourced edge length per channel)."""
    out = np.zeros(d.n)
    for j, level in enumerate(d.base.memory):
        if level.spec.area == "ddr_phy":  # without stack_bandwidth_gbps, the template's bandwidth is one channel
            per = stack_bps(d, j) if level.stack_bandwidth_gbps else level.bandwidth_bps
            out = out + np.maximum(np.ceil(d.bandwidth[:, j] / per - 1e-9), 1.0)
    return out


def clock_factor(d: DesignBatch, node: Node) -> np.ndarray:
    """[D] calibration clock / design clock: area follows the MAC count, and a slower clock needs
    more MACs for the same TFLOP/s (peak = MACs x 2 x clock)."""
    return node.calibration_clock_ghz.value / (d.base.compute.clock_ghz * d.clock_scale)


def core_area_factor(d: DesignBatch) -> np.ndarray:
    """[D] cores on the die over cores enabled, ``(cores + compute.spare_cores) / cores``: a harvested die carries
    its fused-off cores with their matrix and vector units and per-core memories (GA100: 128 SMs for A100's 108),
    so those parts of the area follow the cores on the die while the peaks follow the enabled ones."""
    return (d.cores + spare_cores(d)) / d.cores


def spare_cores(d: DesignBatch) -> np.ndarray:
    """[D] cores fused off for yield (``compute.spare_cores``, searchable per design), whole."""
    return np.round(d.spare_cores) if d.spare_cores is not None else np.full(d.n, float(d.base.compute.spare_cores))


def physical_capacity(d: DesignBatch) -> np.ndarray:
    """[D, L] bytes of each level on the die: a per-core level's capacity x :func:`core_area_factor` (the spare
    cores' copies), every other level as enabled."""
    if not np.any(spare_cores(d)) or d.per_core is None or not d.per_core.any():
        return d.capacity
    cap = d.capacity.copy()
    cap[:, d.per_core] *= core_area_factor(d)[:, None]
    return cap


def area_modes(d: DesignBatch) -> list[str]:
    """The matrix modes that have PEs of their own (``compute.matrix.area_modes``, default every native mode): a
    mode run in several passes over another's PEs adds none."""
    m = d.base.compute.matrix
    return list(m.area_modes) if m.area_modes else list(m.peak_tflops)


def matrix_tflops_equivalent(d: DesignBatch, node: Node) -> np.ndarray:
    """[D] bf16-equivalent TFLOP/s that sizes the MAC arrays: max over the area modes (:func:`area_modes`) of peak
    x factor."""
    native = area_modes(d)
    idx = [DTYPE_INDEX[dt] for dt in native]
    factors = np.array([node.matrix_dtype_area_factor.values.get(element_of(dt), 1.0) for dt in native])
    return (np.take(d.matrix_peak, idx, axis=1) * factors[None, :]).max(axis=1) / TERA * clock_factor(d, node)


def pe_ratio(node: Node, dtype: str) -> float:
    """PE area of a native mode relative to a bf16 PE (a mode without its own figure counts as bf16; a block-scaled
    format as its element type, ``dse.units.BlockFormat.element``)."""
    pe = node.systolic_pe_um2.values
    return pe.get(element_of(dtype), pe["bf16"]) / pe["bf16"]


def systolic_pes(d: DesignBatch, node: Node) -> np.ndarray:
    """[D] bf16-equivalent processing elements: max over the area modes (:func:`area_modes`) of MACs_d x PE_d /
    PE_bf16, MACs_d = peak_d / (2 FLOP x clock)."""
    native = area_modes(d)
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
    noc_crosspoint_bits: np.ndarray  # ports^2 x link bits summed over routers (``dse.cost.noc``)
    noc_buffer_bits: np.ndarray  # router input-buffer bits
    dram_stacks: np.ndarray
    serdes_links: np.ndarray  # link equivalents (links x lane factor)
    dram_phy_stacks: np.ndarray | None = None  # PHY and controller units of 1024 bits (None: one per stack)
    ddr_channels: np.ndarray | None = None  # 32-bit GDDR/LPDDR/DDR channels (memory kind ddr, calibration dies)
    fixed_blocks: np.ndarray | None = None  # die-level fixed area charged (None: one; 0 for a repeated tile)
    fixed_mm2: float | None = None  # mm^2 of one fixed block (None: the node's fixed_mm2; package.fixed_mm2)
    register_mib: np.ndarray | None = None  # simt register files on the die (None: none; :func:`register_mib`)
    accumulator_mib: np.ndarray | None = None  # systolic accumulators on the die (None: none)


def sram_mib(d: DesignBatch) -> tuple[np.ndarray, np.ndarray]:
    """[D] on-chip MiB held as scratchpad and as cache (by each level's ``organization``)."""
    sram = np.array([m.spec.area == "sram" for m in d.base.memory], dtype=bool)
    org = np.array([m.organization == "scratchpad" for m in d.base.memory]) & sram
    cache = sram & ~org
    cap = physical_capacity(d)
    return cap[:, org].sum(axis=1) / MIB, cap[:, cache].sum(axis=1) / MIB


def level_mm2_per_mib(d: DesignBatch, node: Node, j: int) -> float:
    """mm^2 per MiB of memory level ``j`` (scratchpad or cache density of the node)."""
    org = d.base.memory[j].organization
    return (node.scratchpad_mm2_per_mib if org == "scratchpad" else node.cache_mm2_per_mib).value


def register_mib(d: DesignBatch) -> np.ndarray:
    """[D] MiB of registers or accumulators on the die: ``compute.register_kib_per_core`` x (cores + spare cores)."""
    return d.reg_bytes * d.cores * core_area_factor(d) / MIB


def inventory(d: DesignBatch, node: Node) -> Inventory:
    """Count what every design of ``d`` instantiates."""
    systolic = d.base.compute.matrix.style == "systolic"
    zero = np.zeros(d.n)
    scratch, cache = sram_mib(d)
    net = d.noc()
    on_die = core_area_factor(d)
    regs = register_mib(d)
    pkg = d.base.package
    return Inventory(
        simt_tflops=zero if systolic else matrix_tflops_equivalent(d, node) * on_die,
        systolic_pes=systolic_pes(d, node) * on_die if systolic else zero,
        vector_tflops=np.nan_to_num(d.vector_peak[:, DTYPES.index("fp32")]) / TERA * clock_factor(d, node) * on_die,
        scratchpad_mib=scratch,
        cache_mib=cache,
        noc_crosspoint_bits=net.crosspoint_bits,
        noc_buffer_bits=net.buffer_bits,
        dram_stacks=dram_stacks(d),
        dram_phy_stacks=dram_stacks(d, phy=True),
        serdes_links=d.links * link_lane_factor(d),
        ddr_channels=ddr_channels(d),
        register_mib=zero if systolic else regs,
        accumulator_mib=regs if systolic else zero,
        fixed_mm2=None if pkg is None else pkg.fixed_mm2,
    )


def price(inv: Inventory, node: Node) -> dict[str, np.ndarray]:
    """mm^2 per component of every inventory at ``node`` (the module docstring's formulas)."""
    phy = inv.dram_stacks if inv.dram_phy_stacks is None else inv.dram_phy_stacks
    return {
        "matrix": inv.simt_tflops * node.matrix_mm2_per_tflops.value
        + (0.0 if inv.register_mib is None else inv.register_mib * node.cache_mm2_per_mib.value)
        + (0.0 if inv.accumulator_mib is None else inv.accumulator_mib * node.scratchpad_mm2_per_mib.value)
        + inv.systolic_pes * node.systolic_pe_um2.values["bf16"] * 1e-6 * (1.0 + node.systolic_control_fraction.value),
        "vector": inv.vector_tflops * node.vector_mm2_per_tflops.value,
        "sram": inv.scratchpad_mib * node.scratchpad_mm2_per_mib.value + inv.cache_mib * node.cache_mm2_per_mib.value,
        "noc": noc_mm2(inv.noc_crosspoint_bits, inv.noc_buffer_bits, node),
        "dram_phy": phy * node.dram_phy_mm2_per_stack.value,
        "dram_controller": phy * node.dram_controller_mm2_per_stack.value
        + (0.0 if inv.ddr_channels is None else inv.ddr_channels * node.ddr_phy_mm2_per_channel.value),
        "serdes": inv.serdes_links * node.serdes_mm2_per_link.value,
        "fixed": np.full(inv.dram_stacks.shape, node.fixed_mm2.value if inv.fixed_mm2 is None else inv.fixed_mm2)
        * (1.0 if inv.fixed_blocks is None else inv.fixed_blocks),
        "d2d": np.zeros(inv.dram_stacks.shape),  # a die's own D2D PHY: ``die_areas``
    }


def area(d: DesignBatch | Hardware, node: Node | None = None) -> AreaBreakdown:
    """Area of every design in ``d`` at the base template's process node (or ``node``), die by die
    (:func:`die_areas`; a template without ``package.dies`` is one die holding everything)."""
    if isinstance(d, Hardware):
        d = DesignBatch.from_hardware(d)
    node = node or load_node(d.base.process_node)
    inv = inventory(d, node)
    dies = die_areas(d, node, priced=price(inv, node))
    parts = {c: np.sum([g.count * g.parts[c] for g in dies], axis=0) for c in COMPONENTS}
    return AreaBreakdown(node=node, parts=parts, dram_stacks=inv.dram_stacks, dies=dies)


def level_sram_mm2(d: DesignBatch, node: Node) -> dict[str, np.ndarray]:
    """[D] mm^2 of each SRAM level at ``node`` (capacity on the die, :func:`physical_capacity`, x the node's
    scratchpad or cache density)."""
    cap = physical_capacity(d)
    return {m.name: cap[:, j] / MIB * level_mm2_per_mib(d, node, j)
            for j, m in enumerate(d.base.memory) if m.spec.area == "sram"}


def die_noc_mm2(d: DesignBatch, node: Node, held: frozenset[str], count: np.ndarray,
                package_rule: np.ndarray) -> np.ndarray:
    """[D] mm^2 of one die's on-chip network in a multi-die package: the monolithic rule applied per die, a
    network over the die's share of the cores carrying its share of the outermost SRAM level the die kind holds
    that its dies share (one instance, or one per die), priced at its node; a die kind holding no such level
    keeps ``package_rule`` (its share of the package's network if it holds ``noc``, else nothing)."""
    shared = [j for j, m in enumerate(d.base.memory) if m.name in held and m.spec.area == "sram"
              and (m.instances == 1 or np.all(m.instances == count))]
    if not shared:
        return package_rule
    net = d.noc(cores=d.cores / count, demand_bps=d.bandwidth[:, shared[-1]] / count)
    return noc_mm2(net.crosspoint_bits, net.buffer_bits, node)


#: the area part that prices each component of a die (``dram_controller`` goes with the PHYs it serves)
PART_OF = {"matrix": "matrix", "vector": "vector", "noc": "noc", "dram_phy": "dram_phy",
           "dram_controller": "dram_phy", "serdes": "serdes", "fixed": "fixed"}


def die_areas(d: DesignBatch, node: Node, priced: dict[str, np.ndarray] | None = None) -> tuple[DieArea, ...]:
    """Every die kind's parts per die: the parts it holds, priced at its node (``price``; ``priced`` is the
    template node's, when the caller has it) and shared equally by its ``count`` dies, plus its die-to-die PHY
    (``d2d_bandwidth_tbps``, :attr:`DesignBatch.die_d2d_bps`, / the link's GB/s per mm^2)::

        A_die = sum_{parts held} part(node_die) / count + D2D_bandwidth / link density
    """
    hw = d.base
    specs = hw.die_groups or [None]
    total_dies = d.die_counts.sum(axis=1)
    full_at = {node.name: priced} if priced is not None else {}
    out = []
    for g, (held, spec) in enumerate(zip(hw.die_holdings, specs, strict=True)):
        nd = node if spec is None or spec.node is None else load_node(spec.node, field=f"package.dies.{g}.node")
        if nd.name not in full_at:
            full_at[nd.name] = price(inventory(d, nd), nd)
        full = full_at[nd.name]
        count = d.die_counts[:, g]
        zero = np.zeros(d.n)
        per = {c: (full[c] if part in held else zero) / count for c, part in PART_OF.items()}
        sram = level_sram_mm2(d, nd)
        per["sram"] = sum((sram[name] for name in sram if name in held), zero) / count
        per["d2d"] = zero
        link = D2D[spec.d2d_link] if spec is not None else None
        if spec is not None:
            multi = total_dies > 1  # [D] a die of one kind in a package of several dies
            per["noc"] = np.where(multi, die_noc_mm2(d, nd, held, count, per["noc"]), per["noc"])
            per["d2d"] = np.where(multi, d.die_d2d_bps[:, g] / 1e9 / link.gbps_per_mm2, 0.0)
        tiles, spare, tile = core_tiles(d, held, count, per, sram)
        out.append(DieArea(name=spec.name if spec else "die", count=count,
                           mm2=np.sum([per[c] for c in COMPONENTS], axis=0), parts=per, node=nd, holds=held, link=link,
                           stacked_on=spec.stacked_on if spec else None,
                           published_mm2=spec.published_area_mm2 if spec else None,
                           d2d_tbps=d.die_d2d_bps[:, g] / 1e12 if spec else np.zeros(d.n), tiles=tiles, spare=spare,
                           tile_mm2=tile))
    return tuple(out)


def core_tiles(d: DesignBatch, held: frozenset[str], count: np.ndarray, per: dict[str, np.ndarray],
               sram: dict[str, np.ndarray]) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """([D] tiles on one die of a kind that holds the matrix units, spares included; [D] its spare tiles; [D] mm^2
    of one tile: the die's matrix, vector and per-core memory over its tiles), or Nones for a die with no cores (an
    IO die). A tile is the group of cores fused off together (``compute.spare_granule_cores``: a TPC of 2 SMs); the
    spares spread evenly over the dies (``compute.spare_cores``)::

        tiles = (cores + spare_cores) / count / granule,  tile = (matrix + vector + per-core SRAM of one die) / tiles
    """
    if "matrix" not in held:
        return None, None, None
    spare, g = spare_cores(d), d.base.compute.spare_granule_cores
    tiles = (d.cores + spare) / count / g
    per_core = [m.name for j, m in enumerate(d.base.memory) if d.per_core is not None and d.per_core[j]]
    own = per["matrix"] + per["vector"] + sum((sram[n] for n in per_core if n in held and n in sram),
                                              np.zeros(d.n)) / count
    return tiles, np.floor(spare / count / g), own / tiles


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
    """Die-edge and package checks, ``[D]`` arrays (a value <= 0 holds), over every die of the package.

    * ``edge_over_mm`` = max over die kinds of (edge need - perimeter), a die's need being its share of
      stacks x hbm_edge_mm_per_stack + links x serdes_edge_mm_per_link, its D2D bandwidth / the link's
      GB/s per mm, and io_edge_reserve_mm on the die holding ``fixed``; perimeter = 2 (long + short):
      PHYs sit on the die edge.
    * ``stacks_over`` = stacks - min(package limit, stacks the long edges hold), each die that holds the
      DRAM PHYs holding 2 x floor(long / hbm_edge_mm_per_stack) beside its two long sides (A100, H100,
      MI250X packages).
    * ``stacked_over`` = max over bases of (area of the dies bonded on a die kind - its area): dies
      stacked on another must fit on it (MI300's XCDs on their IODs).
    """

    edge_need_mm: np.ndarray
    perimeter_mm: np.ndarray
    stacks: np.ndarray
    max_stacks: np.ndarray
    stacked_over_mm2: np.ndarray | None = None

    @property
    def edge_over_mm(self) -> np.ndarray:
        return self.edge_need_mm - self.perimeter_mm

    @property
    def stacks_over(self) -> np.ndarray:
        """[D] stacks beyond what the package holds, or (when positive) the mm^2 by which stacked dies overhang."""
        over = self.stacks - self.max_stacks
        return over if self.stacked_over_mm2 is None else np.maximum(over, self.stacked_over_mm2)

    def reasons(self) -> list[str]:
        """Per design: why it breaks the shoreline or the package ('' when it holds)."""
        out = [""] * len(self.stacks)
        stacked = self.stacked_over_mm2 if self.stacked_over_mm2 is not None else np.zeros(len(self.stacks))
        idx = np.flatnonzero((self.stacks_over > 0) | (self.edge_over_mm > 0))  # only the designs that break one
        cols = (self.stacks[idx].tolist(), self.max_stacks[idx].tolist(), self.edge_need_mm[idx].tolist(),
                self.perimeter_mm[idx].tolist(), stacked[idx].tolist())  # Python floats: the same text, faster
        for i, st, mx, need, per, over in zip(idx.tolist(), *cols, strict=True):
            why = [f"package: {_count(st)} DRAM stacks > {mx:.0f} the die's long edges and package hold"] if st > mx else []
            if over > 0:
                why.append(f"package: the stacked dies overhang the dies under them by {_count(over)} mm2")
            if need > per:
                why.append(f"shoreline: PHYs need {_count(need, 1)} mm of die edge > {_count(per, 1)} mm perimeter")
            out[i] = "; ".join(why)
        return out


def _count(x: float, decimals: int = 0) -> str:
    """A count or length for a reason line: fixed-point up to 1e7, else 4 significant digits (a design built past
    every limit printed a stack count of 220 digits)."""
    return f"{x:.{decimals}f}" if abs(x) < 1e7 else f"{x:.4g}"


def die_edge_need_mm(d: DesignBatch, ar: AreaBreakdown, die: DieArea) -> np.ndarray:
    """[D] mm of edge one die of kind ``die`` needs: its share of the HBM PHYs and SerDes, its D2D PHY's
    shoreline, and the IO reserve on the die that holds the fixed block."""
    node = ar.node
    need = np.zeros(d.n)
    if "dram_phy" in die.holds:
        need = need + ar.dram_stacks / die.count * node.hbm_edge_mm_per_stack.value
    if "serdes" in die.holds:
        need = need + d.links * link_lane_factor(d) / die.count * node.serdes_edge_mm_per_link.value
    if "fixed" in die.holds:
        need = need + node.io_edge_reserve_mm.value
    if die.link is not None and die.link.gbps_per_mm is not None:
        need = need + die.d2d_tbps * 1e3 / die.link.gbps_per_mm
    return need


def shoreline(d: DesignBatch, ar: AreaBreakdown) -> Shoreline:
    """Edge and package checks of every design of ``d`` at its area ``ar`` (see :class:`Shoreline`); the
    reported need and perimeter are those of the die kind with the least edge to spare."""
    node = ar.node
    pkg = d.base.package
    aspect = pkg.aspect_ratio if pkg else 1.0
    e_hbm = node.hbm_edge_mm_per_stack.value
    limit = float(pkg.max_dram_stacks) if pkg and pkg.max_dram_stacks else node.max_dram_stacks.value
    dies = ar.dies or (DieArea("die", np.ones(d.n), ar.total, ar.parts, node, frozenset(DIE_PARTS), None, None, None,
                              np.zeros(d.n)),)
    needs, perims, beside = [], [], np.zeros(d.n)
    for die in dies:
        long, short = die_sides_mm(die.mm2, aspect)
        needs.append(die_edge_need_mm(d, ar, die))
        perims.append(2.0 * (long + short))
        if "dram_phy" in die.holds:
            beside = beside + die.count * 2.0 * np.floor(long / e_hbm + 1e-9)
    spare = np.asarray(perims) - np.asarray(needs)
    worst = np.argmin(spare, axis=0)
    cols = np.arange(d.n)
    stacked = None
    if any(g.stacked_on for g in dies):
        over = [np.sum([t.count * t.mm2 for t in dies if t.stacked_on == base.name], axis=0)
                - base.count * base.mm2 for base in dies if any(t.stacked_on == base.name for t in dies)]
        stacked = np.max(over, axis=0)
    return Shoreline(edge_need_mm=np.asarray(needs)[worst, cols], perimeter_mm=np.asarray(perims)[worst, cols],
                     stacks=ar.dram_stacks, max_stacks=np.minimum(limit, beside), stacked_over_mm2=stacked)


#: share of a die above which ``dse area`` says what its default-sized on-chip network costs
NOC_SHARE_WARN = 0.2
#: share of a die above which ``dse area`` says that the node's default fixed block (A100's control and I/O) is
#: most of it: a small die's host interface and control are a few mm2, not a data-centre GPU's
FIXED_SHARE_WARN = 0.3


def build_warnings(hw: Hardware, label: str | None = None) -> list[str]:
    """Why a template could not be built as described ([] when it can): its largest die over the node's reticle
    (a single die is not refused, :func:`check_package` refuses a multi-die package's; a study scores such a design
    infeasible, ``reticle``), DRAM stacks beyond what its die edges and package hold, PHYs beyond its perimeter
    (:func:`shoreline`, the study's ``package`` and ``shoreline`` constraints), and an on-chip network sized for its
    level that is more than :data:`NOC_SHARE_WARN` of the die. What ``dse hardware`` and ``dse area``
    print as ``warning:`` lines, each naming the template by ``label`` (default its name)."""
    label = label or hw.name
    d = DesignBatch.from_hardware(hw)
    ar = area(d)
    out = []
    limit = ar.node.reticle_limit_mm2.value
    if float(ar.largest_die_mm2[0]) > limit:
        what = "its largest die" if float(ar.die_total[0]) > 1 else "its die"
        out.append(f"{label}: {what} models at {float(ar.largest_die_mm2[0]):.0f} mm2, over the {limit:g} mm2 "
                   f"reticle at {ar.node.name}: it cannot be built as one die (a study scores it infeasible; "
                   "package.dies splits it)")
    why = shoreline(d, ar).reasons()[0]
    if why:
        out.append(f"{label}: {why} (a study scores it infeasible)")
    out += fixed_warning(d, ar, label)
    noc, g = d.base.compute.noc, d.noc()
    share = float(ar.parts["noc"][0] / ar.total[0])
    if not noc.link_bytes and share > NOC_SHARE_WARN:  # links sized for the level: say what they cost
        out.append(f"{label}: its on-chip network is {share:.0%} of the die ({g.topology}, {int(g.routers[0])} routers "
                   f"of {g.link_bytes[0]:.0f}-byte links sized so that {noc.traffic} traffic carries the "
                   f"{float(d.noc_demand[0]) / 1e12:.3g} TB/s of `{d.level_names[d.noc_level]}`); a given "
                   "compute.noc.link_bytes trades that level's bandwidth for area (published mesh links: 16-64 bytes)")
    if noc.link_bytes:  # a link width the template gives: the network carries its traffic at no more than this
        carried, demand = float(g.delivered_bps[0]), float(d.noc_demand[0])
        if carried < 0.5 * demand:
            out.append(f"{label}: its on-chip network ({g.topology}, {noc.link_bytes:g}-byte links) carries "
                       f"{carried / 1e12:.3g} TB/s of {noc.traffic} traffic, {carried / demand:.0%} of the "
                       f"{demand / 1e12:.3g} TB/s its shared level delivers: operators reading that level are bound "
                       "by the network (dse area lists it; link_bytes: auto sizes the links for the traffic)")
    return out


def fixed_warning(d: DesignBatch, ar: AreaBreakdown, label: str) -> list[str]:
    """A line when the node's default fixed block (no ``package.fixed_mm2``) is more than :data:`FIXED_SHARE_WARN`
    of the template's die: the default is A100's 40 mm2 of control and I/O (LLMCompass), which an edge NPU does
    not carry, so its area and cost would be mostly a GPU's I/O."""
    pkg = d.base.package
    if pkg is not None and pkg.fixed_mm2 is not None:
        return []
    fixed, total = float(ar.parts["fixed"][0]), float(ar.total[0])
    if total <= 0 or fixed / total <= FIXED_SHARE_WARN:
        return []
    return [f"{label}: {fixed / total:.0%} of its {total:.1f} mm2 is the {ar.node.name} node's default fixed block "
            f"({fixed:g} mm2: {ar.node.fixed_mm2.source}), a data-centre GPU's control and I/O; a die with less says "
            "its own package.fixed_mm2 (with its source)"]


def check_package(d: DesignBatch, ar: AreaBreakdown, file: str | None = None) -> None:
    """Refuse a template whose dies cannot be built (design 0): a die over the reticle, or dies stacked on a
    die kind they do not fit on. A study scores such designs infeasible instead (``reticle``, ``package``)."""
    if not ar.dies or not d.base.die_groups:
        return
    for i, g in enumerate(ar.dies):
        limit = g.node.reticle_limit_mm2.value
        if g.mm2[0] > limit:
            raise DseError(f"got {g.count[0]:.0f} x {g.name} of {g.mm2[0]:.0f} mm2 each; accepted: dies of at most "
                           f"{limit:g} mm2 (the reticle at {g.node.name}): more dies of this kind or fewer parts on it",
                           file=file, field=f"package.dies.{i}")
    sh = shoreline(d, ar)
    over = sh.stacked_over_mm2
    if over is not None and over[0] > 0:
        i = next(i for i, g in enumerate(ar.dies) if g.stacked_on)
        raise DseError(f"got dies stacked on their base kind overhanging it by {over[0]:.0f} mm2; accepted: the dies "
                       "stacked on a die kind fit within its area (fewer or smaller stacked dies)",
                       file=file, field=f"package.dies.{i}.stacked_on")
