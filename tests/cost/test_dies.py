"""Area calibration on public dies: the fit, leave-one-out, holdouts and the node files it writes."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.cost import dies
from dse.hardware.templates import list_nodes, load_node


def test_every_die_validates_names_a_source_and_a_role() -> None:
    all_dies = dies.load_dies()
    names = [d.name for d in all_dies]
    assert len(set(names)) == len(names)
    assert {"calibration", "holdout"} == {d.role for d in all_dies}
    npu = [d for d in all_dies if not d.template]
    assert sum(d.role == "calibration" for d in npu) >= 4 and sum(d.role == "holdout" for d in npu) >= 2
    for d in all_dies:
        assert len(d.source) > 40, d.name
        assert d.template or (d.node and d.peak_tflops and d.clock_ghz), d.name


@settings(max_examples=40, deadline=None)
@given(pe=st.floats(200, 5000), sp=st.floats(0.1, 3.0), known=st.lists(st.floats(10, 300), min_size=4, max_size=4))
def test_fit_recovers_coefficients_that_generated_the_areas(pe: float, sp: float, known: list[float]) -> None:
    x = np.array([[1e5 * 1e-6, 200.0], [5e4 * 1e-6, 600.0], [2e5 * 1e-6, 50.0], [8e4 * 1e-6, 300.0]])
    rows = [(xi, k, k + xi @ np.array([pe, sp])) for xi, k in zip(x, known, strict=True)]
    assert dies.fit(rows) == pytest.approx([pe, sp], rel=1e-6)


def test_holdout_dies_never_move_the_fit(monkeypatch) -> None:
    theta = dies.fitted_reference()
    absurd = tuple(d.model_copy(update={"die_area_mm2": d.die_area_mm2 * 10}) if d.role == "holdout" else d
                   for d in dies.load_dies())
    monkeypatch.setattr(dies, "load_dies", lambda: absurd)
    assert dies.fitted_reference() == pytest.approx(theta)


def test_leave_one_out_refits_without_the_die() -> None:
    t = dies.calibration_table().set_index("die")
    npu_cal = t[(t.role == "calibration") & t.model.str.startswith("npu")]
    # leaving a die out changes its prediction (the fit did see it), holdouts are predicted by the full fit
    assert (npu_cal.loo_mm2 != npu_cal.fitted_mm2).all()
    hold = t[t.role == "holdout"]
    assert (hold.loo_mm2 == hold.fitted_mm2).all()
    # H100 set its node's tensor-core coefficient, so its leave-one-out takes the other GPUs' instead
    assert t.loc["h100", "loo_mm2"] != pytest.approx(t.loc["h100", "fitted_mm2"])


def test_shipped_node_coefficients_are_the_fit_carried_by_node_scaling() -> None:
    theta = dies.fitted_reference()
    ref = load_node(dies.REFERENCE_NODE)
    assert len(list_nodes()) >= 10  # every shipped node, the new ones of issue 32 included
    for name in list_nodes():
        node = load_node(name)
        assert node.systolic_pe_um2.values["bf16"] == pytest.approx(dies.node_value(node, "pe", theta["pe"], ref), rel=2e-3)
        assert node.scratchpad_mm2_per_mib.value == pytest.approx(
            dies.node_value(node, "scratchpad", theta["scratchpad"], ref), rel=2e-3)


def test_a_tensor_core_coefficient_is_carried_per_mac() -> None:
    # mm^2 per TFLOP/s at the node's calibration clock: a carry goes through mm^2 per MAC, so it takes the clock ratio
    # as well as the density ratio, and a round trip returns the value
    n7, n5, n16 = load_node("7nm"), load_node("5nm"), load_node("16nm")
    c7 = n7.matrix_mm2_per_tflops.value
    assert dies.carry_simt(dies.carry_simt(c7, n7, n5), n5, n7) == pytest.approx(c7)
    assert dies.carry_simt(c7, n7, n7) == pytest.approx(c7)
    ratio = dies.carry_simt(1.0, n7, n5) / (n7.logic_density_mtr_per_mm2.value / n5.logic_density_mtr_per_mm2.value)
    assert ratio == pytest.approx(1.41 / 1.83)
    # the 5 and 16 nm files' ranges run from their own fit to the 7 nm value so carried
    for node in (n5, n16):
        lo, hi = node.matrix_mm2_per_tflops.range
        assert lo == pytest.approx(node.matrix_mm2_per_tflops.value)
        assert hi == pytest.approx(dies.carry_simt(c7, n7, node), abs=1e-4)


def test_measured_errors_stay_where_the_closing_note_reports_them() -> None:
    # Regression guard at today's measured figures (issue 14 asks 15 % LOO on calibration dies and 25 % on
    # holdouts; the holdouts meet it, four calibration dies do not: see docs/area_calibration.md). The old
    # model (GPU cache density and per-TFLOP/s compute) put GC200 at +220 % and Groq at +422 %.
    t = dies.calibration_table().set_index("die")
    npu = t[t.model.str.startswith("npu")]
    assert abs(npu.loc["gc200", "loo_err_pct"]) < 20
    assert abs(npu.loc["groq-tsp", "loo_err_pct"]) < 20
    # Wormhole priced at its own 12 nm node (GF 12LP; it was at 16 nm and +40.7 %): NPU calibration max 24.7 %
    assert abs(npu.loc["wormhole", "loo_err_pct"]) < 25
    hold = npu[npu.role == "holdout"]
    assert (hold.loc[["dojo-d1", "et-soc-1", "wse2-core"], "loo_err_pct"].abs() < 25).all()  # issue 14's holdouts
    # issue 32's held-out NPU dies, never fitted on: the SRAM-only 12 nm Hanguang 800 and Ascend 910's compute die
    # within 10 %; the 5 nm MTIA v2 and RNGD (many non-MAC engines per core) 34-40 % small
    assert (hold.loc[["hanguang-800", "ascend-910"], "loo_err_pct"].abs() < 10).all()
    assert len(hold) >= 8 and hold.loo_err_pct.abs().max() < 45 and hold.loo_err_pct.abs().median() < 25
    cal = npu[npu.role == "calibration"]
    assert cal.loo_err_pct.abs().max() < 30 and cal.loo_err_pct.abs().median() < 20
    gpu = t[~t.model.str.startswith("npu")]
    assert gpu.loo_err_pct.abs().max() < 12  # V100 +9.2, H100 +4.9 % (+39.2 % carried by density alone, registers inside)
    cal_all = t[t.role == "calibration"].loo_err_pct.abs()
    # issue 32's bar: median <= 12 %, max <= 30 % (10.0 / 24.7 % since Groq's TSP is priced at its GF 14LPP bitcell;
    # 13.4 / 25.4 % at the 16 nm file's)
    assert cal_all.max() <= 30 and cal_all.median() <= 12
    assert npu.loo_err_pct.abs().median() < 25


def test_the_calibration_table_of_the_doc_is_what_the_fit_prints() -> None:
    import re
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "area_calibration.md").read_text()
    rows = re.findall(r"^\| [^|]+ \| `([a-z0-9-]+)` \|[^|]+\|[^|]+\|[^|]+\| ([+-]?\d+\.\d) % \| ([+-]?\d+\.\d) %", doc, re.M)
    t = dies.calibration_table().set_index("die")
    assert sorted(r[0] for r in rows) == sorted(t.index)
    for die, fitted, loo in rows:
        assert float(fitted) == pytest.approx(t.loc[die, "fitted_err_pct"], abs=0.051)
        assert float(loo) == pytest.approx(t.loc[die, "loo_err_pct"], abs=0.051)
    theta = dies.fitted_reference()
    assert f"**{theta['pe']:.0f} µm² per bf16" in doc and f"**{theta['scratchpad']:.3f} mm²/MiB of scratchpad**" in doc


def test_groqs_tsp_is_priced_at_its_own_gf_14lpp_bitcell_and_nothing_else_differs_from_16nm() -> None:
    """GlobalFoundries 14LPP's HD bitcell is 0.064 um2 against TSMC 16FF+'s 0.07 (WikiChip); the density table has one
    16/14 nm row, so the gf14 file is the 16 nm file but for the bitcell and the scratchpad density it carries."""
    import dse
    from dse.hardware.schema import Coefficient

    gf, n16 = load_node("gf14"), load_node("16nm")
    assert gf.sram_bitcell_um2.value == 0.064 and n16.sram_bitcell_um2.value == 0.07
    assert gf.scratchpad_mm2_per_mib.value == pytest.approx(n16.scratchpad_mm2_per_mib.value * 0.064 / 0.07, rel=2e-3)
    differ = {name for name in type(gf).model_fields if isinstance(getattr(gf, name), Coefficient)
              and getattr(gf, name).value != getattr(n16, name).value}
    assert differ == {"sram_bitcell_um2", "scratchpad_mm2_per_mib"}
    assert {d.name: d.node for d in dies.load_dies()}["groq-tsp"] == "gf14"
    assert dse.hardware("groq-tsp").process_node == "gf14"
