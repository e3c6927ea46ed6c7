"""npu-7nm with a given on-chip network block, as a template mapping and as a design batch (shared by
tests/hardware/test_noc.py and tests/cost/test_noc.py)."""

from __future__ import annotations

import copy

import numpy as np

from dse.hardware.designs import DesignBatch
from dse.hardware.noc import NocGeometry
from dse.hardware.schema import Hardware
from dse.hardware.templates import hardware_from_mapping, templates_dir
from dse.yamlio import load_yaml


def npu_with_noc(**noc_block) -> dict:
    """The npu-7nm template's mapping with ``compute.noc`` replaced by ``noc_block``."""
    data = copy.deepcopy(load_yaml(str(templates_dir() / "npu-7nm.yaml")))
    data["compute"]["noc"] = noc_block
    return data


def network(data: dict, cores: float | None = None) -> tuple[Hardware, DesignBatch, NocGeometry]:
    """(template, its one-design batch, optionally with ``cores``, and that design's network)."""
    hw = hardware_from_mapping(data, file="chip.yaml")
    d = DesignBatch.from_hardware(hw)
    if cores is not None:
        d = d.with_cores(np.array([cores]))
    return hw, d, d.noc()
