"""The searchable hardware fields and the three search knobs: one table each, read by the config schema,
:class:`~dse.hardware.designs.DesignBatch` (``with_knobs``/``with_field``/``searchable_fields``/
``to_hardware``) and the search space (``dse.search.space``).

A field is named by its config path and carries its unit in the name (``capacity_mib``); ``si`` turns
the config unit into SI (MiB -> bytes: 2^20), ``attr`` is the DesignBatch array it sets, ``write`` how
``to_hardware`` writes it back (``sig``: 9 significant digits, ``int``: rounded, ``float``: as is).
Adding a searchable field of an existing kind is one row here (plus the DesignBatch array it sets).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dse.units import KIB, MIB, TERA


@dataclass(frozen=True)
class Knob:
    """A shorthand search knob: ``name`` in the config (unit in the name), its unit, the factor to SI, the
    :meth:`DesignBatch.with_knobs` keyword (SI) it sets and the quantity a report labels it with."""

    name: str
    unit: str
    si: float
    batch_arg: str
    description: str
    quantity: str = ""

    @property
    def label(self) -> str:
        """Axis and table label with the unit, e.g. ``DRAM bandwidth (TB/s)``."""
        return f"{self.quantity} ({self.unit})"


#: the three knobs of ``search.space`` / compare candidates / sweeps, in grid order (peak, bandwidth, SRAM)
KNOB_TABLE: tuple[Knob, ...] = (
    Knob("peak_tflops", "TFLOP/s", TERA, "peak_flops", "Matrix peak at the reference dtype, TFLOP/s", "peak compute"),
    Knob("dram_bandwidth_tbps", "TB/s", TERA, "dram_bandwidth", "Main (off-chip) memory bandwidth, TB/s",
         "DRAM bandwidth"),
    Knob("sram_mib", "MiB", MIB, "sram_bytes", "Capacity of the outermost on-chip level, MiB", "on-chip SRAM"),
)
KNOB = {k.name: k for k in KNOB_TABLE}
KNOBS: tuple[str, ...] = tuple(KNOB)
#: knob name -> factor from the config unit to SI
KNOB_SI: dict[str, float] = {k.name: k.si for k in KNOB_TABLE}


def bandwidth_label(hw: Any) -> str:
    """Table label of the main memory's bandwidth on template ``hw``: the ``dram_bandwidth_tbps`` knob's label, or on
    a chip without an off-chip level (its main memory is its outermost SRAM, ``Hardware.offchip_index``) that
    level's, e.g. ``main memory 'global' (sram) bandwidth (TB/s)``."""
    if any(m.off_chip for m in hw.memory):
        return KNOB["dram_bandwidth_tbps"].label
    return f"main memory '{hw.offchip_level.name}' ({hw.offchip_level.kind}) bandwidth (TB/s)"


def knob_args(cols: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Config-unit knob columns -> :meth:`DesignBatch.with_knobs` keywords in SI (the one conversion in,
    e.g. ``dram_bandwidth_tbps`` x 1e12 -> ``dram_bandwidth`` byte/s); other columns are ignored."""
    return {k.batch_arg: np.asarray(cols[k.name]).astype(float) * k.si for k in KNOB_TABLE if k.name in cols}


def knob_values(batch: Any) -> dict[str, np.ndarray]:
    """[D] knob values of a DesignBatch in config units (the one conversion out, e.g. ``dram_bandwidth``
    byte/s / 1e12 -> ``dram_bandwidth_tbps``)."""
    return {k.name: getattr(batch, k.batch_arg) / k.si for k in KNOB_TABLE}


def built_values(batch: Any) -> dict[str, np.ndarray]:
    """[D] what each design of a DesignBatch is built from and gives, for every table beside the requested
    targets: ``cores``, ``array_rows``, ``array_cols``, ``clock_ghz``, the three knobs as built
    (``peak_tflops_built``, ``dram_bandwidth_tbps_built``, ``sram_mib_built``), ``dram_stacks`` and
    ``dram_capacity_gb``."""
    built = {f"{k}_built": v for k, v in knob_values(batch).items()}
    return {"cores": batch.cores, "array_rows": batch.array_rows, "array_cols": batch.array_cols,
            "clock_ghz": batch.base.compute.clock_ghz * batch.clock_scale, **built,
            "dram_stacks": batch.dram_stacks, "dram_capacity_gb": batch.offchip_capacity / 1e9}


@dataclass(frozen=True)
class Field:
    """A searchable hardware field: ``path`` is its config path (``{level}`` stands for a memory or
    system-network level's name), ``attr`` the DesignBatch array, ``si`` the factor from config unit to SI."""

    path: str
    attr: str
    si: float
    unit: str
    write: Literal["sig", "int", "float"] = "float"
    zero_ok: bool = False  # 0 is a design (no spare cores); every other field is searched over values > 0


#: chip fields set per design by scaling one DesignBatch array (``compute.clock_ghz`` and
#: ``network.links`` are in :data:`SPECIAL`: they move several arrays)
COMPUTE_FIELDS: tuple[Field, ...] = (
    Field("compute.register_kib_per_core", "reg_bytes", KIB, "KiB", "sig"),
    Field("compute.launch_overhead_us", "overhead_s", 1e-6, "us", "sig"),
    Field("compute.matrix.array_rows", "array_rows", 1.0, "MACs", "int"),
    Field("compute.matrix.array_cols", "array_cols", 1.0, "MACs", "int"),
    Field("compute.matrix.efficiency", "matrix_eff", 1.0, "fraction"),
    Field("compute.vector.efficiency", "vector_eff", 1.0, "fraction"),
    Field("compute.noc.link_bytes", "noc_link_bytes", 1.0, "bytes", "sig"),
    Field("compute.spare_cores", "spare_cores", 1.0, "cores", "int", zero_ok=True),
)
#: per memory level (column ``j`` of a ``[D, L]`` array): ``memory.{level}.<key>``
LEVEL_FIELDS: tuple[Field, ...] = (
    Field("memory.{level}.capacity_mib", "capacity", MIB, "MiB", "sig"),
    Field("memory.{level}.bandwidth_tbps", "bandwidth", TERA, "TB/s", "sig"),
    Field("memory.{level}.efficiency", "bw_eff", 1.0, "fraction"),
)
#: per system network level (column ``j`` of a ``[D, N]`` array): ``system.{level}.<key>``
NETWORK_FIELDS: tuple[Field, ...] = (
    Field("system.{level}.links_per_chip", "net_links", 1.0, "links", "int"),
    Field("system.{level}.link_bandwidth_gbps", "net_link_bw", 1e9, "GB/s", "sig"),
    Field("system.{level}.efficiency", "net_eff", 1.0, "fraction"),
)
#: fields that move several arrays (handled by name in ``DesignBatch.with_field``)
SPECIAL: tuple[Field, ...] = (
    Field("compute.clock_ghz", "clock_scale", 1e9, "GHz", "sig"),
    Field("network.links", "links", 1.0, "links", "int"),
    Field("network.link_bandwidth_gbps", "net_link_bw", 1e9, "GB/s", "sig"),
)
COMPUTE = {f.path: f for f in COMPUTE_FIELDS}
#: the fields a peak target is built at (``DesignBatch.with_knobs``: whole cores of this array at this clock): a
#: parameter set applies these first, then the knobs, then every other field (which so overrides what a knob
#: derived, e.g. a searched ``memory.hbm.capacity_mib`` over the stacks' capacity)
BUILD_FIELDS: tuple[str, ...] = ("compute.cores", "compute.clock_ghz", "compute.matrix.array_rows",
                                 "compute.matrix.array_cols")


def whole_numbered(name: str) -> bool:
    """Whether a searched field counts things (cores, MACs of an array side, links, dies): its values are whole
    numbers (a choice of 0.5 array rows was built as 1 row and ran every trial)."""
    import re

    f = field_at(name)
    return (f is not None and f.write == "int") or name == "compute.cores" or bool(
        re.fullmatch(r"package\.dies\.[^.]+\.count", name))


def key(f: Field) -> str:
    """The last part of a per-level field's path (``capacity_mib``)."""
    return f.path.rsplit(".", 1)[1]


def field_at(path: str) -> Field | None:
    """The searchable field a config path names (``memory.hbm.bandwidth_tbps`` matches ``memory.{level}.
    bandwidth_tbps``), None for a path the tables do not hold (``compute.cores``: a count)."""
    import re

    for f in (*COMPUTE_FIELDS, *LEVEL_FIELDS, *NETWORK_FIELDS, *SPECIAL):
        if re.fullmatch(re.escape(f.path).replace(re.escape("{level}"), "[^.]+"), path):
            return f
    return None


def is_part_field(path: str) -> bool:
    """Whether a searched field names the main memory's DRAM part (``memory.<level>.generation``: categorical, by
    part name; ``DesignBatch.with_part``)."""
    parts = path.split(".")
    return len(parts) == 3 and parts[0] == "memory" and parts[2] == "generation"


def part_codes(values: Any) -> np.ndarray:
    """[D] part codes (``dse.hardware.dram_parts.code_of``) of searched ``values``: part names or codes."""
    from dse.hardware.dram_parts import code_of

    arr = np.asarray(values)
    if arr.dtype.kind in "US" or arr.dtype == object:
        return np.asarray([float(code_of(str(v))) for v in arr.ravel()], dtype=float)
    return arr.astype(float)


def zero_ok(path: str) -> bool:
    """Whether a searched field may take 0 (``compute.spare_cores``: none fused off); the rest must be > 0."""
    f = field_at(path)
    return f is not None and f.zero_ok


def in_domain(path: str, value: Any) -> Any:
    """Whether ``value`` (a number or an array) is one a hardware field takes: >= 0 where it may be 0
    (:func:`zero_ok`), > 0 otherwise."""
    return value >= 0 if zero_ok(path) else value > 0


def domain_text(path: str) -> str:
    """The bound :func:`in_domain` applies, as an error line says it: ``>= 0`` or ``> 0``."""
    return ">= 0" if zero_ok(path) else "> 0"


def field_unit(path: str) -> str | None:
    """The config unit of a searchable field by its path (``compute.noc.link_bytes`` -> bytes, ``memory.hbm.
    bandwidth_tbps`` -> TB/s), None for a path the tables do not hold (``compute.cores``: a count)."""
    f = field_at(path)
    return None if f is None else f.unit


LEVEL = {key(f): f for f in LEVEL_FIELDS}
NETWORK = {key(f): f for f in NETWORK_FIELDS}
