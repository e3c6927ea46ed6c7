"""dse.workloads.library: a parallelism plan is applied once, when a workload is built (``plan_for``, ``with_plan``)."""

from __future__ import annotations

import pandas as pd
import pytest

import dse
from dse.errors import DseError
from dse.workloads import library, parallel
from dse.workloads.parallel import Plan

SCEN = dict(phase="training", batch=8, seq=128, dtype="bf16")
PLAN = dict(tp=2, pp=2, microbatches=4, recompute="full")


@pytest.fixture
def shard_calls(monkeypatch) -> list[Plan]:
    """Every plan ``parallel.shard_transformer`` is called with (once per planned transformer build), the
    workload cache emptied so nothing is served from an earlier test."""
    calls: list[Plan] = []
    real = parallel.shard_transformer

    def spy(arch, plan, name):
        calls.append(plan)
        return real(arch, plan, name)

    monkeypatch.setattr(parallel, "shard_transformer", spy)
    monkeypatch.setattr(library, "_WORKLOADS", type(library._WORKLOADS)())
    return calls


def test_plan_for_reads_chips_alone_as_tensor_parallel_and_keeps_a_one_chip_plans_settings() -> None:
    assert library.plan_for(8) == Plan(chips=8, tp=8)
    assert library.plan_for(8, dp=8, tp=None) == Plan(chips=8, dp=8)
    assert library.plan_for(2, Plan(recompute="full"), pp=2).recompute == "full"
    with pytest.raises(DseError, match=r"plan: .*chips = 4"):
        library.plan_for(4, tp=2)


def test_with_plan_builds_the_planned_workload_once_equal_to_planning_at_construction(shard_calls) -> None:
    wl = library.workload("gpt2", **SCEN)
    assert shard_calls == []  # one chip: nothing sharded
    planned = library.with_plan(wl, chips=4, **PLAN)
    assert len(shard_calls) == 1 and shard_calls[0].n_chips == 4  # the plan applied once
    direct = library._expand("gpt2", plan=library.plan_for(4, **PLAN), **SCEN)
    assert planned.plan == direct.plan and planned.memory == direct.memory
    pd.testing.assert_frame_equal(planned.ops, direct.ops)


def test_with_plan_refuses_a_planned_workload_and_a_single_operator() -> None:
    planned = library.workload("gpt2", plan={"tp": 2}, **SCEN)
    with pytest.raises(DseError, match="already has a plan"):
        library.with_plan(planned, dp=2)
    with pytest.raises(DseError, match="single operator"):
        library.with_plan(dse.gemm(64, 64, 64), chips=2)
