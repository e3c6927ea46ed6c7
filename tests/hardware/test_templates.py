import numpy as np
import pytest

import dse
from dse.errors import DseError
from dse.hardware.designs import DesignBatch
from dse.hardware.templates import list_nodes, list_templates, load_node

REQUIRED = {"a100-80gb", "h100-sxm", "v100-sxm", "tpu-v4", "npu-7nm"}


def test_required_templates_ship_and_load_with_sources() -> None:
    assert set(list_templates()) >= REQUIRED
    for name in list_templates():
        hw = dse.hardware(name)
        assert hw.source and hw.compute.source and hw.compute.matrix.source and hw.compute.vector.source
        assert all(level.source for level in hw.memory)
        # main memory is the outermost level: DRAM, or on an all-SRAM chip (groq-tsp) its SRAM, with no DRAM inside
        kinds = [level.kind for level in hw.memory]
        assert kinds[-1] == "dram" or "dram" not in kinds, (name, kinds)
    assert any("dram" not in [level.kind for level in dse.hardware(n).memory] for n in list_templates())


def test_node_coefficients_each_carry_a_source() -> None:
    for name in list_nodes():
        node = load_node(name)
        for field in type(node).model_fields:
            value = getattr(node, field)
            if hasattr(value, "source"):
                assert len(value.source) > 10, (name, field)


def test_a100_ridge_is_about_153_flop_per_byte() -> None:
    # 312 TFLOP/s bf16 / 2.039 TB/s (DESIGN.md quotes ~156 with 2.0 TB/s)
    assert dse.hardware("a100-80gb").ridge_flop_per_byte == pytest.approx(312e12 / 2039e9)


def _v100_mapping(peak: float) -> dict:
    hw = dse.hardware("v100-sxm").model_dump(mode="json", exclude_none=True)
    hw["compute"]["matrix"]["peak_tflops"] = {"fp16": peak}
    return hw


def test_v100_at_112_tflops_and_900_gbs_has_ridge_124() -> None:
    hw = dse.hardware(_v100_mapping(112.0))
    assert hw.ridge_flop_per_byte == pytest.approx(124.4, abs=0.1)


def test_mapping_goes_through_the_same_validation() -> None:
    bad = _v100_mapping(112.0)
    bad["memory"][2]["bandwidth_gbps"] = -900
    with pytest.raises(DseError) as ei:
        dse.hardware(bad)
    msg = str(ei.value)
    assert "memory.2.bandwidth_gbps" in msg and "-900" in msg and "> 0" in msg


def test_zero_bandwidth_and_unknown_key_are_rejected() -> None:
    bad = _v100_mapping(112.0)
    bad["memory"][0]["bandwidth_tbps"] = 0
    with pytest.raises(DseError, match="memory.0.bandwidth_tbps"):
        dse.hardware(bad)
    bad = _v100_mapping(112.0)
    bad["compute"]["clock_mhz"] = 1530
    with pytest.raises(DseError) as ei:
        dse.hardware(bad)
    assert "compute.clock_mhz" in str(ei.value) and "clock_ghz" in str(ei.value)


def test_missing_template_lists_the_accepted_names() -> None:
    with pytest.raises(DseError) as ei:
        dse.hardware("a100-20gb")
    assert "a100-80gb" in str(ei.value) and "unknown hardware template" in str(ei.value)


def test_unknown_process_node_is_rejected() -> None:
    bad = _v100_mapping(112.0)
    bad["process_node"] = "1nm"  # 2nm ships since issue 32; no 1 nm node does
    with pytest.raises(DseError, match="process_node") as ei:
        dse.hardware(bad)
    assert "'1nm'" in str(ei.value) and "2nm" in str(ei.value)  # the accepted list names the shipped nodes


def test_dtype_fallback_runs_bf16_on_v100_fp16_tensor_cores() -> None:
    d = DesignBatch.from_hardware(dse.hardware("v100-sxm"))
    from dse.units import DTYPE_INDEX

    assert d.matrix_peak[0, DTYPE_INDEX["bf16"]] == pytest.approx(125e12)
    assert np.isnan(d.matrix_peak[0, DTYPE_INDEX["fp64"]])


def test_best_design_round_trip_keeps_the_numbers() -> None:
    base = DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    d = base.with_knobs(peak_flops=np.array([500e12]), dram_bandwidth=np.array([3e12]),
                        sram_bytes=np.array([100 * 2**20]))
    hw = d.to_hardware(0, "x", note="test")
    again = DesignBatch.from_hardware(hw)
    assert hw.compute.cores == 44 and again.peak_flops[0] == pytest.approx(44 * 11.4688e12)  # round(500 / 11.47)
    assert again.dram_bandwidth[0] == pytest.approx(8 * 409.6e9)  # ceil(3000 / 409.6) stacks
    assert again.capacity[0, again.sram_level] == pytest.approx(100 * 2**20)


NEW_CHIPS = {  # template: (dense bf16 TFLOP/s, DRAM TB/s) from the vendors' datasheets the templates cite
    "h200": (989.4, 4.8), "b200": (2250, 8.0), "mi300x": (1307.4, 5.3), "gaudi2": (432, 2.46),
    "gaudi3": (1835, 3.67), "tpu-v5e": (197, 0.819), "tpu-v5p": (459, 2.765),
}


@pytest.mark.parametrize(("name", "figures"), list(NEW_CHIPS.items()))
def test_more_chips_load_with_their_datasheet_figures_and_sources(name: str, figures: tuple[float, float]) -> None:
    from dse.hardware.templates import templates_dir

    hw = dse.hardware(name)
    assert hw.peak_flops / 1e12 == pytest.approx(figures[0], rel=1e-3)
    assert hw.dram.bandwidth_bps / 1e12 == pytest.approx(figures[1], rel=1e-3)
    for block in (hw, hw.compute, hw.compute.matrix, hw.compute.vector, *hw.memory):
        assert len(block.source) > 20
    text = (templates_dir() / f"{name}.yaml").read_text()
    assert "../" + "shared" not in text and "hardware.csv" not in text  # cite the original source
    assert dse.predict(dse.gemm(4096, 4096, 4096, dtype="bf16"), hw).time_s > 0


def test_a_study_config_or_a_system_file_given_as_a_template_says_what_it_is() -> None:
    # dse area configs/npu.yaml said "process_node: missing; this field is required (+7 more)"
    from pathlib import Path

    from dse.errors import DseError
    from dse.hardware.templates import load_hardware

    root = Path(__file__).parents[2]
    for path, what in ((root / "configs" / "npu.yaml", "got a study config"),
                       (root / "hw_templates" / "systems" / "dgx-h100.yaml", "got a system file")):
        with pytest.raises(DseError) as err:
            load_hardware(path)
        assert what in str(err.value) and "accepted: a hardware template" in str(err.value)
