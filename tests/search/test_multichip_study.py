"""Studies on multi-chip systems: plans in the config, link knobs, the capacity constraint."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest

from dse.cli import main
from dse.errors import DseError
from dse.report.write import write_results
from dse.study import run_study
from tests.conftest import SMALL_STUDY, write_config


def _system_study(**extra) -> dict:
    data = copy.deepcopy(SMALL_STUDY)
    data.pop("base")
    data.update(name="board", system="npu-board",
                workloads=[{"name": "llama2-7b", "phase": "decode", "batch": 8, "context": 512, "plan": {"tp": 8}},
                           {"name": "llama2-7b", "phase": "prefill", "batch": 1, "seq": 512, "plan": {"tp": 8}}])
    data["search"]["space"]["params"] = [{"field": "network.links", "low": 2, "high": 32, "type": "int"}]
    data.update(extra)
    return data


def test_links_are_searched_and_the_network_binds(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, _system_study())
    result = run_study(cfg, out=tmp_path / "res", progress=False)
    write_results(result, plots_on=False)
    trials = pd.read_csv(result.folder / "trials.csv")
    assert trials["network.links"].between(2, 32).all() and trials["network.links"].nunique() > 3
    md = (result.folder / "summary.md").read_text()
    assert "System: `npu-board`" in md and "network 'board-ring': links per chip" in md and "tp8" in md
    assert "network" in md.split("## Per-workload results")[1]  # a binding ceiling of the TP workloads
    # more links never make the best design's decode slower: evaluate it on fewer links
    d = result.best
    fewer = d.with_field("network.links", d.links * 0 + 2)
    from dse.predict import mix_times
    assert (mix_times(fewer, result.ctx.mix) >= mix_times(d, result.ctx.mix) * (1 - 1e-12)).all()


def test_a_workload_that_does_not_fit_makes_every_design_infeasible_with_the_reason(tmp_path: Path) -> None:
    data = copy.deepcopy(SMALL_STUDY)
    data["workloads"] = [{"name": "llama2-70b", "phase": "decode", "batch": 1, "context": 512}]
    data["search"]["n_trials"] = 8
    data["search"]["space"]["params"] = [{"field": "memory.hbm.capacity_mib", "low": 16384, "high": 65536}]
    cfg = write_config(tmp_path, data)
    # before any trial: the most HBM the space can build (its capacity field's bound, 64 GiB) cannot hold it
    with pytest.raises(DseError, match=r"got llama2-70b\[decode b1 ctx512 bf16\] needing 13\d\.\d GB per chip; "
                                       r"accepted: a workload within 68\.7 GB, the most hbm the search space can build "
                                       r"\(the upper bound of memory.hbm.capacity_mib\)"):
        run_study(cfg, out=tmp_path / "res", progress=False)
    assert not (tmp_path / "res" / "tiny" / "study.db").exists()  # no trial ran
    # a space whose stacks could hold it runs, and the designs too small for it are infeasible with the reason
    # (224 GiB: 60 GB on each of its 4 stacks, within an HBM stack's 64 GB)
    data["search"]["space"]["params"] = [{"field": "memory.hbm.capacity_mib", "low": 16384, "high": 229376}]
    data["search"]["n_trials"] = 16
    res = run_study(write_config(tmp_path, data), out=tmp_path / "res2", progress=False)
    write_results(res, plots_on=False)
    t = pd.read_csv(res.folder / "trials.csv")
    small = t["memory.hbm.capacity_mib"] * 2**20 < 138e9
    assert small.any() and t.loc[small, "infeasible_reason"].str.contains("capacity: llama2-70b").all()
    data["search"]["space"]["params"] = [{"field": "memory.hbm.capacity_mib", "low": 16384, "high": 65536}]
    # with a plan over 4 chips of a system it fits: every trial feasible on capacity
    data["workloads"][0]["plan"] = {"tp": 4}
    data["system"] = "npu-board"
    result = run_study(write_config(tmp_path, data), out=tmp_path / "res", progress=False)
    write_results(result, plots_on=False)
    trials = pd.read_csv(result.folder / "trials.csv")
    fits = trials["memory.hbm.capacity_mib"] * 2**20 >= 140e9 / 4 + 2e9
    assert not trials.loc[fits, "infeasible_reason"].fillna("").str.contains("capacity").any()


@pytest.mark.parametrize(("patch", "expect"), [
    ({"plan": {"tp": 8, "chips": 4}}, ["workloads.0.plan", "tp x pp x dp = 8 x 1 x 1 = 8, but chips = 4"]),
    ({"plan": {"tp": 3}}, ["workloads.0", "got tp = 3 (32 attention heads are not divisible by it"]),
    ({"plan": {"tp": 4, "dp": 3}}, ["system", "12 chips do not match the topology of npu-board"]),
    ({"plan": {"tpp": 2}}, ["workloads.0.plan.tpp", "unknown key"]),
])
def test_bad_plans_in_a_config_are_one_line(tmp_path: Path, capsys, patch: dict, expect: list[str]) -> None:
    data = _system_study()
    data["workloads"][0].update(patch)
    data["workloads"][0]["batch"] = 24
    cfg = write_config(tmp_path, data)
    assert main(["run", str(cfg), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    for e in expect:
        assert e in err, err
