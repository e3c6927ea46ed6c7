"""dse.sensitivity: the best feasible mix score per compute:bandwidth ratio, checked against brute force."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dse.config import Space
from dse.search.space import designs_from_params
from dse.sensitivity import ratio_curve
from dse.study import load_context, score_designs


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    from tests.conftest import SMALL_STUDY, write_config

    folder: Path = tmp_path_factory.mktemp("sens")
    _, context = load_context(write_config(folder, SMALL_STUDY))
    return context


def test_ratios_span_the_searched_corners_on_a_log_grid(ctx) -> None:
    df = ratio_curve(ctx, ctx.base, n_ratio=8, n_peak=12)
    r = df["grid_ridge_flop_per_byte"].to_numpy()
    # peak 64..1024 TFLOP/s, bandwidth 0.4..4 TB/s: 64/4 = 16 to 1024/0.4 = 2560 FLOP/byte
    assert r[0] == pytest.approx(16.0) and r[-1] == pytest.approx(2560.0)
    assert np.allclose(np.diff(np.log(r)), np.log(160) / 7)
    np.testing.assert_allclose(df["bw_per_flop_vs_base"], float(ctx.base.ridge[0]) / df["ridge_flop_per_byte"])
    ok = df.dropna()
    assert len(ok) >= 3
    assert np.all((ok["peak_tflops"] >= 64 - 1e-9) & (ok["peak_tflops"] <= 1024 + 1e-9))
    assert np.all((ok["dram_bandwidth_tbps"] >= 0.4 - 1e-9) & (ok["dram_bandwidth_tbps"] <= 4 + 1e-9))


def test_each_point_is_the_best_feasible_design_on_its_ratio(ctx) -> None:
    n_peak = 12
    df = ratio_curve(ctx, ctx.base, n_ratio=6, n_peak=n_peak)
    peaks = np.geomspace(64, 1024, n_peak)
    for _, row in df.iterrows():
        bw = peaks / row["grid_ridge_flop_per_byte"]
        inside = (bw >= 0.4) & (bw <= 4.0)
        if not inside.any():
            assert np.isnan(row["best_score"])
            continue
        designs = designs_from_params(ctx.base, {"peak_tflops": peaks[inside], "dram_bandwidth_tbps": bw[inside]})
        sc, _ = score_designs(ctx, designs)
        feasible = sc.score[sc.feasible]
        if feasible.size == 0:
            assert np.isnan(row["best_score"])
        else:
            assert row["best_score"] == pytest.approx(feasible.max())
            k = int(np.flatnonzero(sc.feasible)[np.argmax(feasible)])
            assert row["peak_tflops"] == pytest.approx(designs.peak_flops[k] / 1e12)  # the built peak (whole cores)


def test_a_knob_without_a_range_spans_a_quarter_to_four_times_the_base(ctx) -> None:
    cfg = ctx.cfg
    space = Space.model_validate({"sram_mib": {"low": 8, "high": 256}})
    narrow = replace(ctx, cfg=cfg.model_copy(update={"search": cfg.search.model_copy(update={"space": space})}))
    df = ratio_curve(narrow, ctx.base, n_ratio=5, n_peak=6)
    base_ridge = float(ctx.base.ridge[0])
    assert df["grid_ridge_flop_per_byte"].iloc[0] == pytest.approx(base_ridge / 16)
    assert df["grid_ridge_flop_per_byte"].iloc[-1] == pytest.approx(base_ridge * 16)


def test_the_reported_ratio_is_the_ratio_of_the_design_scored(ctx) -> None:
    df = ratio_curve(ctx, ctx.base, n_ratio=8, n_peak=12).dropna()
    designs = designs_from_params(ctx.base, {"peak_tflops": df["peak_tflops"].to_numpy(),
                                             "dram_bandwidth_tbps": df["dram_bandwidth_tbps"].to_numpy()})
    sc, _ = score_designs(ctx, designs)
    np.testing.assert_allclose(sc.score, df["best_score"])  # the score is the rebuilt design's ...
    np.testing.assert_allclose(designs.ridge, df["ridge_flop_per_byte"], rtol=1e-6)  # ... and so is its ratio
