"""dse sweep: the full grid, chunked, with numbers that equal the search's own scoring."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dse.cli import main
from dse.config import load_study
from dse.search.space import designs_from_params
from dse.study import prepare, score_designs
from dse.sweep import axes_for, run_sweep
from tests.conftest import SMALL_STUDY, write_config


def test_sweep_writes_grid_and_heatmaps(tmp_path: Path, capsys) -> None:
    cfg = write_config(tmp_path, SMALL_STUDY)
    assert main(["sweep", str(cfg), "--points", "6", "--sram-points", "2", "--chunk", "7", "--out", str(tmp_path)]) == 0
    folder = tmp_path / "tiny-sweep"
    grid = pd.read_csv(folder / "sweep.csv")
    assert len(grid) == 6 * 6 * 2
    assert (folder / "sweep_sram0.png").is_file() and (folder / "sweep_sram1.png").is_file()
    ok = grid[grid["feasible"]]
    assert (ok["area_mm2"] <= 750).all() and (grid.loc[~grid["feasible"], "area_mm2"] > 750).all()
    assert "best feasible" in capsys.readouterr().out
    # a grid row's score equals scoring that design directly
    c, d = load_study(cfg)
    ctx = prepare(c, d)
    row = grid.iloc[17]
    one = designs_from_params(ctx.base, [{k: row[k] for k in ("peak_tflops", "dram_bandwidth_tbps", "sram_mib")}])
    sc, _ = score_designs(ctx, one)
    assert sc.score[0] == pytest.approx(row["score"], rel=1e-9)
    assert sc.area_mm2[0] == pytest.approx(row["area_mm2"], rel=1e-9)


def test_chunking_does_not_change_results(tmp_path: Path) -> None:
    c, d = load_study(write_config(tmp_path, SMALL_STUDY))
    ctx = prepare(c, d)
    axes = axes_for(c, ctx, 5, 2)
    a = run_sweep(ctx, axes, chunk=3).grid
    b = run_sweep(ctx, axes, chunk=4096).grid
    np.testing.assert_allclose(a["score"], b["score"], rtol=1e-12)


def test_too_large_a_grid_is_refused(tmp_path: Path, capsys) -> None:
    cfg = write_config(tmp_path, SMALL_STUDY)
    assert main(["sweep", str(cfg), "--points", "2000", "--sram-points", "2", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "8,000,000 designs" in err and "--points" in err
