"""dse.hardware.designs: a DesignBatch holds a template's numbers in SI and each knob moves only its fields."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.hardware.designs import DesignBatch
from dse.hardware.system import load_system
from dse.units import DTYPE_INDEX, MIB, TERA
from tests.hardware.far import with_far_level

NPU = dse.hardware("npu-7nm")
V100 = dse.hardware("v100-sxm")
ARRAYS = [f for f in DesignBatch.__dataclass_fields__ if f not in DesignBatch.STATIC]


def _changed(a: DesignBatch, b: DesignBatch) -> set[str]:
    """Names of the per-design arrays that differ between two batches."""
    return {f for f in ARRAYS if getattr(a, f) is not None
            and not np.array_equal(np.asarray(getattr(a, f), float), np.asarray(getattr(b, f), float), equal_nan=True)}


def test_from_hardware_converts_the_npu_template_to_si() -> None:
    d = DesignBatch.from_hardware(NPU, n=2)
    assert d.n == 2
    assert d.peak_flops.tolist() == pytest.approx([275.2512e12] * 2)
    assert d.capacity[0].tolist() == [12 * MIB, 32 * MIB, 64e9]
    assert d.bandwidth[0].tolist() == pytest.approx([8.6016e12, 4.0e12, 1638.4e9])
    assert d.bw_eff[0].tolist() == [0.9, 0.9, 0.85]
    assert d.reg_bytes[0] == 64 * 1024 and d.overhead_s[0] == pytest.approx(1e-6)
    assert d.offchip.tolist() == [False, False, True] and d.instances.tolist() == [24, 1, 1]
    assert d.sram_level == 1 and d.level_names == ["local", "global", "hbm"]
    assert d.ridge[0] == pytest.approx(275.2512e12 / 1638.4e9)
    assert d.n_net == 0


def test_missing_dtype_modes_take_the_next_wider_native_peak() -> None:
    d = DesignBatch.from_hardware(V100)
    mp = d.matrix_peak[0]
    assert mp[DTYPE_INDEX["bf16"]] == 125e12  # no bf16 tensor mode: runs on the fp16 one
    assert mp[DTYPE_INDEX["fp8"]] == 125e12
    assert mp[DTYPE_INDEX["int8"]] == 125e12  # int8 -> fp8 -> fp16 (FALLBACK order)
    assert np.isnan(mp[DTYPE_INDEX["fp32"]])  # fp32 does not run on fp16 tensor cores
    assert d.vector_peak[0, DTYPE_INDEX["fp32"]] == 15.7e12


def test_with_knobs_moves_exactly_the_searched_fields() -> None:
    d = DesignBatch.from_hardware(NPU, n=2)
    k = d.with_knobs(peak_flops=np.array([100e12, 550.5024e12]))
    assert _changed(d, k) == {"matrix_peak"}
    # every matrix mode scales by the same factor
    assert k.matrix_peak[1, DTYPE_INDEX["fp8"]] == pytest.approx(2 * 550.5024e12)
    assert k.peak_flops.tolist() == pytest.approx([100e12, 550.5024e12])
    b = d.with_knobs(dram_bandwidth=np.array([1e12, 2e12]))
    assert _changed(d, b) == {"bandwidth"} and b.bandwidth[:, 2].tolist() == [1e12, 2e12]
    assert np.array_equal(b.bandwidth[:, :2], d.bandwidth[:, :2])
    s = d.with_knobs(sram_bytes=np.array([8 * MIB, 64 * MIB]))
    assert _changed(d, s) == {"capacity"} and s.capacity[:, 1].tolist() == [8 * MIB, 64 * MIB]


@pytest.mark.parametrize(("field", "value", "attr", "si"), [
    ("compute.register_kib_per_core", 128, "reg_bytes", 128 * 1024),
    ("compute.launch_overhead_us", 3.0, "overhead_s", 3e-6),
    ("compute.matrix.array_rows", 128, "array_rows", 128),
    ("compute.matrix.array_cols", 32, "array_cols", 32),
    ("compute.matrix.efficiency", 0.7, "matrix_eff", 0.7),
    ("compute.vector.efficiency", 0.5, "vector_eff", 0.5),
    ("network.links", 4, "links", 4),
])
def test_with_field_moves_one_array_in_si(field: str, value: float, attr: str, si: float) -> None:
    d = DesignBatch.from_hardware(NPU)
    out = d.with_field(field, np.array([value]))
    assert _changed(d, out) == {attr}
    assert getattr(out, attr)[0] == pytest.approx(si)


@pytest.mark.parametrize(("key", "value", "attr", "si"), [
    ("capacity_mib", 16, "capacity", 16 * MIB),
    ("bandwidth_tbps", 2.5, "bandwidth", 2.5e12),
    ("efficiency", 0.6, "bw_eff", 0.6),
])
def test_with_field_on_a_memory_level_moves_only_that_level(key: str, value: float, attr: str, si: float) -> None:
    d = DesignBatch.from_hardware(NPU)
    out = d.with_field(f"memory.local.{key}", np.array([value]))
    assert _changed(d, out) == {attr}
    assert getattr(out, attr)[0, 0] == pytest.approx(si)
    assert np.array_equal(getattr(out, attr)[0, 1:], getattr(d, attr)[0, 1:])


def test_clock_scales_every_peak_and_composes_with_itself() -> None:
    d = DesignBatch.from_hardware(NPU)
    out = d.with_field("compute.clock_ghz", np.array([2.8]))
    assert _changed(d, out) == {"clock_scale", "matrix_peak", "vector_peak"}
    assert out.clock_scale[0] == pytest.approx(2.0)
    assert out.peak_flops[0] == pytest.approx(2 * 275.2512e12)
    # setting the clock again is relative to the template, not to the last value
    again = out.with_field("compute.clock_ghz", np.array([0.7]))
    assert again.peak_flops[0] == pytest.approx(0.5 * 275.2512e12)
    assert again.vector_peak[0, DTYPE_INDEX["fp32"]] == pytest.approx(0.5 * 34.4064e12)


def test_unknown_field_lists_the_searchable_ones() -> None:
    d = DesignBatch.from_hardware(NPU)
    with pytest.raises(ValueError, match=r"cannot search 'memory.hbm.latency_ns'; accepted: compute.clock_ghz, .*"
                                         r"memory.hbm.efficiency$"):
        d.with_field("memory.hbm.latency_ns", np.array([1.0]))
    assert "system.board-ring.links_per_chip" not in d.searchable_fields()


def test_system_levels_become_arrays_and_the_chip_links_follow_network_links() -> None:
    d = DesignBatch.from_hardware(NPU, n=2).with_system(load_system("npu-board"))
    assert d.n_net == 2
    assert d.net_links[0].tolist() == [8, 1]  # level 0 takes the chip's 8 links
    assert d.net_link_bw[0].tolist() == [25e9, 50e9]
    assert d.net_eff[0].tolist() == [0.8, 0.75]
    assert d.net_chip_linked.tolist() == [True, False]
    out = d.with_field("network.links", np.array([4, 12]))
    assert out.links.tolist() == [4, 12] and out.net_links[:, 0].tolist() == [4, 12]
    assert out.net_links[:, 1].tolist() == [1, 1]
    lvl = d.with_field("system.board-ring.links_per_chip", np.array([2, 6]))
    assert lvl.links.tolist() == [2, 6]  # that level uses the chip's SerDes: the area sees it
    bw = d.with_field("system.ethernet-400g.link_bandwidth_gbps", np.array([100, 200]))
    assert _changed(d, bw) == {"net_link_bw"} and bw.net_link_bw[:, 1].tolist() == [100e9, 200e9]
    assert "system.ethernet-400g.efficiency" in d.searchable_fields()
    assert d.with_system(None).n_net == 0


def test_stack_and_take_keep_rows_and_share_the_static_parts() -> None:
    a = DesignBatch.from_hardware(NPU).with_knobs(sram_bytes=np.array([4 * MIB]))
    b = DesignBatch.from_hardware(NPU).with_knobs(sram_bytes=np.array([64 * MIB]))
    s = DesignBatch.stack([a, b, a])
    assert s.n == 3 and s.capacity[:, 1].tolist() == [4 * MIB, 64 * MIB, 4 * MIB]
    t = s.take([1])
    assert t.n == 1 and t.capacity[0, 1] == 64 * MIB and t.base is NPU and t.instances is s.instances


def test_sram_level_needs_an_on_chip_level() -> None:
    data = V100.model_dump(mode="python", exclude_none=True)
    data["memory"] = [m for m in data["memory"] if m["kind"] == "dram"]
    d = DesignBatch.from_hardware(dse.hardware(data))
    with pytest.raises(ValueError, match="no on-chip"):
        _ = d.sram_level


def test_to_hardware_writes_a_loadable_template_with_the_design_numbers() -> None:
    d = DesignBatch.from_hardware(NPU).with_knobs(peak_flops=np.array([550.5024e12]),
                                                   dram_bandwidth=np.array([3.2e12]), sram_bytes=np.array([96 * MIB]))
    d = d.with_field("compute.clock_ghz", np.array([2.1]))
    hw = d.to_hardware(0, "npu-big", note="test")
    assert hw.name == "npu-big"
    assert hw.peak_flops == pytest.approx(550.5024e12 * 1.5)
    assert hw.compute.clock_ghz == pytest.approx(2.1)
    assert hw.memory[1].capacity_bytes == pytest.approx(96 * MIB)
    assert hw.memory[2].bandwidth_bps == pytest.approx(3.2e12)
    assert "resized by dse (test)" in hw.memory[1].source and "resized" not in hw.memory[0].source
    back = DesignBatch.from_hardware(hw)
    for f in ("matrix_peak", "vector_peak", "capacity", "bandwidth", "bw_eff", "reg_bytes"):
        np.testing.assert_allclose(np.nan_to_num(getattr(back, f)), np.nan_to_num(getattr(d, f)), rtol=1e-8)


@settings(max_examples=30, deadline=None)
@given(peak=st.floats(1.0, 5000.0), bw=st.floats(0.05, 20.0), sram=st.floats(1.0, 4096.0))
def test_to_hardware_round_trips_any_knob_setting(peak: float, bw: float, sram: float) -> None:
    d = DesignBatch.from_hardware(NPU).with_knobs(peak_flops=np.array([peak * TERA]),
                                                   dram_bandwidth=np.array([bw * TERA]), sram_bytes=np.array([sram * MIB]))
    back = DesignBatch.from_hardware(d.to_hardware(0, "x"))
    assert back.peak_flops[0] == pytest.approx(peak * TERA, rel=1e-6)
    assert back.dram_bandwidth[0] == pytest.approx(bw * TERA, rel=1e-8)
    assert back.capacity[0, 1] == pytest.approx(sram * MIB, rel=1e-8)


def test_the_bandwidth_knob_sets_the_main_memory_by_kind_when_it_is_not_the_last_level() -> None:
    h100 = dse.hardware("h100-sxm")
    d0, d1 = DesignBatch.from_hardware(h100), DesignBatch.from_hardware(with_far_level(h100))
    bw = np.array([2.0e12, 4.5e12])
    k0, k1 = d0.take([0, 0]).with_knobs(dram_bandwidth=bw), d1.take([0, 0]).with_knobs(dram_bandwidth=bw)
    assert k1.bandwidth[:, 2].tolist() == bw.tolist() and (k1.bandwidth[:, 3] == 1e6 * TERA).all()
    assert k1.dram_bandwidth.tolist() == k0.dram_bandwidth.tolist() == bw.tolist()
    assert k1.offchip_name == k0.offchip_name == "hbm" and (k1.offchip_capacity == k0.offchip_capacity).all()
    assert k1.offchip.tolist() == [False, False, True, True]
    assert k1.sram_level == k0.sram_level == 1


def test_a_written_design_keeps_dtype_efficiency_at_its_ratio_to_efficiency() -> None:
    """to_hardware rewrites efficiency from matrix_eff; dtype_efficiency follows at the same ratio, so the
    written template predicts what the design did."""
    from dataclasses import replace

    from dse.hardware.templates import load_hardware

    hw = load_hardware("mi300x")
    d = DesignBatch.from_hardware(hw)
    d2 = replace(d, matrix_eff=d.matrix_eff * 0.8)
    out = d2.to_hardware(0, "mi300x-slow")
    assert out.compute.matrix.efficiency == pytest.approx(0.511 * 0.8, abs=1e-4)
    assert out.compute.matrix.dtype_efficiency["fp8"] == pytest.approx(0.347 * 0.8, abs=1e-4)
    wl = dse.gemm(8192, 8192, 8192, dtype="fp8")
    assert dse.predict(wl, out).time_s == pytest.approx(dse.predict(wl, d2).time_s, rel=1e-3)
    assert np.isclose(d.matrix_eff[0], 0.511)
