"""dse.hardware.memory_kinds: one record per kind of memory level; behaviour follows the kind, not the position."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

import dse
from dse.cli import main
from dse.cost.area import area, dram_stacks
from dse.cost.cost import unit_cost
from dse.hardware.designs import DesignBatch
from dse.hardware.energy import level_energy_per_byte
from dse.hardware.fields import KNOB
from dse.hardware.memory_kinds import KIND, KIND_NAMES, KINDS, infer_kind, kind_of
from dse.hardware.schema import Node
from dse.hardware.templates import hardware_from_mapping, list_templates, load_hardware, load_node
from dse.units import TERA

H100 = dse.hardware("h100-sxm")


def test_every_record_names_real_coefficients_and_knobs() -> None:
    assert len(KIND_NAMES) == len(set(KIND_NAMES)) == len(KINDS)
    for k in KINDS:
        for coefficient in (k.energy_private, k.energy_shared):
            assert coefficient in Node.model_fields, (k.name, coefficient)
        assert k.area in ("sram", "dram_phy")
        assert k.knob is None or k.knob in KNOB
    # each knob sizes levels of exactly one kind
    knobs = [k.knob for k in KINDS if k.knob]
    assert len(knobs) == len(set(knobs))
    assert kind_of("dram").off_chip and not kind_of("sram").off_chip
    with pytest.raises(KeyError, match="accepted: sram, dram"):
        kind_of("flash")


def test_an_unknown_kind_is_one_line_naming_file_field_value_and_the_accepted_kinds(tmp_path: Path, capsys) -> None:
    data = H100.model_dump(mode="python", exclude_none=True)
    data["memory"][2]["kind"] = "hbm3"
    path = tmp_path / "chip.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["hardware", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {path}: memory.2.kind: got 'hbm3'; accepted: one of 'sram' or 'dram'"


@pytest.mark.parametrize(("name", "index", "n", "kind"), [
    ("hbm", 2, 3, "dram"), ("HBM3e", 0, 1, "dram"), ("gddr6", 1, 3, "dram"), ("lpddr5x", 2, 3, "dram"),
    ("l2", 1, 3, "sram"), ("smem", 0, 3, "sram"), ("mem", 2, 3, "dram"), ("sram", 0, 1, "sram"),
])
def test_inference_for_a_level_without_kind(name: str, index: int, n: int, kind: str) -> None:
    assert infer_kind(name, index, n) == kind


@pytest.mark.parametrize("name", list_templates())
def test_a_shipped_template_without_kinds_infers_the_kinds_it_states(name: str) -> None:
    hw = load_hardware(name)
    data = hw.model_dump(mode="python", exclude_none=True)
    for m in data["memory"]:
        m.pop("kind")
    inferred = hardware_from_mapping(data, file="chip.yaml")
    assert [m.kind for m in inferred.memory] == [m.kind for m in hw.memory]
    assert inferred == hw


def _with_far_level(hw, **far) -> dse.Hardware:
    """``hw`` with a second off-chip level outside its main memory (so the main memory is not the last level)."""
    data = hw.model_dump(mode="python", exclude_none=True)
    data["memory"].append({"name": "far", "kind": "dram", "capacity_gb": 4096, "bandwidth_tbps": 1e6,
                           "source": "test: a second off-chip level, fast enough never to bind", **far})
    return hardware_from_mapping(data, file="chip.yaml")


def test_the_main_memory_is_found_by_kind_when_it_is_not_the_last_level() -> None:
    far = _with_far_level(H100)
    assert far.memory[-1].name == "far" and far.offchip_level.name == "hbm" and far.offchip_index == 2
    assert far.dram.name == "hbm" and far.ridge_flop_per_byte == H100.ridge_flop_per_byte
    d0, d1 = DesignBatch.from_hardware(H100), DesignBatch.from_hardware(far)
    bw = np.array([2.0e12, 4.5e12])
    k0, k1 = d0.take([0, 0]).with_knobs(dram_bandwidth=bw), d1.take([0, 0]).with_knobs(dram_bandwidth=bw)
    assert k1.bandwidth[:, 2].tolist() == bw.tolist() and (k1.bandwidth[:, 3] == 1e6 * TERA).all()
    assert k1.offchip_name == "hbm" and (k1.offchip_capacity == k0.offchip_capacity).all()
    assert k1.sram_level == k0.sram_level == 1
    # the PHY stacks price the main memory's bandwidth only (the far level names no stack bandwidth)
    assert dram_stacks(k1).tolist() == dram_stacks(k0).tolist() == [3.0, 7.0]
    # and the far level is still DRAM to the energy model and the bill of materials
    e = level_energy_per_byte(d1, load_node(far.process_node))
    assert e[3] == e[2]
    c0, c1 = unit_cost(d0, area(d0)).parts["dram"][0], unit_cost(d1, area(d1)).parts["dram"][0]
    assert c1 == pytest.approx(c0 * (80 + 4096) / 80)


@pytest.mark.parametrize("model", [dict(name="llama2-7b", phase="decode", batch=1, context=1024),
                                   dict(name="resnet50", batch=16)])
def test_a_far_off_chip_level_that_never_binds_leaves_the_prediction_as_the_kinds_say(model: dict) -> None:
    """The knob, the roofline, the footprint follow the main memory by kind: the same time as without the far level."""
    far = _with_far_level(H100)
    wl = dse.workload(model.pop("name"), dtype="bf16", **model)
    p0, p1 = dse.predict(wl, H100), dse.predict(wl, far)
    assert p1.time_s == p0.time_s and p1.capacity_bytes == p0.capacity_bytes
    for bw in (1.0e12, 6.0e12):
        d0 = DesignBatch.from_hardware(H100).with_knobs(dram_bandwidth=np.array([bw]))
        d1 = DesignBatch.from_hardware(far).with_knobs(dram_bandwidth=np.array([bw]))
        assert dse.predict(wl, d1).time_s == dse.predict(wl, d0).time_s


def test_an_on_chip_level_outside_an_off_chip_one_is_refused() -> None:
    data = copy.deepcopy(H100.model_dump(mode="python", exclude_none=True))
    data["memory"] = [data["memory"][0], data["memory"][2], data["memory"][1]]
    with pytest.raises(dse.DseError, match="memory: got levels .* accepted: every on-chip level inside"):
        hardware_from_mapping(data, file="chip.yaml")


def test_an_sram_only_chip_has_no_off_chip_cost_and_its_outermost_level_is_the_main_memory() -> None:
    data = H100.model_dump(mode="python", exclude_none=True)
    data["memory"] = [m for m in data["memory"] if m["kind"] == "sram"]
    hw = hardware_from_mapping(data, file="chip.yaml")
    d = DesignBatch.from_hardware(hw)
    assert hw.offchip_level.name == "l2" and d.offchip_index == d.sram_level == 1
    assert unit_cost(d, area(d)).parts["dram"][0] == 0.0 and dram_stacks(d)[0] == 0.0


def test_kind_records_are_the_only_table() -> None:
    """The schema's accepted kinds are the registry's names (one table, one module)."""
    from typing import get_args

    from dse.hardware.schema import MemoryLevel

    assert get_args(MemoryLevel.model_fields["kind"].annotation) == KIND_NAMES == tuple(KIND)
