"""dse.report.write: trial table, atomic CSVs without infinities, power parts, cost curve; the report renders the
study's evaluations and predicts nothing."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import optuna
import pandas as pd
import pytest

from dse.cost.cost import dies_per_wafer
from dse.hardware.templates import load_node
from dse.report.write import OBJECTIVE_LABELS, cost_curve, power_parts, trials_frame, write_csv
from dse.search import optimize
from dse.search.storage import make_storage


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
    # the infeasible trial scores higher (1.5 against 1.2): the rank orders the feasible ones only
    assert df["rank"].tolist()[0] == 1 and df["rank"].isna().tolist() == [False, True, True]


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


def test_the_study_report_renders_the_studys_evaluations_without_predicting(tmp_path: Path, monkeypatch) -> None:
    """Every predictor entry point (and the study's scorer) raises while the report is laid out and written:
    the base and best designs, the heatmap and the SRAM variants come from the study's one evaluation."""
    import importlib
    import sys

    import dse.study as study_mod
    from dse.predict import roofline
    from dse.report.write import write_results
    from tests.conftest import SMALL_STUDY, write_config

    cfg = write_config(tmp_path, {**SMALL_STUDY, "output": {"plots": True, "heatmap_points": 4}})
    result = study_mod.run_study(cfg, out=tmp_path / "r", progress=False, n_trials=8)
    from dse.validate.bands import shipped_bands

    shipped_bands()  # the error bands the tables quote come from the validation suite, run once per process
    predict_mod = importlib.import_module("dse.predict")  # the package (``dse.predict`` is also the API function)
    entry = (predict_mod.predict, predict_mod.mix_times, predict_mod.mix_times_bounds, roofline.evaluate,
             roofline.evaluate_times, roofline.evaluate_bound, study_mod.score_designs, study_mod.evaluated)
    ids = {id(f) for f in entry}

    def refuse(*a, **k):
        raise AssertionError("the report called the predictor")

    for mod in [m for name, m in sys.modules.items() if name == "dse" or name.startswith("dse.")]:
        for name, val in list(vars(mod).items()):
            if id(val) in ids:
                monkeypatch.setattr(mod, name, refuse)
    text = write_results(result, plots_on=True)
    assert "best score" in text
    for f in ("summary.md", "report.html", "workloads.csv", "ops_best.csv", "score_heatmap.png", "roofline_base.png"):
        assert (result.folder / f).is_file(), f
    with pytest.raises(ValueError, match="carries no evaluations"):  # a hand-made result is not predicted here
        write_results(dataclasses.replace(result, best_eval=None), plots_on=False)


def test_a_multi_die_design_sits_on_the_cost_curve_at_its_largest_die() -> None:
    """The cost-vs-area plot put a 2-die package at its package silicon (1391 mm2, past the reticle) and all its dies'
    cost, on a curve of one die's cost: it now sits at its largest die, on the curve, said to be one of its dies."""
    import dse
    from dse.cost.area import area
    from dse.cost.cost import unit_cost
    from dse.hardware.designs import DesignBatch
    from dse.report.write import cost_marks

    costs = {}
    for name in ("npu-7nm", "b200"):
        d = DesignBatch.from_hardware(dse.hardware(name))
        ar = area(d)
        costs[name] = (ar, unit_cost(d, ar))
    curve = {"area": np.linspace(50, 1000, 50), "die_cost": np.linspace(10, 1000, 50)}
    marks = cost_marks(costs, curve)
    assert marks["npu-7nm"] == (float(costs["npu-7nm"][0].total[0]), float(costs["npu-7nm"][1].parts["die"][0]))
    (label,) = [k for k in marks if k.startswith("b200")]
    a, c = marks[label]
    assert label == "b200 (largest of 2 dies)" and a == float(costs["b200"][0].largest_die_mm2[0]) < 858
    assert c == pytest.approx(np.interp(a, curve["area"], curve["die_cost"]))
