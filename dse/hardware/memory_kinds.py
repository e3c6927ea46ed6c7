"""The memory-level kinds: one record per kind, the only place that says what a kind of level does.

A memory level's behaviour follows its ``kind`` (as ZigZag and AccelForge type their memory levels),
never its position in the list. Each record says:

* ``off_chip``: the level sits outside the die (its bytes leave through PHYs): fused element-wise ops
  do not stream through it (``dse.predict.traffic``), a power cap's lower clock does not scale its
  energy (``dse.cost.power``), and the innermost off-chip level is the chip's main memory
  (:attr:`dse.hardware.schema.Hardware.offchip_level`: the roofline's bandwidth, the footprint check's
  capacity, the ``dram_bandwidth_tbps`` knob's level);
* ``energy``: the node coefficients (pJ/byte) of a private (``instances > 1``) and a shared level
  (``dse.hardware.energy``);
* ``area``: which area component prices the level (``dse.cost.area``): ``sram`` per MiB at the node's
  scratchpad or cache density (the level's ``organization``), ``dram_phy`` per stack of PHY and
  controller (stacks = ceil(bandwidth / ``stack_bandwidth_gbps``); HBM on a silicon interposer, beside the
  die's long edges), ``ddr_phy`` per 32-bit channel of PHY and controller (channels = ceil(bandwidth /
  ``stack_bandwidth_gbps``, one channel's bandwidth); chips on the board: no interposer, no stack on the
  package);
* ``usd_per_gb``: the node coefficient the level's capacity is bought at per GB (``dram_usd_per_gb`` for HBM,
  ``ddr_usd_per_gb`` for board DRAM; ``dse.cost.cost``), None for on-die SRAM;
* ``knob``: the search knob (``dse.hardware.fields.KNOB_TABLE``) that sizes a level of this kind
  (``sram_mib``: the outermost on-chip level's capacity; ``dram_bandwidth_tbps``: the main memory's
  bandwidth);
* ``max_stack_gbps``, ``stack_gb``: what one stack (or channel) of a kind bought in stacks can be, so a template
  names a part one could buy: its bandwidth at most ``max_stack_gbps`` (GB/s) and its capacity within ``stack_gb``
  (GB), each with its source in :data:`STACK_SOURCES` (None: not bought in stacks).

Adding a kind is one record in :data:`KINDS` plus its test (``tests/hardware/test_memory_kinds.py``);
``docs/architecture.md`` has the worked steps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class MemoryKind:
    """What one kind of memory level is and how every model prices it (see the module docstring)."""

    name: str
    off_chip: bool
    energy_private: str  # node coefficient, pJ/byte, of a level with instances > 1
    energy_shared: str  # node coefficient, pJ/byte, of a level with one instance
    area: Literal["sram", "dram_phy", "ddr_phy"]
    usd_per_gb: str | None
    knob: str | None
    description: str
    max_stack_gbps: float | None = None
    stack_gb: tuple[float, float] | None = None


KINDS: tuple[MemoryKind, ...] = (
    MemoryKind("sram", off_chip=False, energy_private="energy_pj_per_byte_sram_local",
               energy_shared="energy_pj_per_byte_sram_global", area="sram", usd_per_gb=None, knob="sram_mib",
               description="on-chip SRAM: registers' next level, L1/shared memory, L2, scratchpads (VMEM, CMEM)"),
    MemoryKind("dram", off_chip=True, energy_private="energy_pj_per_byte_dram", energy_shared="energy_pj_per_byte_dram",
               area="dram_phy", usd_per_gb="dram_usd_per_gb", knob="dram_bandwidth_tbps",
               description="off-chip DRAM in stacks on the package: HBM (stack_bandwidth_gbps: one stack's)",
               max_stack_gbps=3000.0, stack_gb=(1.0, 64.0)),
    MemoryKind("ddr", off_chip=True, energy_private="energy_pj_per_byte_ddr", energy_shared="energy_pj_per_byte_ddr",
               area="ddr_phy", usd_per_gb="ddr_usd_per_gb", knob="dram_bandwidth_tbps",
               description="off-chip DRAM chips on the board over 32-bit channels: GDDR, LPDDR, DDR "
                           "(stack_bandwidth_gbps: one channel's)",
               max_stack_gbps=192.0, stack_gb=(0.25, 128.0)),
)
#: where each kind's stack limits come from
STACK_SOURCES: dict[str, str] = {
    "dram": "one HBM stack: at most 3 TB/s (HBM4, JEDEC JESD270-4: a 2048-bit interface at up to 8 Gb/s = 2 TB/s; "
            "vendors sample 10-11 Gb/s, 2.6-2.8 TB/s) and 1-64 GB (HBM1, JESD235: 1 GB; HBM4: 16-high stacks of 32 Gb "
            "dies = 64 GB)",
    "ddr": "one 32-bit channel: at most 192 GB/s (GDDR7, JEDEC JESD239: 'up to 192 GB/s per device', 32 pins at 48 "
           "Gb/s) and 0.25-128 GB (a 2 Gb GDDR5 chip up to a DDR5 RDIMM's 32-bit subchannel of a 256 GB module)",
}
KIND: dict[str, MemoryKind] = {k.name: k for k in KINDS}
KIND_NAMES: tuple[str, ...] = tuple(KIND)

#: names that say "off-chip DRAM" for a level given without ``kind`` (case-insensitive)
DRAM_NAME = re.compile(r"hbm|dram|ddr|hmc|dimm|main.?mem", re.IGNORECASE)
#: of those, names that say "board DRAM channels" (GDDR6, LPDDR5, DDR5), not stacks
DDR_NAME = re.compile(r"^(?!.*hbm).*(gddr|lpddr|ddr\d)", re.IGNORECASE)


def kind_of(name: str) -> MemoryKind:
    """The record of kind ``name`` (``KeyError`` text lists the accepted kinds)."""
    try:
        return KIND[name]
    except KeyError:
        raise KeyError(f"got memory kind {name!r}; accepted: {', '.join(KIND_NAMES)}") from None


def infer_kind(name: str, index: int, n_levels: int) -> str:
    """The kind of a level written without one, by the rule the code assumed before kinds were typed:
    a level named like board DRAM (gddr6, lpddr5, ddr5) is ``ddr``, one named like other DRAM (hbm, dram, ...)
    is ``dram``, else the outermost (last) level of a hierarchy of two or more is ``dram``, else ``sram``."""
    if DDR_NAME.search(name):
        return "ddr"
    if DRAM_NAME.search(name) or (n_levels > 1 and index == n_levels - 1):
        return "dram"
    return "sram"
