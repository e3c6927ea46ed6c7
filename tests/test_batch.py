"""The Study API and dse batch: overrides, DataFrames back, a broken config does not stop the rest."""

from pathlib import Path

import pandas as pd
import pytest

import dse
from dse.cli import main
from dse.errors import DseError
from tests.conftest import SMALL_STUDY, write_config


def test_study_api_overrides_and_returns_tables(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, SMALL_STUDY)
    s = dse.Study.from_yaml(cfg).with_overrides({"search.n_trials": 12, "search.area_budget_mm2": 700})
    assert s.config.search.n_trials == 12 and s.config.search.area_budget_mm2 == 700
    res = s.run(out=tmp_path / "r")
    assert len(res.trials) == 12 and res.best["area_mm2"] <= 700 and res.pareto.empty
    assert res.out_dir.is_dir() and (res.out_dir / "trials.csv").is_file()
    with pytest.raises(DseError, match="search.n_trials"):
        s.with_overrides({"search.n_trials": -1})
    two = s.with_overrides({"search.objectives": ["score", "area_mm2"], "search.n_trials": 16})
    assert not two.run(out=tmp_path / "r2").pareto.empty


def test_batch_continues_past_a_broken_config(tmp_path: Path, capsys) -> None:
    good = write_config(tmp_path, {**SMALL_STUDY, "search": {**SMALL_STUDY["search"], "n_trials": 8}}, "good.yaml")
    bad = write_config(tmp_path, {**SMALL_STUDY, "name": "bad", "base": "npu-1nm"}, "bad.yaml")
    assert main(["batch", str(bad), str(good), "--out", str(tmp_path / "r"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "npu-1nm" in err
    assert err.count("error:") == 1 and err.startswith("error: ")  # once, before the runs (it was said twice)
    table = pd.read_csv(next((tmp_path / "r").glob("batch-*/batch.csv")))
    assert list(table["status"]) == ["error", "ok"]
    assert (tmp_path / "r" / "tiny" / "trials.csv").is_file()  # the good study completed and was saved
    # each searched knob as sampled and as built; the ridge is the built design's (it mixed the two before)
    ok = table.iloc[1]
    assert {"peak_tflops_built", "dram_bandwidth_tbps_built"} <= set(table.columns)
    assert ok["ridge_flop_per_byte"] == pytest.approx(
        ok["peak_tflops_built"] * 1e12 / (ok["dram_bandwidth_tbps_built"] * 1e12), rel=1e-6)


ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(str(p.relative_to(ROOT)) for folder in ("experiments", "configs") for p in (ROOT / folder).glob("*.yaml"))


def test_experiments_and_configs_hold_study_configs_only() -> None:
    assert "experiments/best_ratio_three_mixes.yaml" in SHIPPED and "configs/npu.yaml" in SHIPPED
    assert not (ROOT / "experiments" / "npu_story_base.yaml").exists()  # a template: hw_templates/npu-decode-7nm.yaml
    assert {p.suffix for p in (ROOT / "experiments").iterdir() if p.is_file()} <= {".yaml", ".py"}


@pytest.mark.parametrize("path", SHIPPED)
def test_every_shipped_example_passes_the_batch_dry_check(path: str, monkeypatch) -> None:
    """Schema, base, system, every workload of every mix, searched fields and each workload's fit in the most memory
    the search space can build: what `dse batch` checks before it runs anything (no search here)."""
    from dse.batch import check_config

    monkeypatch.chdir(ROOT)
    assert check_config(path) == {}  # and no mix set aside for a workload that fits no design


def test_batch_runs_a_mixes_study_with_an_infeasible_mix_and_names_it(tmp_path: Path, capsys) -> None:
    huge = {"name": "llama2-70b", "phase": "decode", "batch": 1, "context": 512}  # 138 GB > 128 GB of 8 stacks
    data = {k: v for k, v in SMALL_STUDY.items() if k != "workloads"}
    data["search"] = {**data["search"], "n_trials": 8}
    cfg = write_config(tmp_path, {**data, "mixes": {"decode": [SMALL_STUDY["workloads"][1]], "huge": [huge]}})
    assert main(["batch", str(cfg), "--out", str(tmp_path / "r")]) == 0
    out, err = capsys.readouterr()
    assert "batch: 1 of 1 configs ran" in out
    assert f"warning: mix huge has no feasible design: {cfg}: mixes.huge: got llama2-70b[decode b1 ctx512 bf16] " \
           "needing" in err and "error:" not in err
    table = pd.read_csv(next((tmp_path / "r").glob("batch-*/batch.csv")))
    assert list(table["status"]) == ["ok"] and table.loc[0, "folder"].endswith("decode")
    assert table.loc[0, "mix"] == "decode"
    assert table.loc[0, "infeasible_mixes"].startswith(f"huge: {cfg}: mixes.huge: got llama2-70b")
    assert "GB per chip" in table.loc[0, "infeasible_mixes"]
    res = dse.Study.from_yaml(cfg).run(out=tmp_path / "api")
    assert set(res.trials["mix"]) == {"decode"} and list(res.infeasible) == ["huge"]
    assert res.infeasible["huge"].startswith(f"{cfg}: mixes.huge: got llama2-70b")  # the config, not a temporary copy
    assert "mix huge: no feasible design: got llama2-70b" in res.summary


def test_batch_and_the_study_api_resolve_relative_paths_as_dse_run_does(tmp_path: Path, capsys) -> None:
    # they ran a copy of the config in a temporary folder: a path: workload was not found there, and with
    # output.relative_to: config the results went into that folder and were deleted with it
    import copy

    import yaml

    folder = tmp_path / "cfg"
    folder.mkdir()
    desc = yaml.safe_load((Path(__file__).parents[1] / "workloads" / "gpt2.yaml").read_text())
    desc["name"] = "mygpt"
    (folder / "mygpt.yaml").write_text(yaml.safe_dump(desc))
    data = copy.deepcopy(SMALL_STUDY)
    data.update(name="rel", workloads=[{"path": "mygpt.yaml", "phase": "decode", "context": 256}],
                output={"dir": "out", "relative_to": "config", "plots": False, "heatmap_points": 6})
    data["search"]["n_trials"] = 4
    cfg = write_config(folder, data, "rel.yaml")
    assert main(["batch", str(cfg), "--out", str(tmp_path / "b")]) == 0
    res = dse.Study.from_yaml(cfg).with_overrides({"search.n_trials": 3}).run()
    assert res.out_dir.exists() and res.out_dir.parent == folder / "out" and len(res.trials) == 3
    assert sorted(p.name for p in folder.iterdir()) == ["mygpt.yaml", "out", "rel.yaml"]  # no copy left behind


def test_batch_keeps_a_row_per_mix(tmp_path: Path, capsys) -> None:
    """A config with two feasible mixes wrote one batch.csv row, the first mix's; the others' best designs were lost."""
    data = {k: v for k, v in SMALL_STUDY.items() if k != "workloads"}
    data["search"] = {**data["search"], "n_trials": 8}
    cfg = write_config(tmp_path, {**data, "mixes": {"decode": [SMALL_STUDY["workloads"][1]],
                                                     "vision": [SMALL_STUDY["workloads"][0]]}})
    assert main(["batch", str(cfg), "--out", str(tmp_path / "r"), "--quiet"]) == 0
    table = pd.read_csv(next((tmp_path / "r").glob("batch-*/batch.csv")))
    assert list(table["mix"]) == ["decode", "vision"] and (table["status"] == "ok").all()
    assert table.loc[0, "folder"].endswith("decode") and table.loc[1, "folder"].endswith("vision")


def test_batch_takes_the_trials_and_plots_of_dse_run(tmp_path: Path, capsys) -> None:
    """``--trials N`` and ``--no-plots`` as ``dse run`` takes them (the batch had neither: a quick pass over many
    configs meant editing each); a bad count is one line before anything runs."""
    cfg = write_config(tmp_path, {**SMALL_STUDY, "output": {"plots": True}})
    assert main(["batch", str(cfg), "--out", str(tmp_path / "r"), "--trials", "3", "--no-plots", "--quiet"]) == 0
    folder = tmp_path / "r" / "tiny"
    assert len(pd.read_csv(folder / "trials.csv")) == 3 and not list(folder.glob("*.png"))
    capsys.readouterr()
    assert main(["batch", str(cfg), "--out", str(tmp_path / "r2"), "--trials", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --trials: got 0; accepted: input should be greater than 0"] and not (tmp_path / "r2").exists()
