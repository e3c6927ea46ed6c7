"""dse.report.write: trial table, atomic CSVs without infinities, heatmap grid, power parts, cost curve."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import optuna
import pandas as pd
import pytest

from dse.cost.cost import dies_per_wafer
from dse.hardware.templates import load_node
from dse.report.write import OBJECTIVE_LABELS, cost_curve, heatmap_grid, power_parts, trials_frame, write_csv
from dse.search import optimize
from dse.search.storage import make_storage
from dse.study import StudyResult, load_context


def test_write_csv_blanks_infinities_and_leaves_no_temporary(tmp_path: Path) -> None:
    df = pd.DataFrame({"name": ["a", "b"], "ai": [np.inf, 2.5], "n": [1, 2]})
    out = write_csv(tmp_path / "t.csv", df)
    assert out == tmp_path / "t.csv"
    assert out.read_text().splitlines() == ["name,ai,n", "a,,1", "b,2.5,2"]
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]
    assert np.isinf(df.loc[0, "ai"])  # the caller's frame is untouched


def test_trials_frame_reads_objectives_metrics_and_feasibility(tmp_path: Path) -> None:
    study = optuna.create_study(storage=make_storage(f"journal://{tmp_path / 's.log'}"), study_name="s",
                                directions=["maximize", "minimize"])
    study.set_user_attr("objective_names", ["score", "area_mm2"])
    dist = {"peak_tflops": optuna.distributions.FloatDistribution(64, 1024, log=True)}
    for k, (vals, cons) in enumerate([((1.2, 400.0), [-1.0]), ((1.5, 900.0), [150.0]), (None, None)]):
        t = study.ask(dist)
        optimize.record(t, {"area_mm2": 400.0 + k}, cons or [])  # how the search records a trial
        if vals is None:
            study.tell(t, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(t, vals)
    df = trials_frame(study)
    assert df["number"].tolist() == [0, 1, 2]
    assert df["state"].tolist() == ["COMPLETE", "COMPLETE", "FAIL"]
    assert df.loc[0, "objective_score"] == 1.2 and df.loc[1, "objective_area_mm2"] == 900.0
    assert df["area_mm2"].tolist() == [400.0, 401.0, 402.0]
    assert df["constraint"].tolist() == [-1.0, 150.0, 0.0]
    assert df["feasible"].tolist() == [True, False, False]
    assert {"objective_score", "objective_area_mm2"} <= set(OBJECTIVE_LABELS)


def test_power_parts_are_joules_over_the_pass_time_plus_static() -> None:
    e = SimpleNamespace(time_s=np.array([[0.5, 2.0]]), static_w=np.array([30.0]),
                        parts_j={"compute": np.array([[100.0, 40.0]]), "dram": np.array([[50.0, 400.0]])})
    out = power_parts(e, ["llm", "cnn"])
    assert out == {"llm": {"compute": 200.0, "dram": 100.0, "static": 30.0},
                   "cnn": {"compute": 20.0, "dram": 200.0, "static": 30.0}}


def test_cost_curve_is_wafer_cost_over_good_dies() -> None:
    node = load_node("7nm")
    c = cost_curve(None, node, n=50)  # type: ignore[arg-type]
    assert c["area"][0] == 50 and c["area"][-1] == pytest.approx(1.2 * node.reticle_limit_mm2.value)
    a, d0, alpha = c["area"][10], node.defect_density_per_cm2.value, node.yield_alpha.value
    y = (1 + a / 100 * d0 / alpha) ** -alpha
    assert c["yield"][10] == pytest.approx(y)
    assert c["die_cost"][10] == pytest.approx(node.wafer_cost_usd.value / (dies_per_wafer(a) * y))
    assert np.all(np.diff(c["die_cost"]) > 0) and np.all(np.diff(c["yield"]) < 0)


def test_heatmap_grid_spans_the_search_ranges_and_grows_with_compute_and_bandwidth(small_config) -> None:
    _, ctx = load_context(small_config)
    result = StudyResult(folder=Path("."), ctx=ctx, best_params={}, best=ctx.base, best_scored=None,  # type: ignore[arg-type]
                         best_times=ctx.base_times, study=None, n_trials=0, new_trials=0, recovered=0, storage="",
                         meta={})
    g = heatmap_grid(result, 5)
    np.testing.assert_allclose(g["peak"], np.geomspace(64, 1024, 5))
    np.testing.assert_allclose(g["bw"], np.geomspace(0.4, 4.0, 5))
    assert g["score"].shape == g["area"].shape == (5, 5)  # rows: bandwidth, columns: compute
    assert np.all(np.diff(g["score"], axis=1) >= -1e-12)  # more compute never slows the mix
    assert np.all(np.diff(g["score"], axis=0) >= -1e-12)  # nor does more bandwidth
    assert np.all(np.diff(g["area"], axis=1) > 0) and np.all(np.diff(g["area"], axis=0) >= 0)
