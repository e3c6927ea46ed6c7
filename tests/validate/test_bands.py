"""dse.validate.bands: rows fall into the right family; a family's band is p10..p90 of its out-of-sample errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dse
from dse.validate.bands import (
    FAMILIES,
    MIN_ROWS,
    Band,
    bands_from,
    family_of,
    family_table,
    out_of_sample,
    template_table,
)


@pytest.mark.parametrize(("wl", "family"), [
    (lambda: dse.gemm(1024, 1024, 1024, dtype="bf16"), "gemm"),
    (lambda: dse.workload("copy:1048576"), "copy"),
    (lambda: dse.elementwise(4096, dtype="fp32"), "copy"),
    (lambda: dse.workload("llama2-7b", phase="decode", batch=1, context=128), "decode"),
    (lambda: dse.workload("llama2-7b", phase="prefill", seq=128), "prefill"),
    (lambda: dse.workload("resnet50", phase="training", batch=2), "training"),
    (lambda: dse.workload("resnet50"), "cnn"),
    (lambda: dse.workload("bert-base"), "encoder"),
    (lambda: dse.workload("llama2-7b", phase="decode", batch=1, context=128, plan={"tp": 2}), "multi-chip"),
])
def test_family_of_real_workloads(wl, family: str) -> None:
    assert family_of(wl()) == family
    assert family in FAMILIES


def _results(errors: dict[str, list[float]], fitted: dict[str, list[int]] | None = None) -> pd.DataFrame:
    rows = []
    for fam, errs in errors.items():
        for i, e in enumerate(errs):
            rows.append({"id": f"{fam}{i}", "family": fam, "status": "covered", "time_error_pct": e,
                         "fitted_into": "compute.matrix.efficiency" if i in (fitted or {}).get(fam, []) else ""})
    rows.append({"id": "skip", "family": "gemm", "status": "not covered", "time_error_pct": np.nan, "fitted_into": ""})
    return pd.DataFrame(rows)


def test_in_sample_and_uncovered_rows_are_left_out_of_every_statistic() -> None:
    res = _results({"gemm": [500.0, -10.0, 10.0, 20.0]}, fitted={"gemm": [0]})
    oos = out_of_sample(res)
    assert oos["id"].tolist() == ["gemm1", "gemm2", "gemm3"]
    t = family_table(res).set_index("family")
    assert t.loc["gemm", "rows"] == 5 and t.loc["gemm", "out_of_sample"] == 3
    assert t.loc["gemm", "median_abs_time_error_pct"] == 10.0
    assert t.loc["gemm", "max_abs_time_error_pct"] == 20.0  # the fitted 500 % row is not counted


def test_band_is_the_10th_to_90th_percentile_of_signed_time_errors_from_ten_rows_else_their_range() -> None:
    """p10..p90 of a handful of rows leaves some of them outside the band (tt-p150's two cnn rows gave -32 .. -25 %,
    one row at -33 %): below PERCENTILE_ROWS rows the band is their least..greatest."""
    from dse.validate.bands import PERCENTILE_ROWS

    errs = [-30.0, -10.0, 0.0, 10.0, 50.0] * 2
    assert len(errs) == PERCENTILE_ROWS
    b = bands_from(_results({"decode": errs, "cnn": [5.0, 15.0]}))
    assert (b["decode"].p10_pct, b["decode"].p90_pct, b["decode"].rows) == pytest.approx(
        (np.percentile(errs, 10), np.percentile(errs, 90), 10))
    assert not b["decode"].borrowed
    assert (b["cnn"].p10_pct, b["cnn"].p90_pct) == pytest.approx((5.0, 15.0))  # two rows: both inside
    everyone = np.array(errs + [5.0, 15.0])
    assert b["all"].p10_pct == pytest.approx(np.percentile(everyone, 10)) and b["all"].rows == 12


def test_a_family_with_too_few_rows_borrows_the_band_of_all() -> None:
    b = bands_from(_results({"decode": [-30.0, -10.0, 0.0, 10.0, 50.0], "prefill": [80.0]}))
    assert MIN_ROWS == 2
    for fam in ("prefill", "gemm", "multi-chip"):
        assert b[fam].borrowed and (b[fam].p10_pct, b[fam].p90_pct) == (b["all"].p10_pct, b["all"].p90_pct)
    assert set(b) == {*FAMILIES, "all"}


def test_interval_inverts_the_error_and_label_shows_percent() -> None:
    band = Band("decode", -20.0, 25.0, 8)
    lo, hi = band.interval(1.0)
    # predicted = measured x (1 + e): measured in [1 / 1.25, 1 / 0.8]
    assert (lo, hi) == pytest.approx((0.8, 1.25))
    assert band.label() == "-20 % .. +25 % (decode, 8 rows out of sample)"
    assert Band("gemm", -5.0, 5.0, 20, borrowed=True).label() == "-5 % .. +5 % (all families, 20 rows out of sample)"
    assert Band("gemm", -7.2, -0.3, 20).label() == "-7 % .. 0 % (gemm, 20 rows out of sample)"  # not '-0 %'


def test_shipped_bands_cache_gives_identical_bands(tmp_path, monkeypatch, shipped_results) -> None:
    from dse.validate import bands as b

    monkeypatch.setenv("DSE_CACHE_DIR", str(tmp_path))
    b.shipped_bands.cache_clear()
    # compute_shipped_bands is bands_from(run_suite(load_measurements())): the session's shipped results stand in
    computed = []

    def real() -> dict:
        return b.bands_from(shipped_results.copy())

    monkeypatch.setattr(b, "compute_shipped_bands", lambda: computed.append(real()) or computed[-1])
    try:
        first = b.shipped_bands()  # computes (once) and writes the cache file
        (fresh,) = computed
        files = list(tmp_path.glob("bands-*.json"))
        assert len(files) == 1
        b.shipped_bands.cache_clear()
        monkeypatch.setattr(b, "compute_shipped_bands", lambda: pytest.fail("recomputed despite the cache"))
        second = b.shipped_bands()  # read back from the file
    finally:
        b.shipped_bands.cache_clear()
    assert first == fresh and second == fresh  # every float round-trips exactly
    assert set(FAMILIES) | {"all", "style:npu", "style:gpu", "gaudi2/all", "tpu-v5e/gemm"} <= set(second)
    # the chips' own bands, and the cross-chip speedups' (all pairs, and per chip pair)
    assert all("/" in k or k.startswith(("style:", "speedup")) for k in set(second) - set(FAMILIES) - {"all"})
    assert "speedup" in second and "speedup:gaudi2|gaudi3" in second


def test_shipped_bands_cache_key_follows_the_measurements(tmp_path, monkeypatch) -> None:
    from dse.validate import bands as b
    from dse.validate import suite

    before = b._inputs_digest()
    meas = tmp_path / "m.csv"
    meas.write_bytes(suite.default_path().read_bytes() + b"\n")
    monkeypatch.setattr(suite, "default_path", lambda: meas)
    assert b._inputs_digest() != before


def test_shipped_bands_without_a_writable_cache(tmp_path, monkeypatch) -> None:
    from dse.validate import bands as b

    blocker = tmp_path / "file"
    blocker.write_text("")
    for value in ("", str(blocker / "sub")):  # disabled, and a folder that cannot be made
        monkeypatch.setenv("DSE_CACHE_DIR", value)
        b.shipped_bands.cache_clear()
        monkeypatch.setattr(b, "compute_shipped_bands", lambda: {"all": Band("all", -1.0, 2.0, 3)})
        try:
            assert b.shipped_bands() == {"all": Band("all", -1.0, 2.0, 3)}
        finally:
            b.shipped_bands.cache_clear()


def test_template_table_splits_each_chip_by_family_and_leaves_fitted_rows_out() -> None:
    res = _results({"gemm": [500.0, -10.0, 30.0], "decode": [4.0, -6.0]}, fitted={"gemm": [0]})
    res["hardware"] = ["h100-sxm", "h100-sxm", "a100-80gb", "a100-80gb", "a100-80gb", "a100-80gb"]
    t = template_table(res).set_index(["hardware", "family"])
    assert t.loc[("h100-sxm", "gemm"), "rows"] == 2 and t.loc[("h100-sxm", "gemm"), "out_of_sample"] == 1
    assert t.loc[("h100-sxm", "all"), "max_abs_time_error_pct"] == 10.0  # the fitted 500 % row is not counted
    a100 = t.loc[("a100-80gb", "all")]  # gemm 30, decode 4 and -6 (the uncovered row has no error)
    assert (a100["rows"], a100["out_of_sample"], a100["median_abs_time_error_pct"]) == (4, 3, 6.0)
    assert template_table(res.drop(columns="hardware")).empty


def test_npu_rows_are_reported_per_chip_not_in_the_gpu_families() -> None:
    res = _results({"gemm": [1.0, 2.0, 90.0]})
    res["hardware"] = ["a100-80gb", "a100-80gb", "tpu-v5e", "tpu-v5e"]
    res["style"] = ["gpu", "gpu", "npu", "npu"]
    t = family_table(res).set_index("family")
    assert t.loc["gemm", "out_of_sample"] == 2 and t.loc["gemm", "max_abs_time_error_pct"] == 2.0
    chips = template_table(res).set_index(["hardware", "family"])
    assert chips.loc[("tpu-v5e", "gemm"), "max_abs_time_error_pct"] == 90.0


def test_a_prediction_carries_its_own_chips_band_or_says_it_has_none(monkeypatch) -> None:
    import dse.validate.bands as bands

    w = dse.workload("llama2-7b", phase="decode", batch=1, context=128)
    own = bands.band_for(w, "a100-80gb")  # a100-80gb has decode rows of its own
    assert own.family == "a100-80gb decode" and not own.borrowed
    npu = bands.band_for(w, dse.hardware("npu-7nm"))  # no rows of its own: the validated NPU chips', said so
    assert npu.label().startswith(f"{npu.p10_pct:+.0f} % .. {npu.p90_pct:+.0f} % (no validation rows for this chip "
                                  "(npu-7nm); borrowed from the npu chips' decode rows (tt-n150, tt-p150), ")
    assert npu.borrowed and npu.rows >= MIN_ROWS and "a100" not in npu.label()
    gpu_only = {k: v for k, v in bands.shipped_bands().items() if not k.startswith(("style:npu", "gaudi", "tpu"))}
    monkeypatch.setattr(bands, "shipped_bands", lambda: gpu_only)
    none = bands.band_for(w, dse.hardware("npu-7nm"))
    assert none.rows == 0 and none.label() == "no validation rows for this chip (npu-7nm)"
    assert all(np.isnan(none.interval(1.0)))


def test_a_chip_with_one_row_says_how_many_it_has_not_that_it_has_none() -> None:
    """groq-tsp has one validation row (ResNet-50 at batch 1): fewer than MIN_ROWS for a band of its own, so it
    borrows the NPU chips' band and its label says how many rows it has, not "no validation rows"."""
    import dse.validate.bands as bands

    res = _results({"cnn": [5.0, 20.0, 30.0]})
    res["hardware"] = ["groq-tsp", "tpu-v5e", "tpu-v5e", "tpu-v5e"][: len(res)]
    res["style"] = "npu"
    out = bands.chip_bands(res)
    assert out["groq-tsp/few"].rows == 1 and "groq-tsp/cnn" not in out and "tpu-v5e/cnn" in out
    w = dse.workload("resnet50", batch=1, dtype="int8")
    b = bands.band_for(w, dse.hardware("groq-tsp"))
    assert b.borrowed and "only 1 validation row for this chip (groq-tsp), a band needs 2; borrowed" in b.label()
    assert NO_ROWS_TEXT not in b.label()


NO_ROWS_TEXT = "no validation rows for this chip"


def test_an_edited_copy_of_a_shipped_chip_and_a_family_a_chip_has_no_rows_of_borrow_and_say_so(tmp_path) -> None:
    """A copy of gaudi2 with 3x the HBM bandwidth kept the name and took 'gaudi2 all, 65 rows' as its own band; a TPU
    v5e decode took the band of v5e's GEMM and training rows (-4 .. +12 %, narrower than the H100's decode band)."""
    import dse.validate.bands as bands

    w = dse.workload("llama3-8b", phase="decode", batch=1, context=1024)
    data = dse.hardware("gaudi2").model_dump(mode="python", exclude_none=True)
    hbm = next(m for m in data["memory"] if m["name"] == "hbm")
    hbm["bandwidth_gbps"] = hbm["bandwidth_gbps"] * 3
    hbm["stack_bandwidth_gbps"] = hbm["stack_bandwidth_gbps"] * 3
    edited = dse.hardware(data)
    assert bands.is_shipped(dse.hardware("gaudi2")) and not bands.is_shipped(edited)
    b = bands.band_for(dse.workload("llama3-8b", phase="prefill", batch=1, seq=2048), edited)
    assert b.borrowed and "no validation rows for this chip (gaudi2: not the shipped gaudi2 template)" in b.label()
    own = bands.band_for(dse.workload("llama3-8b", phase="prefill", batch=1, seq=2048), "gaudi2")
    assert not own.borrowed and own.family == "gaudi2 prefill"
    v5e = bands.band_for(w, "tpu-v5e")
    assert v5e.borrowed and v5e.label().split(" (", 1)[1].startswith("no decode rows for this chip (tpu-v5e), whose ")
    mine = bands.shipped_bands()["tpu-v5e/all"]  # the chip's own rows of other families are said beside the band
    assert f"whose {mine.rows} rows of other families give {mine.span()}; borrowed" in v5e.label()


def test_a_chip_with_too_few_rows_of_the_family_says_how_many_not_none() -> None:
    """H100 has one CNN row (MLPerf ResNet-50 offline): the band it borrows says 'only 1 cnn row', where it said
    'no cnn rows for this chip' and then named h100-sxm among the chips it borrowed from."""
    import dse
    from dse.validate.bands import band_for

    label = band_for(dse.workload("mobilenet-v2", batch=64), "h100-sxm").label()
    assert "only 1 cnn row for this chip (h100-sxm)" in label and "no cnn rows" not in label


def test_speedup_bands_are_the_published_pairs_ratio_errors_and_turn_around_with_the_pair(shipped_results) -> None:
    """A comparison's band: p10..p90 (min..max under 10) of the predicted / measured speedup - 1 of the published
    pairs of the same two chips (``dse validate``'s cross-chip table), else of every pair, labelled borrowed."""
    from dse.validate.bands import speedup_band, speedup_bands
    from dse.validate.ratios import chip_pairs

    pairs = chip_pairs(shipped_results.copy())
    bands = speedup_bands(shipped_results.copy())
    assert bands["speedup"].rows == len(pairs) > 0
    g = pairs[(pairs["chip_a"] == "gaudi2") & (pairs["chip_b"] == "gaudi3")]["ratio_error_pct"]
    own = bands["speedup:gaudi2|gaudi3"]
    assert own.rows == len(g) and (own.p10_pct, own.p90_pct) == pytest.approx((g.min(), g.max()))  # 8 pairs: min..max
    assert speedup_band("gaudi2", "gaudi3") == own
    back = speedup_band("gaudi3", "gaudi2")  # gaudi2 over gaudi3: the error of 1/s is 1/(1+e) - 1
    assert back.p10_pct == pytest.approx(100 * (1 / (1 + own.p90_pct / 100) - 1))
    assert back.p90_pct == pytest.approx(100 * (1 / (1 + own.p10_pct / 100) - 1))
    assert (speedup_band("gaudi2", "gaudi2").p10_pct, speedup_band("gaudi2", "gaudi2").p90_pct) == (0.0, 0.0)
    other = speedup_band("gaudi2", "my-npu")
    assert other.borrowed and other.rows == len(pairs) and "no published pairs of gaudi2 and my-npu" in other.family
