"""dse.hardware.dram_parts: a DRAM level's energy per byte follows the part it names, not the node of the die."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

import dse
from dse.cli import main
from dse.cost.power import gemm_mode_power, mix_energy
from dse.hardware.designs import DesignBatch
from dse.hardware.dram_parts import GENERATION, GENERATIONS, energy_per_byte, generation_names
from dse.hardware.energy import PJ, level_energy_per_byte
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
    (2, "hbm5", "got 'hbm5'; accepted: one of hbm2, hbm2e, hbm3, hbm3e, hbm4"),
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
