"""dse compare: ratio candidates, and speedups that equal the ratio of predicted times."""

from pathlib import Path

import pandas as pd
import pytest

import dse
from dse.cli import main
from dse.compare import compare, parse_ratio
from dse.config import load_study
from dse.errors import DseError
from dse.study import prepare
from tests.conftest import SMALL_STUDY, write_config


def test_ratio_parsing() -> None:
    assert parse_ratio("1:2") == 2.0 and parse_ratio("2:1") == 0.5
    with pytest.raises(DseError, match="accepted: a ratio like 1:1"):
        parse_ratio("fast")


def test_candidates_at_fixed_compute_and_at_fixed_area(tmp_path: Path) -> None:
    c, d = load_study(write_config(tmp_path, SMALL_STUDY))
    ctx = prepare(c, d)
    cmp = compare(ctx, ["1:2", "1:1"], "compute")
    base = ctx.base
    assert cmp.designs[1].peak_flops[0] == pytest.approx(base.peak_flops[0])
    assert cmp.designs[0].dram_bandwidth[0] == pytest.approx(2 * base.dram_bandwidth[0])
    assert cmp.designs[0].ridge[0] == pytest.approx(base.ridge[0] / 2)
    same_area = compare(ctx, ["1:2", "1:1"], "area")
    assert (same_area.designs_table["area_mm2"] <= ctx.base_area_mm2 + 1e-6).all()
    for w, (t0, t1) in enumerate(zip(cmp.times[0], cmp.times[1], strict=True)):
        p0 = dse.predict(ctx.mix.workloads[w], cmp.designs[0]).time_s
        assert t0 == pytest.approx(p0, rel=1e-9)
        assert cmp.table.iloc[w]["speedup_1:1_vs_1:2"] == pytest.approx(t0 / t1, rel=1e-12)


def test_compare_command_writes_tables_and_figures(tmp_path: Path, capsys) -> None:
    cfg = write_config(tmp_path, SMALL_STUDY)
    assert main(["compare", str(cfg), "--ratios", "1:2,1:1", "--out", str(tmp_path)]) == 0
    folder = tmp_path / "tiny-compare"
    for f in ("compare.csv", "candidates.csv", "summary.md", "speedup.png", "ai_histogram.png", "rooflines.png"):
        assert (folder / f).is_file(), f
    t = pd.read_csv(folder / "compare.csv")
    assert (t["speedup_1:1_vs_1:2"] == t["1:2_ms"] / t["1:1_ms"]).all() or \
        ((t["speedup_1:1_vs_1:2"] - t["1:2_ms"] / t["1:1_ms"]).abs() < 1e-9).all()
    assert main(["compare", str(cfg), "--ratios", "1:2", "--out", str(tmp_path)]) == 2
    assert "two or more ratios" in capsys.readouterr().err
