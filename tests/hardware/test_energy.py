"""dse.hardware.energy: joules per FLOP and per byte by level class, and leakage, from the node file by hand."""

from __future__ import annotations

import numpy as np
import pytest

import dse
from dse.hardware.designs import DesignBatch
from dse.hardware.energy import (
    PJ,
    flop_energy,
    forwarding_bytes,
    is_systolic,
    level_energy_per_byte,
    matrix_flop_energy,
    static_power,
)
from dse.hardware.templates import load_node
from dse.units import DTYPE_INDEX
from tests.hardware.far import with_far_level

N7 = load_node("7nm")
NPU = DesignBatch.from_hardware(dse.hardware("npu-7nm"))  # local (24 private copies), global, hbm
A100 = DesignBatch.from_hardware(dse.hardware("a100-80gb"))  # smem (108 private), l2, hbm


def test_level_class_follows_kind_and_privacy() -> None:
    local, glob, dram = (N7.energy_pj_per_byte_sram_local.value, N7.energy_pj_per_byte_sram_global.value,
                         N7.energy_pj_per_byte_dram.value)
    np.testing.assert_allclose(level_energy_per_byte(NPU, N7), np.array([local, glob, dram]) * PJ)
    np.testing.assert_allclose(level_energy_per_byte(A100, N7), np.array([local, glob, dram]) * PJ)
    assert local < glob < dram


E_REG = N7.energy_pj_per_byte_register.value


def test_flop_energy_by_dtype_with_fallback_to_the_widest_figure() -> None:
    gpu = flop_energy(N7)
    assert gpu[DTYPE_INDEX["bf16"]] == pytest.approx(N7.energy_pj_per_flop.values["bf16"] * PJ)
    sys = flop_energy(N7, systolic=True)  # output-stationary: both operands forwarded per MAC, 2 FLOPs
    vals = N7.energy_pj_per_flop_systolic.values
    assert sys[DTYPE_INDEX["int8"]] == pytest.approx((vals["int8"] + 2 * 1 / 2 * E_REG) * PJ)
    assert "fp64" not in vals and sys[DTYPE_INDEX["fp64"]] == pytest.approx((max(vals.values()) + 4 * E_REG) * PJ)
    assert is_systolic(NPU) and not is_systolic(A100)


def test_a_systolic_pe_pays_for_the_operands_it_forwards_by_dataflow() -> None:
    """Per MAC a weight-stationary PE latches its activation and its 4-byte partial sum for the next PEs, an
    output-stationary one both operands (Kung 1982): at the register energy per byte, over the MAC's 2 FLOPs. The
    GPU figure, a whole-chip fit, takes nothing more."""
    pe = N7.energy_pj_per_flop_systolic.values
    ws, os_ = flop_energy(N7, True, "weight_stationary") / PJ, flop_energy(N7, True, "output_stationary") / PJ
    assert forwarding_bytes("bf16", "weight_stationary") == 6 and forwarding_bytes("bf16", "output_stationary") == 4
    assert forwarding_bytes("int8", "weight_stationary") == 5 and forwarding_bytes("mxfp8", "output_stationary") == 2
    assert ws[DTYPE_INDEX["bf16"]] == pytest.approx(pe["bf16"] + 3 * E_REG)
    assert os_[DTYPE_INDEX["bf16"]] == pytest.approx(pe["bf16"] + 2 * E_REG)
    assert ws[DTYPE_INDEX["int8"]] == pytest.approx(pe["int8"] + 2.5 * E_REG)  # the int32 sum outweighs the byte
    assert ws[DTYPE_INDEX["fp8"]] < os_[DTYPE_INDEX["bf16"]] < ws[DTYPE_INDEX["bf16"]]
    assert matrix_flop_energy(A100, N7) == pytest.approx(flop_energy(N7))
    tpu = DesignBatch.from_hardware(dse.hardware("tpu-v4"))
    assert matrix_flop_energy(tpu, N7) == pytest.approx(flop_energy(N7, True, "weight_stationary"))


def test_static_power_is_the_leakage_share_of_peak_dynamic_power_by_hand() -> None:
    f = N7.leakage_fraction.value
    e_flop = (N7.energy_pj_per_flop_systolic.values["bf16"] + 2 * E_REG) * PJ  # npu-7nm: output-stationary
    e_byte = level_energy_per_byte(NPU, N7)
    peak_dyn = 275.2512e12 * e_flop + 8.6016e12 * e_byte[0] + 4.0e12 * e_byte[1] + 1638.4e9 * e_byte[2]
    assert static_power(NPU, N7)[0] == pytest.approx(f / (1 - f) * peak_dyn)


def test_static_power_grows_linearly_with_cores_and_bandwidth() -> None:
    d = DesignBatch.stack([NPU] * 4).with_knobs(peak_flops=np.array([12, 24, 36, 36]) * 11.4688e12,
                                                dram_bandwidth=np.array([1.2288e12, 1.2288e12, 1.2288e12, 2.048e12]))
    p = static_power(d, N7)
    f = N7.leakage_fraction.value
    assert d.cores.tolist() == [12, 24, 36, 36] and d.dram_stacks.tolist() == [3, 3, 3, 5]
    assert p[2] - p[1] == pytest.approx(p[1] - p[0])  # each core brings the same arrays, lanes and scratchpad
    e_flop = N7.energy_pj_per_flop_systolic.values["bf16"] * PJ
    assert p[1] - p[0] > f / (1 - f) * 12 * 11.4688e12 * e_flop  # the arrays, and the rest of the cores too
    assert p[3] - p[2] == pytest.approx(f / (1 - f) * 0.8192e12 * N7.energy_pj_per_byte_dram.value * PJ)


def test_a_second_off_chip_level_is_priced_by_its_kind_not_its_place() -> None:
    far = DesignBatch.from_hardware(with_far_level(dse.hardware("a100-80gb")))
    e = level_energy_per_byte(far, N7)
    assert e[3] == e[2] == N7.energy_pj_per_byte_dram.value * PJ


def test_a_block_scaled_mac_costs_its_elements_energy() -> None:
    """bfp8 / bfp4 MACs are fixed-point on their mantissas within a block (int8 / int4 class), an MX format's its
    element type's (dse.units.BlockFormat.element)."""
    node = load_node("7nm")
    e = flop_energy(node, systolic=True)
    assert e[DTYPE_INDEX["bfp8"]] == e[DTYPE_INDEX["int8"]] and e[DTYPE_INDEX["bfp4"]] == e[DTYPE_INDEX["int4"]]
    assert e[DTYPE_INDEX["mxfp8"]] == e[DTYPE_INDEX["fp8"]]
    assert e[DTYPE_INDEX["bfp8"]] < e[DTYPE_INDEX["bf16"]]
