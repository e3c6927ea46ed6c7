"""Energy accounting and power against published TDPs."""

import numpy as np
import pytest

import dse
from dse.cost.power import PJ, flop_energy, level_energy_per_byte, mix_energy, static_power
from dse.hardware.designs import DesignBatch
from dse.hardware.templates import load_node
from dse.predict import OpArrays, evaluate
from dse.units import DTYPE_INDEX
from dse.workloads.mix import Mix


def test_dynamic_energy_is_flops_plus_traffic_by_hand() -> None:
    hw = dse.hardware("npu-7nm")
    node = load_node(hw.process_node)
    d = DesignBatch.from_hardware(hw)
    wl = dse.gemm(2048, 2048, 2048, dtype="bf16")
    e = mix_energy(d, Mix.of([wl]))
    tr = evaluate(d, OpArrays.from_table(wl.ops)).traffic[0, 0]  # bytes per level
    assert hw.compute.matrix.style == "systolic"  # the GEMM pays the processing-element energy
    assert hw.compute.matrix.dataflow == "output_stationary"  # and both bf16 operands forwarded per MAC (4 bytes)
    e_pe = node.energy_pj_per_flop_systolic.values["bf16"] + 4 / 2 * node.energy_pj_per_byte_register.value
    expect = (wl.flops * e_pe * PJ
              + tr @ level_energy_per_byte(d, node) + tr[0] * node.energy_pj_per_byte_register.value * PJ)
    assert e.dynamic_j[0, 0] == pytest.approx(expect, rel=1e-12)
    assert e.energy_j[0, 0] == pytest.approx(expect + e.static_w[0] * e.time_s[0, 0], rel=1e-12)


def test_static_power_is_the_leakage_share_at_full_activity() -> None:
    hw = dse.hardware("a100-80gb")
    node = load_node(hw.process_node)
    d = DesignBatch.from_hardware(hw)
    f = node.leakage_fraction.value
    peak_dyn = d.peak_flops[0] * flop_energy(node)[DTYPE_INDEX["bf16"]] + d.bandwidth[0] @ level_energy_per_byte(d, node)
    assert static_power(d, node)[0] / (static_power(d, node)[0] + peak_dyn) == pytest.approx(f)


@pytest.mark.parametrize("name", ["a100-80gb", "h100-sxm", "v100-sxm"])
def test_big_gemm_power_is_within_25_percent_of_tdp(name: str) -> None:
    hw = dse.hardware(name)
    dt = "fp16" if name == "v100-sxm" else "bf16"
    e = mix_energy(DesignBatch.from_hardware(hw), Mix.of([dse.gemm(8192, 8192, 8192, dtype=dt)]))
    assert e.power_w[0, 0] == pytest.approx(hw.published.tdp_w, rel=0.25)
    assert np.all(e.power_w > 0)


def test_systolic_tpu_v4_gemm_power_against_measured_max_without_fitting_on_it() -> None:
    # PE energy comes from the TPUv4i per-op table (node file), not from any TPU v4 power figure; Google's
    # measured max is 192 W (mean 170 W). The GPU whole-chip fit gave +77 % here; this asserts within 30 %.
    hw = dse.hardware("tpu-v4")
    e = mix_energy(DesignBatch.from_hardware(hw), Mix.of([dse.gemm(8192, 8192, 8192, dtype="bf16")]))
    assert e.power_w[0, 0] == pytest.approx(192.0, rel=0.30)
    simt = hw.model_copy(update={"compute": hw.compute.model_copy(update={
        "matrix": hw.compute.matrix.model_copy(update={"style": "simt"})})})
    e_simt = mix_energy(DesignBatch.from_hardware(simt), Mix.of([dse.gemm(8192, 8192, 8192, dtype="bf16")]))
    assert e_simt.power_w[0, 0] > 1.5 * e.power_w[0, 0]


def test_bytes_between_dies_pay_the_d2d_link_energy_by_hand() -> None:
    from dse.cost.power import d2d_energy_per_byte

    assert not d2d_energy_per_byte(DesignBatch.from_hardware(dse.hardware("h100-sxm"))).any()  # one die
    # b200: two dies hold everything; half of every level's bytes sit on the other die (0.3 pJ/bit ucie-advanced)
    b200 = DesignBatch.from_hardware(dse.hardware("b200"))
    assert b200.level_names == ["smem", "l2", "hbm"]  # per-SM shared memory stays on its die
    assert d2d_energy_per_byte(b200)[0] == pytest.approx([0.0, 0.5 * 0.3 * 8 * PJ, 0.5 * 0.3 * 8 * PJ])
    # mi300x: per-CU LDS and per-XCD L2 stay on their XCD; HBM and the Infinity Cache are on the IODs: up
    # through the hybrid bond (0.05 pJ/bit), then to another IOD of the 2 x 2 mesh 3 times in 4, the diagonal one
    # two links away: one IOD link per byte (0.3 pJ/bit)
    mi = DesignBatch.from_hardware(dse.hardware("mi300x"))
    e = dict(zip(mi.level_names, d2d_energy_per_byte(mi)[0], strict=True))
    assert e["lds"] == 0 and e["l2"] == 0
    assert e["hbm"] == pytest.approx((0.05 + 0.75 * 4 / 3 * 0.3) * 8 * PJ)
    assert e["infinity_cache"] == pytest.approx(e["hbm"])
    m = mix_energy(b200, Mix.of([dse.gemm(8192, 8192, 8192, dtype="bf16")]))
    assert m.parts_j["d2d"][0, 0] > 0


def test_the_hungriest_matrix_mode_sets_the_power_a_limit_must_cover() -> None:
    from dse.cost.power import gemm_mode_power

    # Tensix runs fp8 in one fidelity phase at 3.5x the fp16 rate: more MACs toggle per second than in fp16
    d = DesignBatch.from_hardware(dse.hardware("tt-n150"))
    modes = gemm_mode_power(d)
    assert set(modes) == set(dse.hardware("tt-n150").compute.matrix.peak_tflops)
    assert modes["fp8"][0] > 1.3 * modes["fp16"][0]
    # each mode's figure is mix_energy's for that GEMM
    e = mix_energy(d, Mix.of([dse.gemm(8192, 8192, 8192, dtype="fp8")]))
    assert modes["fp8"][0] == pytest.approx(e.power_w[0, 0], rel=1e-12)


def test_blackhole_chip_power_against_its_firmware_core_rail_limit_without_fitting_on_it() -> None:
    # p150a firmware: tdp_limit 150 W on the core regulator, board_power_limit 300 W (tt-zephyr-platforms); the
    # model's energies come from the node file (TPUv4i PE table, Horowitz SRAM), not from any Blackhole figure
    from dse.cost.power import gemm_mode_power

    hw = dse.hardware("tt-p150")
    assert hw.published.chip_power_limit_w == 150 and hw.published.tdp_w == 300
    peak = max(w[0] for w in gemm_mode_power(DesignBatch.from_hardware(hw)).values())
    assert peak == pytest.approx(hw.published.chip_power_limit_w, rel=0.25)
    assert peak < 0.75 * hw.published.tdp_w  # against the board's 300 W it would miss by half


def test_wormhole_chip_power_against_its_core_rail_limit_without_fitting_on_it() -> None:
    # Wormhole telemetry: TAG_TDP_LIMIT_MAX 85 W on the core rail (tenstorrent/tt-isa-documentation), board 160 W;
    # the 12 nm energies come from the node file, not from any Wormhole figure
    from dse.cost.power import gemm_mode_power

    hw = dse.hardware("tt-n150")
    assert hw.published.chip_power_limit_w == 85 and hw.published.tdp_w == 160
    peak = max(w[0] for w in gemm_mode_power(DesignBatch.from_hardware(hw)).values())
    assert peak == pytest.approx(hw.published.chip_power_limit_w, rel=0.25)
    assert peak < 0.55 * hw.published.tdp_w  # against the board's 160 W it would miss by about half


def test_dse_area_compares_the_hungriest_mode_with_the_chip_limit_where_published(capsys) -> None:
    import json

    from dse.cli import main

    assert main(["area", "tt-p150", "tpu-v4", "--format", "json"]) == 0
    rows = {r["template"]: r for r in json.loads(capsys.readouterr().out)["templates"]}
    p = rows["tt-p150"]
    assert p["peak_mode"] == "fp8" and p["chip_limit_w"] == 150
    assert p["power_err_pct"] == pytest.approx((p["peak_mode_power_w"] / 150 - 1) * 100)
    t = rows["tpu-v4"]  # no chip limit: the published TDP (192 W measured max)
    assert t["power_err_pct"] == pytest.approx((t["peak_mode_power_w"] / 192 - 1) * 100)


def test_dse_area_counts_the_templates_within_25_percent_of_their_limit(capsys) -> None:
    """Issue 32's bar in one line: of the templates named with a published limit, those whose hungriest GEMM is
    within 25 % of it, and the others with their error (Gaudi 2's module TDP is outside; B200 was at +25.04 % until
    its bytes paid HBM3E's energy, not its 4 nm node's typical HBM3)."""
    from dse.cli import _power_summary, main

    assert main(["area", "tpu-v4", "b200", "gaudi2", "npu-7nm"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("power:"))
    assert line == ("power: the hungriest GEMM is within 25 % of the published limit on 2 of 3 templates; "
                    "outside: gaudi2 -55.30 %")
    nan = float("nan")
    assert _power_summary([{"template": "x", "power_err_pct": nan}]) == ""
    assert _power_summary([{"template": "x", "power_err_pct": -24.9}]).endswith("on 1 of 1 templates")


def test_the_power_table_of_the_calibration_doc_is_what_the_model_prints() -> None:
    import re
    from pathlib import Path

    from dse.cli import _power_row
    from dse.hardware.templates import list_templates, load_hardware

    doc = (Path(__file__).parents[2] / "docs" / "area_calibration.md").read_text()
    rows = re.findall(r"^\| ([a-z0-9-]+) \| \w+ \| (?:simt|systolic) \| (\w+) \| (\d+) \| (\d+) \| (\d+) [^|]+\| "
                      r"([+-]\d+) % \| (inside|[+-]\d+ %) \|$", doc, flags=re.M)
    listed = {r[0]: r[1:] for r in rows}
    expect = [n for n in list_templates() if (p := load_hardware(n).published) and (p.tdp_w or p.chip_power_limit_w)]
    assert sorted(listed) == sorted(expect)
    for name, (mode, watts, everything, limit, err, outside) in listed.items():
        hw = load_hardware(name)
        r = _power_row(hw, DesignBatch.from_hardware(hw), load_node(hw.process_node))
        lim = hw.published.chip_power_limit_w or hw.published.tdp_w
        assert (mode, int(watts), int(everything), int(limit)) == (
            r["peak_mode"], round(r["peak_mode_power_w"]), round(r["all_units_w"]), round(lim))
        assert int(err) == round(r["power_err_pct"])
        o = r["limit_outside_range_pct"]
        assert outside == ("inside" if abs(o) < 0.05 else f"{o:+.0f} %")
    # the doc's count: 12 of the 13 limits inside the modelled range or within 21 % of it; Gaudi 2 the exception
    far = {n for n in listed if abs(_power_row(load_hardware(n), DesignBatch.from_hardware(load_hardware(n)),
                                               load_node(load_hardware(n).process_node))["limit_outside_range_pct"]) > 21.5}
    assert far == {"gaudi2"}


@pytest.mark.parametrize("name", ["npu-7nm", "a100-80gb"])
def test_a_design_clocked_off_its_template_pays_its_voltage_squared_on_chip(name: str) -> None:
    # dse.hardware.energy.dvfs_factor: V tracks f, so on-chip energy per FLOP and per byte goes as (f / f0)^2;
    # DRAM is on its own rail
    hw = dse.hardware(name)
    base = DesignBatch.from_hardware(hw)
    mix = Mix.of([dse.gemm(4096, 4096, 4096, dtype="bf16"), dse.workload("llama2-7b", phase="decode", batch=1)])
    e0 = mix_energy(base, mix)
    for s in (0.7, 1.3):
        d = base.with_field("compute.clock_ghz", np.array([hw.compute.clock_ghz * s]))
        e = mix_energy(d, mix)
        off = {m.name for m in hw.memory if m.off_chip}
        for part, j in e.parts_j.items():
            if part in off:
                np.testing.assert_allclose(j, e0.parts_j[part], rtol=1e-9)  # same bytes, same rail
            else:
                np.testing.assert_allclose(j, e0.parts_j[part] * s * s, rtol=1e-9)
    # so a faster clock costs power as s^3 on a compute-bound GEMM (s^2 per FLOP, s as many FLOP/s)
    hot = base.with_field("compute.clock_ghz", np.array([hw.compute.clock_ghz * 1.3]))
    g = Mix.of([dse.gemm(8192, 8192, 8192, dtype="bf16")])
    p0, p1 = (mix_energy(x, g) for x in (base, hot))
    dyn0 = p0.dynamic_j[0, 0] / p0.time_s[0, 0]
    dyn1 = p1.dynamic_j[0, 0] / p1.time_s[0, 0]
    assert dyn1 > 1.3**2 * dyn0 and p1.power_w[0, 0] > p0.power_w[0, 0] * 1.3


def test_a_design_written_out_at_another_clock_draws_the_same_power_when_reloaded() -> None:
    """best_design.yaml of a study that searched the clock stored the new clock as the template's own, so reloaded its
    on-chip energy lost the (f / f0)^2 voltage factor (a new user measured 1745 W in summary.md, 1220 W from dse area
    on the file): the written design carries the template's energy clock, and a template may state one."""
    from dse.cost.power import stress_power

    hw = dse.hardware("npu-7nm")
    d = DesignBatch.from_hardware(hw).with_field("compute.clock_ghz", np.array([hw.compute.clock_ghz * 1.3]))
    written = d.to_hardware(0, "npu-hot")
    assert written.compute.energy_clock_ghz == hw.compute.clock_ghz
    again = DesignBatch.from_hardware(dse.hardware(written.model_dump(mode="python", exclude_none=True)))
    g = Mix.of([dse.gemm(8192, 8192, 8192, dtype="bf16")])
    np.testing.assert_allclose(mix_energy(again, g).power_w, mix_energy(d, g).power_w, rtol=1e-4)
    np.testing.assert_allclose(stress_power(again), stress_power(d), rtol=1e-4)
    assert stress_power(again)[0] > 1.5 * stress_power(DesignBatch.from_hardware(hw))[0]  # 1.3^3 on the core rail
    # a template at its own clock is unchanged by stating it
    data = hw.model_dump(mode="python", exclude_none=True)
    data["compute"]["energy_clock_ghz"] = hw.compute.clock_ghz
    same = DesignBatch.from_hardware(dse.hardware(data))
    np.testing.assert_allclose(stress_power(same), stress_power(DesignBatch.from_hardware(hw)), rtol=1e-12)


def test_a_power_cap_bites_harder_on_a_design_clocked_above_its_template() -> None:
    data = dse.hardware("npu-7nm").model_dump(mode="python", exclude_none=True)
    data["power_limit_w"] = 150.0
    hw = dse.hardware(data)
    wl = dse.gemm(8192, 8192, 8192, dtype="bf16")
    base = DesignBatch.from_hardware(hw)
    t0 = dse.predict(wl, base).time_s
    hot = base.with_field("compute.clock_ghz", np.array([hw.compute.clock_ghz * 1.5]))
    t1 = dse.predict(wl, hot).time_s
    uncapped = dse.predict(wl, dse.hardware("npu-7nm")).time_s
    # 1.5x the clock buys less than 1.5x the speed under the cap: the voltage it needs costs s^2 per FLOP
    assert t0 >= uncapped * (1 - 1e-12) and t0 / t1 < 1.5 * 0.9


def test_iso_peak_designs_trade_area_for_power_through_the_clock_as_the_doc_says() -> None:
    # docs/area_calibration.md 'Clock and voltage': npu-7nm at ~275 TFLOP/s built at 1.0, 1.4 and 2.0 GHz
    base = DesignBatch.from_hardware(dse.hardware("npu-7nm"), n=3)
    d = base.with_field("compute.clock_ghz", np.array([1.0, 1.4, 2.0])).with_knobs(peak_flops=np.full(3, 275.3e12))
    e = mix_energy(d, Mix.of([dse.gemm(8192, 8192, 8192, dtype="bf16")]))
    assert d.cores.tolist() == [34, 24, 17]
    assert np.round(dse.cost.area.area(d).total).tolist() == [492, 392, 322]
    assert np.round(e.power_w[:, 0]).tolist() == [115, 165, 277]



def test_all_units_at_once_by_hand_and_against_intels_stress_measurements() -> None:
    from dse.cost.power import stress_power

    hw = dse.hardware("npu-7nm")
    node = load_node(hw.process_node)
    d = DesignBatch.from_hardware(hw)
    bf16, fp32 = DTYPE_INDEX["bf16"], DTYPE_INDEX["fp32"]
    e_lv = level_energy_per_byte(d, node)
    onchip = ~d.offchip
    expect = (static_power(d, node)[0]
              + d.matrix_peak[0, bf16] * flop_energy(node, True, "output_stationary")[bf16]  # its only matrix mode
              + max(d.vector_peak[0, bf16] * flop_energy(node)[bf16], d.vector_peak[0, fp32] * flop_energy(node)[fp32])
              + d.bandwidth[0] @ e_lv + d.bandwidth[0, 0] * node.energy_pj_per_byte_register.value * PJ
              + d.links[0] * hw.network.link_bandwidth_gbps * 1e9 * 2 * node.energy_pj_per_byte_serdes.value * PJ)
    assert onchip.sum() == 2 and stress_power(d, node)[0] == pytest.approx(expect, rel=1e-12)
    # out of sample: Intel's hl_qual power stress test (docs.habana.ai, Power Stress and EDP Tests Plugins) expects
    # 850 W of a Gaudi 3 OAM and measures 530-560 W on a Gaudi 2 HL-225H ('Extreme'); docs/area_calibration.md
    g3 = stress_power(DesignBatch.from_hardware(dse.hardware("gaudi3")))[0]
    g2 = stress_power(DesignBatch.from_hardware(dse.hardware("gaudi2")))[0]
    assert round((g3 / 850 - 1) * 100) == 10 and round((g2 / 545 - 1) * 100) == -25
