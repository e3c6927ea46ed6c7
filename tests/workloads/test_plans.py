"""dse.workloads.plans and ``plan: auto``: a workload scored at each design's own fastest plan that fits."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import dse
from dse.errors import DseError
from dse.predict import auto_pick, mix_times
from dse.search.space import designs_from_params
from dse.study import load_context, score_designs
from tests.conftest import SMALL_STUDY, write_config

AUTO = {"name": "llama2-7b", "phase": "training", "batch": 8, "seq": 1024, "dtype": "bf16", "plan": "auto", "chips": 4}


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    data = copy.deepcopy(SMALL_STUDY)
    data["workloads"] = [{"name": "resnet50", "batch": 8}, AUTO]
    return load_context(write_config(tmp_path_factory.mktemp("auto"), data))[1]


def test_an_auto_entry_is_its_candidates(ctx):
    (ap,) = ctx.mix.auto
    assert ap.index == 1 and len(ap.candidates.workloads) == len(ap.labels) > 10
    assert all(w.chips == 4 for w in ap.candidates.workloads)
    assert ctx.mix.memory_bytes[1] == pytest.approx(ap.memory.min())  # a design fits it when some plan fits


def test_each_design_takes_its_fastest_plan_that_fits(ctx):
    """mix_times of the auto entry equals, design by design, the fastest candidate whose footprint fits that
    design's main memory, with capacities that differ (whole HBM stacks follow the bandwidth knob)."""
    d = designs_from_params(ctx.base, {"peak_tflops": np.full(5, 400.0),
                                       "dram_bandwidth_tbps": np.array([0.4, 0.8, 1.6, 2.4, 4.0])})
    (ap,) = ctx.mix.auto
    got = mix_times(d, ctx.mix)[:, 1]
    tc = np.stack([mix_times(d, dse.workloads.mix.Mix.of([w]))[:, 0] for w in ap.candidates.workloads], axis=1)
    cap = d.offchip_capacity
    fitting = 0
    for i in range(d.n):
        fit = ap.memory <= cap[i]
        if fit.any():
            fitting += 1
            assert got[i] == pytest.approx(tc[i, fit].min(), rel=1e-12)
    assert fitting >= 3
    pick, ok = auto_pick(tc, ap.memory, cap)
    assert not ok[0]  # one 16 GB stack holds no plan of a 7B training step on 4 chips
    sc, _ = score_designs(ctx, d)
    assert sc.constraints["capacity"][0] > 0 and (sc.constraints["capacity"][ok] <= 0).all()
    assert len({ap.labels[k] for k in pick[ok]}) >= 2  # more memory, another plan


def test_the_base_scores_one_at_its_own_best_plan(ctx):
    sc, times = score_designs(ctx, ctx.base)
    assert sc.score[0] == pytest.approx(1.0)
    (ap,) = ctx.mix.auto
    assert any(w is ctx.mix.workloads[1] for w in ap.candidates.workloads)  # the base's choice is a candidate


def test_a_study_with_plan_auto_runs_and_records_the_plan(tmp_path):
    data = copy.deepcopy(SMALL_STUDY)
    data["workloads"] = [{"name": "resnet50", "batch": 8}, AUTO]
    data["search"]["n_trials"] = 8
    data["output"]["dir"] = str(tmp_path / "out")
    run = dse.Study.from_yaml(write_config(tmp_path, data)).run()
    assert "plan.llama2-7b" in run.trials.columns
    assert run.trials["plan.llama2-7b"].astype(str).str.len().gt(0).any()
    # summary.md names the best design's own plan (it named only the base's, in the workload labels)
    md = (run.out_dir / "summary.md").read_text()
    line = next(ln for ln in md.splitlines() if ln.startswith("- Plans on the best design"))
    best = run.trials.loc[(run.trials["score"] - float(run.best["score"])).abs().idxmin()]  # the best trial's row
    assert f"llama2-7b: {best['plan.llama2-7b']}" in line


@pytest.mark.parametrize("entry, needle", [
    ({"name": "llama2-7b", "phase": "training", "plan": "auto"}, "plan: auto with chips"),
    ({"name": "llama2-7b", "phase": "training", "chips": 4}, "chips with plan: auto"),
])
def test_bad_auto_entries_are_one_line(tmp_path, entry, needle):
    data = copy.deepcopy(SMALL_STUDY)
    data["workloads"] = [entry]
    with pytest.raises(DseError, match=needle) as e:
        load_context(write_config(tmp_path, data))
    assert len(e.value.lines()) == 1


def test_plan_auto_on_a_torus_keeps_the_plans_it_can_place(tmp_path):
    """On a 4x8 TPU v5e slice a group of 2 fills no whole axis: such candidates are dropped from a plan: auto entry
    (the study stopped with 'a group of 2 ranks does not fill whole dimensions'), the rest are searched."""
    from dse.hardware.system import load_system
    from dse.predict.network import placement_error

    data = copy.deepcopy(SMALL_STUDY)
    data.pop("base")
    data["system"] = "tpu-v5e-pod"
    data["workloads"] = [{"name": "llama2-7b", "phase": "training", "batch": 8, "seq": 512, "plan": "auto",
                          "chips": 32}]
    _, c = load_context(write_config(tmp_path, data))
    (ap,) = c.mix.auto
    sysm = load_system("tpu-v5e-pod").resized(32)
    assert ap.candidates.workloads and all(placement_error(w, sysm) == "" for w in ap.candidates.workloads)
    assert not any(w.plan.tp == 2 or w.plan.dp == 2 for w in ap.candidates.workloads)
    assert any(w.plan.tp == 4 for w in ap.candidates.workloads)
    sc, _ = score_designs(c, c.base)
    assert sc.score[0] == pytest.approx(1.0)
