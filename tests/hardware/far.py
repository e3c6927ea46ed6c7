"""A template whose main memory is not its last level: a second off-chip level outside it (shared by the tests of
the modules that find the main memory by kind)."""

from __future__ import annotations

from dse.hardware.schema import Hardware
from dse.hardware.templates import hardware_from_mapping


def with_far_level(hw: Hardware, **far) -> Hardware:
    """``hw`` with an off-chip level ``far`` (4096 GB, 1e6 TB/s: fast enough never to bind) after its main memory."""
    data = hw.model_dump(mode="python", exclude_none=True)
    data["memory"].append({"name": "far", "kind": "dram", "capacity_gb": 4096, "bandwidth_tbps": 1e6,
                           "source": "test: a second off-chip level, fast enough never to bind", **far})
    return hardware_from_mapping(data, file="chip.yaml")
