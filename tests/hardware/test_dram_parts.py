"""dse.hardware.dram_parts: a DRAM level's energy per byte follows the part it names, not the node of the die."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

import dse
from dse.cli import main
from dse.cost.cost import unit_cost
from dse.cost.power import gemm_mode_power, mix_energy
from dse.hardware.designs import DesignBatch
from dse.hardware.dram_parts import (
    GENERATION,
    GENERATIONS,
    PHY_REFERENCE_BITS,
    code_of,
    energy_per_byte,
    generation_names,
    searchable_names,
)
from dse.hardware.energy import PJ, design_level_energy, level_energy_per_byte, static_power
from dse.hardware.fields import part_codes
from dse.hardware.memory_kinds import KIND
from dse.hardware.templates import hardware_from_mapping, list_templates, load_hardware, load_node
from dse.workloads.library import gemm
from dse.workloads.mix import Mix


def test_every_record_is_a_dram_kind_with_a_positive_energy_and_a_source() -> None:
    assert len(GENERATION) == len(GENERATIONS)
    for g in GENERATIONS:
        assert KIND[g.kind].off_chip, g.name
        assert 0 < g.pj_per_bit < 20 and len(g.source) > 20, g.name
        assert energy_per_byte(g.name) == pytest.approx(g.pj_per_bit * 8 * PJ)
    assert set(generation_names("dram")) | set(generation_names("ddr")) == set(GENERATION)
    assert generation_names("sram") == ()


@pytest.mark.parametrize("name", list_templates())
def test_a_template_that_names_its_nodes_typical_part_prices_its_bytes_as_the_node_does(name: str) -> None:
    """Every figure of the registry is a node file's: a part that is its node's typical one changes nothing, so the
    GPU energies per FLOP fitted on A100 (HBM2E, 7 nm), H100 (HBM3, 5 nm) and V100 (HBM2, 16 nm) hold."""
    hw = load_hardware(name)
    node = load_node(hw.process_node)
    e = level_energy_per_byte(DesignBatch.from_hardware(hw), node)
    for j, m in enumerate(hw.memory):
        coefficient = getattr(node, m.spec.energy_shared if m.instances == 1 else m.spec.energy_private).value * PJ
        if m.generation is None:
            assert e[j] == pytest.approx(coefficient)
        else:
            assert e[j] == pytest.approx(energy_per_byte(m.generation))
    if name in ("a100-80gb", "h100-sxm", "v100-sxm"):
        dram = hw.offchip_level
        assert energy_per_byte(dram.generation) == pytest.approx(node.energy_pj_per_byte_dram.value * PJ)


def _with_generation(name: str, generation: str | None) -> DesignBatch:
    data = load_hardware(name).model_dump(mode="python", exclude_none=True)
    for m in data["memory"]:
        if m["kind"] in ("dram", "ddr"):
            m.pop("generation", None)
            if generation is not None:
                m["generation"] = generation
    return DesignBatch.from_hardware(hardware_from_mapping(data, file=f"{name}.yaml"))


def test_the_same_die_on_a_leaner_part_draws_less_by_its_dram_bytes_times_the_energy_gap() -> None:
    """H200's 5 nm die on HBM3E (3.9 pJ/bit) against the same die on its node's HBM3 (4.5): the dynamic DRAM energy
    of a pass scales by 3.9 / 4.5 and nothing else moves (on-chip parts, time); leakage follows the peak rates."""
    mix = Mix.of([gemm(8192, 8192, 8192, dtype="bf16")])
    lean, typical = _with_generation("h200", "hbm3e"), _with_generation("h200", None)
    a, b = mix_energy(lean, mix), mix_energy(typical, mix)
    assert np.allclose(a.time_s, b.time_s)
    assert a.parts_j["hbm"] == pytest.approx(b.parts_j["hbm"] * 3.9 / 4.5)
    for part in ("compute", "register", "smem", "l2"):
        assert a.parts_j[part] == pytest.approx(b.parts_j[part])
    assert a.static_w[0] < b.static_w[0]
    assert gemm_mode_power(lean)["bf16"][0] < gemm_mode_power(typical)["bf16"][0]


def test_gaudi3_pays_hbm2e_on_a_5nm_die() -> None:
    g3 = dse.hardware("gaudi3")
    assert g3.offchip_level.generation == "hbm2e" and g3.process_node == "5nm"
    e = level_energy_per_byte(DesignBatch.from_hardware(g3), load_node("5nm"))
    assert e[g3.memory.index(g3.offchip_level)] == pytest.approx(6.0 * 8 * PJ)  # not 5 nm's typical HBM3, 4.5


@pytest.mark.parametrize(("level", "generation", "message"), [
    (2, "hbm5", "got 'hbm5'; accepted: one of hbm2, hbm2e, hbm3, hbm3e, hbm4; gddr6, gddr6x, gddr7 (kind ddr); or "
                "none (the node file's figure for the kind: LPDDR and DDR parts have no record, so a level of them is "
                "kind ddr without a generation)"),
    (2, "gddr6", "got 'gddr6' (a part of kind ddr, not dram); accepted: one of hbm2, hbm2e, hbm3, hbm3e, hbm4"),
    (1, "hbm3", "got 'hbm3'; accepted: none (kind sram is not DRAM)"),
])
def test_a_wrong_generation_is_one_line_naming_file_and_field(tmp_path: Path, capsys, level: int, generation: str,
                                                              message: str) -> None:
    data = load_hardware("h100-sxm").model_dump(mode="python", exclude_none=True)
    data["memory"][level]["generation"] = generation
    path = tmp_path / "chip.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["hardware", str(path)]) == 2
    assert capsys.readouterr().err.strip() == f"error: {path}: memory.{level}.generation: {message}"


# ---------------------------------------------------------------- the part as a design parameter
def _codes(*names: str) -> np.ndarray:
    return part_codes(list(names))


def test_every_searchable_part_is_one_its_kind_accepts_with_sourced_stack_figures() -> None:
    """A part a study can search is a stack one could buy: within its kind's limits (``memory_kinds``), its
    interface a whole number of 1024-bit PHYs, its price a premium over the node's HBM3-era price, each sourced."""
    assert searchable_names("dram") == ("hbm2", "hbm2e", "hbm3", "hbm3e", "hbm4")
    assert searchable_names("ddr") == ("gddr6", "gddr6x", "gddr7")
    for name in searchable_names():
        g = GENERATION[name]
        spec = KIND[g.kind]
        assert 0 < g.stack.stack_gbps <= spec.max_stack_gbps, name
        assert spec.stack_gb[0] <= g.stack.stack_gb <= spec.stack_gb[1], name
        assert g.stack.io_bits % PHY_REFERENCE_BITS[g.kind] == 0, name
        assert g.stack.price_factor >= 1.0 and len(g.stack.source) > 40, name
    for kind in ("dram", "ddr"):
        rates = [GENERATION[n].stack.stack_gbps for n in searchable_names(kind)]
        assert rates == sorted(rates)  # each generation's rated stack (or channel) is faster than the last
    assert GENERATION["hbm4"].stack.io_bits == 2048 and GENERATION["hbm3e"].stack.io_bits == 1024
    assert GENERATION["gddr7"].pj_per_bit < GENERATION["gddr6"].pj_per_bit


def test_a_part_keeps_the_stack_count_and_brings_its_own_stack_bandwidth_and_capacity() -> None:
    """npu-7nm's 4 HBM2E stacks (409.6 GB/s, 16 GB each) rebuilt as 4 stacks of each part: bandwidth and capacity
    are 4 x the part's rated stack; naming the template's own part keeps the template's figures (code -1)."""
    d = DesignBatch.from_hardware(dse.hardware("npu-7nm"), 4).with_part(_codes("hbm2e", "hbm3", "hbm3e", "hbm4"))
    assert list(d.dram_stacks) == [4, 4, 4, 4]
    assert list(d.dram_part) == [-1, code_of("hbm3"), code_of("hbm3e"), code_of("hbm4")]
    assert d.dram_bandwidth / 1e9 == pytest.approx([1638.4, 4 * 819.2, 4 * 1228.8, 4 * 2048.0])
    assert d.offchip_capacity / 1e9 == pytest.approx([64.0, 96.0, 144.0, 144.0])
    assert [d.part_name(i) for i in range(4)] == ["hbm2e", "hbm3", "hbm3e", "hbm4"]


def test_with_field_takes_the_part_by_name_as_a_study_and_the_api_give_it() -> None:
    d = DesignBatch.from_hardware(dse.hardware("npu-7nm"), 2)
    a = d.with_field("memory.hbm.generation", ["hbm3", "hbm4"])
    b = d.with_part(_codes("hbm3", "hbm4"))
    assert list(a.dram_part) == list(b.dram_part) and np.array_equal(a.bandwidth, b.bandwidth)


def test_the_bandwidth_knob_after_a_part_buys_whole_stacks_of_that_part() -> None:
    d = DesignBatch.from_hardware(dse.hardware("npu-7nm"), 3).with_part(_codes("hbm2e", "hbm3", "hbm4"))
    d = d.with_knobs(dram_bandwidth=np.full(3, 3.0e12))
    assert list(d.dram_stacks) == [8, 4, 2]  # ceil(3 TB/s / 409.6, 819.2, 2048 GB/s)
    assert d.dram_bandwidth / 1e9 == pytest.approx([3276.8, 3276.8, 4096.0])
    assert d.offchip_capacity / 1e9 == pytest.approx([128.0, 96.0, 72.0])
    assert "2 x 2048 GB/s hbm stacks of hbm4 = 4.096 TB/s, 72 GB" in d.build_text(2)
    assert "8 x 409.6 GB/s hbm stacks of hbm2e = 3.277 TB/s, 128 GB" in d.build_text(0)  # the template's own part
    trn = DesignBatch.from_hardware(dse.hardware("trainium1"))  # names no part: none said
    assert " stacks = " in trn.build_text(0) and " of " not in trn.build_text(0).split(";")[-1]


def test_an_hbm4_stack_prices_two_phys_and_controllers_and_its_premium() -> None:
    """At equal stack counts, HBM4's 2048-bit interface doubles the PHY and controller area of HBM3's (JESD270-4:
    32 channels from 16); the interposer holds the same stacks; its gigabytes cost 1.56 x (TrendForce premiums)."""
    d = DesignBatch.from_hardware(dse.hardware("npu-7nm"), 2).with_part(_codes("hbm3", "hbm4"))
    a = dse.area(d)
    for part in ("dram_phy", "dram_controller"):
        assert a.parts[part][1] == pytest.approx(2 * a.parts[part][0])
    assert list(a.dram_stacks) == [4, 4]
    c = unit_cost(d, dse.area(d))
    node = load_node("7nm")
    assert c.parts["dram"] == pytest.approx([96 * node.dram_usd_per_gb.value, 144 * node.dram_usd_per_gb.value * 1.56])


def test_a_template_that_names_hbm3e_pays_its_premium_per_gb() -> None:
    """The premium follows the part the level has, named by the template or chosen by a study (one rule): h200 on
    HBM3E pays 1.2 x the node's price per GB, the same die with no part named the node's."""
    price = load_node("5nm").dram_usd_per_gb.value
    named, unnamed = _with_generation("h200", "hbm3e"), _with_generation("h200", None)
    gb = float(named.offchip_capacity[0]) / 1e9
    assert unit_cost(named, dse.area(named)).parts["dram"][0] == pytest.approx(gb * price * 1.2)
    assert unit_cost(unnamed, dse.area(unnamed)).parts["dram"][0] == pytest.approx(gb * price)


def test_each_design_pays_its_own_parts_energy_in_one_batch() -> None:
    """A batch of designs on different parts: each row's main-memory joules are its bytes at its part's pJ/bit,
    the same as that design priced alone (the batch does not mix their parts)."""
    mix = Mix.of([gemm(1, 8192, 8192, dtype="bf16")])  # a GEMV: main-memory bound, the DRAM bytes dominate
    base = DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    both = DesignBatch.stack([base.with_part(_codes("hbm3")), base.with_part(_codes("hbm4"))])
    e = mix_energy(both, mix)
    for i, name in enumerate(("hbm3", "hbm4")):
        alone = mix_energy(base.with_part(_codes(name)), mix)
        assert e.parts_j["hbm"][i] == pytest.approx(alone.parts_j["hbm"][0])
    bytes_ = e.parts_j["hbm"][0, 0] / energy_per_byte("hbm3")
    assert e.parts_j["hbm"][1, 0] == pytest.approx(bytes_ * energy_per_byte("hbm4"), rel=0.02)
    assert static_power(both, load_node("7nm"))[1] != static_power(both, load_node("7nm"))[0]


def test_the_chosen_part_is_written_into_the_design_template_and_reloads_the_same() -> None:
    d = DesignBatch.from_hardware(dse.hardware("npu-7nm")).with_part(_codes("hbm4"))
    hw = d.to_hardware(0, "npu-hbm4", note="test")
    level = hw.offchip_level
    assert (level.generation, level.stack_bandwidth_gbps, level.stack_capacity_gb) == ("hbm4", 2048.0, 36.0)
    again = DesignBatch.from_hardware(hw)
    assert again.dram_bandwidth == pytest.approx(d.dram_bandwidth)
    assert again.offchip_capacity == pytest.approx(d.offchip_capacity)
    assert dse.area(again).total == pytest.approx(dse.area(d).total)
    assert unit_cost(again, dse.area(again)).total == pytest.approx(unit_cost(d, dse.area(d)).total)


def test_a_part_of_another_kind_or_a_level_not_bought_in_stacks_is_refused() -> None:
    d = DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    with pytest.raises(ValueError, match="got gddr6 for a level of kind dram; accepted: hbm2, hbm2e"):
        d.with_part(_codes("gddr6"))
    with pytest.raises(ValueError, match="got hbm3 for a level of kind ddr; accepted: gddr6, gddr6x, gddr7"):
        DesignBatch.from_hardware(dse.hardware("tt-n150")).with_part(_codes("hbm3"))
    with pytest.raises(ValueError, match="cannot search memory.sram.generation"):
        DesignBatch.from_hardware(dse.hardware("groq-tsp")).with_part(_codes("hbm3"))
    assert "memory.hbm.generation" in d.searchable_fields()
    assert "memory.gddr6.generation" in DesignBatch.from_hardware(dse.hardware("tt-n150")).searchable_fields()


def test_a_board_dram_part_buys_its_own_channels() -> None:
    """tt-n150's 6 GDDR6 channels (48 GB/s, 2 GB each) as GDDR7: 6 x 128 GB/s and 2 GB, the same 6 channel PHYs
    (a 32-bit channel either way), GDDR7's energy per byte; a bandwidth target buys whole GDDR7 channels."""
    base = DesignBatch.from_hardware(dse.hardware("tt-n150"))
    d = base.with_part(_codes("gddr7"))
    assert float(d.dram_stacks[0]) == 6 and float(d.dram_bandwidth[0]) == pytest.approx(6 * 128e9)
    assert float(d.offchip_capacity[0]) == pytest.approx(12e9)
    assert dse.area(d).parts["dram_controller"] == pytest.approx(dse.area(base).parts["dram_controller"])
    e = design_level_energy(d, load_node(d.base.process_node))
    assert e[0, d.offchip_index] == pytest.approx(energy_per_byte("gddr7"))
    assert list(d.with_knobs(dram_bandwidth=np.array([1.0e12])).dram_stacks) == [8]
