"""End-to-end studies on a real SQLite optuna storage: results, repeatability, resume, crashes."""

import copy
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
import pytest
import yaml

import dse
from dse.cli import main
from dse.config import load_study
from dse.hardware.designs import DesignBatch
from dse.hardware.templates import load_node
from dse.report.write import write_results
from dse.search.storage import make_storage
from dse.study import run_study, study_limits
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
    # best design loads as a template and reproduces the built design of the best trial's knobs (whole cores of
    # 11.4688 TFLOP/s nearest the peak asked for)
    hw = dse.hardware(folder / "best_design.yaml")
    assert hw.peak_flops == pytest.approx(result.best.peak_flops[0], rel=1e-9)
    assert hw.compute.cores == round(result.best_params["peak_tflops"] / 11.4688)
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


def test_a_power_density_budget_bounds_the_heat_flux_of_the_best_design(tmp_path: Path) -> None:
    """search.power_density_budget_w_per_mm2: the mix's hungriest average power over the package's silicon footprint
    (dse.cost.area.AreaBreakdown.footprint_mm2) stays under it; trials above it are infeasible and say why."""
    from dse.cost.area import area

    search = {**SMALL_STUDY["search"], "n_trials": 32, "power_density_budget_w_per_mm2": 0.2}
    cfg = write_config(tmp_path, {**SMALL_STUDY, "search": search})
    r = run_study(cfg, out=tmp_path / "r", progress=False)
    s = r.best_scored
    assert s.power_density_w_per_mm2[0] == pytest.approx(s.power_w[0] / area(r.best).footprint_mm2[0])
    assert s.power_density_w_per_mm2[0] <= 0.2
    df = pd.DataFrame([t.user_attrs["metrics"] for t in _trials(r.folder)])
    assert df["power_density_w_per_mm2"].min() <= 0.2 < df["power_density_w_per_mm2"].max()  # the budget binds
    over = df[df["power_density_w_per_mm2"] > 0.2]
    assert over["infeasible_reason"].str.contains(r"power density [\d.]+ W/mm2 > power-density budget 0.2 W/mm2").all()
    assert (df.loc[df["infeasible_reason"] == "", "power_density_w_per_mm2"] <= 0.2).all()


def test_area_budget_below_the_fixed_area_is_refused(tmp_path: Path, capsys) -> None:
    cfg = write_config(tmp_path, {**SMALL_STUDY, "search": {**SMALL_STUDY["search"], "area_budget_mm2": 30}})
    assert main(["run", str(cfg), "--out", str(tmp_path / "r"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "search.area_budget_mm2" in err and "fixed area" in err and str(cfg) in err and err.count("\n") == 1


def test_a_base_with_its_own_fixed_block_is_held_to_it_not_to_the_node_s(tmp_path: Path, capsys) -> None:
    """An edge NPU that says its fixed block (package.fixed_mm2: 4 mm2) under a 30 mm2 budget was refused as below
    the node's 40 mm2; the check reads the base design's own fixed area."""
    hw = dse.hardware("npu-7nm").model_dump(mode="python", exclude_none=True)
    hw["package"] = {"fixed_mm2": 12.0, "source": "test: a small host interface"}
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(hw, sort_keys=False))
    search = {**SMALL_STUDY["search"], "area_budget_mm2": 10}
    cfg = write_config(tmp_path, {**SMALL_STUDY, "base": "small.yaml", "search": search})
    assert main(["run", str(cfg), "--out", str(tmp_path / "r"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "search.area_budget_mm2: got 10; accepted: more than the fixed area of base npu-7nm (12 mm2)" in err
    cfg, _ = load_study(write_config(tmp_path, {**SMALL_STUDY, "base": "small.yaml",
                                                "search": {**search, "area_budget_mm2": 30}}))
    base = DesignBatch.from_hardware(dse.hardware(hw))
    assert study_limits(cfg, load_node("7nm"), base)["area"] == 30


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
        {"field": "compute.noc.link_bytes", "choices": [8, 64, 512]},
        {"field": "compute.spare_cores", "choices": [0, 1, 2]},
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
    assert hw.compute.noc.link_bytes == p["compute.noc.link_bytes"]  # the on-chip network's width is a design knob
    assert hw.compute.spare_cores == p["compute.spare_cores"]  # cores fused off for yield: area and cost only
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
    np.testing.assert_array_equal(g["objective"], g["score"])  # a score study colours its score


def test_a_perf_per_watt_heatmap_colours_its_objective_with_its_budget_lines(tmp_path: Path, monkeypatch) -> None:
    import numpy as np

    from dse.report import plots
    from dse.score import OBJECTIVES
    from dse.study import heatmap_grid, load_context

    search = {**SMALL_STUDY["search"], "objective": "score_per_w", "power_budget_w": 300.0}
    cfg = write_config(tmp_path, {**SMALL_STUDY, "search": search})
    _, ctx = load_context(cfg)
    g = heatmap_grid(ctx, ctx.base, 6)
    base_w = float(np.atleast_1d(ctx.base_resources["power_w"])[0])
    np.testing.assert_allclose(g["objective"], g["score"] / (g["power"] / base_w), rtol=1e-12)
    assert g["power"].min() < 300.0 < g["power"].max()
    from dse.report.write import study_document
    from dse.study import run_study

    figures: list = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig) or path)
    r = run_study(cfg, out=tmp_path / "r", progress=False, n_trials=8)
    spec = next(f for f in study_document(r).figures if f.file == "score_heatmap.png")
    plots.score_heatmap(*spec.data, tmp_path / spec.file, spec.title, **spec.options)
    fig = next(f for f in figures if f.axes and "score per W" in (f.axes[-1].get_ylabel() or ""))
    assert fig.axes[-1].get_ylabel() == OBJECTIVES["score_per_w"].label
    gids = {c.get_gid() for c in fig.axes[0].collections}
    assert "budget-1" in gids  # the power budget's line (budget-0 is the area budget)


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


def _config_with_files(folder: Path) -> Path:
    """The small study on a base template file and a model file of its own, both named relative to the config."""
    import shutil

    hw = dse.hardware("npu-7nm").model_dump(mode="json", exclude_none=True)
    hw["name"] = "my-chip"
    (folder / "chip.yaml").write_text(yaml.safe_dump(hw))
    (folder / "models").mkdir()
    shutil.copy(ROOT / "workloads" / "resnet50.yaml", folder / "models" / "resnet50.yaml")
    workloads = [{"path": "models/resnet50.yaml", "batch": 8}, SMALL_STUDY["workloads"][1]]
    return write_config(folder, {**SMALL_STUDY, "base": "chip.yaml", "workloads": workloads})


def test_results_folder_holds_its_inputs_and_a_config_pointing_at_them(tmp_path: Path) -> None:
    import hashlib
    import json

    cfg = _config_with_files(tmp_path)
    r = run_study(cfg, out=tmp_path / "r", progress=False, n_trials=8)
    folder = r.folder
    assert (folder / "inputs" / "config" / "study.yaml").read_bytes() == cfg.read_bytes()
    copied = yaml.safe_load((folder / "config.yaml").read_text())
    assert copied["base"] == "inputs/base/chip.yaml"
    assert copied["workloads"][0] == {"path": "inputs/models/resnet50.yaml", "batch": 8}
    assert copied["workloads"][1]["name"] == "llama2-7b"  # a shipped model stays a name
    assert copied["output"]["dir"] == ".." and copied["output"]["relative_to"] == "config"
    assert (folder / copied["base"]).read_bytes() == (tmp_path / "chip.yaml").read_bytes()
    assert (folder / copied["workloads"][0]["path"]).read_bytes() == (tmp_path / "models" / "resnet50.yaml").read_bytes()
    # metadata.json: the existing keys, and the sha256 of every input (the template's process node included)
    meta = json.loads((folder / "metadata.json").read_text())
    assert {"dse_version", "config_sha256", "seed", "created_utc", "storage", "workers", "inputs"} <= set(meta)
    inputs = meta["inputs"]
    assert set(inputs) == {"dse_version", "config", "base", "workloads.0.path", "process_node"}
    assert inputs["dse_version"] == dse.__version__
    node = ROOT / "hw_templates" / "nodes" / f"{r.ctx.base_hw.process_node}.yaml"
    for label, source in (("config", cfg), ("base", tmp_path / "chip.yaml"),
                          ("workloads.0.path", tmp_path / "models" / "resnet50.yaml"), ("process_node", node)):
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
        assert inputs[label]["sha256"] == digest, label
        assert hashlib.sha256((folder / inputs[label]["copy"]).read_bytes()).hexdigest() == digest, label


def test_a_results_folders_config_reruns_from_another_working_folder(tmp_path: Path, monkeypatch, capsys) -> None:
    import json

    cfg = _config_with_files(tmp_path)
    first = run_study(cfg, out=tmp_path / "r", progress=False, n_trials=8).folder
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["run", str(first / "config.yaml"), "--quiet", "--no-plots", "--trials", "8"]) == 0, \
        capsys.readouterr().err
    second = tmp_path / "r" / "tiny-2"  # a new study beside the first, nothing in the working folder
    assert (second / "metadata.json").is_file() and not list(elsewhere.iterdir())
    assert len(_trials(first)) == 8 and len(_trials(second)) == 8
    a, b = (json.loads((f / "metadata.json").read_text())["inputs"] for f in (first, second))
    for label in ("base", "workloads.0.path", "process_node"):
        assert a[label]["sha256"] == b[label]["sha256"], label
    again = yaml.safe_load((second / "config.yaml").read_text())
    assert again["base"] == "inputs/base/chip.yaml" and (second / again["base"]).is_file()


@pytest.mark.parametrize(("edited", "field"), [("chip.yaml", "base"), ("models/resnet50.yaml", "workloads.0.path")])
def test_resume_refuses_an_input_file_changed_since_the_study_was_created(tmp_path: Path, capsys, edited: str,
                                                                        field: str) -> None:
    cfg = _config_with_files(tmp_path)
    args = ["run", str(cfg), "--out", str(tmp_path / "r"), "--quiet", "--no-plots"]
    assert main([*args, "--trials", "8"]) == 0
    capsys.readouterr()
    path = tmp_path / edited
    data = yaml.safe_load(path.read_text())
    data["description"] = "edited after the study was created"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main([*args, "--trials", "16", "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {cfg}: {field}: {path} changed since the study was created")
    assert "sha256" in err and "accepted:" in err
    assert len(_trials(tmp_path / "r" / "tiny")) == 8  # refused before any trial ran


def test_resume_accepts_unchanged_inputs_an_edited_trial_count_and_studies_without_recorded_inputs(
        tmp_path: Path, capsys) -> None:
    cfg = _config_with_files(tmp_path)
    args = ["run", str(cfg), "--out", str(tmp_path / "r"), "--quiet", "--no-plots"]
    assert main([*args, "--trials", "8"]) == 0
    data = yaml.safe_load(cfg.read_text())
    data["search"]["n_trials"] = 16  # the config's text changes, what defines the search does not
    cfg.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main([*args, "--resume"]) == 0, capsys.readouterr().err
    # a study created before inputs were recorded resumes as before, even with a changed template
    study = optuna.load_study(study_name="tiny", storage=make_storage(f"sqlite:///{tmp_path / 'r' / 'tiny' / 'study.db'}"))
    study.set_user_attr("dse", {k: v for k, v in study.user_attrs["dse"].items() if k != "inputs"})
    (tmp_path / "chip.yaml").write_text((tmp_path / "chip.yaml").read_text() + "# edited\n")
    assert main([*args, "--resume", "--trials", "24"]) == 0, capsys.readouterr().err
    assert len(_trials(tmp_path / "r" / "tiny")) == 24


def test_resume_refuses_another_dse_version(tmp_path: Path, small_config: Path, capsys, monkeypatch) -> None:
    args = ["run", str(small_config), "--out", str(tmp_path / "r"), "--quiet", "--no-plots"]
    assert main([*args, "--trials", "8"]) == 0
    capsys.readouterr()
    monkeypatch.setattr("dse.inputs.__version__", "999.0")
    assert main([*args, "--trials", "16", "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dse_version: got dse 999.0" in err and dse.__version__ in err


def test_several_mixes_share_one_inputs_folder(tmp_path: Path) -> None:
    import json

    from dse.study import run_mixes

    _config_with_files(tmp_path)
    data = {k: v for k, v in SMALL_STUDY.items() if k != "workloads"}
    data["base"] = "chip.yaml"
    data["mixes"] = {"decode": [SMALL_STUDY["workloads"][1]], "vision": [{"path": "models/resnet50.yaml", "batch": 8}]}
    cfg = write_config(tmp_path, data, "mixes.yaml")
    top, results = run_mixes(cfg, out=tmp_path / "r", progress=False, n_trials=8)
    for folder in (top, top / "decode", top / "vision"):
        copied = yaml.safe_load((folder / "config.yaml").read_text())
        assert (folder / copied["base"]).read_bytes() == (tmp_path / "chip.yaml").read_bytes(), folder
        assert (folder / copied["mixes"]["vision"][0]["path"]).is_file(), folder
        assert (folder / copied["output"]["dir"]).resolve() == (tmp_path / "r").resolve(), folder
    for r in results:  # each mix records every mix's model files: resuming the first refuses a change in any
        inputs = json.loads((r.folder / "metadata.json").read_text())["inputs"]
        assert {"base", "mixes.vision.0.path", "process_node"} <= set(inputs)
        assert (r.folder / inputs["base"]["copy"]).resolve() == (top / "inputs" / "base" / "chip.yaml").resolve()


def _mixes_config(tmp_path: Path, mixes: dict, name: str = "mixes.yaml") -> Path:
    data = {k: v for k, v in SMALL_STUDY.items() if k != "workloads"}
    return write_config(tmp_path, {**data, "mixes": mixes}, name)


#: 138 GB of bf16 weights and KV cache: more than the 128 GB of the 8 HBM2e stacks SMALL_STUDY's 4 TB/s bound buys
HUGE = {"name": "llama2-70b", "phase": "decode", "batch": 1, "context": 512}
HUGE_REASON = (r"mixes\.huge: got llama2-70b\[decode b1 ctx512 bf16\] needing 13\d\.\d GB per chip; accepted: a "
               r"workload within 128\.0 GB, the most hbm the search space can build")


def test_a_mix_that_fits_no_design_is_reported_and_the_other_mixes_run(tmp_path: Path, capsys) -> None:
    import re

    cfg = _mixes_config(tmp_path, {"decode": [SMALL_STUDY["workloads"][1]], "huge": [HUGE],
                                   "vision": [SMALL_STUDY["workloads"][0]]})
    assert main(["run", str(cfg), "--out", str(tmp_path / "r"), "--quiet", "--no-plots", "--trials", "8"]) == 0
    out, err = capsys.readouterr()
    lines = {ln.split()[0]: ln for ln in out.splitlines()[1:-1]}
    assert set(lines) == {"decode", "huge", "vision"} and "score" in lines["decode"] and "score" in lines["vision"]
    assert re.search(r"huge +no feasible design: got llama2-70b\[decode b1 ctx512 bf16\] needing 13\d\.\d GB per chip; "
                     r"accepted: a workload within 128\.0 GB", lines["huge"]) and err == ""
    top = tmp_path / "r" / "tiny"
    table = pd.read_csv(top / "mixes.csv", keep_default_na=False)
    assert list(table["mix"]) == ["decode", "vision", "huge"]
    assert list(table["infeasible_reason"] == "") == [True, True, False] and table.loc[2, "score"] == ""
    assert "GB per chip" in table.loc[2, "infeasible_reason"]
    md = (top / "summary.md").read_text()
    assert "**No feasible design**" in md and "- `huge`: got llama2-70b[decode b1 ctx512 bf16] needing" in md
    assert set(pd.read_csv(top / "ratio_sensitivity.csv")["mix"]) == {"decode", "vision"}
    assert not (top / "huge").exists()  # set aside before any trial: no study, no folder
    names = {s.study_name for s in optuna.get_all_study_summaries(f"sqlite:///{top / 'study.db'}")}
    assert names == {"tiny.decode", "tiny.vision"}


def test_a_mix_whose_every_trial_is_infeasible_is_reported_after_its_search(tmp_path: Path, monkeypatch) -> None:
    from dse.errors import InfeasibleError
    from dse.search import optimize
    from dse.study import run_mixes

    real = optimize.best_feasible

    def best(study):  # noqa: ANN001, ANN202 - the vision mix's search finds nothing feasible
        if study.study_name.endswith(".vision"):
            raise InfeasibleError("no feasible design found (stand-in)")
        return real(study)

    monkeypatch.setattr(optimize, "best_feasible", best)
    cfg = _mixes_config(tmp_path, {"decode": [SMALL_STUDY["workloads"][1]], "vision": [SMALL_STUDY["workloads"][0]]})
    run = run_mixes(cfg, out=tmp_path / "r", progress=False, n_trials=8)
    assert list(run.results) == ["decode"] and list(run.infeasible) == ["vision"]
    assert str(run.infeasible["vision"]) == f"{cfg}: mixes.vision: no feasible design found (stand-in)"
    top, results = run  # unpacks as the (top, results) it returned before
    assert top == run.top and results == [run.results["decode"]]
    assert len(_trials_named(top, "tiny.vision")) == 8  # its trials are kept in the storage


def _trials_named(top: Path, name: str) -> list[optuna.trial.FrozenTrial]:
    return optuna.load_study(study_name=name, storage=make_storage(f"sqlite:///{top / 'study.db'}")).get_trials()


def test_when_no_mix_fits_the_study_fails_with_one_line_per_mix_and_writes_nothing(tmp_path: Path, capsys) -> None:
    import re

    one = _mixes_config(tmp_path, {"decode": [SMALL_STUDY["workloads"][1], HUGE]}, "one.yaml")
    assert main(["run", str(one), "--out", str(tmp_path / "r"), "--quiet", "--no-plots", "--trials", "8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.match(rf"error: {re.escape(str(one))}: {HUGE_REASON.replace('huge', 'decode')}",
                                             err)
    two = _mixes_config(tmp_path, {"huge": [HUGE], "big": [{**HUGE, "batch": 2}]}, "two.yaml")
    assert main(["run", str(two), "--out", str(tmp_path / "r"), "--quiet", "--no-plots", "--trials", "8"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and re.match(rf"error: {re.escape(str(two))}: {HUGE_REASON}", lines[0])
    assert lines[1].startswith(f"error: {two}: mixes.big: got llama2-70b[decode b2 ctx512 bf16] needing")
    assert not (tmp_path / "r").exists()
    # a bad input in any mix is still an input error, before any search, even when another mix is infeasible
    bad = _mixes_config(tmp_path, {"ok": [SMALL_STUDY["workloads"][0]], "huge": [HUGE],
                                   "typo": [{"name": "resnet-50"}]}, "bad.yaml")
    assert main(["run", str(bad), "--out", str(tmp_path / "r"), "--quiet", "--no-plots", "--trials", "8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"error: {bad}: mixes.typo.0" in err and "resnet-50" in err
    assert not (tmp_path / "r").exists()


def test_a_suite_entry_leaves_out_the_models_it_excludes(tmp_path: Path, capsys) -> None:
    from dse.study import load_context
    from dse.workloads.suites import load_suite

    entries = load_suite("edge-vision")
    gone = entries[0]["name"]
    data = {**SMALL_STUDY, "workloads": [{"suite": "edge-vision", "exclude": [gone]}]}
    _, ctx = load_context(write_config(tmp_path, data))
    assert len(ctx.mix.workloads) == sum(e["name"] != gone for e in entries) > 0
    assert gone not in {w.name for w in ctx.mix.workloads}
    typo = {**SMALL_STUDY, "workloads": [{"suite": "all", "exclude": ["llama2-70"]}]}
    cfg = write_config(tmp_path, typo, "typo.yaml")
    assert main(["run", str(cfg), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {cfg}: workloads.0.exclude: got 'llama2-70'; accepted: a model of suite all") \
        and "did you mean 'llama2-70b'?" in err and err.count("\n") == 1
    alone = write_config(tmp_path, {**SMALL_STUDY, "workloads": [{"name": "gpt2", "exclude": ["gpt2"]}]}, "alone.yaml")
    assert main(["run", str(alone), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{alone}: workloads.0.exclude: got exclude without suite" in err and err.count("\n") == 1


def test_a_hardware_template_given_as_a_study_is_named_as_one(capsys) -> None:
    template = ROOT / "hw_templates" / "npu-7nm.yaml"
    assert main(["run", str(template), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {template}: got a hardware template (keys compute, memory); accepted: a study config " \
                  "(name, base or system, workloads or mixes, search); a template is named by a study's base: " \
                  "(shipped ones live in hw_templates/)\n"


def _b200_package_study(tmp_path: Path, name: str, param: dict) -> tuple:
    """8 trials of llama2-7b decode (batch 8, 512 tokens) on b200 with one package field searched, no area budget:
    (the result with its files written, its trials.csv)."""
    data = copy.deepcopy(SMALL_STUDY)
    data.update(name=name, base="b200", workloads=[{"name": "llama2-7b", "phase": "decode", "batch": 8,
                                                     "context": 512}])
    data["search"].pop("area_budget_mm2")
    data["search"].update(n_trials=8, batch_size=8)
    data["search"]["space"] = {"params": [param]}
    result = run_study(write_config(tmp_path, data), out=tmp_path / "res", progress=False)
    write_results(result, plots_on=False)
    return result, pd.read_csv(result.folder / "trials.csv")


def test_a_study_searches_the_number_of_compute_dies_and_the_reticle_limits_each_die(tmp_path: Path) -> None:
    # b200's parts on 1-4 dies: one die breaks the reticle (858 mm2) while the package's total area is over it
    # at every count, so the reticle reads the largest die; the best design is built on its searched count
    result, trials = _b200_package_study(tmp_path, "dies", {"field": "package.dies.gpu.count", "low": 1, "high": 4,
                                                            "type": "int"})
    one = trials[trials["package.dies.gpu.count"] == 1]
    many = trials[trials["package.dies.gpu.count"] > 1]
    assert len(one) and len(many)
    assert (~one["feasible"]).all() and one["infeasible_reason"].str.contains("reticle limit").all()
    assert many["feasible"].all() and (many["area_mm2"] > 858).all()
    best = result.best.to_hardware(0, "best")
    assert best.package.dies[0].count > 1


def test_a_study_searches_the_die_to_die_link_and_a_link_slower_than_memory_loses(tmp_path: Path) -> None:
    # b200's two dies at 1-16 TB/s each: below 4 TB/s the link holds its 8 TB/s HBM to 2 x B (half the bytes are on
    # the other die), so a decode step slows; the PHY costs ~0.7 mm2 per TB/s, so the best design keeps a fast link
    result, trials = _b200_package_study(tmp_path, "d2d", {"field": "package.dies.gpu.d2d_bandwidth_tbps", "low": 1.0,
                                                           "high": 16.0})
    link = trials["package.dies.gpu.d2d_bandwidth_tbps"]
    assert (link < 3.5).any() and (link > 4.5).any()
    score = trials.set_index("package.dies.gpu.d2d_bandwidth_tbps")["score"]  # throughput vs b200's own
    slow, fast = score[score.index < 4.0], score[score.index >= 4.0]
    assert fast.to_numpy() == pytest.approx(1.0, rel=1e-6)  # the link binds nothing: b200's own time
    slow = slow.sort_index()  # HBM (and L2) at 2 x B: the slower the link, the slower the step
    assert (slow < 0.99).all() and slow.is_monotonic_increasing
    assert result.best.to_hardware(0, "best").package.dies[0].d2d_bandwidth_tbps >= 4.0
    assert "| dies: gpu: die-to-die bandwidth per die (TB/s) | 10 |" in (result.folder / "summary.md").read_text()


@pytest.mark.parametrize(("param", "expected"), [
    ({"field": "compute.clock_ghz", "low": 1.0, "high": 1000.0},
     "search.space.params.0.high: got 1000 for compute.clock_ghz; accepted: a number <= 10"),
    ({"field": "compute.noc.link_bytes", "choices": [16, 131072]},
     "search.space.params.0.choices: got 131072 for compute.noc.link_bytes; accepted: a number <= 65536"),
    # the searched field's own limit, not that of the peak it also pushes past its limit (which said 'accepted: a
    # number <= 1000000.0' of 100000 rows)
    ({"field": "compute.matrix.array_rows", "choices": [64, 400000]},
     "search.space.params.0.choices: got 400000 for compute.matrix.array_rows; accepted: a number <= 4096"),
    # a fraction of a counted thing was built as 1 row and ran every trial
    ({"field": "compute.matrix.array_rows", "choices": [7, 0.5]},
     "search.space.params.0.choices: got 0.5 for compute.matrix.array_rows; accepted: whole numbers"),
    # 0 spare cores is a design; 0 of anything else is not, and a log range cannot start at 0
    ({"field": "network.links", "choices": [0, 4]}, "search.space.params.0.choices: got [0.0, 4.0]; accepted: numbers > 0"),
    ({"field": "compute.spare_cores", "choices": [0, -1]},
     "search.space.params.0.choices: got [0.0, -1.0]; accepted: numbers >= 0"),
    ({"field": "compute.spare_cores", "low": 0, "high": 4, "type": "int"},
     "search.space.params.0.log: got log: true with low 0 for compute.spare_cores; accepted: log: false"),
    ({"field": "compute.clock_ghz", "low": 0, "high": 2}, "search.space.params.0.low: got 0 for compute.clock_ghz; "
     "accepted: a number > 0"),
])
def test_a_searched_range_beyond_a_fields_limit_is_one_line_before_any_trial(tmp_path: Path, capsys, param,
                                                                             expected) -> None:
    space = {**SMALL_STUDY["search"]["space"], "params": [param]}
    cfg = write_config(tmp_path, {**SMALL_STUDY, "search": {**SMALL_STUDY["search"], "space": space}})
    assert main(["run", str(cfg), "--quiet", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err, err
    assert not (tmp_path / "r" / "tiny" / "study.db").exists()  # nothing ran


@pytest.mark.parametrize(("field", "knob"), [("compute.cores", "peak_tflops"),
                                             ("memory.hbm.bandwidth_tbps", "dram_bandwidth_tbps"),
                                             ("memory.global.capacity_mib", "sram_mib")])
def test_a_searched_field_a_knob_also_sets_is_one_line(tmp_path, field: str, knob: str) -> None:
    # compute.cores beside peak_tflops: trials.csv recorded 8 cores for a design the knob built with 26
    from dse.errors import DseError
    from dse.study import load_context

    data = copy.deepcopy(SMALL_STUDY)
    data["search"]["space"]["params"] = [{"field": field, "choices": [8, 16]}]
    with pytest.raises(DseError) as err:
        load_context(write_config(tmp_path, data))
    assert err.value.field == "search.space.params.0.field" and f"beside the {knob} knob" in str(err.value)


def test_spare_cores_searched_on_a_die_that_fuses_groups_take_whole_groups(tmp_path: Path, capsys) -> None:
    """h100-sxm fuses off a TPC of 2 SMs (compute.spare_granule_cores 2): a choice of 1 spare SM is one line before any
    trial; whole TPCs run."""
    data = {**SMALL_STUDY, "base": "h100-sxm", "search": {**SMALL_STUDY["search"], "space": {
        "params": [{"field": "compute.spare_cores", "choices": [0, 1, 2]}]}}}
    cfg = write_config(tmp_path, data)
    assert main(["run", str(cfg), "--quiet", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("search.space.params.0.choices: got 1 for compute.spare_cores on a die that fuses "
                                     "off 2 cores together") in err, err
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").rglob("study.db"))


def test_spare_cores_searched_on_a_multi_die_package_take_a_whole_share_per_die(tmp_path: Path, capsys) -> None:
    """MI300X's 8 XCDs each hold their own spare CUs: 4 spares could not be spread, and the study ran its search to
    fail writing its best design; now one line before any trial."""
    data = {**SMALL_STUDY, "base": "mi300x", "search": {**SMALL_STUDY["search"], "space": {
        "params": [{"field": "compute.spare_cores", "choices": [0, 4, 8]}]}}}
    cfg = write_config(tmp_path, data)
    assert main(["run", str(cfg), "--quiet", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "got 4 for compute.spare_cores on 8 dies" in err and "multiples of 8" in err, err


def _part_study(tmp_path: Path, choices: list, base: str = "npu-7nm") -> Path:
    data = copy.deepcopy(SMALL_STUDY)
    data["base"] = base
    data["search"]["n_trials"] = 16
    hw = dse.hardware(base)
    level = hw.offchip_level.name
    if not any(m.off_chip for m in hw.memory):  # an all-SRAM chip: no bandwidth knob
        del data["search"]["space"]["dram_bandwidth_tbps"]
    data["search"]["space"]["params"] = [{"field": f"memory.{level}.generation", "choices": choices}]
    return write_config(tmp_path, data)


def test_a_study_searches_the_dram_part_and_its_best_design_names_it(tmp_path: Path) -> None:
    """``memory.hbm.generation`` as a categorical: trials.csv records each trial's part by name, the bandwidth knob
    buys whole stacks of that part, and the best design's template names its part with the part's stack figures."""
    r = run_study(_part_study(tmp_path, ["hbm2e", "hbm3", "hbm4"]), out=tmp_path / "r", progress=False)
    write_results(r, plots_on=False)
    trials = pd.read_csv(r.folder / "trials.csv")
    assert set(trials["memory.hbm.generation"]) <= {"hbm2e", "hbm3", "hbm4"}
    assert trials["memory.hbm.generation"].nunique() > 1
    per_stack = {"hbm2e": 409.6, "hbm3": 819.2, "hbm4": 2048.0}  # npu-7nm's own HBM2E stack, the parts' rated ones
    built = trials["dram_bandwidth_tbps_built"] * 1e3 / trials["memory.hbm.generation"].map(per_stack)
    assert np.allclose(built, built.round()) and (built.round() == trials["dram_stacks"]).all()
    best = trials.loc[trials["score"][trials["feasible"]].idxmax()]
    hw = dse.hardware(r.folder / "best_design.yaml")
    assert (hw.offchip_level.generation or "hbm2e") == best["memory.hbm.generation"]
    assert hw.offchip_level.bandwidth_bps / 1e12 == pytest.approx(best["dram_bandwidth_tbps_built"])


@pytest.mark.parametrize(("base", "choices", "says"), [
    ("npu-7nm", ["hbm3", "hbm9"], "search.space.params.0.choices: got ['hbm9']"),
    ("npu-7nm", [1.0, 2.0], "search.space.params.0.choices: got [1.0, 2.0] for memory.hbm.generation"),
    ("tt-n150", ["gddr7", "hbm3"], "search.space.params.0.choices: got 'hbm3'; accepted: gddr6, gddr6x, gddr7"),
    ("groq-tsp", ["hbm3"], "got 'memory.sram.generation' (level 'sram' is not bought in stacks of a part: a level of "
                           "kind sram has no parts); accepted: a hbm2/hbm2e/hbm3/hbm3e/hbm4/gddr6/gddr6x/gddr7"),
])
def test_a_bad_dram_part_search_is_one_line(tmp_path: Path, capsys, base: str, choices: list, says: str) -> None:
    rc = main(["run", str(_part_study(tmp_path, choices, base)), "--out", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and says in err, err


def test_the_dram_part_study_quoted_in_the_user_guide(tmp_path: Path) -> None:
    """experiments/npu_dram_parts.yaml as docs/user_guide.md quotes it: the best design's build line and score."""
    r = run_study(ROOT / "experiments" / "npu_dram_parts.yaml", out=tmp_path / "r", progress=False)
    guide = " ".join((ROOT / "docs" / "user_guide.md").read_text().split())
    line = r.best.build_text(0)
    assert f"is built as {line}, score {r.best_scored.score[0]:.4f}x" in guide, line
    assert r.best.part_name(0) == "hbm3" and r.best_scored.cost_usd[0] <= 900


def test_a_bandwidth_range_to_1e308_is_one_line_not_an_overflow(tmp_path: Path, capsys) -> None:
    """The whole-stack check divided 1e308 TB/s by a stack's bandwidth (inf stacks) and raised OverflowError (found by
    tests/test_fuzz.py): now the range holds stacks, the search builds what it can, and no design is one line."""
    data = copy.deepcopy(SMALL_STUDY)
    data["search"]["space"]["dram_bandwidth_tbps"]["high"] = 1e308
    rc = main(["run", str(write_config(tmp_path, data)), "--out", str(tmp_path / "r"), "--quiet", "--trials", "4"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and err.startswith("error: ")


def test_a_study_checks_its_written_best_design_predicts_what_it_timed(tmp_path: Path, monkeypatch, capsys) -> None:
    """best_design.yaml is the design the study chose: predicted again from the written template, the mix takes the
    best trial's times (no warning); a writer that loses a field (here the matrix efficiency) is caught, one warning
    line naming the workload and both times."""
    from dse.hardware import designs

    cfg = write_config(tmp_path, SMALL_STUDY)
    r = run_study(cfg, out=tmp_path / "r", progress=False, n_trials=8)
    assert r.written_check is None
    write_results(r, plots_on=False)
    assert "warning" not in capsys.readouterr().err
    real = designs.DesignBatch.to_hardware

    def lossy(self, i, name, note="", prefer=None):
        hw = real(self, i, name, note, prefer)
        data = hw.model_dump(mode="python", exclude_none=True)
        data["compute"]["matrix"]["efficiency"] = 0.5
        return dse.hardware(data)

    monkeypatch.setattr(designs.DesignBatch, "to_hardware", lossy)
    r = run_study(cfg, out=tmp_path / "r2", progress=False, n_trials=8)
    write_results(r, plots_on=False)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: best_design.yaml predicts ") and "please report it" in err[0]


def test_a_study_on_a_system_writes_the_system_its_best_design_ran_on(tmp_path: Path, monkeypatch) -> None:
    """A searched system field (links per chip of the board's Ethernet level) was in trials.csv alone: the best design
    is now written with its system (best_system.yaml beside best_design.yaml, its chip read from beside it), and
    predicting from that file anywhere gives the study's time."""
    data = {**SMALL_STUDY, "system": "npu-board",
            "workloads": [{"name": "llama2-7b", "phase": "decode", "batch": 8, "context": 512, "plan": {"tp": 8}},
                          {"name": "llama2-7b", "phase": "prefill", "batch": 1, "seq": 512, "plan": {"tp": 8}}],
            "search": {**SMALL_STUDY["search"], "space": {
                **SMALL_STUDY["search"].get("space", {}),
                "params": [{"field": "system.ethernet-400g.links_per_chip", "choices": [2, 4]}]}}}
    r = run_study(write_config(tmp_path, data), out=tmp_path / "r", progress=False, n_trials=8)
    write_results(r, plots_on=False)
    assert r.written_check is None
    sysm = yaml.safe_load((r.folder / "best_system.yaml").read_text())
    assert sysm["chip"] == "best_design.yaml"
    eth = next(lv for lv in sysm["network"] if lv["name"] == "ethernet-400g")
    assert eth["links_per_chip"] == r.best_params["system.ethernet-400g.links_per_chip"] in (2, 4)
    monkeypatch.chdir(tmp_path)  # the chip file is found beside the system file, not in the working folder
    p = dse.predict(r.ctx.mix.workloads[0], str(r.folder / "best_system.yaml"))
    assert p.time_s == pytest.approx(float(r.best_times[0]), rel=1e-9)
    assert "best_system.yaml" in (r.folder / "summary.md").read_text()


def test_an_edge_npu_written_from_scratch_runs_a_study_under_its_own_fixed_block(tmp_path: Path) -> None:
    """A 22 nm, 4-core, 32x32 int8 NPU on LPDDR (board DRAM: kind ddr, no part record) with its own fixed block and
    package: a 30 mm2 budget was refused below the node's 40 mm2 fixed block; now the study runs, its best design fits
    the budget and its written template keeps the package's own figures."""
    edge = {
        "name": "edge-22", "process_node": "22nm", "reference_dtype": "int8", "source": "test: an edge NPU",
        "compute": {"cores": 4, "clock_ghz": 0.8, "register_kib_per_core": 16, "source": "test",
                    "matrix": {"kind": "matrix", "peak_tflops": {"int8": 6.5536}, "array_rows": 32, "array_cols": 32,
                               "style": "systolic", "efficiency": 0.9, "source": "4 x 32 x 32 x 2 x 0.8 GHz"},
                    "vector": {"kind": "vector", "peak_tflops": {"fp32": 0.2048, "int8": 0.8192}, "efficiency": 0.9,
                               "source": "test"}},
        "memory": [{"name": "local", "kind": "sram", "capacity_mib": 1, "instances": 4, "organization": "scratchpad",
                    "bandwidth_tbps": 0.4, "source": "test"},
                   {"name": "dram", "kind": "ddr", "capacity_gb": 4, "bandwidth_gbps": 17, "stack_bandwidth_gbps": 17,
                    "source": "one LPDDR4X-4266 x32 channel"}],
        "package": {"fixed_mm2": 4.0, "package_usd": 3.0, "source": "test: a PCIe x4 port and a small BGA"},
    }
    (tmp_path / "edge.yaml").write_text(yaml.safe_dump(edge, sort_keys=False))
    data = {"name": "edge", "base": "edge.yaml",
            "workloads": [{"name": "mobilenet-v2", "batch": 1, "dtype": "int8", "fuse_elementwise": True},
                          {"name": "bert-base", "batch": 1, "seq": 128, "dtype": "int8"}],
            "search": {"n_trials": 8, "batch_size": 8, "seed": 0, "area_budget_mm2": 30,
                       "space": {"peak_tflops": {"low": 2, "high": 32}, "dram_bandwidth_tbps": {"low": 0.008,
                                                                                               "high": 0.1},
                                 "sram_mib": {"low": 1, "high": 16}}},
            "output": {"plots": False}}
    r = run_study(write_config(tmp_path, data), out=tmp_path / "r", progress=False)
    write_results(r, plots_on=False)
    assert r.written_check is None
    best = dse.hardware(r.folder / "best_design.yaml")
    assert best.package.fixed_mm2 == 4.0 and best.package.package_usd == 3.0
    trials = pd.read_csv(r.folder / "trials.csv")
    assert trials["feasible"].any() and (trials.loc[trials["feasible"], "area_mm2"] <= 30).all()
