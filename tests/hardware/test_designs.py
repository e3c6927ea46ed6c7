"""dse.hardware.designs: a DesignBatch holds a template's numbers in SI and each knob moves only its fields."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.errors import DseError
from dse.hardware.designs import DesignBatch
from dse.hardware.system import load_system
from dse.hardware.templates import list_templates
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


def test_a_peak_target_is_built_from_whole_cores() -> None:
    d = DesignBatch.from_hardware(NPU, n=2)
    k = d.with_knobs(peak_flops=np.array([100e12, 550.5024e12]))
    # each core brings its arrays, vector lanes and per-core scratchpad: nothing else moves
    assert _changed(d, k) == {"matrix_peak", "vector_peak", "cores", "capacity", "bandwidth"}
    assert k.cores.tolist() == [9, 48]  # round(100 / 11.4688), 550.5 / 11.4688 = 48 exactly
    built = k.cores * k.array_rows * k.array_cols * 2 * NPU.compute.clock_ghz * 1e9
    assert k.peak_flops.tolist() == pytest.approx(built.tolist(), rel=1e-12)
    assert k.matrix_peak[1, DTYPE_INDEX["fp8"]] == pytest.approx(2 * 550.5024e12)  # every mode scales alike
    assert k.vector_peak[:, DTYPE_INDEX["fp32"]].tolist() == pytest.approx([34.4064e12 * 9 / 24, 34.4064e12 * 2])
    assert k.capacity[:, 0].tolist() == [9 * 0.5 * MIB, 48 * 0.5 * MIB]  # 512 KiB local per core
    assert np.array_equal(k.capacity[:, 1:], d.capacity[:, 1:]) and np.array_equal(k.bandwidth[:, 1:], d.bandwidth[:, 1:])
    assert k.level_instances[:, 0].tolist() == [9, 48]
    tiny = d.with_knobs(peak_flops=np.array([1e9, 1e9]))
    assert tiny.cores.tolist() == [2, 2]  # at least two: one core's private scratchpad would be written as shared


def test_a_dram_target_buys_whole_stacks_with_their_capacity() -> None:
    d = DesignBatch.from_hardware(NPU, n=2)
    b = d.with_knobs(dram_bandwidth=np.array([1e12, 2e12]))
    assert _changed(d, b) == {"bandwidth", "capacity"}
    assert b.bandwidth[:, 2].tolist() == pytest.approx([3 * 409.6e9, 5 * 409.6e9])  # ceil(BW / 409.6 GB/s)
    assert b.dram_stacks.tolist() == [3, 5] and b.offchip_capacity.tolist() == pytest.approx([48e9, 80e9])
    assert np.array_equal(b.bandwidth[:, :2], d.bandwidth[:, :2])


def test_an_sram_target_is_whole_macros() -> None:
    d = DesignBatch.from_hardware(NPU, n=2)
    s = d.with_knobs(sram_bytes=np.array([8 * MIB, 64.01 * MIB]))
    assert _changed(d, s) == {"capacity"} and s.capacity[:, 1].tolist() == [8 * MIB, 64 * MIB]
    assert d.with_knobs(sram_bytes=np.array([1.0, 1.0])).capacity[:, 1].tolist() == [128 * 1024] * 2


@settings(max_examples=60, deadline=None)
@given(st.floats(1.0, 5000.0), st.sampled_from([16, 64, 128, 256]), st.sampled_from([0.8, 1.4, 2.0]),
       st.floats(0.05, 12.0))
def test_every_built_design_is_buildable(peak_tflops: float, rows: int, clock: float, bw_tbps: float) -> None:
    """Whatever the targets, peak = cores x rows x cols x 2 x clock with whole cores, and DRAM is whole stacks."""
    d = (DesignBatch.from_hardware(NPU).with_field("compute.matrix.array_rows", np.array([rows]))
         .with_field("compute.clock_ghz", np.array([clock]))
         .with_knobs(peak_flops=np.array([peak_tflops * TERA]), dram_bandwidth=np.array([bw_tbps * TERA])))
    cores = float(d.cores[0])
    assert cores == round(cores) and cores >= 1
    assert d.peak_flops[0] == pytest.approx(cores * rows * 64 * 2 * clock * 1e9, rel=1e-9)
    stacks = d.dram_bandwidth[0] / 409.6e9
    assert stacks == pytest.approx(round(stacks)) and d.offchip_capacity[0] == pytest.approx(round(stacks) * 16e9)


def test_doubling_cores_in_a_template_doubles_its_peak_and_grows_its_area() -> None:
    from dse.cost.area import area

    data = NPU.model_dump(mode="python", exclude_none=True)
    data["compute"]["cores"] = 48
    data["memory"][0]["instances"] = 48
    with pytest.raises(Exception, match="arrays per core"):  # the stated peak no longer matches the build
        dse.hardware(data)
    d = DesignBatch.from_hardware(NPU).with_field("compute.cores", np.array([48]))
    assert d.peak_flops[0] == pytest.approx(2 * 275.2512e12)
    assert area(d).total[0] > area(NPU).total[0] + 50


@pytest.mark.parametrize(("field", "value", "attr", "si"), [
    ("compute.register_kib_per_core", 128, "reg_bytes", 128 * 1024),
    ("compute.launch_overhead_us", 3.0, "overhead_s", 3e-6),
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
    ("capacity_mib", 3, "capacity", 3 * MIB),
])
def test_with_field_on_a_memory_level_moves_only_that_level(key: str, value: float, attr: str, si: float) -> None:
    d = DesignBatch.from_hardware(NPU)
    out = d.with_field(f"memory.local.{key}", np.array([value]))
    assert _changed(d, out) == {attr}
    assert getattr(out, attr)[0, 0] == pytest.approx(si)
    assert np.array_equal(getattr(out, attr)[0, 1:], getattr(d, attr)[0, 1:])


@pytest.mark.parametrize(("field", "value", "k"), [("compute.matrix.array_rows", 128, 2.0),
                                                     ("compute.matrix.array_cols", 32, 0.5)])
def test_the_array_shape_sets_the_matrix_peak(field: str, value: int, k: float) -> None:
    d = DesignBatch.from_hardware(NPU)
    out = d.with_field(field, np.array([value]))
    assert _changed(d, out) == {"matrix_peak", field.rsplit(".", 1)[1]}
    assert out.peak_flops[0] == pytest.approx(k * 275.2512e12)


def test_clock_scales_every_peak_and_composes_with_itself() -> None:
    d = DesignBatch.from_hardware(NPU)
    out = d.with_field("compute.clock_ghz", np.array([2.8]))
    assert _changed(d, out) == {"clock_scale", "matrix_peak", "vector_peak", "bandwidth"}
    assert out.clock_scale[0] == pytest.approx(2.0)
    # on-chip levels move their bytes per clock; DRAM keeps its own interface clock
    np.testing.assert_allclose(out.bandwidth[0, ~d.offchip], 2.0 * d.bandwidth[0, ~d.offchip])
    np.testing.assert_array_equal(out.bandwidth[0, d.offchip], d.bandwidth[0, d.offchip])
    assert out.peak_flops[0] == pytest.approx(2 * 275.2512e12)
    # setting the clock again is relative to the template, not to the last value
    again = out.with_field("compute.clock_ghz", np.array([0.7]))
    assert again.peak_flops[0] == pytest.approx(0.5 * 275.2512e12)
    assert again.vector_peak[0, DTYPE_INDEX["fp32"]] == pytest.approx(0.5 * 34.4064e12)
    np.testing.assert_allclose(again.bandwidth[0, ~d.offchip], 0.5 * d.bandwidth[0, ~d.offchip])


def test_unknown_field_lists_the_searchable_ones() -> None:
    d = DesignBatch.from_hardware(NPU)
    with pytest.raises(ValueError, match=r"cannot search 'memory.hbm.latency_ns'; accepted: compute.cores, "
                                         r"compute.clock_ghz, .*memory.hbm.efficiency$"):
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
    a = DesignBatch.from_hardware(NPU).with_knobs(sram_bytes=np.array([4 * MIB]))  # whole 128 KiB macros
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
    assert hw.memory[2].bandwidth_bps == pytest.approx(8 * 409.6e9)  # 3.2 TB/s asked: 8 whole stacks
    assert hw.memory[2].capacity_bytes == pytest.approx(128e9)
    assert hw.compute.cores == 48 and hw.memory[0].instances == 48
    assert "built by dse (test): 48 cores x 64x64 MACs x 2 FLOP x 2.1 GHz = 825.8 TFLOP/s bf16; 8 x 409.6 GB/s" \
        in hw.compute.matrix.source
    assert "resized by dse (test)" in hw.memory[1].source
    back = DesignBatch.from_hardware(hw)
    for f in ("matrix_peak", "vector_peak", "capacity", "bandwidth", "bw_eff", "reg_bytes"):
        np.testing.assert_allclose(np.nan_to_num(getattr(back, f)), np.nan_to_num(getattr(d, f)), rtol=1e-8)


@settings(max_examples=30, deadline=None)
@given(peak=st.floats(1.0, 5000.0), bw=st.floats(0.05, 20.0), sram=st.floats(1.0, 4096.0))
def test_to_hardware_round_trips_any_knob_setting(peak: float, bw: float, sram: float) -> None:
    d = DesignBatch.from_hardware(NPU).with_knobs(peak_flops=np.array([peak * TERA]),
                                                   dram_bandwidth=np.array([bw * TERA]), sram_bytes=np.array([sram * MIB]))
    back = DesignBatch.from_hardware(d.to_hardware(0, "x"))
    for f in ("matrix_peak", "vector_peak", "capacity", "bandwidth", "cores", "level_instances"):
        np.testing.assert_allclose(np.nan_to_num(getattr(back, f)), np.nan_to_num(getattr(d, f)), rtol=1e-8)
    if back.cores[0] > back.fewest_cores()[0]:  # the nearest whole core
        assert abs(back.peak_flops[0] - peak * TERA) <= 0.5 * back.core_peak_flops[0] * (1 + 1e-9)
    assert bw * TERA <= back.dram_bandwidth[0] < bw * TERA + 409.6e9  # the fewest whole stacks that reach it


def test_the_bandwidth_knob_sets_the_main_memory_by_kind_when_it_is_not_the_last_level() -> None:
    h100 = dse.hardware("h100-sxm")
    d0, d1 = DesignBatch.from_hardware(h100), DesignBatch.from_hardware(with_far_level(h100))
    bw = np.array([2.0e12, 4.5e12])
    k0, k1 = d0.take([0, 0]).with_knobs(dram_bandwidth=bw), d1.take([0, 0]).with_knobs(dram_bandwidth=bw)
    whole = np.ceil(bw / 670e9) * 670e9  # whole HBM3 stacks of 670 GB/s
    assert k1.bandwidth[:, 2].tolist() == pytest.approx(whole.tolist()) and (k1.bandwidth[:, 3] == 1e6 * TERA).all()
    assert k1.dram_bandwidth.tolist() == k0.dram_bandwidth.tolist() == pytest.approx(whole.tolist())
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
    assert out.compute.matrix.efficiency == pytest.approx(0.528 * 0.8, abs=1e-4)
    assert out.compute.matrix.dtype_efficiency["fp8"] == pytest.approx(0.349 * 0.8, abs=1e-4)
    wl = dse.gemm(8192, 8192, 8192, dtype="fp8")
    assert dse.predict(wl, out).time_s == pytest.approx(dse.predict(wl, d2).time_s, rel=1e-3)
    assert np.isclose(d.matrix_eff[0], 0.528)


def test_a_written_design_keeps_a_levels_write_bandwidth_at_its_ratio() -> None:
    """An L2 with a write bandwidth of its own (h200: 9.91 read, 4.56 write TB/s) resized by a design keeps the ratio in
    the written template, which predicts what the design did."""
    from dse.hardware.templates import load_hardware

    hw = load_hardware("h200")
    d = DesignBatch.from_hardware(hw).with_field("memory.l2.bandwidth_tbps", np.array([19.82]))
    assert d.write_ratio[1] == pytest.approx(9.91 / 4.56)
    out = d.to_hardware(0, "h200-wide-l2")
    assert out.memory[1].write_bandwidth_tbps == pytest.approx(9.12, rel=1e-3)
    assert out.memory[1].write_ratio == pytest.approx(9.91 / 4.56, rel=1e-3)
    wl = dse.workload("copy:2000000", dtype="fp64")
    assert dse.predict(wl, out).time_s == pytest.approx(dse.predict(wl, d).time_s, rel=1e-3)


def test_a_design_beyond_a_physical_limit_is_one_line_naming_the_field() -> None:
    from dse.errors import DseError

    d = DesignBatch.from_hardware(NPU).with_knobs(peak_flops=np.array([2e6 * TERA]))
    with pytest.raises(DseError) as exc:
        d.to_hardware(0, "x")
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("design x: compute.matrix.peak_tflops.bf16: got ")
    assert "accepted: a number <= 1000000.0" in msg


def test_the_build_text_names_spare_cores_and_a_written_design_keeps_them() -> None:
    d = DesignBatch.from_hardware(dse.hardware("npu-7nm"), 2).with_field("compute.spare_cores", np.array([0.0, 2.0]))
    assert "spare" not in d.build_text(0)
    assert "24 cores x 64x64 MACs x 2 FLOP x 1.4 GHz = 275.3 TFLOP/s bf16 (+2 spare cores fused off for yield)" \
        in d.build_text(1)
    assert d.to_hardware(1, "x").compute.spare_cores == 2 and d.to_hardware(0, "x").compute.spare_cores == 0


# ---------------------------------------------------------------- die-to-die links (package.dies)

def _split(name: str, dies: list[dict]) -> DesignBatch:
    """Template ``name`` with its package's die list replaced by ``dies``, as a batch of one."""
    data = dse.hardware(name).model_dump(mode="python", exclude_none=True)
    data["package"] = {**data.get("package", {"source": "test"}), "dies": dies}
    return DesignBatch.from_hardware(dse.hardware(data))


def test_d2d_ceilings_by_hand_on_the_shipped_packages() -> None:
    # b200: two dies of 10 TB/s (both directions) hold everything; half of the shared levels' bytes are on the
    # other die: 2 dies x 5 TB/s each way / 0.5 = 20 TB/s; per-SM shared memory never crosses
    b = DesignBatch.from_hardware(dse.hardware("b200"))
    assert b.d2d_ceiling[0].tolist() == pytest.approx([np.inf, 20e12, 20e12])
    assert np.array_equal(b.delivered_bandwidth, b.bandwidth)  # neither binds
    # mi300x: the XCD's hybrid bond has no bandwidth given (no ceiling); the IODs' 5.4 TB/s links, a 2 x 2 mesh,
    # carry the 3 in 4 bytes of the Infinity Cache and HBM that sit on another IOD, the diagonal one two links away:
    # 3/4 x 4/3 = 1 link per byte, 4 x 2.7 / 1 = 10.8 TB/s, under the cache's 17.2
    m = DesignBatch.from_hardware(dse.hardware("mi300x"))
    cap = dict(zip(m.level_names, m.d2d_ceiling[0], strict=True))
    assert cap["lds"] == cap["l2"] == np.inf and cap["hbm"] == pytest.approx(10.8e12)
    assert m.delivered_bandwidth[0].tolist() == pytest.approx([81.7e12, 34.4e12, 10.8e12, 5.3e12])
    # gaudi3: its L2 is one per DCORE, two per die: nothing crosses; HBM half remote over 1.84 TB/s: 3.68 TB/s
    g = DesignBatch.from_hardware(dse.hardware("gaudi3"))
    assert g.d2d_ceiling[0].tolist() == pytest.approx([np.inf, 3.68e12])
    assert np.all(np.isinf(DesignBatch.from_hardware(NPU).d2d_ceiling))  # one die: no link


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=1, max_value=8), st.floats(min_value=0.1, max_value=20.0))
def test_a_split_die_delivers_its_shared_levels_no_faster_than_its_links(n: int, tbps: float) -> None:
    d = _split("npu-7nm", [{"name": "c", "count": n, "d2d_bandwidth_tbps": tbps, "source": "test"}])
    # local SRAM: one copy per core, on its core's die; global SRAM and HBM: one copy over the n dies' mesh, each
    # byte crossing t links (1/2 for two dies, 1 for 2 x 2; dse.hardware.topologies.traversals)
    from dse.hardware.topologies import traversals

    remote = float(traversals("mesh", np.array([n]))[0])
    assert remote == {1: 0.0, 2: 0.5, 4: 1.0}.get(n, remote)
    expect = np.inf if n == 1 else n * tbps * 1e12 / 2 / remote
    assert d.d2d_ceiling[0].tolist() == pytest.approx([np.inf, expect, expect])
    cap = np.array([np.inf, expect, expect])
    assert d.delivered_bandwidth[0].tolist() == pytest.approx(np.minimum(d.bandwidth[0], cap).tolist())
    # the energy of a crossing byte follows the same shares (dse.cost.power)
    from dse.cost.power import PJ, d2d_energy_per_byte
    from dse.hardware.d2d import D2D

    e = 0.0 if n == 1 else remote * D2D["ucie-advanced"].pj_per_bit * 8 * PJ
    assert d2d_energy_per_byte(d)[0].tolist() == pytest.approx([0.0, e, e])


def test_a_slow_die_to_die_link_slows_what_crosses_it_and_nothing_else() -> None:
    # npu-7nm as two dies: at 4 TB/s per die nothing binds (2 x 2 / 0.5 = 8 TB/s over its 4 TB/s global SRAM and
    # 1.64 TB/s HBM), so every operator keeps the monolithic time; at 0.4 TB/s both deliver 0.8 TB/s: a stream
    # through HBM takes about 1.64 / 0.8 as long, and a GEMM whose tiles come through the global SRAM slows too
    def time(hw, wl) -> float:
        return float(dse.predict(wl, hw).time_s)

    def split(tbps: float):
        return _split("npu-7nm", [{"name": "c", "count": 2, "d2d_bandwidth_tbps": tbps, "source": "test"}]).base

    stream = dse.elementwise(1 << 30, dtype="bf16")
    for wl in (stream, dse.gemm(8192, 8192, 8192, dtype="bf16"), dse.gemm(64, 8192, 8192, dtype="bf16")):
        assert time(split(4.0), wl) == pytest.approx(time(NPU, wl), rel=1e-9)
        assert time(split(0.4), wl) > time(NPU, wl)
    assert time(split(0.4), stream) / time(NPU, stream) == pytest.approx(1.6384 / 0.8, rel=0.02)


def test_the_user_guides_split_npu_figures_are_what_the_model_gives() -> None:

    def split(tbps: float):
        return _split("npu-7nm", [{"name": "c", "count": 2, "d2d_bandwidth_tbps": tbps, "d2d_link": "ucie-standard",
                                   "source": "test"}]).base

    decode = dse.workload("llama3-8b", phase="decode", batch=1, context=4096)
    prefill = dse.workload("llama3-8b", phase="prefill", batch=1, seq=2048)
    doc = (Path(__file__).parents[2] / "docs" / "user_guide.md").read_text()
    mono, fast, slow = (float(dse.predict(decode, hw).time_s) * 1e3 for hw in (NPU, split(1.0), split(0.5)))
    assert fast == pytest.approx(mono, rel=1e-3) and slow > 1.5 * mono
    pre_mono, pre_slow = (float(dse.predict(prefill, hw).time_s) * 1e3 for hw in (NPU, split(0.5)))
    for quoted in (f"keeps its {mono:.2f} ms", f"the step takes {slow:.2f} ms",
                   f"prefill {pre_slow:.1f} ms instead of {pre_mono:.1f} ms"):
        assert quoted in doc.replace("\n", " "), quoted


def test_dies_in_a_ring_or_a_mesh_cross_as_many_links_as_their_mean_hops() -> None:
    from dse.errors import DseError
    from dse.hardware.topologies import traversals

    # on a ring every link carries the same load: t = remote share x mean hops, exactly (8 dies: 7/8 x 16/7 = 2)
    for n in (4, 6, 8, 12):
        hops = [min(k, n - k) for k in range(1, n)]
        assert traversals("ring", np.array([n]))[0] == pytest.approx((n - 1) / n * sum(hops) / (n - 1))
    # a 4 x 4 mesh: the bisection binds first, 3 links per byte against a mean of 2.5
    assert traversals("mesh", np.array([16]))[0] == pytest.approx(3.0)
    # more dies over the same per-die link: the ceiling grows far slower than the dies (16 dies: 1.33x that of 2, the
    # user guide's figure; 8x the links, each byte crossing 6x as many)
    caps = [_split("npu-7nm", [{"name": "c", "count": n, "d2d_bandwidth_tbps": 1.0, "source": "test"}]).d2d_ceiling[0, 2]
            for n in (2, 16)]
    assert caps[1] / caps[0] == pytest.approx((16 / 3.0) / (2 / 0.5))
    doc = (Path(__file__).parents[2] / "docs" / "user_guide.md").read_text().replace("\n", " ")
    assert f"16 dies reach {caps[1] / caps[0]:.2f} times the ceiling of 2" in doc
    ring = _split("npu-7nm", [{"name": "c", "count": 8, "d2d_topology": "ring", "d2d_bandwidth_tbps": 1.0,
                               "source": "test"}])
    assert ring.d2d_ceiling[0, 2] == pytest.approx(8 * 0.5e12 / 2.0)
    with pytest.raises(DseError, match=r"package\.dies\.0\.d2d_topology: got 'torus'; accepted: mesh, ring"):
        _split("npu-7nm", [{"name": "c", "count": 8, "d2d_topology": "torus", "source": "test"}])


@settings(max_examples=80, deadline=None)
@given(name=st.sampled_from(sorted(list_templates())),
       peak=st.floats(0.005, 3.0), bw=st.floats(0.1, 3.0), sram=st.floats(1.0, 1024.0),
       spare=st.sampled_from([None, 0, 8, 16]), dies=st.sampled_from([None, 1, 3, 8]))
def test_every_built_design_of_every_template_writes_a_template_that_loads(name: str, peak: float, bw: float,
                                                                           sram: float, spare, dies) -> None:
    """Cores come in the steps the template's rules ask (whole ``spare_granule_cores`` groups beside spare cores, a
    multiple of every level held per group of cores) and above its reserved cores, so every built design writes a
    template that loads, with the mesh grid its cores take. After a search had scored them, a b200 best design of
    65 + 12 cores was refused ('compute.spare_granule_cores: got 2 with 12 spare of 77 cores'), and so were MI300X
    designs with cores not a multiple of its 8 L2s, Gaudi 3's of its 4, tt-n150's with its 8 x 9 grid over 144 cores
    and tt designs with no core beside the 8 its runtime holds; a b200 over 8 dies kept 12 spare cores (now 16)."""
    base = DesignBatch.from_hardware(dse.hardware(name))
    assert base.with_cores(base.cores).cores[0] == base.cores[0]  # the template itself is one of them
    d = base.with_knobs(peak_flops=np.array([peak * base.peak_flops[0]]), sram_bytes=np.array([sram * MIB]),
                        dram_bandwidth=np.array([bw * base.dram_bandwidth[0]]) if base.offchip.any() else None)
    if spare is not None and spare % base.base.compute.spare_granule_cores == 0:  # a spare count the die can fuse off
        d = d.with_field("compute.spare_cores", np.array([float(spare)]))
    if dies is not None and base.base.die_groups:  # the same parts over more or fewer dies: spares spread whole
        d = d.with_field(f"package.dies.{base.base.die_groups[0].name}.count", np.array([float(dies)]))
    q = float(d.core_quantum()[0])
    assert d.cores[0] % q == 0 and d.cores[0] > base.base.compute.reserved_cores
    back = DesignBatch.from_hardware(d.to_hardware(0, "x"))  # validates every rule above
    assert back.cores[0] == d.cores[0] and back.peak_flops[0] == pytest.approx(d.peak_flops[0], rel=1e-6)


@pytest.mark.parametrize(("rows", "cols", "shapes"), [
    (128, 128, [(128, 128), (64, 256), (256, 64)]), (7, 256, [(7, 256), (14, 128)]), (256, 256, None)])
def test_a_searched_array_writes_its_other_geometries_at_its_own_size(rows: int, cols: int, shapes) -> None:
    """Gaudi 2's MME also runs as 128x512 and 512x128 (``array_shapes``); a design with a searched array wrote the
    template's 256x256 shapes, which its own array refuses (a study on ``compute.matrix.array_rows`` failed writing
    its best design). The predictor reads the shapes as factors of the array; the written template says the same."""
    base = DesignBatch.from_hardware(dse.hardware("gaudi2"))
    d = (base.with_field("compute.matrix.array_rows", np.array([float(rows)]))
         .with_field("compute.matrix.array_cols", np.array([float(cols)])))
    hw = d.to_hardware(0, "x")
    want = shapes if shapes is not None else [tuple(s) for s in dse.hardware("gaudi2").compute.matrix.array_shapes]
    assert [tuple(s) for s in hw.compute.matrix.array_shapes] == want
    back = DesignBatch.from_hardware(hw)
    assert back.peak_flops[0] == pytest.approx(d.peak_flops[0], rel=1e-6)


@pytest.mark.parametrize("name", ["inferentia2", "trainium1", "groq-tsp"])
@pytest.mark.parametrize("rows", [8.0, 16.0, 64.0])
def test_a_searched_array_writes_the_stream_rows_the_predictor_read(name: str, rows: float) -> None:
    """A weight-stationary array hides its next tile's load behind ``rows x stream_rows / array_rows`` streamed rows;
    a design with a searched array wrote the template's stream_rows unchanged (an 8-row Inferentia 2 design kept 64),
    so its best_design.yaml predicted GPT-2 decode 3.2x slower than the study that chose it."""
    from dse.predict import mix_times
    from dse.workloads.mix import Mix

    mix = Mix.of([dse.workload("gpt2", phase="decode", batch=4, context=256), dse.workload("resnet50", batch=8)])
    d = DesignBatch.from_hardware(dse.hardware(name)).with_field("compute.matrix.array_rows", np.array([rows]))
    hw = d.to_hardware(0, "x")
    base = dse.hardware(name).compute.matrix
    assert hw.compute.matrix.stream_rows == max(1, round(base.stream_rows * rows / base.array_rows))
    np.testing.assert_allclose(mix_times(DesignBatch.from_hardware(hw), mix), mix_times(d, mix), rtol=1e-9)


#: searched fields and the factor range drawn on the template's value (cores, array sides: whole after rounding)
_FIELD_FACTORS = {"compute.cores": (0.3, 2.0), "compute.clock_ghz": (0.5, 1.5), "compute.matrix.array_rows": (0.25, 2.0),
                  "compute.matrix.efficiency": (0.5, 1.1), "{sram}.bandwidth_tbps": (0.01, 3.0),
                  "{sram}.efficiency": (0.5, 1.0), "{sram}.capacity_mib": (0.2, 4.0), "{main}.bandwidth_tbps": (0.3, 3.0)}


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(list_templates())), field=st.sampled_from(sorted(_FIELD_FACTORS)),
       u=st.floats(0.0, 1.0))
def test_a_written_design_predicts_what_the_study_that_chose_it_did(name: str, field: str, u: float) -> None:
    """Every command reads the same design: the study's batch and the template it writes (``best_design.yaml``) give
    the same step times. The GPU tile model read the template's peaks and L2 rate for every design of a batch (an
    H200 design with its L2 at 0.08 TB/s was timed at 11.5 TB/s: 2x faster than its written template), and a
    searched weight-stationary array kept the template's stream_rows when written."""
    from dse.predict import mix_times
    from dse.workloads.mix import Mix

    hw = dse.hardware(name)
    base = DesignBatch.from_hardware(hw)
    sram = [m.name for m in hw.memory if not m.off_chip]
    path = field.format(sram=f"memory.{sram[-1]}" if sram else "", main=f"memory.{hw.offchip_level.name}")
    if path.startswith("."):
        return
    lo, hi = _FIELD_FACTORS[field]
    factor = lo + (hi - lo) * u
    now = {"compute.cores": float(base.cores[0]), "compute.clock_ghz": hw.compute.clock_ghz,
           "compute.matrix.array_rows": float(base.array_rows[0]), "compute.matrix.efficiency": float(base.matrix_eff[0])}
    if path in now:
        value = now[path] * factor
    else:
        lv = hw.memory.index(next(m for m in hw.memory if m.name == path.split(".")[1]))
        key = path.rsplit(".", 1)[1]
        value = {"bandwidth_tbps": base.bandwidth[0, lv] / TERA, "efficiency": base.bw_eff[0, lv],
                 "capacity_mib": base.capacity[0, lv] / MIB}[key] * factor
        value = min(value, 1.0) if key == "efficiency" else value
    if path in ("compute.cores", "compute.matrix.array_rows"):
        value = max(1.0, round(value))
    try:
        d = base.with_field(path, np.array([value]))
        written = d.to_hardware(0, "x")
    except (ValueError, DseError):
        return  # a value the search-space check refuses before any trial
    mix = Mix.of([dse.workload("gpt2", phase="decode", batch=4, context=256), dse.workload("resnet50", batch=8),
                  dse.workload("llama2-7b", phase="prefill", batch=1, seq=1024)])
    np.testing.assert_allclose(mix_times(DesignBatch.from_hardware(written), mix), mix_times(d, mix), rtol=1e-6)
