"""The Python twins of compare, sweep and whatif: the same numbers as the commands, nothing written."""

import copy
from pathlib import Path

import pandas as pd
import pytest

from dse.cli import main
from tests.conftest import SMALL_STUDY, write_config


def test_compare_sweep_and_whatif_return_the_commands_tables_and_write_nothing(tmp_path: Path, monkeypatch) -> None:
    data = copy.deepcopy(SMALL_STUDY)
    data["whatif"] = {"workload": {"name": "resnet50", "batch": 8}, "stages": ["fuse_elementwise"]}
    cfg = write_config(tmp_path, data)
    monkeypatch.chdir(tmp_path)
    import dse.comparison  # importing the modules must not replace the functions  # noqa: F401
    import dse.grid  # noqa: F401
    import dse.whatif_stages  # noqa: F401

    cmp = dse.compare(cfg, ratios=["1:2", "1:1"])
    grid = dse.sweep(cfg, points=3)
    stages = dse.whatif(cfg)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["study.yaml"]  # nothing written
    assert list(cmp.designs_table["candidate"]) == ["1:2", "1:1"] and len(grid) == 9 and len(stages) == 2
    assert main(["compare", str(cfg), "--ratios", "1:2,1:1", "--out", str(tmp_path / "o")]) == 0
    cands = pd.read_csv(next((tmp_path / "o").glob("*-compare")) / "candidates.csv")
    assert cands["score_vs_base"].to_numpy() == pytest.approx(cmp.designs_table["score_vs_base"].to_numpy(), rel=1e-12)
    assert main(["sweep", str(cfg), "--points", "3", "--out", str(tmp_path / "o")]) == 0
    written = pd.read_csv(next((tmp_path / "o").glob("*-sweep")) / "sweep.csv")
    assert written["score"].to_numpy() == pytest.approx(grid["score"].to_numpy(), rel=1e-12)


def test_import_dse_loads_no_heavy_library_until_used() -> None:
    import subprocess
    import sys

    code = ("import sys, dse; heavy = {'numpy', 'pandas', 'optuna', 'matplotlib', 'seaborn', 'scipy', 'pydantic'}; "
            "print(sorted(heavy & set(sys.modules)));"
            "from dse.hardware.designs import DesignBatch; import dse.predict.roofline;"
            "print(callable(dse.hardware), callable(dse.predict), 'optuna' in sys.modules, 'matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == "True True False False"  # the API names win over same-named subpackages


def test_public_names_resolve() -> None:
    import dse

    assert set(dse.__all__) <= set(dir(dse))
    for name in dse.__all__:
        assert getattr(dse, name) is not None
