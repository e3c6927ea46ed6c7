"""DesignBatch: many candidate designs as numpy arrays, one entry per design point.

All designs in a batch share the base template's structure (the same memory levels in the same
order) and differ in their numbers. The predictor, the area model and the score read only these
arrays, so they evaluate thousands of designs without a Python loop over designs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from dse.hardware.schema import Hardware
from dse.units import DTYPES, KIB, TERA, fallback_dtype


def _peak_vector(peaks: dict[str, float]) -> np.ndarray:
    """Per-dtype peak in FLOP/s in ``DTYPES`` order; a missing mode takes the next wider native one."""
    out = np.full(len(DTYPES), np.nan)
    for i, dt in enumerate(DTYPES):
        mode = fallback_dtype(dt, peaks)
        if mode is not None:
            out[i] = peaks[mode] * TERA
    return out


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
    instances: np.ndarray  # [L] private copies per level
    offchip: np.ndarray  # [L] bool

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
            matrix_peak=np.tile(_peak_vector(c.matrix.peak_tflops), (n, 1)),
            vector_peak=np.tile(_peak_vector(c.vector.peak_tflops), (n, 1)),
            matrix_eff=rep(c.matrix.efficiency),
            vector_eff=rep(c.vector.efficiency),
            array_rows=rep(c.matrix.array_rows),
            array_cols=rep(c.matrix.array_cols),
            reg_bytes=rep(c.register_kib_per_core * KIB),
            capacity=rep_levels([m.capacity_bytes for m in mem]),
            bandwidth=rep_levels([m.bandwidth_bps for m in mem]),
            bw_eff=rep_levels([m.efficiency for m in mem]),
            overhead_s=rep(c.launch_overhead_us * 1e-6),
            instances=np.asarray([m.instances for m in mem], dtype=float),
            offchip=np.asarray([m.kind == "dram" for m in mem]),
        )

    @classmethod
    def stack(cls, designs: list[DesignBatch]) -> DesignBatch:
        """Concatenate batches that share one base template structure."""
        first = designs[0]
        fields = {}
        for name in first.__dataclass_fields__:
            val = getattr(first, name)
            if name in ("base", "instances", "offchip"):
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
    def dram_bandwidth(self) -> np.ndarray:
        """[D] outermost-level bandwidth, byte/s."""
        return self.bandwidth[:, -1]

    @property
    def ridge(self) -> np.ndarray:
        """[D] compute:bandwidth ratio = peak FLOP/s / outermost byte/s, FLOP/byte."""
        return self.peak_flops / self.dram_bandwidth

    @property
    def sram_level(self) -> int:
        """Index of the outermost on-chip level (the one a search's ``sram_mib`` knob sizes)."""
        onchip = np.flatnonzero(~self.offchip)
        if onchip.size == 0:
            raise ValueError("template has no on-chip (sram) memory level")
        return int(onchip[-1])

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
        * ``dram_bandwidth``: outermost level byte/s.
        * ``sram_bytes``: total capacity of the outermost on-chip level.
        """
        out = self
        if peak_flops is not None:
            scale = np.asarray(peak_flops, float) / self.peak_flops
            out = replace(out, matrix_peak=self.matrix_peak * scale[:, None])
        if dram_bandwidth is not None:
            bw = out.bandwidth.copy()
            bw[:, -1] = dram_bandwidth
            out = replace(out, bandwidth=bw)
        if sram_bytes is not None:
            cap = out.capacity.copy()
            cap[:, self.sram_level] = sram_bytes
            out = replace(out, capacity=cap)
        return out

    def take(self, idx: np.ndarray | list[int] | slice) -> DesignBatch:
        """A sub-batch (rows ``idx``)."""
        fields = {}
        for name in self.__dataclass_fields__:
            val = getattr(self, name)
            fields[name] = val if name in ("base", "instances", "offchip") else val[idx]
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
        for j, level in enumerate(data["memory"]):
            for key in ("capacity_mib", "capacity_gib", "capacity_gb", "bandwidth_tbps", "bandwidth_gbps"):
                level.pop(key, None)
            level["capacity_mib"] = round(float(self.capacity[i, j]) / 1024**2, 6)
            level["bandwidth_tbps"] = round(float(self.bandwidth[i, j]) / TERA, 6)
            orig = base.memory[j]
            if (
                abs(level["capacity_mib"] * 1024**2 - orig.capacity_bytes) > 1
                or abs(level["bandwidth_tbps"] * TERA - orig.bandwidth_bps) > 1e6
            ):
                level["source"] += f"; resized by dse ({note or 'derived'})"
        return Hardware.model_validate(data)
