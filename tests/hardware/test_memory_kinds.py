"""dse.hardware.memory_kinds: one record per kind of memory level; behaviour follows the kind, not the position."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

import dse
from dse.cli import main
from dse.cost.area import area, dram_stacks
from dse.cost.cost import unit_cost
from dse.hardware.designs import DesignBatch
from dse.hardware.fields import KNOB
from dse.hardware.memory_kinds import KIND, KIND_NAMES, KINDS, MemoryKind, infer_kind, kind_of
from dse.hardware.schema import Node
from dse.hardware.templates import hardware_from_mapping, list_templates, load_hardware

H100 = dse.hardware("h100-sxm")


def test_every_record_names_real_coefficients_and_knobs() -> None:
    assert len(KIND_NAMES) == len(set(KIND_NAMES)) == len(KINDS)
    for k in KINDS:
        for coefficient in (k.energy_private, k.energy_shared):
            assert coefficient in Node.model_fields, (k.name, coefficient)
        assert k.area in ("sram", "dram_phy", "ddr_phy")
        assert k.usd_per_gb is None or k.usd_per_gb in Node.model_fields
        assert k.knob is None or k.knob in KNOB
    assert kind_of("dram").off_chip and not kind_of("sram").off_chip
    with pytest.raises(KeyError, match="accepted: sram, dram, ddr"):
        kind_of("flash")


def test_an_unknown_kind_is_one_line_naming_file_field_value_and_the_accepted_kinds(tmp_path: Path, capsys) -> None:
    data = H100.model_dump(mode="python", exclude_none=True)
    data["memory"][2]["kind"] = "hbm3"
    path = tmp_path / "chip.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["hardware", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {path}: memory.2.kind: got 'hbm3'; accepted: one of sram, dram, ddr"


@pytest.mark.parametrize(("name", "index", "n", "kind"), [
    ("hbm", 2, 3, "dram"), ("HBM3e", 0, 1, "dram"), ("gddr6", 1, 3, "ddr"), ("lpddr5x", 2, 3, "ddr"),
    ("ddr5", 2, 3, "ddr"), ("hbm2e", 2, 3, "dram"),
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


def test_an_sram_only_chip_has_no_off_chip_cost_and_its_outermost_level_is_the_main_memory() -> None:
    data = H100.model_dump(mode="python", exclude_none=True)
    data["memory"] = [m for m in data["memory"] if m["kind"] == "sram"]
    hw = hardware_from_mapping(data, file="chip.yaml")
    d = DesignBatch.from_hardware(hw)
    assert hw.offchip_level.name == "l2" and d.offchip_index == d.sram_level == 1
    assert unit_cost(d, area(d)).parts["dram"][0] == 0.0 and dram_stacks(d)[0] == 0.0


def test_adding_a_kind_is_one_record(monkeypatch) -> None:
    """The worked example of docs/architecture.md: an ``lpddr`` kind (off-chip LPDDR channels priced like DRAM
    PHYs) is one record; templates then accept it and every model prices it by its record."""
    monkeypatch.setitem(KIND, "lpddr", MemoryKind(
        "lpddr", off_chip=True, energy_private="energy_pj_per_byte_dram", energy_shared="energy_pj_per_byte_dram",
        area="dram_phy", usd_per_gb="dram_usd_per_gb", knob="dram_bandwidth_tbps", description="off-chip LPDDR channels"))
    data = H100.model_dump(mode="python", exclude_none=True)
    data["memory"][2]["kind"] = "lpddr"
    del data["memory"][2]["generation"]  # a DRAM part (hbm3) belongs to its kind (dse.hardware.dram_parts)
    hw = hardware_from_mapping(data, file="chip.yaml")
    assert hw.offchip_level.name == "hbm" and hw.memory[2].off_chip
    d0, d1 = DesignBatch.from_hardware(H100), DesignBatch.from_hardware(hw)
    assert area(d1).total_mm2 == area(d0).total_mm2
    assert unit_cost(d1, area(d1)).total_usd == unit_cost(d0, area(d0)).total_usd
    wl = dse.workload("llama2-7b", phase="decode", batch=1, context=1024, dtype="bf16")
    assert dse.predict(wl, hw).time_s == dse.predict(wl, H100).time_s
    bad = H100.model_dump(mode="python", exclude_none=True)
    bad["memory"][2]["kind"] = "flash"
    with pytest.raises(dse.DseError, match="accepted: one of sram, dram, ddr, lpddr"):
        hardware_from_mapping(bad, file="chip.yaml")


def test_every_shipped_template_states_the_kind_of_every_level() -> None:
    """The package's templates do not lean on inference (a user's template may)."""
    from dse.hardware.templates import templates_dir
    from dse.yamlio import load_yaml

    paths = sorted(templates_dir().glob("*.yaml"))
    assert paths
    for path in paths:
        for level in load_yaml(path)["memory"]:
            assert level.get("kind") in KIND, (path.name, level.get("name"))


def test_board_dram_is_priced_per_channel_on_no_interposer_and_at_its_own_energy_and_price() -> None:
    """A ``ddr`` main memory (GDDR, LPDDR, DDR chips on the board) is whole 32-bit channels, each a PHY and controller
    of the node's ``ddr_phy_mm2_per_channel``: no HBM stack on the package, no interposer, its GB at
    ``ddr_usd_per_gb`` and its bytes at ``energy_pj_per_byte_ddr`` (the same level as ``dram`` was an HBM stack's PHY
    per channel: tt-n150's 6 GDDR6 channels took 164 mm2 of a 782 mm2 die)."""
    from dse.cost.area import ddr_channels
    from dse.hardware.energy import level_energy_per_byte
    from dse.hardware.templates import load_node

    n150 = load_hardware("tt-n150")
    assert n150.offchip_level.kind == "ddr"
    as_hbm = n150.model_dump(mode="python", exclude_none=True)
    as_hbm["memory"][-1]["kind"] = "dram"
    del as_hbm["memory"][-1]["generation"]  # gddr6 is a board part: the HBM copy takes its node's typical stack
    hbm = hardware_from_mapping(as_hbm, file="chip.yaml")
    d, h = DesignBatch.from_hardware(n150), DesignBatch.from_hardware(hbm)
    node = load_node(n150.process_node)
    ad, ah = area(d), area(h)
    assert ddr_channels(d)[0] == 6 and dram_stacks(d)[0] == 0 and dram_stacks(h)[0] == 6
    assert ad.parts["dram_phy"][0] == 0
    assert ad.parts["dram_controller"][0] == pytest.approx(6 * node.ddr_phy_mm2_per_channel.value)
    assert ah.total_mm2 - ad.total_mm2 > 100
    cd, ch = unit_cost(d, ad), unit_cost(h, ah)
    assert cd.parts["interposer"][0] == 0 < ch.parts["interposer"][0]
    assert cd.parts["dram"][0] == pytest.approx(12 * node.ddr_usd_per_gb.value)
    e = level_energy_per_byte(d, node)[-1]
    assert e == pytest.approx(node.energy_pj_per_byte_ddr.value * 1e-12)
    wider = d.with_knobs(dram_bandwidth=np.array([300e9]))  # 6.25 channels -> 7 whole ones
    assert ddr_channels(wider)[0] == 7 and float(wider.dram_bandwidth[0]) == pytest.approx(7 * 48e9)
