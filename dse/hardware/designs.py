"""DesignBatch: many candidate designs as numpy arrays, one entry per design point.

All designs in a batch share the base template's structure (the same memory levels in the same
order) and differ in their numbers. The predictor, the area model and the score read only these
arrays, so they evaluate thousands of designs without a Python loop over designs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from pydantic import ValidationError

from dse.errors import from_validation_error
from dse.hardware import dram_parts, fields
from dse.hardware.noc import NocGeometry, geometry
from dse.hardware.noc import grid as noc_grid
from dse.hardware.schema import ComputeUnit, Hardware
from dse.hardware.system import System
from dse.hardware.topologies import traversals
from dse.units import DTYPES, KIB, TERA, fallback_dtype


def array_modes_at(unit: ComputeUnit, rows: Any, cols: Any, own: bool = False
                   ) -> list[tuple[float, float, np.ndarray]]:
    """The template's other array geometries (``compute.matrix.array_shapes``; with ``own`` its own one too, in the
    list's order) on arrays of ``rows x cols``: each as
    its (row, column) factors of the template's ``array_rows x array_cols`` (the same MACs) and where it is whole MACs
    of that array (``rows fr`` and ``cols fc`` whole). The predictor runs a design's operators on its whole modes
    (:func:`dse.predict.roofline.array_fill`) and :meth:`DesignBatch.to_hardware` writes the same ones (Gaudi 2's
    128x512 mode on a 128x128 array is 64x256; on 211 rows it is none).

    Gaudi 2's two logical MMEs are four physical ones that the graph compiler configures as 256x256, 128x512 or
    512x128 per GEMM (Intel staff answer, forum.habana.ai/t/about-mme-profiling-result-with-intel-gaudi-software/1272),
    so an M = 120 decode GEMM fills 120/128 of a 128-row geometry instead of 120/256."""
    rows, cols = np.asarray(rows, dtype=float), np.asarray(cols, dtype=float)
    out = []
    for r, c in unit.array_shapes or ():
        if own or (r, c) != (unit.array_rows, unit.array_cols):
            fr, fc = r / unit.array_rows, c / unit.array_cols
            out.append((fr, fc, (rows * fr == np.round(rows * fr)) & (cols * fc == np.round(cols * fc))))
    return out


def stream_rows_at(unit: ComputeUnit, rows: Any) -> np.ndarray:
    """Streamed rows that hide the next weight tile's load on arrays of ``rows`` rows: the template's share of its
    rows (``compute.matrix.stream_rows / array_rows``), whole and at least 1, read by the predictor
    (:func:`dse.predict.roofline.array_fill`) and written by :meth:`DesignBatch.to_hardware` alike (an 8-row design of
    Inferentia 2's 128-row array with 64 kept the template's 64 and predicted 3x slower once written)."""
    return np.maximum(np.round(np.asarray(rows, dtype=float) * (unit.stream_rows / unit.array_rows)), 1.0)


def _rescale_array(matrix: dict, base: ComputeUnit) -> None:
    """A written design's other array geometries and ``stream_rows`` at its own array (:func:`array_modes_at`,
    :func:`stream_rows_at`)."""
    rows, cols = matrix["array_rows"], matrix["array_cols"]
    if (rows, cols) == (base.array_rows, base.array_cols):
        return
    if base.stream_rows is not None:
        matrix["stream_rows"] = int(stream_rows_at(base, rows))
    if base.array_shapes:
        kept = [[int(round(rows * fr)), int(round(cols * fc))]
                for fr, fc, whole in array_modes_at(base, rows, cols, own=True) if whole]
        if kept:
            matrix["array_shapes"] = kept
        else:
            matrix.pop("array_shapes", None)


def _sig(x: float) -> float:
    """``x`` to 9 significant digits (a tiny positive value stays positive, unlike round(x, 6))."""
    return float(f"{x:.9g}")


def _written(x: float, how: str) -> float | int:
    """A field value as ``to_hardware`` writes it (``dse.hardware.fields.Field.write``)."""
    return int(round(x)) if how == "int" else _sig(x) if how == "sig" else x


def peak_vector(peaks: dict[str, float]) -> np.ndarray:
    """Per-dtype peak in FLOP/s in ``DTYPES`` order; a missing mode takes the next wider native one."""
    out = np.full(len(DTYPES), np.nan)
    for i, dt in enumerate(DTYPES):
        mode = fallback_dtype(dt, peaks)
        if mode is not None:
            out[i] = peaks[mode] * TERA
    return out


def dtype_efficiency_ratio(unit: ComputeUnit) -> np.ndarray:
    """[n_dtypes] achievable fraction of each dtype's peak relative to ``unit.efficiency``
    (``dtype_efficiency[mode] / efficiency`` for the mode a dtype runs in, 1 where none is set)."""
    out = np.ones(len(DTYPES))
    if not unit.dtype_efficiency:
        return out
    for i, dt in enumerate(DTYPES):
        mode = fallback_dtype(dt, unit.peak_tflops)
        if mode in unit.dtype_efficiency:
            out[i] = unit.dtype_efficiency[mode] / unit.efficiency
    return out


def written_fraction(x: float) -> float:
    """An efficiency as a written template keeps it: 4 decimals, or 4 significant digits where 4 decimals would
    round a positive fraction to 0 (a template's own 6.77e-07 stays a valid, positive efficiency)."""
    r = round(float(x), 4)
    return r if r > 0 or x <= 0 else float(f"{float(x):.4g}")


def rescale_dtype_efficiency(matrix: dict, base: ComputeUnit) -> None:
    """In a matrix unit's data (``model_dump``) whose ``efficiency`` was rewritten, keep each
    ``dtype_efficiency`` at its ratio to ``efficiency`` (as the predictor reads it), at most 1."""
    if base.dtype_efficiency:
        k = float(matrix["efficiency"]) / base.efficiency
        matrix["dtype_efficiency"] = {dt: written_fraction(min(1.0, v * k)) for dt, v in base.dtype_efficiency.items()}


#: SRAM granularity of a searched on-chip level: one macro of 1 Mbit (128 KiB). Design assumption (low confidence):
#: foundry single-port SRAM compilers top out near 1 Mbit per macro (e.g. ARM Artisan / TSMC N7 compilers list
#: 4K-16K words x 64-128 bits); large on-chip buffers are tiled from such macros.
SRAM_MACRO_BYTES = 128 * KIB


def stack_bandwidth(hw: Hardware) -> float | None:
    """Byte/s of one stack (or channel) of the main memory level, or None when it is not bought in stacks (no
    ``stack_bandwidth_gbps``, or a kind not priced per PHY stack)."""
    level = hw.offchip_level
    if level.spec.area not in ("dram_phy", "ddr_phy") or level.stack_bandwidth_gbps is None:
        return None
    return level.stack_bandwidth_gbps * 1e9


def template_stacks(hw: Hardware) -> float:
    """Whole stacks of the template's main memory level, ``max(1, ceil(BW / stack BW))`` (0 when not bought in stacks)."""
    per = stack_bandwidth(hw)
    if per is None:
        return 0.0
    return max(1.0, float(np.ceil(hw.offchip_level.bandwidth_bps / per - 1e-9)))


def stack_capacity_bytes(hw: Hardware) -> float:
    """Bytes of one stack of the main memory level: ``stack_capacity_gb`` where the template gives it, else the
    template's capacity over its stacks (:func:`template_stacks`)."""
    level = hw.offchip_level
    if level.stack_capacity_gb is not None:
        return level.stack_capacity_gb * 1e9
    return level.capacity_bytes / max(template_stacks(hw), 1.0)


#: names of :attr:`DesignBatch.level_limit`'s codes: a level's own bandwidth, the on-chip network, die-to-die links
LEVEL_LIMITS: tuple[str, ...] = ("", "noc", "d2d")


@dataclass(frozen=True)
class DesignBatch:
    """Arrays of shape ``[D]`` (per design), ``[D, L]`` (per design and memory level) or ``[L]``."""

    base: Hardware
    matrix_peak: np.ndarray  # [D, n_dtypes] FLOP/s
    vector_peak: np.ndarray  # [D, n_dtypes] FLOP/s
    matrix_eff: np.ndarray  # [D]
    vector_eff: np.ndarray  # [D]
    array_rows: np.ndarray  # [D]
    array_cols: np.ndarray  # [D]
    reg_bytes: np.ndarray  # [D] register/accumulator bytes per core
    capacity: np.ndarray  # [D, L] total bytes per level
    bandwidth: np.ndarray  # [D, L] byte/s
    bw_eff: np.ndarray  # [D, L]
    overhead_s: np.ndarray  # [D] seconds per operator launch
    host_s: np.ndarray  # [D] seconds an eager framework takes to dispatch one operator
    clock_scale: np.ndarray  # [D] clock / the template's clock (peaks already include it)
    links: np.ndarray  # [D] chip-to-chip links
    cores: np.ndarray  # [D] cores (each with its MAC arrays, vector lanes and per-core memory levels)
    instances: np.ndarray  # [L] private copies per level in the template (per-core levels: :attr:`level_instances`)
    reuse_group: np.ndarray  # [L] private copies pooled for reuse by multicast (1: none)
    offchip: np.ndarray  # [L] bool
    # Multi-chip system (``dse.hardware.system``); N = 0 network levels for a single chip.
    net_links: np.ndarray | None = None  # [D, N] links per chip per network level
    net_link_bw: np.ndarray | None = None  # [D, N] byte/s per link per direction
    net_eff: np.ndarray | None = None  # [D, N] achievable fraction
    net_chip_linked: np.ndarray | None = None  # [N] bool: the level uses the chip's own links (``links``)
    system: System | None = None
    per_core: np.ndarray | None = None  # [L] bool: the level has a private copy per core (instances = cores)
    # [D] seconds of a kernel whose bytes stay on chip (compute.graph_kernel_us; NaN: overhead_s for every kernel)
    graph_s: np.ndarray | None = None
    # [L] share of each level that keeps tensors between operators (MemoryLevel.resident_share; 0: none) and
    # whether it is a cache (kept by replacement, all or nothing) rather than a scratchpad (placed by the compiler)
    resident_share: np.ndarray | None = None
    resident_cache: np.ndarray | None = None
    resident_steps: np.ndarray | None = None  # [L] bool: the level keeps tensors across steps
    die_counts: np.ndarray | None = None  # [D, G] dies of each kind of package.dies ([D, 1] of 1: one die)
    # [D, G] die-to-die bandwidth of one die of each kind, both directions together, byte/s (0: not given)
    die_d2d_bps: np.ndarray | None = None
    noc_link_bytes: np.ndarray | None = None  # [D] on-chip network link width (compute.noc.link_bytes; NaN: auto)
    spare_cores: np.ndarray | None = None  # [D] cores fused off for yield (compute.spare_cores): area and yield only
    # [D] the main memory's DRAM part chosen for the design (its code in dse.hardware.dram_parts.GENERATIONS; -1: the
    # template's own part and stack figures)
    dram_part: np.ndarray | None = None

    STATIC = ("base", "instances", "reuse_group", "offchip", "net_chip_linked", "system", "per_core",
              "resident_share", "resident_cache", "resident_steps")

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_hardware(cls, hw: Hardware, n: int = 1) -> DesignBatch:
        """``n`` copies of one template."""
        c = hw.compute
        mem = hw.memory

        def rep(x: float) -> np.ndarray:
            return np.full(n, float(x))

        def rep_levels(vals: list[float]) -> np.ndarray:
            return np.tile(np.asarray(vals, dtype=float), (n, 1))

        return cls(
            base=hw,
            matrix_peak=np.tile(peak_vector(c.matrix.peak_tflops), (n, 1)),
            vector_peak=np.tile(peak_vector(c.vector.peak_tflops), (n, 1)),
            matrix_eff=rep(c.matrix.efficiency),
            vector_eff=rep(c.vector.efficiency),
            array_rows=rep(c.matrix.array_rows),
            array_cols=rep(c.matrix.array_cols),
            reg_bytes=rep(c.register_kib_per_core * KIB),
            capacity=rep_levels([m.capacity_bytes for m in mem]),
            bandwidth=rep_levels([m.bandwidth_bps for m in mem]),
            bw_eff=rep_levels([m.efficiency for m in mem]),
            overhead_s=rep(c.launch_overhead_us * 1e-6),
            host_s=rep(c.eager_overhead_us * 1e-6),
            clock_scale=rep(1.0),
            links=rep(hw.network.links if hw.network else 0),
            cores=rep(c.cores),
            instances=np.asarray([m.instances for m in mem], dtype=float),
            reuse_group=np.asarray([min(m.reuse_group, m.instances) for m in mem], dtype=float),
            offchip=np.asarray([m.off_chip for m in mem]),
            net_links=np.zeros((n, 0)), net_link_bw=np.zeros((n, 0)), net_eff=np.zeros((n, 0)),
            net_chip_linked=np.zeros(0, dtype=bool),
            per_core=np.asarray([m.instances > 1 and m.instances == c.cores for m in mem], dtype=bool),
            graph_s=rep(np.nan if c.graph_kernel_us is None else c.graph_kernel_us * 1e-6),
            resident_share=np.asarray([m.resident_share for m in mem], dtype=float),
            resident_cache=np.asarray([m.organization == "cache" for m in mem], dtype=bool),
            resident_steps=np.asarray([m.keeps_across_steps for m in mem], dtype=bool),
            die_counts=np.tile(np.asarray([g.count for g in hw.die_groups] or [1], dtype=float), (n, 1)),
            die_d2d_bps=np.tile(np.asarray([g.d2d_bandwidth_tbps * TERA for g in hw.die_groups] or [0.0]), (n, 1)),
            noc_link_bytes=rep(np.nan if c.noc.link_bytes is None else c.noc.link_bytes),
            spare_cores=rep(c.spare_cores),
            dram_part=rep(-1),
        )

    def with_system(self, system: System | None) -> DesignBatch:
        """Attach a multi-chip system (its network levels become per-design arrays); None detaches."""
        n = self.n
        if system is None:
            return replace(self, net_links=np.zeros((n, 0)), net_link_bw=np.zeros((n, 0)), net_eff=np.zeros((n, 0)),
                           net_chip_linked=np.zeros(0, dtype=bool), system=None)
        links, bw, eff, linked = system.level_arrays(self.base)
        net_links = np.tile(np.asarray(links, float), (n, 1))
        linked_arr = np.asarray(linked, dtype=bool)
        if linked_arr.any():  # the chip's links, as searched (``network.links``)
            net_links[:, linked_arr] = self.links[:, None]
        return replace(self, net_links=net_links, net_link_bw=np.tile(np.asarray(bw, float), (n, 1)),
                       net_eff=np.tile(np.asarray(eff, float), (n, 1)), net_chip_linked=linked_arr, system=system)

    @property
    def n_net(self) -> int:
        """Network levels (0 for a single chip)."""
        return 0 if self.net_links is None else int(self.net_links.shape[1])

    @classmethod
    def stack(cls, designs: list[DesignBatch]) -> DesignBatch:
        """Concatenate batches that share one base template structure."""
        first = designs[0]
        fields = {}
        for name in first.__dataclass_fields__:
            val = getattr(first, name)
            if name in cls.STATIC:
                fields[name] = val
            else:
                fields[name] = np.concatenate([getattr(d, name) for d in designs], axis=0)
        return cls(**fields)

    # ---------------------------------------------------------------- views
    @property
    def n(self) -> int:
        return int(self.matrix_peak.shape[0])

    @property
    def die_kinds(self) -> list[str]:
        """Names of the package's die kinds (``[]`` for a single die)."""
        return [g.name for g in self.base.die_groups]

    @property
    def write_ratio(self) -> np.ndarray:
        """[L] time of a written byte over a read one at each level (``MemoryLevel.write_ratio``: bandwidth / write
        bandwidth; 1 where writes cost what reads do). The template's: a design that resizes a level keeps its ratio."""
        return np.asarray([m.write_ratio for m in self.base.memory], dtype=float)

    @property
    def level_names(self) -> list[str]:
        return [m.name for m in self.base.memory]

    @property
    def ref_index(self) -> int:
        return DTYPES.index(self.base.reference_dtype)

    @property
    def peak_flops(self) -> np.ndarray:
        """[D] matrix peak at the reference dtype, FLOP/s."""
        return self.matrix_peak[:, self.ref_index]

    @property
    def offchip_index(self) -> int:
        """Column of the main memory level (``Hardware.offchip_index``: the innermost off-chip level by kind)."""
        return self.base.offchip_index

    @property
    def offchip_name(self) -> str:
        """Name of the main memory level (the level whose traffic the intensity and roofline reports show)."""
        return self.level_names[self.offchip_index]

    @property
    def dram_bandwidth(self) -> np.ndarray:
        """[D] main-memory bandwidth, byte/s."""
        return self.bandwidth[:, self.offchip_index]

    @property
    def offchip_capacity(self) -> np.ndarray:
        """[D] main-memory bytes (what a workload's per-chip footprint must fit in)."""
        return self.capacity[:, self.offchip_index]

    @property
    def ridge(self) -> np.ndarray:
        """[D] compute:bandwidth ratio = peak FLOP/s / main-memory byte/s, FLOP/byte."""
        return self.peak_flops / self.dram_bandwidth

    @property
    def sram_bytes(self) -> np.ndarray:
        """Capacity of the outermost on-chip level, bytes ``[D]`` (the ``sram_mib`` knob in SI)."""
        return self.capacity[:, self.sram_level]

    @property
    def sram_level(self) -> int:
        """Index of the outermost level whose kind the ``sram_mib`` knob sizes (``MemoryKind.knob``: the
        outermost on-chip level)."""
        sized = [j for j, m in enumerate(self.base.memory) if m.spec.knob == "sram_mib"]
        if not sized:
            raise ValueError("template has no on-chip (sram) memory level")
        return sized[-1]

    # ---------------------------------------------------------------- the build rule
    @property
    def core_peak_flops(self) -> np.ndarray:
        """[D] matrix peak of one core at the reference dtype, FLOP/s: ``rows x cols x arrays_per_core x 2 x
        clock`` (``arrays_per_core`` and the dtype rates as the template's peaks imply them)."""
        return self.peak_flops / self.cores

    @property
    def level_instances(self) -> np.ndarray:
        """[D, L] private copies per level: ``cores`` for a per-core level, the template's count otherwise."""
        per_core = self.per_core if self.per_core is not None else np.zeros(len(self.instances), dtype=bool)
        return np.where(per_core[None, :], self.cores[:, None], self.instances[None, :])

    @property
    def dram_stacks(self) -> np.ndarray:
        """[D] whole DRAM stacks (or channels) of the main memory level: ``ceil(BW / stack BW)``; 0 where the level
        names no ``stack_bandwidth_gbps``."""
        per = self.main_stack_bps()
        if per is None:
            return np.zeros(self.n)
        return np.ceil(self.dram_bandwidth / per - 1e-9)

    # ---------------------------------------------------------------- the main memory's DRAM part
    @property
    def chosen_part(self) -> np.ndarray:
        """[D] bool: the design's main memory is a part chosen for it (:meth:`with_part`), not the template's."""
        return np.zeros(self.n, dtype=bool) if self.dram_part is None else self.dram_part >= 0

    def part_figure(self, attr: str, template: float) -> np.ndarray:
        """[D] figure ``attr`` of :func:`dse.hardware.dram_parts.part_table` for a chosen part, else ``template``
        (the template's own figure)."""
        chosen = self.chosen_part
        if not chosen.any():
            return np.full(self.n, template)
        table = dram_parts.part_table(attr)
        return np.where(chosen, table[np.maximum(self.dram_part, 0).astype(int)], template)

    def main_stack_bps(self) -> np.ndarray | None:
        """[D] byte/s of one stack (or channel) of the main memory: the chosen part's rated stack, else the template's
        ``stack_bandwidth_gbps``; None when the level is not bought in stacks."""
        per = stack_bandwidth(self.base)
        return None if per is None else self.part_figure("stack_bps", per)

    def main_stack_bytes(self) -> np.ndarray:
        """[D] bytes of one stack of the main memory: the chosen part's, else :func:`stack_capacity_bytes`."""
        return self.part_figure("stack_bytes", stack_capacity_bytes(self.base))

    def _template_part(self, attr: str) -> float:
        """The template's own part's ``attr`` (1 where it names none or the part has no stack figures)."""
        name = self.base.offchip_level.generation
        if name is None:
            return 1.0
        v = float(dram_parts.part_table(attr)[dram_parts.code_of(name)])
        return 1.0 if np.isnan(v) else v

    @property
    def dram_io_factor(self) -> np.ndarray:
        """[D] interface bits of a main-memory stack over the 1024 the node files' PHY and controller areas are for
        (HBM4: 2; ``dse.hardware.dram_parts.StackPart.io_bits``)."""
        return self.part_figure("io_factor", self._template_part("io_factor"))

    @property
    def dram_price_factor(self) -> np.ndarray:
        """[D] price per GB of the main memory's part relative to the node file's ``dram_usd_per_gb`` (HBM3E 1.2,
        HBM4 1.56; 1 for a part without a figure or a level that names none)."""
        return self.part_figure("price_factor", self._template_part("price_factor"))

    def with_part(self, codes: np.ndarray) -> DesignBatch:
        """The designs with their main memory built from DRAM part ``codes`` [D] (``dram_parts.code_of``; a part
        equal to the template's own keeps the template's stack figures). The stack count stays: each stack becomes
        one of the part's, so bandwidth = stacks x the part's rated stack bandwidth and capacity = stacks x its
        stack capacity (a ``dram_bandwidth`` knob applied after this buys whole stacks of the part)."""
        level = self.base.offchip_level
        allowed = dram_parts.searchable_names(level.kind)
        name = f"memory.{level.name}.generation"
        if stack_bandwidth(self.base) is None or not allowed:
            why = (f"its template gives no stack_bandwidth_gbps, one stack's or {level.kind} channel's GB/s, so it "
                   "has no stack count to keep" if allowed and level.stack_bandwidth_gbps is None
                   else f"a level of kind {level.kind} has no parts")
            raise ValueError(f"cannot search {name}: level {level.name!r} is not bought in stacks of a part: {why}; "
                             f"accepted: a {'/'.join(dram_parts.searchable_names())} level with "
                             "stack_bandwidth_gbps")
        codes = np.asarray(codes, dtype=float)
        names = [g.name for g in dram_parts.GENERATIONS]
        bad = [names[int(c)] if 0 <= c < len(names) else f"code {c:g}" for c in np.unique(codes)
               if not (0 <= c < len(names) and names[int(c)] in allowed)]
        if bad:
            raise ValueError(f"{name}: got {', '.join(bad)} for a level of kind {level.kind}; accepted: "
                             f"{', '.join(allowed)}")
        own = -1.0 if level.generation is None else float(dram_parts.code_of(level.generation))
        stacks = np.maximum(self.dram_stacks, 1.0)
        out = replace(self, dram_part=np.where(codes == own, -1.0, codes))
        j = self.offchip_index
        bw, cap = out.bandwidth.copy(), out.capacity.copy()
        bw[:, j] = stacks * out.main_stack_bps()
        cap[:, j] = stacks * out.main_stack_bytes()
        return replace(out, bandwidth=bw, capacity=cap)

    def part_name(self, i: int) -> str | None:
        """The DRAM part of design ``i``'s main memory (the chosen one, else the template's; None: none named)."""
        if self.chosen_part[i]:
            return dram_parts.GENERATIONS[int(self.dram_part[i])].name
        return self.base.offchip_level.generation

    # ---------------------------------------------------------------- the on-chip network
    @property
    def noc_level(self) -> int:
        """Column of the level whose traffic crosses the on-chip network: the outermost shared (single-instance)
        on-chip level, or main memory when every on-chip level is private to a core (TPU VMEM)."""
        shared = np.flatnonzero(~self.offchip & (self.instances == 1))
        return int(shared[-1]) if shared.size else self.offchip_index

    @property
    def noc_demand(self) -> np.ndarray:
        """[D] byte/s the on-chip network carries: the bandwidth of :attr:`noc_level`."""
        return self.bandwidth[:, self.noc_level]

    def noc(self, cores: np.ndarray | None = None, demand_bps: np.ndarray | None = None) -> NocGeometry:
        """The on-chip network of every design (``dse.hardware.noc.geometry``): over its cores (or ``cores``), at
        its clock, its links sized for :attr:`noc_demand` (or ``demand_bps``) unless the template gives
        ``compute.noc.link_bytes``."""
        clock = self.base.compute.clock_ghz * 1e9 * self.clock_scale
        return geometry(self.base, self.cores if cores is None else cores,
                        self.noc_demand if demand_bps is None else demand_bps, clock, self.noc_link_bytes)

    @property
    def delivered_bandwidth(self) -> np.ndarray:
        """[D, L] byte/s each level delivers to the cores (before its ``efficiency``): its own bandwidth, except that
        the level the on-chip network carries gets through no faster than the network delivers under its traffic,
        ``min(BW, delivered)`` (``dse.hardware.noc``: local traffic N W f per network over N cores; uniform mesh
        4 min(x, y) W f, torus 8 min(x, y) W f, ring 8 W f, crossbar N W f), and a level whose bytes cross
        die-to-die links no faster than the links carry them (:attr:`d2d_ceiling`). Links sized by default
        (``link_bytes`` unset) carry the level in full, so only a given link width can bind; a single core has no
        network."""
        out = np.minimum(self.bandwidth, self.d2d_ceiling) if self.die_kinds else self.bandwidth
        given = ~np.isnan(self.noc_link_bytes)
        if not given.any():
            return out
        j = self.noc_level
        out = out.copy()
        out[:, j] = np.where(given & (self.cores > 1), np.minimum(out[:, j], self.noc().delivered_bps), out[:, j])
        return out

    @property
    def level_limit(self) -> np.ndarray:
        """[D, L] int8, what sets each level's :attr:`delivered_bandwidth`: 0 the level itself, 1 the on-chip network
        that carries it, 2 the die-to-die links its bytes cross (the tighter of the two; :data:`LEVEL_LIMITS`)."""
        own, got = self.bandwidth, self.delivered_bandwidth
        code = np.zeros(own.shape, dtype=np.int8)
        lower = got < own * (1.0 - 1e-12)
        code[lower] = 1
        if self.die_kinds:
            code[lower & (self.d2d_ceiling <= got * (1.0 + 1e-12))] = 2
        return code

    def d2d_crossings(self) -> list[list[tuple[int, np.ndarray]]]:
        """For each memory level, the die kinds whose die-to-die links its bytes cross and the link traversals [D]
        per byte of the level over each. A level's ``k_j`` copies (:attr:`level_instances`) are interleaved over the
        dies that hold it, each copy over a group of ``m = n / k_j`` dies, so with the compute on kind c (``count``
        n_c) and level j on kind g::

            g == c:  [(c, t_c(n_c / k_j))]             (none for a per-die or per-core level: m <= 1)
            g != c:  [(c, 1), (g, t_g(n_g / k_j))]     (every byte leaves g for the compute die once; the bytes on
                                                         another g die cross g's links too)

        with ``t(m)`` the traversals of uniform traffic over m dies joined in the kind's ``d2d_topology``
        (:func:`dse.hardware.topologies.traversals`: links / uniform throughput, the remote share (1 - 1/m) times
        the mean hops on a ring; 1/2 for two dies). Empty lists for a single die. The parts each kind holds:
        ``Hardware.die_holdings`` (main memory sits with the die holding ``dram_phy``)."""
        if not self.die_kinds:
            return [[] for _ in self.base.memory]
        holds = self.base.die_holdings
        c = self.base.matrix_die
        n = self.die_counts
        topo = [g.d2d_topology for g in self.base.die_groups]
        out = []
        for j, m in enumerate(self.base.memory):
            part = m.name if m.spec.area == "sram" else "dram_phy"
            g = next((i for i, h in enumerate(holds) if part in h), c)
            group = np.maximum(n[:, g] / self.level_instances[:, j], 1.0)
            t = traversals(topo[g], np.round(group))
            out.append([(c, t)] if g == c else [(c, np.ones(self.n)), (g, t)])
        return out

    @property
    def d2d_ceiling(self) -> np.ndarray:
        """[D, L] byte/s a level's traffic can reach the compute through the package's die-to-die links: each of a
        kind's n dies has ``d2d_bandwidth_tbps`` B both directions together (:attr:`die_d2d_bps`, searchable as
        ``package.dies.<name>.d2d_bandwidth_tbps``), B / 2 each way, and each byte of the level makes t traversals
        of them (:meth:`d2d_crossings`; interleaving spreads the bytes evenly over the links), so the level delivers
        at most ``min over kinds of n B / (2 t)``: two dies, t = 1/2, 2 B; a 2 x 2 mesh, t = 1, 2 B over twice the
        dies. A kind with no bandwidth given (0) and t = 0 bind nothing (inf). Single die: inf."""
        out = np.full((self.n, len(self.base.memory)), np.inf)
        each_way = self.die_counts * self.die_d2d_bps / 2.0  # [D, G] byte/s into (and out of) a kind's dies
        for j, path in enumerate(self.d2d_crossings()):
            for g, f in path:  # f: link traversals per byte
                bound = (f > 0) & (each_way[:, g] > 0)
                cap = np.divide(each_way[:, g], f, out=np.full(self.n, np.inf), where=bound)
                out[:, j] = np.minimum(out[:, j], cap)
        return out

    def core_quantum(self) -> np.ndarray:
        """[D] the step of a buildable core count, the least common multiple of what the template's rules ask
        (``Hardware`` refused such designs after a search had scored them): ``compute.spare_granule_cores`` on a design
        with spare cores (the die fuses off whole groups: a b200 study's best design of 65 + 12 cores was refused) and
        the copies of every on-chip level held per group of cores (``instances`` must divide the cores: MI300X's 8
        L2s, Gaudi 3's 4)."""
        g = int(self.base.compute.spare_granule_cores)
        spare = self.spare_cores if self.spare_cores is not None else np.full(self.n, float(self.base.compute.spare_cores))
        per_core = self.per_core if self.per_core is not None else np.zeros(len(self.instances), dtype=bool)
        grouped = self.instances[(self.instances > 1) & ~per_core & ~self.offchip].astype(int)
        levels = int(np.lcm.reduce(grouped)) if grouped.size else 1
        return np.where((np.round(spare) > 0) & (g > 1), float(np.lcm(g, levels)), float(levels))

    def fewest_cores(self, q: np.ndarray | None = None) -> np.ndarray:
        """[D] the smallest buildable core count: one step ``q`` (:meth:`core_quantum`) above
        ``compute.reserved_cores`` (the cores a runtime holds; a design needs at least one more to compute), and at
        least 2 where a memory level is one copy per core: one core's copy is written as ``instances: 1``, which a
        template reads as a level all cores share (its residency and energy), so the written design would not be the
        one the study timed."""
        q = self.core_quantum() if q is None else q
        least = self.base.compute.reserved_cores + 1
        if self.per_core is not None and self.per_core.any():
            least = max(least, 2)
        return np.ceil(least / q) * q

    def with_cores(self, cores: np.ndarray) -> DesignBatch:
        """The designs with ``cores`` [D], rounded to the nearest whole number of :meth:`core_quantum` (at least
        :meth:`fewest_cores`).
        Each core brings its MAC arrays, its vector lanes and its copy of every per-core memory level, so the matrix
        and vector peaks and the per-core levels' capacity and bandwidth scale by ``new cores / old cores`` (peak =
        cores x rows x cols x arrays_per_core x 2 x clock)."""
        q = self.core_quantum()
        new = np.maximum(np.round(np.asarray(cores, dtype=float) / q) * q, self.fewest_cores(q))
        r = new / self.cores
        out = replace(self, cores=new, matrix_peak=self.matrix_peak * r[:, None], vector_peak=self.vector_peak * r[:, None])
        if self.per_core is not None and self.per_core.any():
            cap, bw = out.capacity.copy(), out.bandwidth.copy()
            cap[:, self.per_core] *= r[:, None]
            bw[:, self.per_core] *= r[:, None]
            out = replace(out, capacity=cap, bandwidth=bw)
        return out

    def with_clock(self, scale: np.ndarray) -> DesignBatch:
        """The designs at ``scale`` [D] x the template's clock. The peaks are per clock (cores x rows x cols x 2 x
        clock) and so is every on-chip level's bandwidth: an SRAM macro delivers its port width once per cycle of
        the clock it runs on, the core's (a template's ``bandwidth_tbps`` is bytes per clock x its ``clock_ghz``,
        e.g. npu-7nm's 256 B/clk/core local SRAM); off-chip DRAM keeps its own interface clock."""
        new = np.asarray(scale, dtype=float)
        ratio = (new / self.clock_scale)[:, None]
        bw = self.bandwidth.copy()
        bw[:, ~self.offchip] *= ratio
        return replace(self, clock_scale=new, matrix_peak=self.matrix_peak * ratio,
                       vector_peak=self.vector_peak * ratio, bandwidth=bw)

    def with_array(self, rows: np.ndarray | None = None, cols: np.ndarray | None = None) -> DesignBatch:
        """The designs with MAC arrays of ``rows`` x ``cols`` (integers >= 1); the matrix peak follows the MAC count
        (``x new rows*cols / old rows*cols``)."""
        r = self.array_rows if rows is None else np.maximum(np.round(np.asarray(rows, dtype=float)), 1.0)
        c = self.array_cols if cols is None else np.maximum(np.round(np.asarray(cols, dtype=float)), 1.0)
        k = (r * c) / (self.array_rows * self.array_cols)
        return replace(self, array_rows=r, array_cols=c, matrix_peak=self.matrix_peak * k[:, None])

    def with_knobs(
        self,
        peak_flops: np.ndarray | None = None,
        dram_bandwidth: np.ndarray | None = None,
        sram_bytes: np.ndarray | None = None,
    ) -> DesignBatch:
        """Realize the three search targets, each ``[D]`` (SI units), as the nearest buildable design.

        The rule (the one place a target becomes hardware; every command goes through it):

        * ``peak_flops`` (matrix peak at the reference dtype): ``cores = max(1, round(P / P_core))`` at the design's
          MAC array and clock (:attr:`core_peak_flops`), so the built peak is ``cores x rows x cols x
          arrays_per_core x 2 x clock``; vector lanes and per-core levels come with the cores (:meth:`with_cores`).
        * ``dram_bandwidth`` (main memory): whole stacks, ``stacks = max(1, ceil(BW / stack BW))`` of the level's
          ``stack_bandwidth_gbps``; bandwidth = stacks x stack BW and capacity = stacks x stack capacity
          (:func:`stack_capacity_bytes`). A level without ``stack_bandwidth_gbps`` takes the bandwidth as given.
        * ``sram_bytes`` (outermost on-chip level): whole SRAM macros per instance, ``round(S / (instances x
          SRAM_MACRO_BYTES))`` of them, at least one.
        """
        out = self
        if peak_flops is not None:
            out = out.with_cores(np.asarray(peak_flops, float) / out.core_peak_flops)
        if dram_bandwidth is not None:
            j = self.offchip_index
            bw = out.bandwidth.copy()
            per = out.main_stack_bps()
            target = np.asarray(dram_bandwidth, float)
            if per is None:
                bw[:, j] = target
                out = replace(out, bandwidth=bw)
            else:
                stacks = np.maximum(np.ceil(target / per - 1e-9), 1.0)
                bw[:, j] = stacks * per
                cap = out.capacity.copy()
                cap[:, j] = stacks * out.main_stack_bytes()
                out = replace(out, bandwidth=bw, capacity=cap)
        if sram_bytes is not None:
            j = self.sram_level
            cap = out.capacity.copy()
            inst = out.level_instances[:, j]
            macros = np.maximum(np.round(np.asarray(sram_bytes, float) / (inst * SRAM_MACRO_BYTES)), 1.0)
            cap[:, j] = macros * inst * SRAM_MACRO_BYTES
            out = replace(out, capacity=cap)
        return out

    def with_field(self, field: str, values: np.ndarray) -> DesignBatch:
        """Set one hardware field per design (``[D]`` values in the field's config unit).

        Fields: ``compute.cores``, ``compute.clock_ghz`` and ``compute.matrix.array_rows``/``array_cols`` (the
        build: peaks follow, :meth:`with_cores`, :meth:`with_array`), ``compute.register_kib_per_core``,
        ``compute.launch_overhead_us``, ``compute.matrix.efficiency``, ``compute.vector.efficiency``,
        ``network.links``, and per memory level ``memory.<name>.capacity_mib``, ``.bandwidth_tbps`` (the main
        memory's in whole stacks, as :meth:`with_knobs`), ``.efficiency``; the main memory's DRAM part
        ``memory.<main>.generation`` by name or code (:meth:`with_part`).
        """
        if field == f"memory.{self.offchip_name}.generation":
            return self.with_part(fields.part_codes(values))
        v = np.asarray(values, dtype=float)
        c = self.base.compute
        if field == "compute.cores":
            return self.with_cores(v)
        if field == "compute.matrix.array_rows":
            return self.with_array(rows=v)
        if field == "compute.matrix.array_cols":
            return self.with_array(cols=v)
        if field in fields.COMPUTE:  # one array, config unit -> SI (dse.hardware.fields)
            f = fields.COMPUTE[field]
            out = replace(self, **{f.attr: v * f.si})
            return out.with_cores(out.cores) if field == "compute.spare_cores" else out  # whole groups again
        if field == "network.links":
            out = replace(self, links=v.copy())
            if out.n_net and self.net_chip_linked.any():
                nl = out.net_links.copy()
                nl[:, self.net_chip_linked] = v[:, None]
                out = replace(out, net_links=nl)
            return out
        if field == "network.link_bandwidth_gbps" and self.n_net and self.net_chip_linked.any():
            bw = self.net_link_bw.copy()
            bw[:, self.net_chip_linked] = v[:, None] * 1e9
            return replace(self, net_link_bw=bw)
        parts0 = field.split(".")
        kinds = self.die_kinds
        if len(parts0) == 4 and parts0[:2] == ["package", "dies"] and parts0[3] == "count" and parts0[2] in kinds:
            g = kinds.index(parts0[2])
            counts = self.die_counts.copy()
            counts[:, g] = np.maximum(np.round(v), 1.0)
            out = replace(self, die_counts=counts)
            spare = (self.spare_cores if self.spare_cores is not None
                     else np.full(self.n, float(self.base.compute.spare_cores)))
            if g == self.base.matrix_die and spare.any():  # the same spares spread whole over the dies
                step = self.base.spare_step(counts[:, g]).astype(float)
                out = replace(out, spare_cores=np.where(spare > 0, np.maximum(np.round(spare / step), 1.0) * step, 0.0))
                return out.with_cores(out.cores)  # whole groups again
            return out
        if len(parts0) == 4 and parts0[:2] == ["package", "dies"] and parts0[3] == "d2d_bandwidth_tbps" \
                and parts0[2] in kinds:
            bw = self.die_d2d_bps.copy()
            bw[:, kinds.index(parts0[2])] = np.maximum(v, 0.0) * TERA
            return replace(self, die_d2d_bps=bw)
        if len(parts0) == 3 and parts0[0] == "system" and self.system is not None:
            names = [lv.name for lv in self.system.network]
            if parts0[1] in names and parts0[2] in fields.NETWORK:
                j = names.index(parts0[1])
                attr, unit = fields.NETWORK[parts0[2]].attr, fields.NETWORK[parts0[2]].si
                arr = getattr(self, attr).copy()
                arr[:, j] = v * unit
                out = replace(self, **{attr: arr})
                if attr == "net_links" and self.net_chip_linked[j]:
                    out = replace(out, links=v.copy())  # the level uses the chip's SerDes (area)
                return out
        if field == "compute.clock_ghz":  # peaks and on-chip bandwidths are per clock (with_clock)
            return self.with_clock(v / c.clock_ghz)
        parts = field.split(".")
        if len(parts) == 3 and parts[0] == "memory" and parts[1] in self.level_names:
            j = self.level_names.index(parts[1])
            f = fields.LEVEL.get(parts[2])
            if f is not None:
                if j == self.offchip_index and f.attr == "bandwidth":  # bought as whole stacks
                    return self.with_knobs(dram_bandwidth=v * f.si)
                arr = getattr(self, f.attr).copy()
                arr[:, j] = v * f.si
                return replace(self, **{f.attr: arr})
        raise ValueError(f"cannot search {field!r}; accepted: {', '.join(self.searchable_fields())}")

    def searchable_fields(self) -> list[str]:
        """The fields :meth:`with_field` sets on this template, from the tables of :mod:`dse.hardware.fields`."""
        out = ["compute.cores", "compute.clock_ghz", *fields.COMPUTE, "network.links"]
        out += [f"package.dies.{name}.{key}" for name in self.die_kinds for key in ("count", "d2d_bandwidth_tbps")]
        if stack_bandwidth(self.base) is not None and dram_parts.searchable_names(self.base.offchip_level.kind):
            out.append(f"memory.{self.offchip_name}.generation")
        for name in self.level_names:
            out += [f.path.format(level=name) for f in fields.LEVEL_FIELDS]
        if self.system is not None:
            if self.net_chip_linked.any():
                out.append("network.link_bandwidth_gbps")
            for lv in self.system.network:
                out += [f.path.format(level=lv.name) for f in fields.NETWORK_FIELDS]
        return out

    def take(self, idx: np.ndarray | list[int] | slice) -> DesignBatch:
        """A sub-batch (rows ``idx``)."""
        fields = {}
        for name in self.__dataclass_fields__:
            val = getattr(self, name)
            fields[name] = val if name in self.STATIC else val[idx]
        return DesignBatch(**fields)

    def build_text(self, i: int) -> str:
        """How design ``i`` is built, e.g. ``48 cores x 64x64 MACs x 2 FLOP x 1.4 GHz = 550.5 TFLOP/s bf16; 8 x
        409.6 GB/s hbm stacks of hbm2e = 3.28 TB/s, 128 GB`` (the DRAM part where the level names one or a study
        chose one)."""
        b = self.base
        clock = b.compute.clock_ghz * float(self.clock_scale[i])
        apc = float(self.core_peak_flops[i]) / (2.0 * clock * 1e9 * float(self.array_rows[i] * self.array_cols[i]))
        arrays = f" x {apc:.4g} arrays" if abs(apc - 1.0) > 1e-3 else ""
        text = (f"{self.cores[i]:.0f} cores x {self.array_rows[i]:.0f}x{self.array_cols[i]:.0f} MACs{arrays} x 2 FLOP x "
                f"{clock:.4g} GHz = {self.peak_flops[i] / TERA:.4g} TFLOP/s {b.reference_dtype}")
        spare = 0.0 if self.spare_cores is None else float(self.spare_cores[i])
        if spare:  # cores on the die for yield, in no peak
            text += f" (+{spare:.0f} spare cores fused off for yield)"
        per = self.main_stack_bps()
        if per is not None:
            tbps = float(fields.knob_values(self.take([i]))["dram_bandwidth_tbps"][0])
            unit = "channels" if b.offchip_level.spec.area == "ddr_phy" else "stacks"
            part = f" of {self.part_name(i)}" if self.part_name(i) else ""  # the part named or chosen
            text += (f"; {self.dram_stacks[i]:.0f} x {per[i] / 1e9:.4g} GB/s {self.offchip_name} {unit}{part} = "
                     f"{tbps:.4g} TB/s, {self.offchip_capacity[i] / 1e9:.4g} GB")
        return text

    def to_system(self, i: int, chip: str, note: str = "") -> System | None:
        """The system design ``i`` runs on (None without one), on chip template ``chip`` (a name or YAML path), with
        the network fields the design changed written into its levels: links per chip, GB/s per link (in the level's
        own ``bandwidth_direction``) and efficiency. Links a level takes from the chip (``network.links``) are the
        chip template's (:meth:`to_hardware`)."""
        if self.system is None:
            return None
        links, bw, eff, linked = self.system.level_arrays(self.base)
        data = self.system.model_dump(mode="python", exclude_none=True)
        data["chip"] = chip
        changed = []
        for j, (lv, level) in enumerate(zip(self.system.network, data["network"], strict=True)):
            if not linked[j] and float(self.net_links[i, j]) != links[j]:
                level["links_per_chip"] = int(round(float(self.net_links[i, j])))
                changed.append(f"{lv.name} links {level['links_per_chip']}")
            if lv.link_bandwidth_gbps is not None and float(self.net_link_bw[i, j]) != bw[j]:
                per_dir = float(self.net_link_bw[i, j]) / 1e9
                level["link_bandwidth_gbps"] = _sig(per_dir * (2.0 if lv.bandwidth_direction == "bidirectional" else 1.0))
                changed.append(f"{lv.name} {level['link_bandwidth_gbps']:g} GB/s per link")
            if float(self.net_eff[i, j]) != eff[j]:
                level["efficiency"] = _sig(float(self.net_eff[i, j]))
                changed.append(f"{lv.name} efficiency {level['efficiency']:g}")
        if changed:
            data["source"] = f"{data.get('source', '')}; {', '.join(changed)} by dse ({note or 'derived'})".lstrip("; ")
        return System.model_validate(data)

    def to_hardware(self, i: int, name: str, note: str = "", prefer: str | None = None) -> Hardware:
        """Design ``i`` as a hardware template (loadable by ``dse.hardware``): the built cores, array, clock, levels
        and stacks, with the peaks they give and source text saying what ``note`` (the study) changed. A design
        beyond a limit is one :class:`DseError`, about field ``prefer`` where that one is among the bad ones."""
        base = self.base
        data = base.model_dump(mode="python", exclude_none=True)
        data["name"] = name
        data["description"] = note or f"derived from {base.name}"
        data["compute"]["matrix"]["peak_tflops"] = {
            k: _sig(float(self.matrix_peak[i, DTYPES.index(k)]) / TERA) for k in base.compute.matrix.peak_tflops}
        build = self.build_text(i)
        data["compute"]["matrix"]["source"] += f"; built by dse ({note or 'derived'}): {build}"
        comp = data["compute"]
        comp["cores"] = int(round(float(self.cores[i])))
        if comp["cores"] != base.compute.cores and comp.get("noc", {}).get("grid") is not None:
            x, y = noc_grid(np.array([float(comp["cores"])]), base.compute.noc, base.compute.cores)
            comp["noc"]["grid"] = [int(x[0]), int(y[0])]  # the near-square grid the model priced and timed
        clock_scale = float(self.clock_scale[i])
        comp["clock_ghz"] = _sig(base.compute.clock_ghz * clock_scale)
        if clock_scale != 1.0:  # the clock its energies hold at stays the template's (dse.hardware.energy.dvfs_factor)
            comp["energy_clock_ghz"] = base.compute.energy_clock_ghz or base.compute.clock_ghz
        comp["vector"]["peak_tflops"] = {k: _sig(float(self.vector_peak[i, DTYPES.index(k)]) / TERA)
                                         for k in base.compute.vector.peak_tflops}
        if comp["cores"] != base.compute.cores or clock_scale != 1.0:
            comp["vector"]["source"] += (f"; built by dse ({note or 'derived'}): the template's lanes per core on "
                                         f"{comp['cores']} cores at {comp['clock_ghz']:g} GHz")
        for f in fields.COMPUTE_FIELDS:  # compute.<...>.<key> <- attr / si (NaN: left unset, e.g. an auto link)
            *path, last = f.path.split(".")
            node = data
            for part in path:
                node = node.setdefault(part, {})
            val = float(getattr(self, f.attr)[i]) / f.si
            if not np.isnan(val):
                node[last] = _written(val, f.write)
        rescale_dtype_efficiency(comp["matrix"], base.compute.matrix)
        _rescale_array(comp["matrix"], base.compute.matrix)
        if "network" in data:
            data["network"]["links"] = int(round(float(self.links[i])))
            if self.n_net and self.net_chip_linked.any():
                j = int(np.flatnonzero(self.net_chip_linked)[0])
                data["network"]["link_bandwidth_gbps"] = round(float(self.net_link_bw[i, j]) / 1e9, 6)
        for g, die in enumerate(data.get("package", {}).get("dies") or []):
            count = int(round(float(self.die_counts[i, g])))
            if count != die["count"]:
                die["source"] += f"; {die['count']} -> {count} dies by dse ({note or 'derived'})"
                die["count"] = count
            tbps = round(float(self.die_d2d_bps[i, g]) / TERA, 6)
            if tbps != die.get("d2d_bandwidth_tbps", 0.0):
                die["source"] += f"; d2d {die.get('d2d_bandwidth_tbps', 0.0)} -> {tbps} TB/s by dse ({note or 'derived'})"
                die["d2d_bandwidth_tbps"] = tbps
        for j, level in enumerate(data["memory"]):
            if self.per_core is not None and self.per_core[j]:
                level["instances"] = comp["cores"]
            for key in ("capacity_mib", "capacity_gib", "capacity_gb", "bandwidth_tbps", "bandwidth_gbps"):
                level.pop(key, None)
            for f in fields.LEVEL_FIELDS:
                level[fields.key(f)] = _written(float(getattr(self, f.attr)[i, j]) / f.si, f.write)
            if level.get("write_bandwidth_tbps") is not None:  # resized with the level: the same ratio
                level["write_bandwidth_tbps"] = _written(level["bandwidth_tbps"] / base.memory[j].write_ratio, "sig")
            orig = base.memory[j]
            if j == self.offchip_index and self.chosen_part[i]:  # the part the study chose, with its stack figures
                g = dram_parts.GENERATIONS[int(self.dram_part[i])]
                level.update(generation=g.name, stack_bandwidth_gbps=g.stack.stack_gbps,
                             stack_capacity_gb=g.stack.stack_gb)
                level["source"] += f"; part {g.name} chosen by dse ({note or 'derived'}): {g.stack.source}"
            if (
                abs(level["capacity_mib"] * 1024**2 - orig.capacity_bytes) > 1
                or abs(level["bandwidth_tbps"] * TERA - orig.bandwidth_bps) > 1e6
            ):
                level["source"] += f"; resized by dse ({note or 'derived'})"
        try:
            return Hardware.model_validate(data)
        except ValidationError as exc:  # a design beyond a physical limit (dse.limits): the search space reaches it
            raise from_validation_error(exc, file=f"design {name}", model=Hardware, prefer=prefer) from None
