"""dse.report.mixes: the across-mix table, the binding-ceiling summary and the mix report files."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dse.predict import predict
from dse.report import mixes
from dse.search.space import designs_from_params
from dse.study import StudyResult, evaluated, load_context, score_designs


def _result(ctx, best) -> StudyResult:
    scored, times = score_designs(ctx, best)
    return evaluated(StudyResult(folder=Path("."), ctx=ctx, best_params={}, best=best, best_scored=scored,
                                 best_times=times[0], study=None, n_trials=0, new_trials=0, recovered=0, storage="",
                                 meta={}))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    from tests.conftest import SMALL_STUDY, write_config

    _, ctx = load_context(write_config(tmp_path_factory.mktemp("mix"), SMALL_STUDY))
    wide = designs_from_params(ctx.base, [{"dram_bandwidth_tbps": 3.2768}])  # twice the base's 4 stacks
    return [_result(ctx, ctx.base), _result(ctx, wide)]


def test_binding_is_the_mix_weighted_time_share_of_each_ceiling(results) -> None:
    r = results[0]
    text = mixes.binding(r)
    parts = dict((k, float(v)) for k, v in re.findall(r"(\S+) (\d+)%", text))
    expected: dict[str, float] = {}
    for wl, w in zip(r.ctx.mix.workloads, r.ctx.mix.weights, strict=True):
        for k, v in predict(wl, r.best).time_by_bound().items():
            expected[k] = expected.get(k, 0.0) + w * v
    for k, v in parts.items():
        assert v == pytest.approx(100 * expected[k], abs=0.5)
    shares = list(parts.values())
    # whole percents: each rounded by at most half a point
    assert shares == sorted(shares, reverse=True) and sum(shares) <= 100 + 0.5 * len(shares)


def test_mix_table_rows_carry_knobs_ratio_and_resources(results) -> None:
    t = mixes.mix_table(results, ["base", "wide"])
    assert t["mix"].tolist() == ["base", "wide"]
    assert t.loc[0, "ratio_vs_base"] == "1:1.00" and t.loc[1, "ratio_vs_base"] == "1:2.00"
    assert t.loc[1, "dram_bandwidth_tbps"] == pytest.approx(3.2768)
    assert t.loc[0, "score"] == pytest.approx(1.0)  # the base against itself
    assert t.loc[1, "ridge_flop_per_byte"] == pytest.approx(t.loc[0, "ridge_flop_per_byte"] / 2)
    assert t.loc[1, "area_mm2"] > t.loc[0, "area_mm2"]  # four more HBM PHYs


def test_write_mix_report_writes_table_curves_figure_and_summary(results, tmp_path: Path) -> None:
    text = mixes.write_mix_report(tmp_path, results, ["base", "wide"], "tiny")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mixes.csv", "ratio_sensitivity.csv", "ratio_sensitivity.png",
                                                         "ratio_sensitivity.svg", "summary.md"]
    curves = pd.read_csv(tmp_path / "ratio_sensitivity.csv")
    assert set(curves["mix"]) == {"base", "wide"} and len(curves) == 2 * 32
    base = curves[curves["mix"] == "base"]
    assert np.allclose(np.diff(np.log(base["grid_ridge_flop_per_byte"])), np.log(160) / 31)  # 16..2560 FLOP/byte
    built = base.dropna(subset=["best_score"])
    # bandwidth is bought in whole stacks (rounded up) and compute in whole cores (rounded to the nearest), so the
    # design scored is above its grid ratio by at most half a core
    assert np.all(built["ridge_flop_per_byte"] <= built["grid_ridge_flop_per_byte"] * (1 + 0.5 / built["cores"] + 1e-9))
    assert np.allclose(built["peak_tflops"] / built["cores"], 11.4688)  # the built peak: whole 64x64 cores at 1.4 GHz
    md = (tmp_path / "summary.md").read_text()
    assert md.startswith("# Study `tiny`: best compute:bandwidth ratio per mix") and "| wide |" in md.replace("  ", " ")
    assert text.splitlines()[0].startswith("study tiny: best ratio per mix (base ridge 168.0 FLOP/byte)")
    assert f"results: {tmp_path}" in text



def test_a_curve_point_above_the_searchs_best_is_named() -> None:
    """A mix's 'best ratio' (2.117x) sat under its own ratio curve (2.178x at another ratio) and nothing said so."""
    import pandas as pd

    from dse.report.mixes import curve_beats_search

    curve = pd.DataFrame({"best_score": [1.9, 2.178, float("nan")], "ridge_flop_per_byte": [300.0, 242.0, 200.0],
                          "peak_tflops": [600.0, 595.0, 500.0], "dram_bandwidth_tbps": [2.0, 2.458, 2.5]})
    out = curve_beats_search({"train": curve, "vision": curve}, {"train": (297.6, 2.117), "vision": (242.0, 2.178)})
    assert list(out) == ["train"] and out["train"]["ridge_flop_per_byte"] == 242.0
