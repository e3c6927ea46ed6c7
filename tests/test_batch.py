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
    assert main(["batch", str(bad), str(good), "--out", str(tmp_path / "r"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "npu-1nm" in err
    table = pd.read_csv(next((tmp_path / "r").glob("batch-*/batch.csv")))
    assert list(table["status"]) == ["error", "ok"]
    assert (tmp_path / "r" / "tiny" / "trials.csv").is_file()  # the good study completed and was saved
