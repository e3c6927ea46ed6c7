"""DesignBatch: many candidate designs as numpy arrays, one entry per design point.

All designs in a batch share the base template's structure (the same memory levels in the same
order) and differ in their numbers. The predictor, the area model and the score read only these
arrays, so they evaluate thousands of designs without a Python loop over designs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from dse.hardware import fields
from dse.hardware.schema import ComputeUnit, Hardware
from dse.hardware.system import System
from dse.units import DTYPES, KIB, TERA, fallback_dtype


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


def rescale_dtype_efficiency(matrix: dict, base: ComputeUnit) -> None:
    """In a matrix unit's data (``model_dump``) whose ``efficiency`` was rewritten, keep each
    ``dtype_efficiency`` at its ratio to ``efficiency`` (as the predictor reads it), at most 1."""
    if base.dtype_efficiency:
        k = float(matrix["efficiency"]) / base.efficiency
        matrix["dtype_efficiency"] = {dt: round(min(1.0, v * k), 4) for dt, v in base.dtype_efficiency.items()}


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
    instances: np.ndarray  # [L] private copies per level
    reuse_group: np.ndarray  # [L] private copies pooled for reuse by multicast (1: none)
    offchip: np.ndarray  # [L] bool
    # Multi-chip system (``dse.hardware.system``); N = 0 network levels for a single chip.
    net_links: np.ndarray | None = None  # [D, N] links per chip per network level
    net_link_bw: np.ndarray | None = None  # [D, N] byte/s per link per direction
    net_eff: np.ndarray | None = None  # [D, N] achievable fraction
    net_chip_linked: np.ndarray | None = None  # [N] bool: the level uses the chip's own links (``links``)
    system: System | None = None

    STATIC = ("base", "instances", "reuse_group", "offchip", "net_chip_linked", "system")

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
            instances=np.asarray([m.instances for m in mem], dtype=float),
            reuse_group=np.asarray([min(m.reuse_group, m.instances) for m in mem], dtype=float),
            offchip=np.asarray([m.off_chip for m in mem]),
            net_links=np.zeros((n, 0)), net_link_bw=np.zeros((n, 0)), net_eff=np.zeros((n, 0)),
            net_chip_linked=np.zeros(0, dtype=bool),
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

    # ---------------------------------------------------------------- knobs
    def with_knobs(
        self,
        peak_flops: np.ndarray | None = None,
        dram_bandwidth: np.ndarray | None = None,
        sram_bytes: np.ndarray | None = None,
    ) -> DesignBatch:
        """Set the searched knobs, each ``[D]`` (SI units).

        * ``peak_flops``: matrix peak at the reference dtype; every matrix mode scales by the same
          factor (more or faster MAC arrays), vector units are unchanged.
        * ``dram_bandwidth``: main-memory (:attr:`offchip_index`) byte/s.
        * ``sram_bytes``: total capacity of the outermost on-chip level.
        """
        out = self
        if peak_flops is not None:
            scale = np.asarray(peak_flops, float) / self.peak_flops
            out = replace(out, matrix_peak=self.matrix_peak * scale[:, None])
        if dram_bandwidth is not None:
            bw = out.bandwidth.copy()
            bw[:, self.offchip_index] = dram_bandwidth
            out = replace(out, bandwidth=bw)
        if sram_bytes is not None:
            cap = out.capacity.copy()
            cap[:, self.sram_level] = sram_bytes
            out = replace(out, capacity=cap)
        return out

    def with_field(self, field: str, values: np.ndarray) -> DesignBatch:
        """Set one hardware field per design (``[D]`` values in the field's config unit).

        Fields: ``compute.clock_ghz`` (scales every peak), ``compute.register_kib_per_core``,
        ``compute.launch_overhead_us``, ``compute.matrix.array_rows``/``array_cols``,
        ``compute.matrix.efficiency``, ``compute.vector.efficiency``, ``network.links``, and per memory
        level ``memory.<name>.capacity_mib``, ``.bandwidth_tbps``, ``.efficiency``.
        """
        v = np.asarray(values, dtype=float)
        c = self.base.compute
        if field in fields.COMPUTE:  # one array, config unit -> SI (dse.hardware.fields)
            f = fields.COMPUTE[field]
            return replace(self, **{f.attr: v * f.si})
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
        if field == "compute.clock_ghz":
            new_scale = v / c.clock_ghz
            ratio = (new_scale / self.clock_scale)[:, None]
            return replace(self, clock_scale=new_scale, matrix_peak=self.matrix_peak * ratio,
                           vector_peak=self.vector_peak * ratio)
        parts = field.split(".")
        if len(parts) == 3 and parts[0] == "memory" and parts[1] in self.level_names:
            j = self.level_names.index(parts[1])
            f = fields.LEVEL.get(parts[2])
            if f is not None:
                arr = getattr(self, f.attr).copy()
                arr[:, j] = v * f.si
                return replace(self, **{f.attr: arr})
        raise ValueError(f"cannot search {field!r}; accepted: {', '.join(self.searchable_fields())}")

    def searchable_fields(self) -> list[str]:
        """The fields :meth:`with_field` sets on this template, from the tables of :mod:`dse.hardware.fields`."""
        out = ["compute.clock_ghz", *fields.COMPUTE, "network.links"]
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

    def to_hardware(self, i: int, name: str, note: str = "") -> Hardware:
        """Design ``i`` as a hardware template (loadable by ``dse.hardware``)."""
        base = self.base
        data = base.model_dump(mode="python", exclude_none=True)
        scale = float(self.matrix_peak[i, self.ref_index] / DesignBatch.from_hardware(base).peak_flops[0])
        data["name"] = name
        data["description"] = note or f"derived from {base.name}"
        data["compute"]["matrix"]["peak_tflops"] = {
            k: round(v * scale, 6) for k, v in base.compute.matrix.peak_tflops.items()
        }
        data["compute"]["matrix"]["source"] += f"; peaks scaled x{scale:.4g} by dse ({note or 'derived'})"
        comp = data["compute"]
        clock_scale = float(self.clock_scale[i])
        comp["clock_ghz"] = round(base.compute.clock_ghz * clock_scale, 6)
        comp["vector"]["peak_tflops"] = {k: round(v * clock_scale, 6) for k, v in base.compute.vector.peak_tflops.items()}
        for f in fields.COMPUTE_FIELDS:  # compute.<...>.<key> <- attr / si
            *path, last = f.path.split(".")
            node = data
            for part in path:
                node = node[part]
            node[last] = _written(float(getattr(self, f.attr)[i]) / f.si, f.write)
        rescale_dtype_efficiency(comp["matrix"], base.compute.matrix)
        if "network" in data:
            data["network"]["links"] = int(round(float(self.links[i])))
            if self.n_net and self.net_chip_linked.any():
                j = int(np.flatnonzero(self.net_chip_linked)[0])
                data["network"]["link_bandwidth_gbps"] = round(float(self.net_link_bw[i, j]) / 1e9, 6)
        for j, level in enumerate(data["memory"]):
            for key in ("capacity_mib", "capacity_gib", "capacity_gb", "bandwidth_tbps", "bandwidth_gbps"):
                level.pop(key, None)
            for f in fields.LEVEL_FIELDS:
                level[fields.key(f)] = _written(float(getattr(self, f.attr)[i, j]) / f.si, f.write)
            orig = base.memory[j]
            if (
                abs(level["capacity_mib"] * 1024**2 - orig.capacity_bytes) > 1
                or abs(level["bandwidth_tbps"] * TERA - orig.bandwidth_bps) > 1e6
            ):
                level["source"] += f"; resized by dse ({note or 'derived'})"
        return Hardware.model_validate(data)
