"""All-SRAM chips (issue 30 item 5): a template with no DRAM level, its main memory its outermost SRAM, works in every
command: study, sweep, compare, whatif, area, predict."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from dse.cli import main
from dse.hardware.templates import templates_dir
from dse.run import main as run_main
from tests.conftest import write_config

GPT2 = {"name": "gpt2", "phase": "decode", "batch": 1, "context": 1024}
#: 1.7 GB per chip: more than the 1 GiB SRAM
TOO_BIG = {"name": "gpt2-large", "phase": "decode", "batch": 1, "context": 1024}


def sram_template(folder: Path) -> Path:
    """npu-7nm without its HBM, its global SRAM 1 GiB (the 247 MB of GPT-2 weights and its KV cache fit)."""
    hw = yaml.safe_load((templates_dir() / "npu-7nm.yaml").read_text())
    hw["name"] = "npu-sram"
    hw["memory"] = [m for m in hw["memory"] if m["kind"] != "dram"]
    for m in hw["memory"]:
        if m["name"] == "global":
            m["capacity_mib"] = 1024
    path = folder / "npu-sram.yaml"
    path.write_text(yaml.safe_dump(hw, sort_keys=False))
    return path


def study(folder: Path, workload: dict = GPT2, name: str = "sram", **space: dict) -> Path:
    """A tiny study config on the all-SRAM template (8 trials, one workload)."""
    sram_template(folder)
    data = {"name": name, "base": "npu-sram.yaml", "workloads": [workload],
            "search": {"n_trials": 8, "batch_size": 4, "seed": 0,
                       "space": space or {"peak_tflops": {"low": 64, "high": 512},
                                          "sram_mib": {"low": 256, "high": 2048}}},
            "output": {"plots": False, "heatmap_points": 4}}
    return write_config(folder, data, f"{name}.yaml")


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def test_study_runs_and_its_summary_names_the_sram_main_memory(tmp_path: Path, capsys) -> None:
    cfg = study(tmp_path)
    assert run_main([str(cfg), "--out", str(tmp_path / "out"), "--quiet", "--no-plots"]) == 0
    folder = tmp_path / "out" / "sram"
    wl = pd.read_csv(folder / "workloads.csv")
    assert wl["best_ms"].map(math.isfinite).all() and (wl["best_ms"] > 0).all()
    md = (folder / "summary.md").read_text()
    assert "main memory 'global' (sram) bandwidth (TB/s)" in md
    assert "no DRAM level (main memory: SRAM `global`)" in md
    assert "Resident on chip on the best design: every tensor (no DRAM level" in md
    trials = pd.read_csv(folder / "trials.csv")
    assert trials["feasible"].any()
    # the footprint check uses the SRAM: a design with less than GPT-2's 0.29 GB is infeasible for capacity
    small = trials[trials["sram_mib_built"] * 2**20 < 0.285e9]
    assert small["infeasible_reason"].fillna("").str.contains("capacity: .* GB global", regex=True).all()
    assert "best score" in capsys.readouterr().out


def test_searching_dram_bandwidth_on_a_chip_without_dram_is_one_line(tmp_path: Path, capsys) -> None:
    cfg = study(tmp_path, peak_tflops={"low": 64, "high": 512}, dram_bandwidth_tbps={"low": 0.4, "high": 4.0})
    assert run_main([str(cfg), "--out", str(tmp_path), "--quiet"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"error: {cfg}: search.space.dram_bandwidth_tbps: got 0.4..4 TB/s; accepted: ")
    assert "memory.global.bandwidth_tbps" in line
    assert main(["sweep", str(cfg), "--points", "2", "--out", str(tmp_path)]) == 2  # every command loads it so
    assert "search.space.dram_bandwidth_tbps" in one_error_line(capsys.readouterr().err)
    split = study(tmp_path, name="split", split={"total_area_mm2": 600})
    assert run_main([str(split), "--out", str(tmp_path), "--quiet"]) == 2
    assert f"{split}: search.space.split: got" in one_error_line(capsys.readouterr().err)


def test_a_workload_larger_than_any_sram_the_space_builds_is_one_line(tmp_path: Path, capsys) -> None:
    cfg = study(tmp_path, TOO_BIG, sram_mib={"low": 256, "high": 1024})
    assert run_main([str(cfg), "--out", str(tmp_path), "--quiet"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"{cfg}: workloads: got gpt2-large" in line and "the upper bound of sram_mib" in line


def test_the_capacity_bound_of_a_search_is_its_largest_sram(tmp_path: Path) -> None:
    from dse.config import load_study
    from dse.search.space import max_offchip_capacity
    from dse.study import prepare

    c, d = load_study(study(tmp_path, sram_mib={"low": 256, "high": 4096}))
    ctx = prepare(c, d)
    cap, how = max_offchip_capacity(c.search.space, ctx.base, 4)
    assert cap == 4096 * 2**20 and "sram_mib" in how


def test_sweep_runs_and_charges_the_footprint_to_the_sram(tmp_path: Path, capsys) -> None:
    cfg = study(tmp_path)
    assert main(["sweep", str(cfg), "--points", "2", "--sram-points", "3", "--no-plots", "--out", str(tmp_path)]) == 0
    grid = pd.read_csv(tmp_path / "sram-sweep" / "sweep.csv")
    assert len(grid) == 2 * 1 * 3  # dram_bandwidth_tbps is not searched: one column
    small = grid["sram_mib"] == 256  # 268 MB < the 285 MB GPT-2 needs
    assert not grid.loc[small, "feasible"].any()
    assert grid.loc[small, "infeasible_reason"].str.contains(r"> 0\.\d+ GB global").all()
    ok = grid[grid["feasible"]]
    assert len(ok) and (ok["score"] > 0).all() and ok["score"].map(math.isfinite).all()
    assert "best feasible" in capsys.readouterr().out
    big = study(tmp_path, TOO_BIG, name="big", peak_tflops={"low": 32, "high": 64})  # within the reticle
    assert main(["sweep", str(big), "--points", "2", "--no-plots", "--out", str(tmp_path)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "no feasible design in the grid of mix 'workloads' (" in line and "capacity 2" in line
    assert re.search(r"> 1\.\d+ GB global", line)


def test_compare_runs_and_refuses_a_dram_bandwidth_candidate(tmp_path: Path, capsys) -> None:
    cfg = study(tmp_path)
    assert main(["compare", str(cfg), "--samples", "0", "--out", str(tmp_path)]) == 0
    cands = pd.read_csv(tmp_path / "sram-compare" / "candidates.csv")
    assert len(cands) == 2 and (cands["score_vs_base"] > 0).all()
    capsys.readouterr()
    data = yaml.safe_load(cfg.read_text())
    data["compare"] = {"candidates": [{"name": "a", "ratio": "1:1"}, {"name": "b", "dram_bandwidth_tbps": 2.0}]}
    bad = write_config(tmp_path, data, "bad.yaml")
    assert main(["compare", str(bad), "--samples", "0", "--out", str(tmp_path)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"error: {bad}: compare.candidates.1.dram_bandwidth_tbps: got 2 TB/s; accepted: ")
    big = study(tmp_path, TOO_BIG, name="big")
    assert main(["compare", str(big), "--samples", "0", "--out", str(tmp_path)]) == 0
    assert re.search(r"> 1\.\d+ GB global", capsys.readouterr().err)  # the warning lines name the SRAM it does not fit


def test_whatif_runs_and_notes_a_workload_that_does_not_fit(tmp_path: Path, capsys) -> None:
    hw = str(sram_template(tmp_path))
    assert main(["whatif", "--workload", "gpt2", "--phase", "decode", "--batch", "1", "--hardware", hw,
                 "--stages", "fuse_elementwise,sram_mib=512", "--out", str(tmp_path)]) == 0
    t = pd.read_csv(tmp_path / "gpt2-whatif" / "whatif.csv", keep_default_na=False)
    assert (t["time_ms"] > 0).all() and t["time_ms"].map(math.isfinite).all()
    assert list(t["sram_mib"]) == [1024, 1024, 512]
    assert "main memory `global` (SRAM, no DRAM level)" in (tmp_path / "gpt2-whatif" / "summary.md").read_text()
    capsys.readouterr()
    assert main(["whatif", "--workload", "gpt2-large", "--phase", "decode", "--hardware", hw,
                 "--stages", "fuse_elementwise", "--out", str(tmp_path)]) == 0
    t = pd.read_csv(tmp_path / "gpt2-large-whatif" / "whatif.csv", keep_default_na=False)
    assert t["note"].str.contains("does not fit: .* > 1.1 GB of global", regex=True).all()


def test_area_prices_no_dram(tmp_path: Path, capsys) -> None:
    assert main(["area", str(sram_template(tmp_path)), "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["templates"][0]
    assert row["dram_phy_mm2"] == 0 and row["dram_controller_mm2"] == 0
    assert row["sram_mm2"] > 500 and math.isfinite(row["total_mm2"])  # 1 GiB of scratchpad dominates


@pytest.mark.parametrize(("wl", "fits"), [(GPT2, True), (TOO_BIG, False)])
def test_predict_times_and_the_footprint_against_the_sram(tmp_path: Path, capsys, wl: dict, fits: bool) -> None:
    flags = [f"--{k}={v}" for k, v in wl.items() if k != "name"]
    assert main(["predict", wl["name"], str(sram_template(tmp_path)), *flags, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert 0 < out["time_s"] < 1e-2 and out["fits"] is fits
    assert main(["predict", wl["name"], str(tmp_path / "npu-sram.yaml"), *flags]) == 0
    text = capsys.readouterr().out
    assert ("fits" in text) if fits else ("DOES NOT FIT" in text and "GB of global on npu-sram" in text)
