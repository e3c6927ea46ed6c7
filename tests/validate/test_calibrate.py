"""dse.validate.calibrate: the fit recovers known efficiencies, reports held-out errors, writes a template."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import dse
from dse.hardware.designs import DesignBatch
from dse.validate.calibrate import _Rows as Rows
from dse.validate.calibrate import apply, calibrate, calibrated_template, fit_rows, initial, parameter_names
from dse.validate.suite import RowCase, harness_sync_us, predict_case

NPU = dse.hardware("npu-7nm")


def _truth() -> dse.Hardware:
    """npu-7nm with a known matrix efficiency 0.6, HBM efficiency 0.7 and 5 us per operator."""
    d = NPU.model_dump(mode="python", exclude_none=True)
    d["compute"]["matrix"]["efficiency"] = 0.6
    d["memory"][2]["efficiency"] = 0.7
    d["compute"]["launch_overhead_us"] = 5.0
    return dse.hardware(d)


WORKLOADS = [  # two compute-bound GEMMs, two HBM-bound copies, two overhead-bound GEMMs
    lambda: dse.gemm(8192, 8192, 8192, dtype="bf16"), lambda: dse.gemm(4096, 4096, 4096, dtype="bf16"),
    lambda: dse.workload("copy:268435456"), lambda: dse.workload("copy:134217728"),
    lambda: dse.gemm(64, 64, 64, dtype="bf16"), lambda: dse.gemm(32, 32, 32, dtype="bf16"),
]


def _cases(which: list[int] | None = None) -> list[RowCase]:
    truth = _truth()
    out = []
    for i, make in enumerate(WORKLOADS):
        if which is not None and i not in which:
            continue
        wl = make()
        measured = predict_case(RowCase(id=f"r{i}", workload=wl, hardware=truth, metric="time_s", measured=1.0))
        out.append(RowCase(id=f"r{i}", workload=wl, hardware=NPU, metric="time_s", measured=measured))
    return out


def test_parameters_are_named_per_template_and_start_at_its_values() -> None:
    assert parameter_names(NPU) == ["matrix_eff", "vector_eff", "local_eff", "global_eff", "hbm_eff", "overhead_us",
                                    "sync_overhead_us"]
    assert initial(NPU).tolist() == [0.9, 0.9, 0.9, 0.9, 0.85, 1.0, 0.0]
    d = apply(DesignBatch.from_hardware(NPU, n=2), np.array([0.5, 0.4, 0.3, 0.2, 0.1, 7.0, 0.0]))
    assert d.matrix_eff.tolist() == [0.5, 0.5] and d.vector_eff.tolist() == [0.4, 0.4]
    assert d.bw_eff[1].tolist() == [0.3, 0.2, 0.1] and d.overhead_s[0] == pytest.approx(7e-6)


def test_fit_recovers_the_efficiencies_that_generated_the_measurements() -> None:
    fit = calibrate(NPU, _cases(), loo=True)
    v = dict(zip(fit.names, fit.values, strict=True))
    assert v["matrix_eff"] == pytest.approx(0.6, rel=1e-3)
    assert v["hbm_eff"] == pytest.approx(0.7, rel=1e-3)
    assert v["overhead_us"] == pytest.approx(5.0, rel=1e-3)
    assert np.max(np.abs(fit.fit_error_pct)) < 0.01
    assert np.max(np.abs(fit.loo_error_pct)) < 0.01  # every row is predicted by the others
    # with the template's own values the GEMMs run 0.9/0.6 = 1.5x too fast: -33 %
    assert fit.before_error_pct[0] == pytest.approx(-100 / 3, abs=0.5)
    assert fit.families == ["gemm", "gemm", "copy", "copy", "gemm", "gemm"]
    fam = fit.family_table().set_index("family")
    assert fam.loc["gemm", "rows"] == 4 and fam.loc["all", "rows"] == 6
    assert fam.loc["copy", "median_abs_before_error_pct"] == pytest.approx(100 * (1 - 0.7 / 0.85), rel=0.02)
    assert np.isfinite(fit.table()["leave_family_out_error_pct"]).all()  # both families have rows to hold out


def test_calibrated_template_carries_the_fit_and_names_its_rows() -> None:
    fit = calibrate(NPU, _cases([0, 2, 4]), loo=False)
    hw = calibrated_template(NPU, fit)
    assert hw.name == "npu-7nm-calibrated"
    assert hw.compute.matrix.efficiency == pytest.approx(0.6, abs=1e-3)
    assert hw.memory[2].efficiency == pytest.approx(0.7, abs=1e-3)
    assert hw.compute.launch_overhead_us == pytest.approx(5.0, abs=2e-3)
    assert "calibrated by dse calibrate on rows r0, r2, r4" in hw.compute.matrix.source
    assert np.isnan(fit.loo_error_pct).all()


def test_no_rows_is_an_error_naming_the_template() -> None:
    with pytest.raises(ValueError, match="no measurement rows for template 'npu-7nm'"):
        calibrate(NPU, [])


def test_parameters_no_row_constrains_keep_the_template_values() -> None:
    cases = _cases([0, 1, 2, 3])
    rows = Rows(NPU, cases)
    x = fit_rows(rows, [2, 3], initial(NPU))  # copies only
    names = parameter_names(NPU)
    for name in ("matrix_eff", "vector_eff", "local_eff", "global_eff"):
        i = names.index(name)
        assert x[i] == pytest.approx(initial(NPU)[i], abs=0.01), name


def test_each_timing_harness_gets_its_own_sync_time_and_the_template_column_predicts_as_validate() -> None:
    """Two harnesses with 20 us and 80 us of host sync: the fit recovers each (one shared parameter could
    not), and the "template" column of a template without sync_overhead_us estimates each row's harness
    time from the other rows of its harness, as ``dse validate`` does (so it is no longer 0 us)."""
    truth = _truth()
    rows = []
    same = [WORKLOADS[0], WORKLOADS[2], WORKLOADS[4]]  # the same calls timed by both harnesses
    for i, (make, harness, sync_us) in enumerate([*[(m, "a", 20.0) for m in same], *[(m, "b", 80.0) for m in same]]):
        wl = make()
        t = predict_case(RowCase(f"r{i}", wl, truth, "time_s", 1.0, isolated=True), sync_overhead_us=sync_us)
        rows.append(RowCase(f"r{i}", wl, NPU, "time_s", t, isolated=True, harness=harness))
    fit = calibrate(NPU, rows, loo=False)
    v = dict(zip(fit.names, fit.values, strict=True))
    assert "sync_overhead_us" not in v
    # one-operator rows cannot tell launch overhead from sync, but the harnesses' difference is identified
    assert v["sync_us[b]"] - v["sync_us[a]"] == pytest.approx(60.0, rel=0.05)
    assert np.abs(fit.fit_error_pct).max() < 1.0
    shared = calibrate(NPU, [replace(c, harness="a") for c in rows], loo=False)
    assert np.abs(shared.fit_error_pct).max() > 5.0  # one shared sync time cannot fit both harnesses
    for h in "ab":  # the template column: each row with its harness time from the other rows of its harness
        idx = [i for i, c in enumerate(rows) if c.harness == h]
        bare = np.array([predict_case(rows[i], sync_overhead_us=0.0) for i in idx])
        meas = np.array([rows[i].measured for i in idx])
        expect = [(predict_case(rows[i], sync_overhead_us=s) / rows[i].measured - 1) * 100
                  for i, s in zip(idx, harness_sync_us(bare, meas), strict=True)]
        assert fit.before_error_pct[idx] == pytest.approx(expect, rel=1e-9)
        assert not np.allclose(expect, (bare / meas - 1) * 100)  # not the 0-us template
    out = calibrated_template(NPU, fit)
    assert out.compute.sync_overhead_us == NPU.compute.sync_overhead_us  # a harness is not the chip's
    assert "per timing harness" in out.compute.source and "sync_us" not in out.compute.source


def test_a_rate_rows_errors_are_time_errors_as_dse_validate_reports_them() -> None:
    """A row measured as TFLOP/s reports the error of its time (measured / predicted rate - 1), the same figure
    dse validate's families use; a time row the same as before."""
    truth = _truth()
    wl = WORKLOADS[0]()
    t_true = predict_case(RowCase(id="t", workload=wl, hardware=truth, metric="time_s", measured=1.0))
    rate = RowCase(id="r", workload=wl, hardware=NPU, metric="tflops", measured=wl.flops / t_true / 1e12)
    timed = RowCase(id="t", workload=wl, hardware=NPU, metric="time_s", measured=t_true)
    fit = calibrate(NPU, [rate, timed], loo=False)
    # the template runs this compute-bound GEMM at 0.9 against the truth's 0.6: its time is 0.6/0.9 of the truth's
    assert fit.before_error_pct[0] == pytest.approx(fit.before_error_pct[1], abs=0.05)
    assert fit.before_error_pct[0] == pytest.approx((0.6 / 0.9 - 1) * 100, abs=0.5)
