"""dse.validate.ratios: rows that differ only in the chip give a predicted vs measured speedup."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dse.validate.ratios import chip_pairs, pair_table, source_key


def _row(i: str, hw: str, e: float, measured: float, metric: str = "time_s", scen: str = "batch=8", fitted: str = ""):
    return {"id": i, "workload": "llama2-7b", "scenario": scen, "n_chips": "1", "metric": metric, "hardware": hw,
            "family": "serving", "status": "covered", "time_error_pct": e, "measured": measured, "fitted_into": fitted}


def test_a_pair_gives_the_speedup_and_its_error_from_the_two_time_errors() -> None:
    res = pd.DataFrame([_row("src-a", "gaudi2", 10.0, 2.0), _row("src-b", "gaudi3", -20.0, 1.0)])
    p = chip_pairs(res)
    assert len(p) == 1 and (p.loc[0, "chip_a"], p.loc[0, "chip_b"]) == ("gaudi2", "gaudi3")
    assert p.loc[0, "measured_speedup"] == pytest.approx(2.0)
    # predicted times 2.2 and 0.8: speedup 2.75, 37.5 % above the measured 2
    assert p.loc[0, "predicted_speedup"] == pytest.approx(2.75)
    assert p.loc[0, "ratio_error_pct"] == pytest.approx((1.1 / 0.8 - 1) * 100)


def test_a_rate_metric_is_turned_into_time_before_the_speedup() -> None:
    res = pd.DataFrame([_row("s-1", "a", 0.0, 100.0, "tokens_per_s"), _row("s-2", "b", 0.0, 300.0, "tokens_per_s")])
    p = chip_pairs(res)
    assert p.loc[0, "measured_speedup"] == pytest.approx(3.0) and p.loc[0, "ratio_error_pct"] == pytest.approx(0.0)


def test_rows_pair_only_when_they_differ_in_the_chip_alone() -> None:
    rows = [_row("s-1", "a", 5.0, 1.0), _row("s-2", "a", 5.0, 1.0),  # same chip
            _row("t-1", "b", 5.0, 1.0),  # another source
            _row("s-3", "b", 5.0, 1.0, scen="batch=16"),  # another scenario
            _row("s-4", "c", 5.0, 1.0, fitted="compute.matrix.efficiency")]  # in sample
    assert chip_pairs(pd.DataFrame(rows)).empty
    assert source_key("intel118-gaudi2-llama2-7b") == "intel118"


def test_pair_table_summarises_each_chip_pair_and_all() -> None:
    rows = [_row(f"s{k}-x", "a", 0.0, 1.0, scen=f"b={k}") for k in range(3)]
    rows += [_row(f"s{k}-y", "b", e, 1.0, scen=f"b={k}") for k, e in enumerate((-10.0, 0.0, 25.0))]
    t = pair_table(chip_pairs(pd.DataFrame(rows))).set_index("chip_a")
    errs = np.array([1 / 0.9 - 1, 0.0, 1 / 1.25 - 1]) * 100
    assert t.loc["a", "pairs"] == 3 and t.loc["all", "pairs"] == 3
    assert t.loc["a", "median_abs_ratio_error_pct"] == pytest.approx(np.median(np.abs(errs)))
    assert t.loc["a", "max_abs_ratio_error_pct"] == pytest.approx(np.max(np.abs(errs)))


def test_the_shipped_suite_has_gaudi2_to_gaudi3_pairs() -> None:
    from dse.validate.suite import load_measurements, run_suite

    df = load_measurements()
    res = run_suite(df[df["id"].str.startswith("intel118-")])
    t = pair_table(chip_pairs(res)).set_index(["chip_a", "chip_b"])
    assert t.loc[("gaudi2", "gaudi3"), "pairs"] >= 4
