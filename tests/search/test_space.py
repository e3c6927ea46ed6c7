"""dse.search.space: config ranges -> optuna distributions and grids; trial parameters -> designs."""

from __future__ import annotations

import math

import numpy as np
import optuna
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.config import Space
from dse.cost.area import area
from dse.hardware.designs import DesignBatch
from dse.search.space import base_knobs, designs_from_params, distributions, grid
from dse.units import MIB

NPU = dse.hardware("npu-7nm")  # hbm: 4 stacks x 409.6 GB/s
BASE = DesignBatch.from_hardware(NPU)
SPACE = Space.model_validate({
    "peak_tflops": {"low": 64, "high": 1024},
    "dram_bandwidth_tbps": {"low": 0.4, "high": 4.0, "log": False},
    "params": [{"field": "network.links", "low": 2, "high": 16, "type": "int"},
               {"field": "compute.clock_ghz", "choices": [1.0, 1.4, 2.0]}],
})


def test_distributions_follow_the_config_ranges() -> None:
    d = distributions(SPACE)
    assert list(d) == ["peak_tflops", "dram_bandwidth_tbps", "network.links", "compute.clock_ghz"]
    assert d["peak_tflops"] == optuna.distributions.FloatDistribution(64, 1024, log=True)
    assert d["dram_bandwidth_tbps"] == optuna.distributions.FloatDistribution(0.4, 4.0, log=False)
    assert d["network.links"] == optuna.distributions.IntDistribution(2, 16, log=True)
    assert d["compute.clock_ghz"] == optuna.distributions.CategoricalDistribution([1.0, 1.4, 2.0])
    split = distributions(Space.model_validate({"split": {"total_area_mm2": 600}}))
    assert list(split) == ["split_compute", "split_sram", "split_dram"]
    assert split["split_sram"] == optuna.distributions.FloatDistribution(0.05, 1.0, log=False)


def test_grid_is_geometric_for_log_linear_otherwise_and_whole_for_ints() -> None:
    g = grid(SPACE, 5)
    assert g["peak_tflops"] == pytest.approx([64, 128, 256, 512, 1024])
    assert g["dram_bandwidth_tbps"] == pytest.approx([0.4, 1.3, 2.2, 3.1, 4.0])
    assert g["network.links"] == [2, 3, 6, 10, 16]  # 2 * 2^(3k/4) rounded: 2, 3.36, 5.66, 9.51, 16
    assert g["compute.clock_ghz"] == [1.0, 1.4, 2.0]


def test_base_knobs_are_the_template_numbers_in_config_units() -> None:
    k = base_knobs(BASE)
    assert k == pytest.approx({"peak_tflops": 275.2512, "dram_bandwidth_tbps": 1.6384, "sram_mib": 32.0})


def test_searched_dram_bandwidth_buys_whole_stacks() -> None:
    d = designs_from_params(BASE, [{"dram_bandwidth_tbps": 1.0}, {"dram_bandwidth_tbps": 1.6384},
                                   {"dram_bandwidth_tbps": 0.01}])
    # ceil(1000 / 409.6) = 3 stacks; exactly 4 stacks stays 4; at least one stack
    assert d.dram_bandwidth.tolist() == pytest.approx([3 * 409.6e9, 4 * 409.6e9, 409.6e9])
    # a template without a per-channel figure is left alone (board DRAM naming no part, LPDDR or DDR: HBM must name
    # its stack or its part)
    data = NPU.model_dump(mode="python", exclude_none=True)
    data["memory"][2]["kind"] = "ddr"
    for field in ("stack_bandwidth_gbps", "generation"):
        data["memory"][2].pop(field)
    v = DesignBatch.from_hardware(dse.hardware(data)).with_knobs(dram_bandwidth=np.array([1.234e12]))
    assert v.dram_bandwidth[0] == 1.234e12
    # capacity follows the stacks bought: 16 GB per HBM2e stack (64 GB over the template's 4)
    assert d.offchip_capacity.tolist() == pytest.approx([48e9, 64e9, 16e9])


def test_params_set_the_knobs_and_fields_and_leave_the_rest_at_the_base() -> None:
    d = designs_from_params(BASE, [{"peak_tflops": 100.0, "sram_mib": 8.0, "network.links": 4},
                                   {"peak_tflops": 900.0, "sram_mib": 128.0, "network.links": 12}])
    assert d.n == 2
    # whole cores of 64 x 64 MACs x 2 x 1.4 GHz = 11.4688 TFLOP/s: round(100 / 11.47) = 9, round(900 / 11.47) = 78
    assert d.cores.tolist() == [9, 78]
    assert d.peak_flops.tolist() == pytest.approx([9 * 11.4688e12, 78 * 11.4688e12])
    assert d.capacity[:, 1].tolist() == [8 * MIB, 128 * MIB]
    assert d.links.tolist() == [4, 12]
    assert np.array_equal(d.bandwidth[:, 1:], np.tile(BASE.bandwidth[:, 1:], (2, 1)))  # not searched, not touched
    # the per-core scratchpad comes with the cores: 512 KiB and 256 B/clk per core
    assert d.capacity[:, 0].tolist() == [9 * 0.5 * MIB, 78 * 0.5 * MIB]
    assert d.bandwidth[:, 0].tolist() == pytest.approx(BASE.bandwidth[0, 0] * np.array([9, 78]) / 24)
    cols = designs_from_params(BASE, {"peak_tflops": np.array([100.0, 900.0])})
    assert cols.peak_flops.tolist() == pytest.approx(d.peak_flops.tolist())


def test_split_shares_the_die_area_in_proportion_to_the_weights() -> None:
    space = Space.model_validate({"split": {"total_area_mm2": 600}})
    cols = {"split_compute": np.array([1.0, 0.2]), "split_sram": np.array([1.0, 0.5]),
            "split_dram": np.array([1.0, 0.3])}
    d = designs_from_params(BASE, cols, space)
    parts = area(d).parts
    node = area(BASE).node
    fixed = sum(area(BASE).parts[k][0] for k in ("noc", "serdes", "fixed"))  # not sized by the split
    avail = 600 - fixed
    f = np.array([[1 / 3, 1 / 3, 1 / 3], [0.2, 0.5, 0.3]])
    glob = d.capacity[:, 1] / MIB * node.scratchpad_mm2_per_mib.value
    cores = parts["matrix"] + parts["vector"] + parts["sram"] - glob  # arrays, lanes and scratchpad of the cores
    per_core = cores / d.cores
    assert np.all(np.abs(cores - f[:, 0] * avail) <= 0.5 * per_core + 1e-9)  # the nearest whole core
    macro = 128 / 1024 * node.scratchpad_mm2_per_mib.value
    assert np.all(np.abs(glob - f[:, 1] * avail) <= 0.5 * macro + 1e-9)  # the nearest whole macro
    per_stack = node.dram_phy_mm2_per_stack.value + node.dram_controller_mm2_per_stack.value
    stacks = [math.floor(f[i, 2] * avail / per_stack) for i in range(2)]
    assert d.dram_bandwidth.tolist() == pytest.approx([s * 409.6e9 for s in stacks])
    assert np.all(area(d).total <= 600 + 1e-6)
    with pytest.raises(ValueError, match="split weights given without a split search space"):
        designs_from_params(BASE, cols)


@settings(max_examples=25, deadline=None)
@given(a=st.floats(1.0, 2048.0), b=st.floats(1.0, 2048.0), peak=st.floats(50.0, 2000.0))
def test_area_grows_with_sram_capacity_and_peak(a: float, b: float, peak: float) -> None:
    lo, hi = sorted((a, b))
    d = designs_from_params(BASE, [{"sram_mib": lo, "peak_tflops": peak}, {"sram_mib": hi, "peak_tflops": peak},
                                   {"sram_mib": hi, "peak_tflops": peak * 1.5}])
    tot = area(d).total
    assert tot[0] <= tot[1] < tot[2]
    assert d.cores[2] == max(1, round(1.5 * peak / 11.4688)) and d.peak_flops[2] >= d.peak_flops[1]


@pytest.mark.parametrize(("low", "high", "ok"), [(0.001, 0.002, False), (1.3, 1.6, False), (0.4, 0.8, True),
                                                   (0.4096, 0.5, True)])
def test_a_bandwidth_range_with_no_whole_stack_is_one_line(tmp_path, capsys, low, high, ok) -> None:
    """Designs are whole stacks of 409.6 GB/s on npu-7nm: a range below one stack, or between 3 and 4 stacks (1.3
    .. 1.6 TB/s), would be built entirely outside itself; it is refused before any trial, naming the field."""
    import copy

    from dse.cli import main
    from tests.conftest import SMALL_STUDY, write_config

    data = copy.deepcopy(SMALL_STUDY)
    data["search"]["n_trials"] = 2
    data["search"]["space"] = {"peak_tflops": {"low": 200, "high": 300},
                               "dram_bandwidth_tbps": {"low": low, "high": high}}
    rc = main(["run", str(write_config(tmp_path, data)), "--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err
    if ok:
        assert rc == 0, err
        return
    assert rc == 2 and err.count("\n") == 1 and "search.space.dram_bandwidth_tbps: got" in err
    assert "holds no whole number of hbm stacks of 0.4096 TB/s" in err


def test_a_searched_dram_part_widens_the_capacity_a_study_can_reach() -> None:
    """The pre-trial "can never fit" bound: without a part search, npu-7nm's 4 TB/s reach is 8 HBM2E stacks of 16 GB
    (its package holds 8); with HBM4 among the parts, the same 8 stacks can hold 36 GB each."""
    from dse.search.space import max_offchip_capacity

    knob = {"dram_bandwidth_tbps": {"low": 0.4, "high": 4.0}}
    alone, _ = max_offchip_capacity(Space.model_validate(knob), BASE, 8)
    parts = Space.model_validate({**knob, "params": [{"field": "memory.hbm.generation", "choices": ["hbm2e", "hbm4"]}]})
    wide, how = max_offchip_capacity(parts, BASE, 8)
    assert alone / 1e9 == pytest.approx(8 * 16.0) and wide / 1e9 == pytest.approx(8 * 36.0)
    assert "8 hbm stacks x 36 GB" in how


def test_the_part_applies_before_the_bandwidth_knob_in_a_trial() -> None:
    """designs_from_params: a trial's part first, then its bandwidth target bought in whole stacks of that part."""
    d = designs_from_params(BASE, [{"dram_bandwidth_tbps": 3.0, "memory.hbm.generation": "hbm4"},
                                   {"dram_bandwidth_tbps": 3.0, "memory.hbm.generation": "hbm2e"}])
    assert list(d.dram_stacks) == [2, 8] and d.dram_bandwidth / 1e12 == pytest.approx([4.096, 3.2768])
