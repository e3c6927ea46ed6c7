"""Validation suite and calibration: statistics, bad rows, recovering known parameters."""

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.cli import main
from dse.errors import DseError
from dse.validate.calibrate import calibrate, calibrated_template, initial, parameter_names, template_with
from dse.validate.suite import (
    MAX_HARNESS_US,
    default_path,
    error_stats,
    load_measurements,
    parse_scenario,
    predict_case,
    prepare_row,
    run_suite,
)

COLS = "id,workload,scenario,hardware,n_chips,metric,value,unit,source,note,timing\n"


def _csv(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "m.csv"
    p.write_text(COLS + body)
    return p


def test_statistics_over_covered_out_of_sample_rows_only() -> None:
    res = pd.DataFrame({"status": ["covered", "covered", "covered", "covered", "not covered", "error"],
                        "time_error_pct": [5.0, -20.0, 1.0, 50.0, np.nan, np.nan],
                        "fitted_into": ["", "", "", "x100 compute.matrix.efficiency", "", ""]})
    st = error_stats(res)
    assert st == {"rows": 6, "covered": 3, "median_abs_error_pct": 5.0, "max_abs_error_pct": 20.0}


def test_isolated_rows_get_the_harness_time_of_the_other_isolated_rows_only(shipped_results: pd.DataFrame) -> None:
    from dse.validate.suite import harness_sync_us

    pred = np.array([1e-5, 2e-5, 1e-3, 4e-3])
    meas = pred + 25e-6  # a 25 us harness on every call
    s = harness_sync_us(pred, meas)
    assert s == pytest.approx([25.0] * 4, rel=1e-3)
    meas2 = meas.copy()
    meas2[0] += 1e-3  # one odd row moves the others' estimate, never its own
    s2 = harness_sync_us(pred, meas2)
    assert s2[0] == pytest.approx(25.0, rel=1e-3) and s2[1] > 25.0
    res = shipped_results.copy()
    iso = res[res["sync_us_loo"].notna()]
    assert len(iso) >= 10 and (iso["sync_us_loo"] > 0).all()


def test_scenario_parsing() -> None:
    assert parse_scenario("phase=decode; batch=8;fused_attention=false;dtype=bf16") == {
        "phase": "decode", "batch": 8, "fused_attention": False, "dtype": "bf16"}
    with pytest.raises(ValueError):
        parse_scenario("batch")


def test_bad_rows_are_reported_and_the_rest_processed(tmp_path: Path) -> None:
    body = (
        "ok,gemm:4096x4096x4096,dtype=bf16,a100-80gb,1,tflops,250,TFLOP/s,test,,steady\n"
        "badmetric,gemm:64x64x64,dtype=bf16,a100-80gb,1,joules,1,J,test,,steady\n"
        "zero,gemm:64x64x64,dtype=bf16,a100-80gb,1,time_s,0,s,test,,steady\n"
        "nochip,gemm:64x64x64,dtype=bf16,b300,1,time_s,1e-5,s,test,,steady\n"
        "multi,llama2-7b,phase=decode,a100-80gb,12,tokens_per_s,300,token/s,test,,steady\n"
    )
    res = run_suite(load_measurements(_csv(tmp_path, body))).set_index("id")
    assert res.loc["ok", "status"] == "covered" and abs(res.loc["ok", "error_pct"]) < 20
    assert res.loc["badmetric", "status"] == "error" and "accepted: time_s" in res.loc["badmetric", "reason"]
    assert res.loc["zero", "status"] == "error" and "> 0" in res.loc["zero", "reason"]
    assert res.loc["nochip", "status"] == "not covered" and "b300" in res.loc["nochip", "reason"]
    assert res.loc["multi", "status"] == "not covered" and "32 attention heads" in res.loc["multi", "reason"]
    assert all("\n" not in r for r in res["reason"])


def test_missing_column_is_one_line(tmp_path: Path, capsys) -> None:
    p = tmp_path / "m.csv"
    p.write_text("id,workload\nx,gemm:1x1x1\n")
    assert main(["validate", "--measurements", str(p), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "missing column" in err and "m.csv" in err and err.count("\n") == 1


def test_shipped_suite_runs_and_reports(tmp_path: Path, capsys, monkeypatch, shipped_results: pd.DataFrame) -> None:
    """``dse validate`` end to end on the shipped file; the prediction of every row is the session's
    ``run_suite(load_measurements())`` (the command asks for exactly that: the whole file, no template swapped, every
    family), so the suite's slowest step runs once per session, not twice."""
    import dse.validate.suite as suite

    asked = []

    def shipped(df, templates=None, families=None, prepared=None):  # noqa: ANN001, ANN202
        asked.append((len(df), templates, families))
        return shipped_results.copy()

    monkeypatch.setattr(suite, "run_suite", shipped)
    assert main(["validate", "--out", str(tmp_path)]) == 0
    assert asked == [(len(suite.load_measurements()), {}, None)]
    out = capsys.readouterr().out
    assert "median |time error|" in out and "error by family" in out
    res = pd.read_csv(tmp_path / "validation.csv")
    assert (res["status"] == "covered").sum() >= 20 and (tmp_path / "validation.png").is_file()
    assert set(res["status"]) <= {"covered", "not covered", "error"}
    fam = pd.read_csv(tmp_path / "families.csv").set_index("family")
    assert {"gemm", "decode", "cnn", "all"} <= set(fam.index)
    # rows whose measurement set a template coefficient are in no statistic
    fitted = res["fitted_into"].fillna("").astype(str).ne("") & res["status"].eq("covered")
    assert fitted.sum() >= 3
    gpu = res["style"].fillna("").ne("npu")  # the GPU families; NPU rows are reported per chip
    assert fam.loc["all", "out_of_sample"] == (res["status"].eq("covered") & ~fitted & gpu).sum()
    assert "error by NPU chip and family" in out and "cross-chip speedups" in out
    chips = pd.read_csv(tmp_path / "templates.csv").set_index(["hardware", "family"])
    for hw in ("gaudi2", "gaudi3", "tpu-v5e"):  # issue 29: at least 8 NPU rows each, out of sample
        assert chips.loc[(hw, "all"), "out_of_sample"] >= 8
    assert (tmp_path / "chip_pairs.csv").is_file()


def test_time_error_turns_rates_into_time_and_bands_bracket_the_rows(shipped_results: pd.DataFrame) -> None:
    from dse.validate.bands import bands_from, family_of, family_table, out_of_sample

    res = shipped_results.copy()
    cov = res[res["status"] == "covered"]
    rate = cov[cov["metric"] != "time_s"].iloc[0]
    assert rate["time_error_pct"] == pytest.approx((rate["measured"] / rate["predicted"] - 1) * 100)
    oos = out_of_sample(res[res["style"] != "npu"])  # the GPU families (family_table)
    t = family_table(res).set_index("family")
    for fam, g in oos.groupby("family"):
        e = g["time_error_pct"]
        assert t.loc[fam, "p10_time_error_pct"] >= e.min() - 1e-9 and t.loc[fam, "p90_time_error_pct"] <= e.max() + 1e-9
    bands = bands_from(res)
    assert bands["gemm"].rows == len(oos[oos["family"] == "gemm"]) and not bands["gemm"].borrowed
    lo, hi = bands["gemm"].interval(1.0)
    assert lo <= hi
    assert family_of(dse.gemm(8, 8, 8)) == "gemm" and family_of(dse.workload("copy:1000")) == "copy"
    assert family_of(dse.workload("resnet50")) == "cnn" and family_of(dse.workload("bert-base")) == "encoder"
    assert family_of(dse.workload("llama2-7b", phase="decode")) == "decode"
    assert family_of(dse.workload("attention:1x2x64x64x32", causal=True)) == "attention"


def test_the_shipped_suite_has_an_attention_family_with_its_rows_covered(shipped_results: pd.DataFrame) -> None:
    from dse.validate.bands import family_table

    df = load_measurements()
    rows = df[df["workload"].str.startswith("attention:")]
    assert len(rows) >= 10 and rows["source"].str.len().gt(20).all()
    res = shipped_results.copy()
    att = res[res["family"] == "attention"]
    assert set(att["id"]) == set(rows["id"]) and (att["status"] == "covered").all()
    assert att["predicted"].gt(0).all() and att["fitted_into"].eq("").all()  # out of sample: none sets a coefficient
    assert family_table(res).set_index("family").loc["attention", "out_of_sample"] == len(rows)


def test_predict_prints_its_error_band(capsys) -> None:
    assert main(["predict", "resnet50", "a100-80gb", "--batch", "8"]) == 0
    out = capsys.readouterr().out
    assert "error band: " in out and "rows out of sample" in out and "the measured step would be" in out


def test_fit_recovers_known_parameters_from_synthetic_measurements() -> None:
    hw = dse.hardware("a100-80gb")
    truth = initial(hw).copy()
    names = parameter_names(hw)
    truth[names.index("matrix_eff")] = 0.71
    truth[names.index("hbm_eff")] = 0.62
    truth[names.index("overhead_us")] = 7.0
    truth[names.index("sync_overhead_us")] = 20.0
    shapes = ["8192x8192x8192", "4096x4096x4096", "1x12288x12288", "16x8192x8192", "64x64x64", "128x128x128",
              "32x16384x4096", "2048x2048x2048"]
    rows = []
    for i, s in enumerate(shapes):
        timing = "isolated" if i % 2 else "steady"
        rows.append({"id": f"r{i}", "workload": f"gemm:{s}", "scenario": "dtype=bf16", "hardware": "a100-80gb",
                     "n_chips": "1", "metric": "time_s", "value": "1", "source": "synthetic", "timing": timing})
    rows.append({"id": "copy", "workload": "copy:100000000", "scenario": "dtype=bf16", "hardware": "a100-80gb",
                 "n_chips": "1", "metric": "time_s", "value": "1", "source": "synthetic", "timing": "steady"})
    cases = []
    from dse.hardware.designs import DesignBatch
    from dse.predict import OpArrays, evaluate_times

    # the truth is the template with those values written in (the tile model reads the template's efficiencies)
    d_true = DesignBatch.from_hardware(template_with(hw, parameter_names(hw), truth))
    for r in rows:
        c = prepare_row(r)
        t = float((evaluate_times(d_true, OpArrays.from_table(c.workload.ops)) @ c.workload.ops["count"].to_numpy())[0])
        t += truth[-1] * 1e-6 if c.isolated else 0.0
        cases.append(type(c)(c.id, c.workload, c.hardware, c.metric, t, c.isolated))
    fit = calibrate(hw, cases, loo=False)
    got = dict(zip(fit.names, fit.values, strict=True))
    assert got["matrix_eff"] == pytest.approx(0.71, rel=0.02)
    assert got["hbm_eff"] == pytest.approx(0.62, rel=0.02)
    assert got["overhead_us"] == pytest.approx(7.0, rel=0.05)
    assert got["sync_overhead_us"] == pytest.approx(20.0, rel=0.05)
    assert np.max(np.abs(fit.fit_error_pct)) < 1.0
    cal = calibrated_template(hw, fit)
    assert cal.name == "a100-80gb-calibrated" and "calibrated by dse calibrate" in cal.compute.source
    assert cal.compute.matrix.efficiency == pytest.approx(0.71, rel=0.02)
    # leave-family-out: without the gemm rows nothing pins the matrix efficiency, so the gemm rows miss;
    # the copy row alone pins the HBM efficiency, so it is recovered from the gemm rows' traffic only
    both = calibrate(hw, cases, loo=True)
    ft = both.family_table().set_index("family")
    assert set(ft.index) == {"gemm", "copy", "all"} and ft.loc["gemm", "rows"] == len(shapes)
    t = both.table()
    assert t["leave_family_out_error_pct"].notna().all()
    assert ft.loc["gemm", "max_abs_leave_family_out_error_pct"] > ft.loc["gemm", "max_abs_loo_error_pct"]


def test_calibrate_command_reports_leave_one_out(tmp_path: Path, capsys) -> None:
    body = "".join(f"g{m},gemm:{m}x4096x4096,dtype=bf16,a100-80gb,1,tflops,{v},TFLOP/s,test,,steady\n"
                   for m, v in ((256, 180), (1024, 240), (4096, 262), (8192, 268)))
    assert main(["calibrate", "a100-80gb", "--measurements", str(_csv(tmp_path, body)), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "leave-one-out" in out and (tmp_path / "a100-80gb-calibrated.yaml").is_file()
    cal = dse.hardware(tmp_path / "a100-80gb-calibrated.yaml")
    assert 0 < cal.compute.matrix.efficiency <= 1


@pytest.mark.parametrize(("body", "needle"), [
    (None, "got an empty file"),
    ("", "got a header and no rows"),
])
def test_empty_or_header_only_measurements_are_one_line(tmp_path: Path, capsys, body, needle) -> None:
    p = tmp_path / "m.csv"
    p.write_text("" if body is None else COLS + body)
    assert main(["validate", "--measurements", str(p), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert needle in err and "m.csv" in err and err.count("\n") == 1, err


def test_rows_with_unreadable_cells_are_reported_by_the_suite_and_refused_by_the_command(tmp_path: Path,
                                                                                        capsys) -> None:
    """run_suite (the library) reports each bad row and goes on; ``dse validate`` refuses the file, one line a row."""
    body = (
        "ok,gemm:4096x4096x4096,dtype=bf16,a100-80gb,1,tflops,250,TFLOP/s,test,,steady\n"
        "chips,gemm:64x64x64,dtype=bf16,a100-80gb,x,time_s,1e-5,s,test,,steady\n"
        "inf,gemm:64x64x64,dtype=bf16,a100-80gb,1,time_s,inf,s,test,,steady\n"
        "short,gemm:64x64x64\n"
    )
    p = _csv(tmp_path, body)
    res = run_suite(load_measurements(p)).set_index("id")
    assert res.loc["ok", "status"] == "covered"
    assert res.loc["chips", "status"] == "error" and "got 'x'" in res.loc["chips", "reason"]
    assert res.loc["inf", "status"] == "error" and "finite" in res.loc["inf", "reason"]
    assert res.loc["short", "status"] == "error"
    assert main(["validate", "--measurements", str(p), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {p}: line 3 (chips).n_chips: got 'x'; accepted: an integer 1..1000000",
        f"error: {p}: line 4 (inf).value: got 'inf'; accepted: a finite number > 0",
        f"error: {p}: line 5 (short): got 2 fields; accepted: 11 fields, one per header column "
        f"({COLS.strip().replace(',', ', ')})"]
    assert not (tmp_path / "o").exists()


# -- dse validate checks the whole measurements file first (issue 35 item 2) ---------------------------------------

SHIPPED_IDS = ("lc-a100-gemm-64x12288x12288", "lc-a100-gemm-128x12288x12288")  # the first two shipped rows


def _shipped(*ids: str) -> tuple[list[str], list[list[str]]]:
    """The shipped file's header and copies of its rows with these ids (the first two by default)."""
    header, *rows = csv.reader(default_path().open(encoding="utf-8", newline=""))
    by_id = {r[0]: r for r in rows}
    return header, [list(by_id[i]) for i in (ids or SHIPPED_IDS)]


def _write(tmp_path: Path, header: list[str], rows: list[list[str]]) -> Path:
    p = tmp_path / "m.csv"
    with p.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([header, *rows])
    return p


def _validate(tmp_path: Path, capsys, path: Path, monkeypatch=None) -> tuple[int, list[str], str]:
    """Exit status, stderr lines and stdout of ``dse validate --measurements path``; with ``monkeypatch``, the
    prediction (run_suite) fails the test if it is reached."""
    if monkeypatch is not None:
        def no_prediction(*_a, **_k):
            raise AssertionError("predicted a file with a bad row")
        monkeypatch.setattr("dse.validate.suite.run_suite", no_prediction)
    rc = main(["validate", "--measurements", str(path), "--out", str(tmp_path / "o"), "--quiet"])
    cap = capsys.readouterr()
    return rc, cap.err.splitlines(), cap.out


def test_two_good_shipped_rows_validate_with_exit_0_and_no_error_or_warning(tmp_path: Path, capsys) -> None:
    header, rows = _shipped()
    rc, err, out = _validate(tmp_path, capsys, _write(tmp_path, header, rows))
    assert rc == 0 and err == []
    first = out.split("\n\n")[0]  # the summary leads
    assert first.startswith("2 out-of-sample rows of 2: median |time error|") and "nan" not in first
    assert (pd.read_csv(tmp_path / "o" / "validation.csv")["status"] == "covered").all()


def test_validate_keeps_the_chips_and_families_asked_for(tmp_path: Path, capsys) -> None:
    """``--hardware`` and ``--family`` narrow what is predicted and reported (the pairs among the kept chips only); a
    name no row has is one line naming the flag and the names that have rows, exit 2."""
    from dse.cli import main

    out = tmp_path / "o"
    assert main(["validate", "--hardware", "gaudi2,gaudi3", "--family", "serving", "--out", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    res = pd.read_csv(out / "validation.csv")
    assert set(res["hardware"]) == {"gaudi2", "gaudi3"} and set(res["family"]) == {"serving"}
    assert "error by family, GPU chips" not in text  # no GPU row kept
    pairs = pd.read_csv(out / "chip_pair_errors.csv")
    assert set(pairs["chip_a"]) <= {"gaudi2", "all"} and set(pairs["chip_b"]) <= {"gaudi3", "all"}
    # (the bad family beside one chip: only its rows are prepared before the family is refused)
    for flag, bad, rest in (("--hardware", "gaudi4", []), ("--family", "gemm,nope", ["--hardware", "tpu-v5e"])):
        assert main(["validate", flag, bad, *rest, "--out", str(out), "--quiet"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"error: {flag}: got {bad!r}; accepted: comma-separated names")


def _templates_accepted() -> str:
    from dse.hardware.templates import list_templates

    return f"a template ({', '.join(sorted(list_templates()))}) or a name given with --template NAME=TEMPLATE"


FINITE = "a finite number > 0"
BAD_CELL = {  # class: (column, bad value, the column path in the line, accepted: the rest of the line as a regex)
    "nan value": ("value", "nan", "value", FINITE),
    "negative time": ("value", "-0.0002003", "value", FINITE),
    "zero time": ("value", "0", "value", FINITE),
    "unknown hardware": ("hardware", "b300", "hardware", None),  # the shipped template names
    "unknown workload": ("workload", "llama9-7b", "workload",
                         r"(.*\bllama2-7b\b.*|one of the \d+ library models \(dse workloads list\)), "
                         r"a YAML path, .*gemm:MxNxK"),
    "malformed gemm": ("workload", "gemm:0x12288x12288", "workload", r"gemm:MxNxK with 0 < M, N, K <= 2\^24"),
    "unknown dtype": ("scenario", "dtype=fp99", "scenario.dtype",
                      r"one of int4, int8, fp8, fp16, bf16, tf32, fp32, fp64, bfp8, bfp4, mxfp8, mxfp4, nvfp4"),
    "unknown metric": ("metric", "joules", "metric", "time_s, tflops, tokens_per_s, samples_per_s, bandwidth_gbps, mfu"),
    "zero chips": ("n_chips", "0", "n_chips", r"an integer 1\.\.1000000"),
    "fractional chips": ("n_chips", "1.5", "n_chips", r"an integer 1\.\.1000000"),
    "empty id": ("id", "", "id", "an id unique in the file"),
}


@pytest.mark.parametrize("kind", list(BAD_CELL))
def test_each_kind_of_bad_cell_is_one_error_line_and_exit_2_before_any_prediction(tmp_path: Path, capsys,
                                                                                  monkeypatch, kind: str) -> None:
    """A copy of two shipped rows with one cell of the second broken: one ``error: FILE: line 3 (ID).COLUMN: got X;
    accepted: Y`` line, exit 2, nothing predicted or written."""
    import re

    column, value, where, accepted = BAD_CELL[kind]
    header, rows = _shipped()
    rows[1][header.index(column)] = value
    p = _write(tmp_path, header, rows)
    rc, err, _ = _validate(tmp_path, capsys, p, monkeypatch)
    rid = rows[1][0] or None
    got = value.split("=", 1)[1] if column == "scenario" else value
    accepted = re.escape(_templates_accepted()) if accepted is None else accepted
    place = f"line 3 ({rid})" if rid else "line 3"
    line = rf"error: {re.escape(f'{p}: {place}.{where}')}: got {re.escape(repr(got))}; accepted: {accepted}"
    assert rc == 2 and len(err) == 1 and re.fullmatch(line, err[0]), (err, line)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("kind", "cut"), [("too few fields", slice(0, 5)), ("too many fields", None)])
def test_a_ragged_row_is_one_error_line_naming_its_line_and_the_header_width(tmp_path: Path, capsys, monkeypatch,
                                                                             kind: str, cut: slice | None) -> None:
    header, rows = _shipped()
    rows[0] = rows[0][cut] if cut else [*rows[0], "extra"]  # the first row: pandas would shift every column
    p = _write(tmp_path, header, rows)
    rc, err, _ = _validate(tmp_path, capsys, p, monkeypatch)
    n = 5 if cut else len(header) + 1
    assert rc == 2 and err == [f"error: {p}: line 2 ({SHIPPED_IDS[0]}): got {n} fields; accepted: {len(header)} "
                               f"fields, one per header column ({', '.join(header)})"], (kind, err)


def test_a_repeated_id_is_an_error_on_its_second_line_naming_the_first(tmp_path: Path, capsys, monkeypatch) -> None:
    header, rows = _shipped()
    rows[1][0] = rows[0][0]
    p = _write(tmp_path, header, rows)
    rc, err, _ = _validate(tmp_path, capsys, p, monkeypatch)
    assert rc == 2 and err == [f"error: {p}: line 3 ({SHIPPED_IDS[0]}).id: got '{SHIPPED_IDS[0]}' again (first on "
                               "line 2); accepted: an id unique in the file"]


def test_every_bad_row_and_cell_is_listed_in_file_order_and_long_lists_are_capped(tmp_path: Path, capsys,
                                                                                   monkeypatch) -> None:
    from dse.validate.suite import MAX_ERROR_LINES

    header, rows = _shipped()
    rows[0][header.index("value")] = "nan"
    rows[0][header.index("metric")] = "joules"  # two cells of one row: two lines, in column order
    rows[1][header.index("hardware")] = "b300"
    p = _write(tmp_path, header, [*rows, rows[1][:3]])
    rc, err, _ = _validate(tmp_path, capsys, p, monkeypatch)
    assert rc == 2 and [e.split(": got")[0] for e in err] == [
        f"error: {p}: line 2 ({SHIPPED_IDS[0]}).metric", f"error: {p}: line 2 ({SHIPPED_IDS[0]}).value",
        f"error: {p}: line 3 ({SHIPPED_IDS[1]}).hardware", f"error: {p}: line 4 ({SHIPPED_IDS[1]})"]
    good = _shipped()[1][1]
    many = [[f"r{i}", *good[1:6], "-1", *good[7:]] for i in range(MAX_ERROR_LINES + 10)]  # one bad value a row
    rc, err, _ = _validate(tmp_path, capsys, _write(tmp_path, header, many), monkeypatch)
    assert rc == 2 and len(err) == MAX_ERROR_LINES and all(e.startswith(f"error: {p}: line ") for e in err[:-1])
    assert err[-1] == (f"error: {p}: got {MAX_ERROR_LINES + 10} bad fields, 11 more not shown; accepted: a "
                       "measurements CSV whose every row is valid")


def test_a_measurement_faster_than_the_roof_is_a_warning_naming_the_row_and_the_run_goes_on(tmp_path: Path,
                                                                                            capsys) -> None:
    """A GEMM ten times faster than the A100's roof and a copy above its DRAM bandwidth (2039 GB/s): a warning
    each; the row between them, a real one, none; every row still predicted, exit 0."""
    header, rows = _shipped("lc-a100-gemm-64x12288x12288", "lc-a100-gemm-128x12288x12288", "gptfast-a100-stream")
    v = header.index("value")
    rows[0][v] = str(float(rows[0][v]) / 10)
    rows[2][v] = "2500"  # GB/s
    rc, err, out = _validate(tmp_path, capsys, _write(tmp_path, header, rows))
    p = tmp_path / "m.csv"
    assert rc == 0 and len(err) == 2, err
    assert err[0].startswith(f"warning: {p}: line 2 ({rows[0][0]}): measured 1.9e-05 s per pass, faster than the "
                             "roof of a100-80gb (") and "DRAM bytes at 2039 GB/s" in err[0]
    assert err[1].startswith(f"warning: {p}: line 4 (gptfast-a100-stream): measured 2500 bandwidth_gbps, 0.0016 s per pass")
    assert "DRAM bytes at 2039 GB/s); check the value, metric, dtype and hardware" in err[1]
    res = pd.read_csv(tmp_path / "o" / "validation.csv")
    assert (res["status"] == "covered").all() and len(res) == 3
    assert "3 out-of-sample rows of 3" in out or "2 out-of-sample rows of 3" in out


def test_no_shipped_row_is_faster_than_its_roof_and_the_roof_is_below_the_model_s_time() -> None:
    """The shipped file draws no roof warning; the roof is a lower bound of the model's own time of a sample of
    rows (every 6th: GEMMs, copies, attention, decode, serving, training), so a warning never fires on a time the
    model itself would predict."""
    from dse.hardware.designs import DesignBatch
    from dse.validate.suite import case_time, check_measurements, read_records, roof_time

    _, warnings = check_measurements()
    assert warnings == []
    header, records = read_records(default_path())
    roofs = []
    for rec in records[::6]:
        case = prepare_row(dict(zip(header, rec.cells, strict=True)))
        model_s = float(case_time(case, DesignBatch.from_hardware(case.hardware))[0])
        roofs.append(roof_time(case.workload, case.hardware)[0])
        assert 0 <= roofs[-1] <= model_s * (1 + 1e-9), case.id
    assert sum(r > 0 for r in roofs) >= 0.8 * len(roofs)  # zero only where the whole pass fits on die


def test_isolated_rows_share_a_harness_only_with_rows_of_the_same_source(tmp_path: Path) -> None:
    """Two harnesses (25 us and 300 us) on one template: each row's harness time comes from the other
    rows of its own source, so neither harness leaks into the other."""
    body = ""
    for src, sync in (("harnessA@1", 25e-6), ("harnessB@2", 300e-6)):
        for i, n in enumerate((1024, 2048, 4096)):
            case = prepare_row({"id": "x", "workload": f"gemm:{n}x{n}x{n}", "scenario": "dtype=bf16",
                                "hardware": "a100-80gb", "n_chips": "1", "metric": "time_s", "value": "1",
                                "source": "s", "timing": "isolated"})
            from dse.validate.suite import predict_case
            t = predict_case(case, sync_overhead_us=0.0) + sync
            body += f"{src}-{i},gemm:{n}x{n}x{n},dtype=bf16,a100-80gb,1,time_s,{t},s,{src} table,,isolated\n"
    res = run_suite(load_measurements(_csv(tmp_path, body)))
    assert res["error_pct"].abs().max() < 0.5
    assert np.allclose(res["sync_us_loo"], [25] * 3 + [300] * 3, rtol=1e-2)


def test_named_harnesses_of_one_source_are_kept_apart_and_bad_timing_is_one_line(tmp_path: Path) -> None:
    from dse.validate.suite import harness_of, predict_case

    assert harness_of({"source": "github.com/x/y@abc file.csv (note)", "timing": "isolated"}) == "github.com/x/y"
    assert harness_of({"source": "github.com/x/y@def other.csv", "timing": "isolated:gelu"}) == "github.com/x/y gelu"
    body = ""
    for name, sync in (("isolated:a", 10e-6), ("isolated:b", 200e-6)):
        for i, n in enumerate((2**20, 2**24, 2**28)):
            case = prepare_row({"id": "x", "workload": f"copy:{n}", "scenario": "dtype=fp16", "hardware": "a100-80gb",
                                "n_chips": "1", "metric": "time_s", "value": "1", "source": "s", "timing": name})
            t = predict_case(case, sync_overhead_us=0.0) + sync
            body += f"{name[-1]}{i},copy:{n},dtype=fp16,a100-80gb,1,time_s,{t},s,repo@1 f.csv,,{name}\n"
    body += "bad,copy:1024,dtype=fp16,a100-80gb,1,time_s,1e-5,s,repo@1,,isolated:\n"
    res = run_suite(load_measurements(_csv(tmp_path, body))).set_index("id")
    assert np.allclose(res["sync_us_loo"].iloc[:6], [10] * 3 + [200] * 3, rtol=1e-2)
    assert res.loc["bad", "status"] == "error"
    assert "accepted: steady, isolated, isolated:HARNESS" in res.loc["bad", "reason"]


def test_megatron_training_rows_are_their_own_family_and_the_recompute_ratio_holds() -> None:
    """Korthikanti et al. 2022 Table 5 (22B..1T on 8..512 A100): nothing is fitted on these rows.
    The step-time ratio full / selective recomputation is within 5 % of the measured ratio per model,
    and no row is off by more than 30 %."""
    df = load_measurements()
    rows = df[df["id"].str.startswith("korthikanti-")]
    res = run_suite(rows).set_index("id")
    assert (res["status"] == "covered").all() and (res["family"] == "multi-chip-training").all()
    assert (res["fitted_into"] == "").all() and res["time_error_pct"].abs().max() < 30
    for model in ("22b", "175b", "530b", "1t"):
        full, sel = res.loc[f"korthikanti-a100-{model}-full"], res.loc[f"korthikanti-a100-{model}-selective"]
        ratio_pred, ratio_meas = full["predicted"] / sel["predicted"], full["measured"] / sel["measured"]
        assert abs(ratio_pred / ratio_meas - 1) < 0.05, (model, ratio_pred, ratio_meas)


def test_torchtune_activation_checkpointing_ratio_holds_on_one_gpu() -> None:
    """torchtune's optimization table (Llama 3.2 3B on one A100; nothing fitted): the step-time ratio of activation
    checkpointing every layer (recompute full) over the same compiled step without it is within 5 % of the measured
    9174 / 7210 tokens/s, and each compiled row within 10 % (issue 31: the full / none ratio)."""
    df = load_measurements()
    res = run_suite(df[df["id"].str.startswith("torchtune-")]).set_index("id")
    assert (res["status"] == "covered").all() and (res["family"] == "training").all()
    assert (res["fitted_into"] == "").all()
    ac, base = res.loc["torchtune-a100-llama32-3b-compile-cce-ac"], res.loc["torchtune-a100-llama32-3b-compile-cce"]
    ratio_pred, ratio_meas = ac["predicted"] / base["predicted"], ac["measured"] / base["measured"]
    assert ratio_meas == pytest.approx(9174 / 7210, rel=1e-4)
    assert abs(ratio_pred / ratio_meas - 1) < 0.05, (ratio_pred, ratio_meas)
    assert abs(ac["time_error_pct"]) < 10 and abs(base["time_error_pct"]) < 10


#: Korthikanti et al. 2022 (arXiv:2205.05198) Table 4: forward + backward time of one transformer layer of the
#: 22B model (TP 8, micro-batch 4, seq 2048, A100 80GB), ms, by recomputation / sequence-parallel setting
TABLE4_LAYER_MS = {"recompute=none": 19.6, "recompute=none;sp=true": 19.0, "recompute=full": 27.2,
                   "recompute=selective": 20.9, "recompute=selective;sp=true": 20.3}


def _layer_ms(setting: str) -> float:
    """Predicted time of one layer (forward + backward + recompute) of the 22B row under ``setting``: every
    row's time x scale x its per-layer instances (count less the embedding/head/optimizer instances merged
    into it, fewer than the 48 layers), over 48."""
    df = load_measurements()
    row = df[df["id"] == "korthikanti-a100-22b-full"].iloc[0].to_dict()
    row["scenario"] = row["scenario"].replace("recompute=full", setting)
    case = prepare_row(row)
    ops = dse.predict(case.workload, case.hardware, system=case.system).ops
    per_layer = ops["count"] - ops["count"] % 48
    return float((ops["time_s"] * ops["scale"] * per_layer).sum() / 48 * 1e3)


def test_full_over_no_recompute_layer_time_matches_korthikanti_table4() -> None:
    """Nothing is fitted on Table 4: the full / none recomputation ratio of one layer's time (measured 27.2 /
    19.6 = 1.39) and the selective + SP / none ratio (20.3 / 19.6 = 1.04) are within 5 % of measured, and
    each layer time within 30 %."""
    pred = {k: _layer_ms(k) for k in TABLE4_LAYER_MS}
    for k, meas in TABLE4_LAYER_MS.items():
        assert abs(pred[k] / meas - 1) < 0.30, (k, pred[k], meas)
    none = "recompute=none"
    for k in ("recompute=full", "recompute=selective;sp=true"):
        ratio_pred, ratio_meas = pred[k] / pred[none], TABLE4_LAYER_MS[k] / TABLE4_LAYER_MS[none]
        assert abs(ratio_pred / ratio_meas - 1) < 0.05, (k, ratio_pred, ratio_meas)


def test_oci_serving_rows_need_the_engine_host_time_and_the_fp8_efficiency() -> None:
    """The OCI Llama 3.1 405B FP8 rows (8xMI300X, vLLM benchmark_latency.py, batch 1-256) are out of sample (no coefficient
    was set from them): with the engine host time (workloads/engines/vllm-v0-sync.yaml, vLLM RFC #6854/#6913) and
    mi300x's fp8 GEMM efficiency (hipBLASLt #1721) the median |time error| is <= 10 % and the max <= 30 % (also over
    the two benchmark_throughput.py rows); without the host time the batch-256 row is > 25 % too fast (27.2 % since
    the tensor-parallel all-reduces move vLLM's bf16 activations), without the fp8 efficiency > 15 % (17.0 %; 24.4 %
    while the all-reduces moved FP8 bytes), without the quantize kernel before each FP8 GEMM
    (``input_quant=kernel``: vLLM's apply_fp8_linear) the fastest row is over 4 points faster (8.2 % fast against
    2.6 %; it was 13.5 % while the tensor-parallel all-reduces moved FP8 bytes: the rows keep vLLM's bf16
    activations between the FP8 GEMMs, ``activation_dtype=bf16``, which the all-reduces sum)."""
    from dse.hardware.templates import load_hardware

    df = load_measurements()
    oci = df[df["id"].str.startswith("oci-mi300x-llama31-405b-fp8")]
    assert len(oci) == 7 and oci["scenario"].str.contains("serving_engine=vllm-v0-sync").all()
    res = run_suite(oci)
    err = res["time_error_pct"].abs()
    latency = ~res["id"].str.contains("-thr-")  # benchmark_latency.py rows; -thr-: benchmark_throughput.py
    assert (res["fitted_into"] == "").all() and err[latency].median() <= 10 and err.max() <= 30
    no_host = run_suite(oci.assign(scenario=oci["scenario"].str.replace(";serving_engine=vllm-v0-sync", "")))
    assert no_host["time_error_pct"].min() < -25
    assert oci["scenario"].str.contains(";input_quant=kernel").all()
    no_quant = run_suite(oci.assign(scenario=oci["scenario"].str.replace(";input_quant=kernel", "")))
    assert no_quant["time_error_pct"].min() < res["time_error_pct"].min() - 4
    hw = load_hardware("mi300x")
    data = hw.model_dump()
    data["compute"]["matrix"]["dtype_efficiency"] = {}
    no_fp8 = run_suite(oci, templates={"mi300x": type(hw).model_validate(data)})
    assert no_fp8["time_error_pct"].min() < -15


def test_prefill_family_is_in_the_shipped_suite_with_two_sources_all_covered() -> None:
    """Whole-model single-chip prefill rows (TensorRT-LLM 0.9.0 first-token latency, TGI text-generation-benchmark
    prefill steps) form the family ``prefill``: every such row is covered, out of sample (no coefficient was set
    from them) and cites its source; the family has rows from at least two sources on at least two templates."""
    df = load_measurements()
    pre = df[df["scenario"].str.contains("phase=prefill") & df["n_chips"].astype(str).eq("1")]
    res = run_suite(pre)
    assert len(res) >= 8 and (res["status"] == "covered").all(), res[res["status"] != "covered"]
    assert (res["family"] == "prefill").all() and (res["fitted_into"] == "").all()
    assert res["time_error_pct"].notna().all() and pre["source"].str.len().gt(20).all()
    sources = pre["source"].str.split(" ", n=1).str[0].str.split("@").str[0]
    assert sources.nunique() >= 2 and pre["hardware"].nunique() >= 2
    from dse.validate.bands import family_table

    assert "prefill" in set(family_table(res)["family"])


#: families that do not yet meet issue 12's bar, with the reason (docs/validation.md, "Misses left"); a family leaves
#: this set when it meets the bar, and the test below then holds it there. Empty since the XLA table's H100 FP8 rows
#: left the measurements (their source's FP8 column exceeds the chip's dense peak: validation/residency_candidates.md)
KNOWN_MISSES: dict[str, str] = {}


def test_no_gemm_row_claims_more_than_its_chips_dense_peak() -> None:
    """A GEMM row whose FLOP rate (``2 m n k`` per measured time, or its TFLOP/s) exceeds its template's dense peak
    for the row's dtype did not time what it says (a sparse or skipped product, a wrong unit): the measurements hold
    none. XLA's matmul table was dropped for H100 FP8 on this ground, its other FP8 points reaching 2.6 PFLOP/s on a
    1.98 PFLOP/s chip (validation/residency_candidates.md, section 1.6)."""
    from dse.hardware.designs import DesignBatch
    from dse.units import DTYPE_INDEX

    rows = load_measurements()
    rows = rows[rows["workload"].str.startswith("gemm:")]
    assert len(rows) >= 100
    for _, row in rows.iterrows():
        case = prepare_row(row)
        dtype = case.workload.scenario.get("dtype") or "bf16"
        peak = DesignBatch.from_hardware(case.hardware).matrix_peak[0, DTYPE_INDEX[dtype]]
        rate = case.measured * 1e12 if case.metric == "tflops" else case.workload.flops / case.measured
        assert case.metric in ("tflops", "time_s") and 0 < rate <= peak, (case.id, rate / peak)


@pytest.fixture(scope="module")
def shipped_table(shipped_results: pd.DataFrame) -> pd.DataFrame:
    """``dse validate``'s family table over the shipped measurements and templates (run once per module)."""
    from dse.validate.bands import family_table

    return family_table(shipped_results.copy()).set_index("family")


def test_every_family_but_the_known_misses_meets_issue_12s_bar(shipped_table: pd.DataFrame) -> None:
    """Out of sample (no row that set a coefficient), each family's median |time error| is <= 10 % and its max
    <= 30 % (issue 12, "Done when"), except the families in KNOWN_MISSES, which must still miss it (so a fix
    shows up here and moves them out)."""
    table = shipped_table
    meets = (table["median_abs_time_error_pct"] <= 10) & (table["max_abs_time_error_pct"] <= 30)
    families = [f for f in table.index if f != "all"]
    assert len(families) >= 10 and (table.loc[families, "out_of_sample"] > 0).all()
    assert {f for f in families if not meets[f]} == set(KNOWN_MISSES)
    # the TileLang GEMMs on an H800 (one tile per CTA, K = 256..16384) stay within 10 % in fp16 and 17 % in FP8: its
    # autotuned FP8 kernels run up to 17 % faster than the cuBLASLt GEMM that sets h100-sxm's FP8 efficiency (the
    # vendor library, as the bf16 one), so its K >= 2048 rows are 14-17 % slow, the K = 256 row 12 % fast
    res = run_suite(load_measurements().query("id.str.startswith('tilelang-')", engine="python"))
    fp8 = res["id"].str.contains("fp8")
    assert len(res) == 14 and fp8.sum() == 7
    assert res.loc[~fp8, "time_error_pct"].abs().max() <= 10 and res.loc[fp8, "time_error_pct"].abs().max() <= 17


def test_the_validation_doc_shows_the_family_table_dse_validate_prints(shipped_table: pd.DataFrame) -> None:
    """docs/validation.md's per-family table (issue 12, "Done when"; moved there from the README) carries the figures
    ``dse validate`` prints today: rows, out-of-sample rows, median and max |time error| and the p10 .. p90 band, to
    0.1 %, for every family."""
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "validation.md").read_text()
    pattern = re.compile(r"^\| (\S+)[^|]*\| (\d+) \| (\d+) \| ([\d.]+) % \| ([\d.]+) % \| ([-+\d.]+) \.\. ([-+\d.]+) % \|$")
    shown = {m[1]: m.groups()[1:] for m in map(pattern.match, doc.splitlines()) if m}
    assert set(shown) == set(shipped_table.index), set(shown) ^ set(shipped_table.index)
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert not any(map(pattern.match, readme.splitlines())), "the family table lives in docs/validation.md, checked here"
    for fam, (rows, oos, med, mx, p10, p90) in shown.items():
        t = shipped_table.loc[fam]
        assert (int(rows), int(oos)) == (t["rows"], t["out_of_sample"]), fam
        got = [t[c] for c in ("median_abs_time_error_pct", "max_abs_time_error_pct", "p10_time_error_pct",
                              "p90_time_error_pct")]
        assert [float(x) for x in (med, mx, p10, p90)] == [round(float(v), 1) for v in got], fam


@settings(max_examples=100, deadline=None)
@given(st.floats(1e-6, 1e6), st.floats(0.1, 10.0))
def test_a_rate_and_a_time_of_the_same_prediction_have_the_same_time_error(measured_s: float, ratio: float) -> None:
    """Predicting a time ``ratio`` x the measured one is a time error of ``ratio - 1``, whether the row gives the
    time or a rate (work / time, which the prediction then undershoots by the same ratio)."""
    from dse.validate.suite import time_error_pct

    as_time = float(time_error_pct(ratio * measured_s, measured_s, True))
    as_rate = float(time_error_pct(1.0 / (ratio * measured_s), 1.0 / measured_s, False))
    assert as_time == pytest.approx((ratio - 1) * 100, rel=1e-9, abs=1e-9)
    assert as_rate == pytest.approx(as_time, rel=1e-9, abs=1e-9)


def test_the_npu_validation_doc_shows_the_tables_dse_validate_prints(shipped_results: pd.DataFrame) -> None:
    """docs/npu_validation.md: every NPU chip-family row and every chip pair, to 0.1 %, as ``dse validate`` computes
    them (issue 29: NPU rows reported per chip; cross-chip speedups)."""
    import re

    from dse.validate.bands import template_table
    from dse.validate.ratios import chip_pairs, pair_table

    res = shipped_results.copy()
    doc = (Path(__file__).resolve().parents[2] / "docs" / "npu_validation.md").read_text()
    fam = re.compile(r"^\| ([\w.-]+) \| ([\w-]+) \| (\d+) \| (\d+) \| (?:([\d.]+) %|—) \| (?:([\d.]+) %|—) \|$")
    shown = {(m[1], m[2]): m.groups()[2:] for m in map(fam.match, doc.splitlines()) if m}
    t = template_table(res[res["style"] == "npu"])
    t = t[t["family"] != "all"].set_index(["hardware", "family"])
    assert set(shown) == set(t.index)
    for key, (rows, oos, med, mx) in shown.items():
        r = t.loc[key]
        assert (int(rows), int(oos)) == (r["rows"], r["out_of_sample"])
        if med is None:  # a family whose every row set a coefficient: no out-of-sample error to show
            assert int(oos) == 0 and np.isnan(r["median_abs_time_error_pct"]) and mx is None
            continue
        assert [float(med), float(mx)] == [round(float(r["median_abs_time_error_pct"]), 1),
                                           round(float(r["max_abs_time_error_pct"]), 1)]
    pair = re.compile(r"^\| ([\w.-]+) \| ([\w.-]+) \| (\d+) \| ([\d.]+) % \| ([\d.]+) % \| ([-\d.]+) % \|$")
    pairs = {(m[1], m[2]): m.groups()[2:] for m in map(pair.match, doc.splitlines()) if m}
    p = pair_table(chip_pairs(res))
    npu_chips = set(res.loc[res["style"] == "npu", "hardware"])
    p = p[p["chip_a"].isin(npu_chips)].set_index(["chip_a", "chip_b"])
    assert set(pairs) == set(p.index)
    for key, (n, med, mx, signed) in pairs.items():
        r = p.loc[key]
        assert int(n) == r["pairs"] and [float(med), float(mx), float(signed)] == [
            round(float(r[c]), 1) for c in ("median_abs_ratio_error_pct", "max_abs_ratio_error_pct",
                                            "median_ratio_error_pct")]


def test_the_residency_doc_shows_the_new_rows_errors() -> None:
    """docs/residency.md: the gpu-small-kernels copies (``gbsk-``) and XLA's GEMM table (``xlapt-``) per source and
    chip, rows, out-of-sample rows, median and max |time error| to 0.1 %, as ``dse validate`` computes them."""
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "residency.md").read_text()
    row = re.compile(r"^\| (gbsk|xlapt) \| ([\w.-]+) \| (\d+) \| (\d+) \| ([\d.]+) % \| ([\d.]+) % \|$")
    shown = {(m[1], m[2]): m.groups()[2:] for m in map(row.match, doc.splitlines()) if m}
    rows = load_measurements()
    res = run_suite(rows[rows["id"].str.startswith(("gbsk-", "xlapt-"))])
    res["source"] = res["id"].str.split("-").str[0]
    got = {}
    for (src, hw), g in res.groupby(["source", "hardware"]):
        oos = g[g["fitted_into"].fillna("") == ""]["time_error_pct"].abs()
        got[(src, hw)] = (str(len(g)), str(len(oos)), f"{oos.median():.1f}", f"{oos.max():.1f}")
    assert shown == got


def test_mi300x_small_gemms_need_the_library_macro_tiles() -> None:
    """XLA's MI300X GEMM table (256^3-4096^3, out of sample): with the macro tiles hipBLASLt's tuned gfx942 tables
    select (``compute.matrix.cta_tiles``, one tile per workgroup) the worst row is within 30 %; on the 16x16 MFMA
    quantization alone (no tiles) the 1024^3 GEMM is predicted > 35 % too fast (304 CUs kept busy by a 1024^2 output
    they are not), and the H100 / MI300X speedups of the same table miss by more."""
    from dse.hardware.templates import load_hardware

    df = load_measurements()
    rows = df[df["id"].str.startswith(("xlapt-mi300x-", "xlapt-h100-"))]
    hw = load_hardware("mi300x")
    assert hw.compute.matrix.cta_tiles and hw.compute.matrix.gemm_kernel == "one_tile"
    res = run_suite(rows)
    mi = res[res["id"].str.startswith("xlapt-mi300x-")]
    assert len(mi) == 5 and (mi["fitted_into"] == "").all() and mi["time_error_pct"].abs().max() <= 30
    data = hw.model_dump()
    data["compute"]["matrix"]["cta_tiles"] = None
    bare = run_suite(rows, templates={"mi300x": type(hw).model_validate(data)})
    b_mi = bare[bare["id"].str.startswith("xlapt-mi300x-")].set_index("id")["time_error_pct"]
    assert b_mi["xlapt-mi300x-bf16-1024"] < -35

    def speedup_error(r: pd.DataFrame) -> float:
        t = r.set_index("id")
        errs = [abs((t.at[f"xlapt-mi300x-bf16-{n}", "predicted"] / t.at[f"xlapt-h100-bf16-{n}", "predicted"])
                    / (t.at[f"xlapt-mi300x-bf16-{n}", "measured"] / t.at[f"xlapt-h100-bf16-{n}", "measured"]) - 1)
                for n in (256, 512, 1024, 2048, 4096)]
        return float(np.median(errs))

    assert speedup_error(res) < speedup_error(bare)


def test_a_row_with_an_fsdp_plan_is_not_turned_into_tensor_parallelism() -> None:
    """A multi-chip row whose scenario names fsdp (MaxText's tpu-recipes rows) runs that plan on that many chips;
    only a row naming no plan at all gets tp = chips."""
    from dse.validate.suite import prepare_row

    row = {"id": "x", "workload": "llama3-8b", "hardware": "tpu-v6e", "n_chips": "8", "metric": "time_s",
           "value": "1", "unit": "s", "source": "synthetic", "timing": "steady",
           "scenario": "phase=training;batch=24;seq=2048;dtype=bf16;framework=xla;fsdp=8;recompute=full"}
    plan = prepare_row(row).workload.plan
    assert (plan.tp, plan.fsdp, plan.n_chips, plan.recompute) == (1, 8, 8, "full")
    assert "fw:xla" in prepare_row(row).workload.label()


def _tt_rows() -> list[dict]:
    with Path(default_path()).open() as f:
        return [r for r in csv.DictReader(f) if r["hardware"] in ("tt-n150", "tt-p150") and r["id"].startswith("ttmetal-")]


def test_tenstorrent_cnn_rows_leave_far_more_per_operator_than_the_published_dispatch_as_the_doc_says() -> None:
    """docs/npu_validation.md, 'Tenstorrent dispatch, sourced': the time the n150/p150 CNN rows measure beyond the
    prediction, per operator executed, is 14-17 us on n150 (41 on mobilenet-v2) and 8 us on p150, where tt-metal's
    dispatch goldens (the templates' launch overhead) are 1.21 and 0.94 us."""
    gap = {}
    for r in _tt_rows():
        if r["metric"] == "time_s":  # the decode rows: per iteration, the next test
            continue
        case = prepare_row(r)
        p = dse.predict(case.workload, case.hardware)
        measured_s = p.time_s * predict_case(case) / float(r["value"])  # rate rows: time scales as 1 / rate
        gap[r["id"]] = (measured_s - p.time_s) / float(p.ops["count"].sum()) * 1e6
    n150 = {k: v for k, v in gap.items() if "n150" in k and "mobilenet" not in k}
    p150 = {k: v for k, v in gap.items() if "p150" in k}
    assert len(n150) == 2 and len(p150) == 2
    assert min(n150.values()) >= 13.5 and max(n150.values()) <= 17.5
    assert 41 <= gap["ttmetal-n150-mobilenet-v2-b10"] <= 42
    assert min(p150.values()) >= 7.5 and max(p150.values()) <= 8.5
    assert (dse.hardware("tt-n150").compute.launch_overhead_us, dse.hardware("tt-p150").compute.launch_overhead_us) == (
        1.21, 0.94)


def test_tenstorrent_decode_rows_miss_a_time_per_step_not_per_operator_as_the_doc_says() -> None:
    """docs/npu_validation.md, 'Tenstorrent decode rows timed per iteration': measured minus predicted step time of
    the n150 one-user rows is 6.9 ms (Llama 3.2 1B) to 10.2 ms (8B), about constant while the model grows 6x and its
    layers 2x; a line through them starts at 6.2 ms and rises 0.17 ms per predicted ms. Every decode row is timed per
    iteration by the demo's harness, so dse validate gives each the harness's host time estimated from the card's
    other rows, at or near the 10 ms cap."""
    rows = [r for r in _tt_rows() if r["metric"] == "time_s"]
    assert len(rows) == 12 and all(r["timing"] == "isolated:simple_text_demo" for r in rows)
    pred, resid = {}, {}
    for r in rows:
        case = prepare_row(r)
        assert case.isolated and case.harness == "tenstorrent/tt-metal simple_text_demo"
        pred[r["id"]] = dse.predict(case.workload, case.hardware).time_s * 1e3
        resid[r["id"]] = float(r["value"]) * 1e3 - pred[r["id"]]
    one = [k for k in resid if "n150" in k and "-b1-" in k]
    assert len(one) == 5
    assert pred["ttmetal-n150-llama32-1b-b1-decode"] == pytest.approx(4.5, abs=0.05)
    assert pred["ttmetal-n150-llama31-8b-b1-decode"] == pytest.approx(25.1, abs=0.05)
    assert resid["ttmetal-n150-llama32-1b-b1-decode"] == pytest.approx(6.9, abs=0.05)
    assert resid["ttmetal-n150-llama31-8b-b1-decode"] == pytest.approx(10.2, abs=0.05)
    assert min(resid[k] for k in one) >= 6.85 and max(resid[k] for k in one) <= 10.25
    slope, intercept = np.polyfit([pred[k] for k in one], [resid[k] for k in one], 1)
    assert slope == pytest.approx(0.17, abs=0.005) and intercept == pytest.approx(6.2, abs=0.05)
    thirty_two = [resid[k] for k in resid if "n150" in k and "-b32-" in k]
    assert len(thirty_two) == 5 and min(thirty_two) >= 8.3 and max(thirty_two) <= 16.6
    out = run_suite(pd.DataFrame(rows).fillna(""))
    assert (out["sync_us_loo"] >= 8990).all() and (out["sync_us_loo"] <= MAX_HARNESS_US).all()


def test_an_unknown_scenario_keyword_is_a_bad_cell_not_an_uncovered_row(tmp_path: Path, capsys, monkeypatch) -> None:
    """'phase=decode;bogus=3' made the row 'not covered' and the run exited 0 with a nan median; a typo is bad input
    (one line naming the keyword, exit 2), as a bad dtype already was. Every shipped row's keywords are known."""
    from dse.validate.suite import parse_scenario, scenario_keys

    assert all(set(parse_scenario(t)) <= scenario_keys() for t in load_measurements()["scenario"])
    header, rows = _shipped()
    rows[0][header.index("scenario")] += ";fused_atention=true"
    p = _write(tmp_path, header, rows)
    rc, err, _ = _validate(tmp_path, capsys, p, monkeypatch)
    assert rc == 2 and err == [f"error: {p}: line 2 ({SHIPPED_IDS[0]}).scenario.fused_atention: got 'fused_atention' "
                               "(did you mean 'fused_attention' or 'fuse_elementwise'?); accepted: a keyword of "
                               "dse.workload (a scenario or plan field)"]


def test_the_readme_validate_line_is_what_dse_validate_prints(shipped_results: pd.DataFrame) -> None:
    """The README's tour quotes ``dse validate``'s first line; it is the line the shipped suite gives today."""
    from dse.validate.suite import error_stats

    st = error_stats(shipped_results)
    line = (f"{st['covered']} out-of-sample rows of {st['rows']}: median |time error| {st['median_abs_error_pct']:.1f} "
            f"%, max {st['max_abs_error_pct']:.1f} %")
    assert line in (Path(__file__).resolve().parents[2] / "README.md").read_text(), line


@pytest.mark.parametrize(("workload", "scenario", "metric_unit", "where", "says"), [
    ("llama2-7b", "phase=decode;batch=-1", None, "scenario.batch", "got -1; accepted: a number > 0"),
    ("llama2-7b", "phase=decoded", None, "scenario.phase", "got 'decoded'; accepted: one of 'forward'"),
    ("llama2-7b", "phase=decode;tp=3", None, "scenario", "tp x pp x dp = 3 x 1 x 1 = 3, but chips = 8"),
    ("attention:1x8x128x128x64", "causal=maybe", None, "scenario.causal", "got 'maybe'; accepted: true, false"),
    ("gemm:64x12288x12288", "dtype=bf16", ("time_s", "ms"), "unit", "got 'ms' for metric time_s; accepted: s"),
])
def test_a_value_a_scenario_field_refuses_and_a_wrong_unit_are_bad_cells(tmp_path: Path, capsys, monkeypatch, workload,
                                                                         scenario, metric_unit, where, says) -> None:
    """A scenario value its field refuses (batch -1, a misspelt phase, a plan that does not fill the chips, an
    operator keyword's bad value) was a row 'not covered' and left out of the statistics, exit 0; a unit that is not
    the metric's read a time in ms as seconds. Each is one error line, exit 2, before any prediction."""
    header, rows = _shipped()
    row = rows[1]
    row[header.index("workload")], row[header.index("scenario")] = workload, scenario
    if "tp=" in scenario:
        row[header.index("n_chips")] = "8"
    if metric_unit:
        row[header.index("metric")], row[header.index("unit")] = metric_unit
    p = _write(tmp_path, header, rows)
    rc, err, _ = _validate(tmp_path, capsys, p, monkeypatch)
    assert rc == 2 and len(err) == 1 and err[0].startswith(f"error: {p}: line 3 ({row[0]}).{where}: "), err
    assert says in err[0], err


def test_a_copy_that_fits_on_chip_has_a_roof(tmp_path: Path, capsys) -> None:
    """A 1 M-element copy stays in the A100's L2: its DRAM bytes are 0, so the roof was 0 s and a 1 ps measurement
    passed without a word; its bytes still cross an on-chip level, so the roof is theirs at its bandwidth."""
    from dse.validate.suite import roof_time

    wl = dse.workload("copy:1000000", dtype="fp32")
    t, why = roof_time(wl, dse.hardware("a100-80gb"))
    assert t > 1e-7 and "on-chip level" in why
    header, rows = _shipped()
    rows[1][header.index("workload")], rows[1][header.index("scenario")] = "copy:1000000", "dtype=fp32"
    rows[1][header.index("value")] = "1e-12"
    p = _write(tmp_path, header, rows)
    rc, err, _ = _validate(tmp_path, capsys, p)  # a warning: the row is still predicted
    assert rc == 0 and any(line.startswith("warning:") and "faster than the roof" in line for line in err), err


def test_maxtext_rows_with_collectives_on_the_tensorcore_as_the_doc_says(monkeypatch) -> None:
    """docs/npu_validation.md, the MaxText paragraph: the TPU MaxText and tpu-recipes training rows with the TPU v4-v6e
    collectives run on the TensorCore (nothing hidden; TPU7x's on its SparseCores, hidden as the plan says), and
    with every chip hiding them as the plans say (overlap dp 1), as shipped before."""
    import importlib

    predictor = importlib.import_module("dse.predict")  # the module (dse.predict is also the function)

    with Path(default_path()).open() as f:
        rows = [r for r in csv.DictReader(f) if r["id"].startswith(("maxtext-", "tpurecipes-tpu7x-llama"))]
    assert len(rows) == 33
    assert [dse.hardware(t).network.collective_engine for t in ("tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x")] == [
        "compute_core"] * 4 + ["offload"]

    def errors() -> dict[str, float]:
        return {r["id"]: (predict_case(prepare_row(r)) / float(r["value"]) - 1) * 100 for r in rows}

    shipped = errors()
    monkeypatch.setattr(predictor, "hides_collectives", lambda d: True)
    hidden = errors()
    gpt3 = "maxtext-v6e-gpt3-175b-256c-b768-s2048"
    assert np.median(np.abs(list(hidden.values()))) == pytest.approx(9.8, abs=0.05)
    assert max(map(abs, hidden.values())) == pytest.approx(33.6, abs=0.05) == abs(hidden[gpt3])
    assert hidden["maxtext-v5e-64b-256c-b512-s2048"] == pytest.approx(-11.7, abs=0.05)
    assert np.median(np.abs(list(shipped.values()))) == pytest.approx(5.1, abs=0.05)
    assert max(map(abs, shipped.values())) == pytest.approx(18.5, abs=0.05)
    v6e = [e for k, e in shipped.items() if k.startswith("maxtext-v6e-")]
    assert len(v6e) == 13 and min(v6e) == pytest.approx(-15.9, abs=0.05) and max(v6e) == pytest.approx(-0.9, abs=0.05)
    assert np.median(np.abs(v6e)) == pytest.approx(5.6, abs=0.05) and shipped[gpt3] == pytest.approx(-15.7, abs=0.05)
    assert shipped["maxtext-v5e-64b-256c-b512-s2048"] == pytest.approx(4.7, abs=0.05)
    assert all(shipped[k] == hidden[k] for k in shipped if "tpu7x" in k)  # SparseCore offload: unchanged
    monkeypatch.undo()
    case = prepare_row(next(r for r in rows if r["id"] == gpt3))  # its FSDP collectives: 1.0 s each, 3.1 s a step
    p = dse.predict(case.workload, case.hardware, system=case.system)
    dp = p.ops[p.ops["name"].str.startswith("dp.")]
    assert (dp["time_s"] * dp["count"]).sum() == pytest.approx(3.07, abs=0.005)
    assert (dp["total_time_s"]).sum() == pytest.approx(3.07, abs=0.005)  # all of it in the step
    assert p.time_s == pytest.approx(11.41 + 3.07, abs=0.01)


def test_gaudi2_hccl_row_and_the_refit_it_does_not_get_as_the_doc_says(monkeypatch) -> None:
    """docs/npu_validation.md, 'Gaudi 2's scale-up collectives': dse is 26.0 % slow on hccl_demo's 8-card 32 MiB
    all-reduce (NW bandwidth 98 % of the 21 x 12.5 GB/s scale-up ports); with the hls-gaudi2 level's efficiency
    refitted to 0.984 the row comes to +3.0 %, the Gaudi 2 multi-chip rows go 8.9 / 53.1 -> 13.3 / 55.9 % and Gaudi 2
    overall 6.9 -> 7.9 %."""
    import importlib

    from dse.validate.families import out_of_sample

    systems = importlib.import_module("dse.hardware.system")  # the module (dse.hardware is also the function)

    df = load_measurements()
    row = df[df["id"] == "hccl-gaudi2-allreduce-8c-32mib"]
    assert float(row["value"].iloc[0]) == pytest.approx(33554432 / 147.548069e9, rel=1e-5)
    gaudi2 = df[df["hardware"] == "gaudi2"]

    def stats(res: pd.DataFrame, family: str | None = None) -> tuple[float, float]:
        e = out_of_sample(res if family is None else res[res["family"] == family])["time_error_pct"].abs()
        return round(float(e.median()), 1), round(float(e.max()), 1)

    shipped = run_suite(gaudi2)
    assert shipped.set_index("id").loc["hccl-gaudi2-allreduce-8c-32mib", "time_error_pct"] == pytest.approx(26.0, abs=0.05)
    assert stats(shipped, "multi-chip") == (8.9, 53.1) and stats(shipped)[0] == 6.9
    shipped_system = systems.load_system("hls-gaudi2")
    up = shipped_system.network[0]  # 21 scale-up ports of 12.5 GB/s at the assumed 0.8: the row's 258.2 GB/s is 98 %
    assert (up.links_per_chip, up.link_bandwidth_gbps, up.efficiency) == (21, 12.5, 0.8)
    levels = [shipped_system.network[0].model_copy(update={"efficiency": 0.984}), *shipped_system.network[1:]]
    refit = shipped_system.model_copy(update={"network": levels})
    named = systems._load_named
    monkeypatch.setattr(systems, "_load_named", lambda name: refit if name == "hls-gaudi2" else named(name))
    refitted = run_suite(gaudi2)
    assert stats(refitted, "multi-chip") == (13.3, 55.9) and stats(refitted)[0] == 7.9
    assert refitted.set_index("id").loc["hccl-gaudi2-allreduce-8c-32mib", "time_error_pct"] == pytest.approx(3.0, abs=0.05)


def test_p150_dram_efficiency_of_its_decode_software_as_the_doc_says() -> None:
    """docs/npu_validation.md: at the 0.55 of DRAM bandwidth that tt-metal PR #54242 gives the p150's one-reader
    decode matmuls (the validation rows' software), the p150 decode rows come to +7.0 / -7.1 % (-13.3 / -17.7 % at
    the template's 0.85), its ResNet-50 rows to +8.1 / +23.4 % (-25.8 / -15.9 %) and the ResNet-50 n150 / p150
    speedup from -3.5 to -33.8 %: why the template keeps 0.85."""
    shipped = dse.hardware("tt-p150")
    levels = [m.model_copy(update={"efficiency": 0.55}) if m.name == "gddr6" else m for m in shipped.memory]
    assert [m.efficiency for m in shipped.memory if m.name == "gddr6"] == [0.85]
    slow = shipped.model_copy(update={"memory": levels})
    df = load_measurements()
    rows = df[df["hardware"].isin(["tt-n150", "tt-p150"]) & df["id"].str.startswith("ttmetal-")]

    def errors(templates: dict | None) -> dict[str, float]:
        out = run_suite(rows, templates).set_index("id")
        return {**out["time_error_pct"].round(1).to_dict(),
                "pair": round((out.loc["ttmetal-p150-resnet50-b16", "predicted"] / out.loc["ttmetal-n150-resnet50-b16",
                               "predicted"]) / (out.loc["ttmetal-p150-resnet50-b16", "measured"]
                                                / out.loc["ttmetal-n150-resnet50-b16", "measured"]) * 100 - 100, 1)}

    base, at55 = errors(None), errors({"tt-p150": slow})
    decode = ("ttmetal-p150-llama31-8b-b32-decode", "ttmetal-p150-llama31-8b-b1-decode")
    cnn = ("ttmetal-p150-resnet50-b16", "ttmetal-p150-resnet50-b32")
    assert [base[k] for k in decode + cnn] == [-13.3, -17.7, -25.8, -15.9]
    assert [at55[k] for k in decode + cnn] == [7.0, -7.1, 8.1, 23.4]
    assert (base["pair"], at55["pair"]) == (-3.5, -33.8)


def _first_token_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Intel's six Gaudi 2 low-latency (first-token) rows."""
    return df[df["id"].str.startswith("intel118-gaudi2") & df["id"].str.contains("-lat-")]


def _without_engine(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` as they were before they named the optimum-habana engine."""
    return rows.assign(scenario=rows["scenario"].str.replace(";serving_engine=optimum-habana", ""))


def test_gaudi2_first_token_rows_pay_the_lazy_prefill_host_time_as_the_doc_says() -> None:
    """Intel's Gaudi 2 low-latency rows (batch 1, read as host-timed first-token latency of optimum-habana's
    run_generation.py) go through the optimum-habana engine record: its prefill runs in lazy mode outside the HPU graph
    (--limit_hpu_graphs), so the host's time per operator (10 us, the eager default, not fitted) precedes the device's.
    docs/npu_validation.md quotes: the four one-card rows 36.4 / 48.8 % -> 11.3 / 18.6 % (median / max |time
    error|), the 70B 8-card 128-token row -64.5 -> -19.8 %; the throughput rows of the harness move by < 1 point."""
    df = load_measurements()
    lat = _first_token_rows(df)
    assert len(lat) == 6 and lat["scenario"].str.contains("serving_engine=optimum-habana").all()
    res = run_suite(lat).set_index("id")
    bare = run_suite(_without_engine(lat)).set_index("id")
    assert (res["fitted_into"] == "").all()
    one = ~res.index.str.contains("-tp8-")
    err, err0 = res["time_error_pct"], bare["time_error_pct"]
    assert round(err0[one].abs().median(), 1) == 36.4 and round(err0[one].abs().max(), 1) == 48.8
    assert round(err[one].abs().median(), 1) == 11.3 and round(err[one].abs().max(), 1) == 18.6
    row = "intel118-gaudi2-llama2-70b-tp8-lat-b1-in128"
    assert round(err0[row], 1) == -64.5 and round(err[row], 1) == -19.8
    thr = df[df["scenario"].str.contains("serving_engine=optimum-habana") & ~df["id"].isin(lat["id"])]
    assert len(thr) == 72 and thr["id"].str.startswith(("intel118-gaudi", "gauditut120-", "gauditut119-")).all()
    moved = run_suite(thr)["time_error_pct"].to_numpy() - run_suite(_without_engine(thr))["time_error_pct"].to_numpy()
    assert (abs(moved) < 1.0).all()


def test_inferentia2_cnn_rows_with_per_tap_convolutions_as_the_doc_says() -> None:
    """docs/npu_validation.md 'Convolutions on TensorE, one matmul per kernel tap': with inferentia2's
    ``conv_lowering: taps`` and its vector engines running no contraction (``runs: []``) the five CNN rows are
    ResNet-18 +23.4, ResNet-50 +16.9, ResNet-101 +5.6, ResNet-152 +2.1, ViT-B/16 -5.7 % (5.7 / 23.4 %); with the im2col
    lowering and the default unit choice, as before, -70.2, -41.0, -36.1, -30.2, -17.7 % (36.1 / 70.2 %). No row is
    fitted."""
    df = load_measurements()
    cnn = df[df["id"].str.startswith("neuron-inf2-") & df["id"].str.contains("resnet|vit")]
    hw = dse.hardware("inferentia2")
    data = hw.model_dump(mode="python", exclude_none=True)
    data["compute"]["matrix"]["conv_lowering"] = "im2col"
    data["compute"]["vector"].pop("runs")
    before = run_suite(cnn, templates={"inferentia2": dse.hardware(data)}).set_index("id")["time_error_pct"]
    res = run_suite(cnn).set_index("id")
    after = res["time_error_pct"]
    assert len(cnn) == 5 and (res["fitted_into"] == "").all()
    names = ["resnet18", "resnet50", "resnet101", "resnet152", "vit"]
    pick = [next(i for i in after.index if f"-{n}-" in i) for n in names]
    assert [round(after[i], 1) for i in pick] == [23.4, 16.9, 5.6, 2.1, -5.7]
    assert [round(before[i], 1) for i in pick] == [-70.2, -41.0, -36.1, -30.2, -17.7]
    assert round(after.abs().median(), 1) == 5.7 and round(before.abs().median(), 1) == 36.1


def test_gaudi2_first_token_rows_sensitivity_to_the_per_operator_host_time(monkeypatch) -> None:
    """docs/npu_validation.md: the one-card first-token rows at 5, 10 (shipped), 15 and 20 us per operator come to
    21.5 / 22.0, 11.3 / 18.6, 22.4 / 33.6 and 33.5 / 61.1 % (median / max |time error|): the shipped default sits near
    the rows' best value, which is why they are not a blind test of it."""
    from collections import OrderedDict

    import dse.workloads.library as lib
    import dse.workloads.serving as serving

    df = load_measurements()
    lat = _first_token_rows(df)
    lat = lat[~lat["id"].str.contains("-tp8-")]
    shipped, load = serving.load_engine("optimum-habana"), serving.load_engine
    assert shipped.per_op_prefill_us == 10.0
    got = {}
    for us in (5.0, 10.0, 15.0, 20.0):
        eng = shipped.model_copy(update={"per_op_prefill_us": us})
        monkeypatch.setattr(serving, "load_engine", lambda name, e=eng: e if name == "optimum-habana" else load(name))
        monkeypatch.setattr(lib, "_WORKLOADS", OrderedDict())  # expansions made with another engine value
        e = run_suite(lat)["time_error_pct"].abs()
        got[us] = (round(float(e.median()), 1), round(float(e.max()), 1))
    assert got == {5.0: (21.5, 22.0), 10.0: (11.3, 18.6), 15.0: (22.4, 33.6), 20.0: (33.5, 61.1)}


def test_the_neuron_encoder_rows_carry_the_host_time_of_their_own_harness_configuration(
        shipped_results: pd.DataFrame) -> None:
    """docs/npu_validation.md: the latency- and throughput-optimized neuronperf tables are two configurations of the
    harness (a throughput call copies back 8-16x the output bytes): each row's host time comes from its own
    configuration's other rows on its chip, 0.13-0.19 ms per latency call, 1.1-1.4 ms per throughput call on a
    trn1.2xlarge and 2.0-2.2 ms on an inf2.xlarge; every row within 6 %. The evidence that it is the host's: the same
    device work takes about 1 ms more per throughput call on the 4-vCPU inf2.xlarge than on the 8-vCPU trn1.2xlarge
    (bert-large 8.41 against 7.24 ms, distilbert 6.01 against 5.01 ms) where dse predicts the same device time."""
    res = shipped_results[shipped_results["id"].str.contains(r"^neuron-(?:inf2|trn1)-(?:bert|distil)", regex=True)]
    res = res.set_index("id")
    assert len(res) == 12 and (res["fitted_into"] == "").all() and res["time_error_pct"].abs().max() < 6
    lat, thr = res[res.index.str.endswith("-lat")], res[res.index.str.endswith("-thr")]
    assert lat["sync_us_loo"].between(125, 195).all()
    assert thr[thr.index.str.contains("trn1")]["sync_us_loo"].between(1100, 1400).all()
    assert thr[thr.index.str.contains("inf2")]["sync_us_loo"].between(2000, 2210).all()
    for model in ("bert-large-b4", "distilbert-base-b16"):
        inf2, trn1 = res.loc[f"neuron-inf2-{model}-s128-thr"], res.loc[f"neuron-trn1-{model}-s128-thr"]
        device = lambda r: r["predicted"] - r["sync_us_loo"] * 1e-6  # noqa: E731
        assert device(inf2) == pytest.approx(device(trn1), rel=1e-6)  # the same NeuronCore-v2 work
        assert 0.9e-3 < inf2["measured"] - trn1["measured"] < 1.2e-3


def test_the_trn1_bert_pretraining_row_runs_bertforpretraining_with_its_dropout(shipped_results: pd.DataFrame) -> None:
    """docs/npu_validation.md: the row runs the script's model (the library's bert-large-pretraining: the masked-LM
    head over every position, tied to the embeddings) with dropout 0.1: -32.9 %, never fitted; on the bare encoder
    without head or dropout it was -37.6 %."""
    row = shipped_results.set_index("id").loc["neuron-trn1-train-bert-large-ph1-1node"]
    assert row["workload"] == "bert-large-pretraining" and "dropout=0.1" in row["scenario"]
    assert row["fitted_into"] == "" and row["time_error_pct"] == pytest.approx(-32.9, abs=0.05)
    df = load_measurements()
    bare = df[df["id"] == "neuron-trn1-train-bert-large-ph1-1node"].assign(
        workload="bert-large", scenario=row["scenario"].replace("dropout=0.1;", ""))
    assert run_suite(bare)["time_error_pct"].iloc[0] == pytest.approx(-37.6, abs=0.05)


def test_a_family_filter_predicts_only_its_rows_as_the_whole_run_does(tmp_path: Path) -> None:
    """``run_suite(families=...)`` predicts the rows of those families only, each as the whole run predicts it (the
    isolated rows' leave-one-out harness times still come from every isolated row); the cases ``check_measurements``
    prepared give the same predictions as preparing again. On the shipped Trainium 1 rows (encoder and multi-chip)."""
    from dse.validate.suite import check_measurements

    header, *rows = csv.reader(default_path().open(encoding="utf-8", newline=""))
    path = tmp_path / "trn1.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([header, *(r for r in rows if r[header.index("hardware")] == "trainium1")])
    prepared: dict = {}
    df, _ = check_measurements(path, None, prepared)
    assert len(prepared) == len(df) and set(df["hardware"]) == {"trainium1"}
    whole = run_suite(load_measurements(path)).set_index("id")
    part = run_suite(df, families=["encoder"], prepared=prepared).set_index("id")
    assert set(part["family"]) == {"encoder"} and len(part) == (whole["family"] == "encoder").sum() > 0
    pd.testing.assert_series_equal(part["predicted"], whole.loc[part.index, "predicted"])
    with pytest.raises(DseError) as exc:
        run_suite(df, families=["encoder", "nope"], prepared=prepared)
    assert exc.value.field == "--family" and "accepted: comma-separated names that have rows (encoder" in str(exc.value)


def test_a_compiled_graph_hides_its_gemms_pipeline_fill_as_the_doc_says() -> None:
    """docs/npu_validation.md, 'A lone GEMM's software pipeline': charged on every GEMM of the Neuron graphs
    (``op_boundaries: serial``) the Inferentia2 CNNs go from 5.7 / 23.4 to 21.7 / 26.1 % (median / max), its encoders
    from 4.4 / 5.1 to 8.5 / 13.6 % and Trainium 1's encoders from 3.7 / 5.9 to 8.3 / 16.5 %: the shipped
    ``overlapped`` (only a lone operator pays) is what the rows say."""
    from dse.validate.families import out_of_sample

    df = load_measurements()
    got = {}
    for chip, fam in (("inferentia2", "cnn"), ("inferentia2", "encoder"), ("trainium1", "encoder")):
        hw = dse.hardware(chip)
        assert hw.compute.op_boundaries == "overlapped"
        serial = hw.model_copy(update={"compute": hw.compute.model_copy(update={"op_boundaries": "serial"})})
        rows = df[df["hardware"] == chip]  # every row of the chip: its harness times come from them all
        for key, templates in (("shipped", None), ("serial", {chip: serial})):
            res = out_of_sample(run_suite(rows, templates))
            e = res[res["family"] == fam]["time_error_pct"].abs()
            got[chip, fam, key] = (round(float(e.median()), 1), round(float(e.max()), 1))
    assert got == {("inferentia2", "cnn", "shipped"): (5.7, 23.4), ("inferentia2", "cnn", "serial"): (21.7, 26.1),
                   ("inferentia2", "encoder", "shipped"): (4.4, 5.1), ("inferentia2", "encoder", "serial"): (8.5, 13.6),
                   ("trainium1", "encoder", "shipped"): (3.7, 5.9), ("trainium1", "encoder", "serial"): (8.3, 16.5)}
