"""End-to-end studies on a real SQLite optuna storage: results, repeatability, resume, crashes."""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pandas as pd
import pytest
import yaml

import dse
from dse.cli import main
from dse.report.write import write_results
from dse.search.storage import make_storage
from dse.study import run_study
from tests.conftest import SMALL_STUDY, write_config

ROOT = Path(__file__).resolve().parents[2]


def _complete_count(db: Path) -> int:
    """COMPLETE trials, read with a read-only sqlite3 connection: opening an optuna storage here would
    initialise the schema and race the writer's own initialisation."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as con:
            return int(con.execute("SELECT count(*) FROM trials WHERE state = 'COMPLETE'").fetchone()[0])
    except sqlite3.OperationalError:  # tables not created yet
        return 0


def _trials(folder: Path) -> list[optuna.trial.FrozenTrial]:
    # the project's storage (WAL, busy timeout) so reading while a writer runs waits instead of failing
    study = optuna.load_study(study_name="tiny", storage=make_storage(f"sqlite:///{folder / 'study.db'}"))
    return study.get_trials(deepcopy=False)


def test_study_writes_every_result_file(tmp_path: Path) -> None:
    data = {**SMALL_STUDY, "output": {"plots": True, "heatmap_points": 6}}
    cfg = write_config(tmp_path, data)
    result = run_study(cfg, out=tmp_path / "res", progress=False)
    summary = write_results(result, plots_on=True)
    folder = tmp_path / "res" / "tiny"
    for name in ("trials.csv", "best_design.yaml", "summary.md", "config.yaml", "study.db", "roofline_best.png",
                 "roofline_base.png", "ai_histogram.png", "score_heatmap.png", "workloads.csv", "ops_best.csv"):
        assert (folder / name).is_file(), name
    trials = pd.read_csv(folder / "trials.csv")
    assert len(trials) == 24 and {"peak_tflops", "dram_bandwidth_tbps", "sram_mib", "score", "area_mm2",
                                  "ridge_flop_per_byte", "feasible"} <= set(trials.columns)
    feasible = trials[trials["feasible"]]
    assert (feasible["area_mm2"] <= 750).all()
    assert result.best_scored.score[0] == pytest.approx(feasible["score"].max())
    # best design loads as a template and reproduces the best trial's knobs
    hw = dse.hardware(folder / "best_design.yaml")
    assert hw.peak_flops / 1e12 == pytest.approx(result.best_params["peak_tflops"], rel=1e-6)
    md = (folder / "summary.md").read_text()
    assert "FLOP/byte" in md and "1:" in md and "mm²" in md and "speedup_x" in md
    assert "ratio: ridge" in summary


def test_seeded_runs_are_repeatable_and_get_their_own_folders(tmp_path: Path, small_config: Path) -> None:
    a = run_study(small_config, out=tmp_path / "r", progress=False)
    b = run_study(small_config, out=tmp_path / "r", progress=False)
    assert a.folder.name == "tiny" and b.folder.name == "tiny-2"
    pa = [t.params for t in _trials(a.folder)]
    pb = [t.params for t in _trials(b.folder)]
    assert pa == pb


def test_resume_continues_to_the_total_without_duplicates(tmp_path: Path, small_config: Path) -> None:
    run_study(small_config, out=tmp_path / "r", progress=False, n_trials=16)
    r = run_study(small_config, out=tmp_path / "r", progress=False, n_trials=40, resume=True)
    assert r.folder.name == "tiny" and r.new_trials == 24
    trials = _trials(r.folder)
    assert [t.number for t in trials] == list(range(40))
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)


def test_kill_9_mid_run_then_resume_loses_nothing(tmp_path: Path) -> None:
    data = {**SMALL_STUDY, "search": {**SMALL_STUDY["search"], "n_trials": 5000, "batch_size": 4}}
    cfg = write_config(tmp_path, data)
    out = tmp_path / "r"
    log = (tmp_path / "run.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "dse.run", str(cfg), "--out", str(out), "--quiet", "--no-plots"],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    db = out / "tiny" / "study.db"
    deadline = time.time() + 180
    done = 0
    while time.time() < deadline:
        time.sleep(0.5)
        assert proc.poll() is None, f"the study exited early: {(tmp_path / 'run.log').read_text()[-2000:]}"
        if db.exists():
            done = _complete_count(db)
            if done >= 20:
                break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    log.close()
    assert done >= 20, "the study did not progress before the kill"
    before = {t.number: t.params for t in _trials(out / "tiny") if t.state == optuna.trial.TrialState.COMPLETE}
    target = len(before) + 12
    r = run_study(cfg, out=out, progress=False, resume=True, n_trials=target)
    trials = _trials(r.folder)
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(complete) == target
    numbers = [t.number for t in trials]
    assert len(numbers) == len(set(numbers))
    assert all(before[t.number] == t.params for t in complete if t.number in before)
    assert all(t.state in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL) for t in trials)


def test_cli_run_prints_a_short_summary(tmp_path: Path, small_config: Path, capsys) -> None:
    rc = main(["run", str(small_config), "--out", str(tmp_path / "r"), "--quiet", "--no-plots", "--trials", "8"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "best score" in out and "FLOP/byte" in out and "TFLOP/s" in out


def test_corrupt_study_database_is_a_one_line_error(tmp_path: Path, small_config: Path, capsys) -> None:
    folder = tmp_path / "r" / "tiny"
    folder.mkdir(parents=True)
    (folder / "study.db").write_bytes(b"this is not a database" * 100)
    rc = main(["run", str(small_config), "--out", str(tmp_path / "r"), "--resume", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "study.db" in err and "storage" in err


def test_storage_url_option_uses_that_storage(tmp_path: Path, small_config: Path) -> None:
    url = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    r = run_study(small_config, out=tmp_path / "r", progress=False, storage=url, n_trials=8)
    assert r.storage == url and (tmp_path / "elsewhere.db").is_file()
    assert not (r.folder / "study.db").exists()
    assert yaml.safe_load((r.folder / "config.yaml").read_text())["name"] == "tiny"


def test_shipped_default_config_runs(tmp_path: Path, capsys) -> None:
    rc = main(["run", str(ROOT / "configs" / "npu.yaml"), "--out", str(tmp_path), "--trials", "16", "--quiet",
               "--no-plots"])
    assert rc == 0 and "llama2-7b" in capsys.readouterr().out


def test_base_may_be_a_template_file_next_to_the_config(tmp_path: Path) -> None:
    hw = dse.hardware("npu-7nm").model_dump(mode="json", exclude_none=True)
    hw["name"] = "my-chip"
    (tmp_path / "chip.yaml").write_text(yaml.safe_dump(hw))
    cfg = write_config(tmp_path, {**SMALL_STUDY, "base": "chip.yaml"})
    r = run_study(cfg, out=tmp_path / "r", progress=False, n_trials=8)
    assert r.ctx.base_hw.name == "my-chip"


@pytest.mark.parametrize("objective", ["score_per_mm2", "score_per_usd", "score_per_w"])
def test_budgets_hold_for_every_objective(tmp_path: Path, objective: str) -> None:
    search = {**SMALL_STUDY["search"], "objective": objective, "n_trials": 32, "area_budget_mm2": 800,
              "cost_budget_usd": 900, "power_budget_w": 220}
    cfg = write_config(tmp_path, {**SMALL_STUDY, "search": search})
    r = run_study(cfg, out=tmp_path / "r", progress=False)
    s = r.best_scored
    assert s.area_mm2[0] <= 800 and s.cost_usd[0] <= 900 and s.power_w[0] <= 220
    df = pd.DataFrame([{**t.user_attrs["metrics"], "value": t.value} for t in _trials(r.folder)])
    broken = df[(df["area_mm2"] > 800) | (df["cost_usd"] > 900) | (df["power_w"] > 220)]
    assert (broken["infeasible_reason"].str.len() > 0).all()
    ok = df[df["infeasible_reason"] == ""]
    assert s.objective[0] == pytest.approx(ok["value"].max())


def test_area_budget_below_the_fixed_area_is_refused(tmp_path: Path, capsys) -> None:
    cfg = write_config(tmp_path, {**SMALL_STUDY, "search": {**SMALL_STUDY["search"], "area_budget_mm2": 30}})
    assert main(["run", str(cfg), "--out", str(tmp_path / "r"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "search.area_budget_mm2" in err and "fixed area" in err and str(cfg) in err and err.count("\n") == 1


def test_two_objectives_give_a_non_dominated_feasible_front(tmp_path: Path) -> None:
    search = {**SMALL_STUDY["search"], "objectives": ["score", "area_mm2"], "n_trials": 64, "batch_size": 16}
    cfg = write_config(tmp_path, {**SMALL_STUDY, "search": search})
    r = run_study(cfg, out=tmp_path / "r", progress=False)
    assert r.study.directions[0].name == "MAXIMIZE" and r.study.directions[1].name == "MINIMIZE"
    write_results(r, plots_on=False)
    front = pd.read_csv(r.folder / "pareto.csv")
    trials = pd.read_csv(r.folder / "trials.csv")
    ok = trials[trials["feasible"]]
    assert len(front) >= 2 and front["feasible"].all() and (front["area_mm2"] <= 750).all()
    s, a = ok["objective_score"], ok["objective_area_mm2"]
    for _, p in front.iterrows():  # no feasible trial is at least as good in both and better in one
        ps, pa = p["objective_score"], p["objective_area_mm2"]
        assert ok[(s >= ps) & (a <= pa) & ((s > ps) | (a < pa))].empty
    # every feasible trial off the front is dominated by some front point
    fs, fa = front["objective_score"], front["objective_area_mm2"]
    for _, q in ok[~ok["number"].isin(front["number"])].iterrows():
        assert ((fs >= q["objective_score"]) & (fa <= q["objective_area_mm2"])).any()
    assert r.best_scored.score[0] == pytest.approx(front["objective_score"].max())


def test_several_mixes_give_a_best_ratio_table_and_sensitivity_curves(tmp_path: Path, capsys) -> None:
    data = {k: v for k, v in SMALL_STUDY.items() if k != "workloads"}
    data["mixes"] = {"decode": [{"name": "llama2-7b", "phase": "decode", "context": 1024}],
                     "vision": [{"name": "resnet50", "batch": 32}]}
    cfg = write_config(tmp_path, data)
    assert main(["run", str(cfg), "--out", str(tmp_path / "r"), "--quiet", "--no-plots", "--trials", "24"]) == 0
    out = capsys.readouterr().out
    top = tmp_path / "r" / "tiny"
    table = pd.read_csv(top / "mixes.csv")
    assert list(table["mix"]) == ["decode", "vision"]
    assert (table["area_mm2"] <= 750).all() and table["ratio_vs_base"].str.startswith("1:").all()
    curves = pd.read_csv(top / "ratio_sensitivity.csv")
    assert set(curves["mix"]) == {"decode", "vision"}
    # the curve is a best-over-a-grid: never above the search optimum by more than grid coarseness allows
    for mix, row in table.set_index("mix").iterrows():
        assert curves[curves["mix"] == mix]["best_score"].max() > 0.5 * row["score"]
    assert (top / "ratio_sensitivity.png").is_file() and (top / "decode" / "summary.md").is_file()
    names = {s.study_name for s in optuna.get_all_study_summaries(f"sqlite:///{top / 'study.db'}")}
    assert names == {"tiny.decode", "tiny.vision"}
    assert "decode" in out and "FLOP/byte" in out


def test_workloads_and_mixes_are_exclusive(tmp_path: Path, capsys) -> None:
    data = {**SMALL_STUDY, "mixes": {"a": SMALL_STUDY["workloads"]}}
    cfg = write_config(tmp_path, data)
    assert main(["run", str(cfg), "--quiet"]) == 2
    assert "exactly one of workloads" in capsys.readouterr().err


def test_any_hardware_field_can_be_searched(tmp_path: Path) -> None:
    space = {**SMALL_STUDY["search"]["space"], "params": [
        {"field": "memory.local.capacity_mib", "low": 4, "high": 64},
        {"field": "compute.matrix.array_rows", "choices": [32, 64, 128]},
        {"field": "network.links", "low": 2, "high": 16, "type": "int", "log": False},
        {"field": "compute.clock_ghz", "low": 0.8, "high": 1.4, "log": False},
    ]}
    cfg = write_config(tmp_path, {**SMALL_STUDY, "search": {**SMALL_STUDY["search"], "space": space}})
    r = run_study(cfg, out=tmp_path / "r", progress=False)
    write_results(r, plots_on=False)
    hw = dse.hardware(r.folder / "best_design.yaml")
    p = r.best_params
    assert hw.memory[0].capacity_mib == pytest.approx(p["memory.local.capacity_mib"], rel=1e-6)
    assert hw.compute.matrix.array_rows == p["compute.matrix.array_rows"]
    assert hw.network.links == p["network.links"] and isinstance(p["network.links"], int)
    assert hw.compute.clock_ghz == pytest.approx(p["compute.clock_ghz"], rel=1e-6)
    # the template's peaks already include the clock, and reloading it reproduces the design's area
    assert dse.area(hw).total_mm2 == pytest.approx(float(r.best_scored.area_mm2[0]), rel=1e-6)


def test_unknown_search_field_lists_the_accepted_ones(tmp_path: Path, capsys) -> None:
    space = {**SMALL_STUDY["search"]["space"], "params": [{"field": "memory.l3.capacity_mib", "low": 1, "high": 2}]}
    cfg = write_config(tmp_path, {**SMALL_STUDY, "search": {**SMALL_STUDY["search"], "space": space}})
    assert main(["run", str(cfg), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "search.space.params.0.field" in err and "memory.global.capacity_mib" in err and err.count("\n") == 1


def test_budget_split_searches_the_ratio_at_a_fixed_area(tmp_path: Path) -> None:
    search = {**SMALL_STUDY["search"], "n_trials": 40, "area_budget_mm2": 760,
              "space": {"split": {"total_area_mm2": 700}}}
    cfg = write_config(tmp_path, {**SMALL_STUDY, "search": search})
    r = run_study(cfg, out=tmp_path / "r", progress=False)
    trials = [optuna_trial.user_attrs["metrics"] for optuna_trial in _trials(r.folder)]
    areas = [m["area_mm2"] for m in trials]
    assert max(areas) <= 700 * 1.01 and min(areas) > 500  # every split spends (almost) the whole budget
    ridges = [m["ridge_flop_per_byte"] for m in trials]
    assert max(ridges) / min(ridges) > 3  # the split explores different compute:bandwidth ratios


def test_output_dir_may_not_be_the_filesystem_root_or_the_checkout(tmp_path: Path, small_config: Path, capsys) -> None:
    from dse.units import repo_root

    for bad in ("/", str(repo_root())):
        assert main(["run", str(small_config), "--out", bad]) == 2
        err = capsys.readouterr().err
        assert "output.dir" in err and err.count("\n") == 1


def test_resume_removes_temporary_files_an_interrupted_write_left(tmp_path: Path, small_config: Path) -> None:
    assert main(["run", str(small_config), "--out", str(tmp_path)]) == 0
    folder = tmp_path / "tiny"
    stale = folder / ".trials.csv.abc123.tmp.csv"
    stale.write_text("")
    assert main(["run", str(small_config), "--out", str(tmp_path), "--resume", "--trials", "32"]) == 0
    assert not stale.exists()
    assert not list(folder.glob(".*.tmp*"))


def test_heatmap_grid_spans_the_search_ranges_and_grows_with_compute_and_bandwidth(small_config) -> None:
    import numpy as np

    from dse.study import heatmap_grid, load_context

    _, ctx = load_context(small_config)
    g = heatmap_grid(ctx, ctx.base, 5)
    np.testing.assert_allclose(g["peak"], np.geomspace(64, 1024, 5))
    np.testing.assert_allclose(g["bw"], np.geomspace(0.4, 4.0, 5))
    assert g["score"].shape == g["area"].shape == (5, 5)  # rows: bandwidth, columns: compute
    assert np.all(np.diff(g["score"], axis=1) >= -1e-12)  # more compute never slows the mix
    assert np.all(np.diff(g["score"], axis=0) >= -1e-12)  # nor does more bandwidth
    assert np.all(np.diff(g["area"], axis=1) > 0) and np.all(np.diff(g["area"], axis=0) >= 0)


def test_a_study_returns_its_base_and_best_designs_evaluated_once(tmp_path: Path) -> None:
    """``run_study`` hands back the evaluations the report renders: the times it searched with, the
    per-workload predictions (binding ceilings), area, cost and energy, equal to evaluating afresh."""
    import numpy as np

    from dse.cost.area import area
    from dse.cost.power import mix_energy

    cfg = write_config(tmp_path, {**SMALL_STUDY, "output": {"heatmap_points": 4}})
    r = run_study(cfg, out=tmp_path / "r", progress=False, n_trials=8)
    ctx = r.ctx
    for ev, d, times in ((r.base_eval, ctx.base, ctx.base_times), (r.best_eval, r.best, r.best_times)):
        assert ev.design is d and ev.times is times
        fresh = [dse.predict(w, d) for w in ctx.mix.workloads]
        assert [p.time_s for p in ev.predictions] == [p.time_s for p in fresh]
        assert np.array_equal(ev.area.total, area(d).total)
        assert np.array_equal(ev.energy.peak_power_w, mix_energy(d, ctx.mix, node=ev.area.node).peak_power_w)
    assert np.array_equal(r.best_eval.area.total, r.best_scored.area_mm2)
    shares = r.best_eval.binding_shares(ctx.mix.weights)
    assert sum(shares.values()) == pytest.approx(1.0) and r.heatmap["score"].shape == (4, 4)
    assert r.sram.scored.score.shape == (3,)
