"""A candidate is a chip one could build (issue 28): the study's best design, its written template and every compare
candidate are whole cores x MAC arrays x clock and whole DRAM stacks, and every command sees the same built design."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import dse
from dse.cli import main
from dse.score import mix_score
from tests.conftest import SMALL_STUDY, write_config


def _hbm3_copy(folder: Path) -> Path:
    """A user's copy of npu-7nm whose 1.6 TB/s is 2 HBM3 stacks of 819.2 GB/s and 16 GB each."""
    data = dse.hardware("npu-7nm").model_dump(mode="json", exclude_none=True)
    data["name"] = "my-npu"
    hbm = data["memory"][2]
    hbm.update({"stack_bandwidth_gbps": 819.2, "capacity_gb": 32, "source": "2 HBM3 stacks x 819.2 GB/s x 16 GB"})
    path = folder / "my-npu.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("buildable")
    data = copy.deepcopy(SMALL_STUDY)
    data["base"] = str(_hbm3_copy(tmp))
    data["search"]["n_trials"] = 32
    cfg = write_config(tmp, data)
    assert main(["run", str(cfg), "--out", str(tmp / "res"), "--quiet"]) == 0
    return tmp, cfg, tmp / "res" / "tiny"


def test_the_best_design_is_whole_cores_and_whole_stacks(study) -> None:
    _, _, folder = study
    hw = dse.hardware(str(folder / "best_design.yaml"))
    c, m = hw.compute, hw.compute.matrix
    assert hw.peak_flops == pytest.approx(c.cores * m.array_rows * m.array_cols * 2 * c.clock_ghz * 1e9, rel=0.01)
    stacks = hw.offchip_level.bandwidth_bps / 819.2e9
    assert stacks == pytest.approx(round(stacks), abs=1e-9) and stacks >= 1
    assert hw.offchip_level.capacity_bytes == pytest.approx(round(stacks) * 16e9, rel=1e-9)  # capacity follows
    assert hw.memory[0].instances == c.cores  # one scratchpad per core
    assert "built by dse (best design of study tiny)" in m.source


def test_the_written_best_design_reproduces_the_study_score_and_area(study) -> None:
    _, cfg, folder = study
    best = dse.hardware(str(folder / "best_design.yaml"))
    base = dse.hardware(str(Path(cfg).parent / "my-npu.yaml"))
    wls = [dse.workload(w["name"], **{k: v for k, v in w.items() if k not in ("name", "weight")})
           for w in SMALL_STUDY["workloads"]]
    weights = np.array([w.get("weight", 1.0) for w in SMALL_STUDY["workloads"]])
    t_best = np.array([[dse.predict(w, best).time_s for w in wls]])
    t_base = np.array([dse.predict(w, base).time_s for w in wls])
    score = float(mix_score(t_best, t_base, weights / weights.sum())[0])
    trials = pd.read_csv(folder / "trials.csv")
    ok = trials[trials["feasible"]]
    top = ok.loc[ok["score"].idxmax()]
    assert score == pytest.approx(top["score"], rel=0.005)
    assert dse.area(best).total_mm2 == pytest.approx(top["area_mm2"], rel=0.005)


def test_compare_hold_area_buys_whole_stacks_and_holds_the_area_or_says_why(study, capsys) -> None:
    tmp, cfg, _ = study
    assert main(["compare", str(cfg), "--ratios", "1:2,1:1", "--hold", "area", "--out", str(tmp / "cmp")]) == 0
    cands = pd.read_csv(tmp / "cmp" / "tiny-compare" / "candidates.csv", keep_default_na=False)
    stacks = cands["dram_bandwidth_tbps"] / 0.8192
    assert np.allclose(stacks, stacks.round()) and (cands["dram_stacks"] == stacks.round()).all()
    base_area = dse.area(dse.hardware(str(Path(cfg).parent / "my-npu.yaml"))).total_mm2
    for _, r in cands.iterrows():
        held = base_area * (1 - 0.005) <= r["area_mm2"] <= base_area * 1.005
        assert held or r["hold_note"], r.to_dict()  # held within 0.5 %, or the note names the discrete step
        assert r["area_mm2"] <= base_area * 1.005


def test_a_study_never_picks_the_larger_of_two_equal_designs() -> None:
    from dse.search.optimize import tie_key

    assert max([(1.5, {"area_mm2": 400, "cost_usd": 900}), (1.5, {"area_mm2": 380, "cost_usd": 990})],
               key=lambda t: tie_key(*t))[1]["area_mm2"] == 380
    assert max([(1.5, {"area_mm2": 380, "cost_usd": 990}), (1.5, {"area_mm2": 380, "cost_usd": 900})],
               key=lambda t: tie_key(*t))[1]["cost_usd"] == 900
    assert max([(1.6, {"area_mm2": 500, "cost_usd": 990}), (1.5, {"area_mm2": 380, "cost_usd": 900})],
               key=lambda t: tie_key(*t))[0] == 1.6
