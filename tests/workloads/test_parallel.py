"""Parallel plans: interleaved pipeline bubble and p2p traffic (dse.workloads.parallel)."""

import pytest

import dse
from dse.errors import DseError
from dse.workloads.parallel import Plan


def test_interleaved_bubble_is_pp_minus_one_over_v_m() -> None:
    assert Plan(pp=8, microbatches=64).bubble_scale() == pytest.approx(1 + 7 / 64)
    assert Plan(pp=8, microbatches=64, interleave=3).bubble_scale() == pytest.approx(1 + 7 / 192)


def test_the_issue_call_runs_and_interleave_trades_bubble_for_p2p() -> None:
    wl = dse.workload("gpt3-175b", phase="training", batch=64, seq=2048)
    kw = dict(chips=64, tp=8, pp=8, dp=1, microbatches=64)
    p3 = dse.predict(wl, "dgx-a100", interleave=3, recompute="full", **kw)
    p1 = dse.predict(wl, "dgx-a100", interleave=1, recompute="full", **kw)
    assert p3.time_s > 0 and p3.workload.plan.interleave == 3
    def compute_bubble(p):
        o = p.ops[p.ops["coll"] == ""]
        return float((o["time_s"] * o["count"] * (o["scale"] - 1.0)).sum())

    assert compute_bubble(p3) == pytest.approx(compute_bubble(p1) / 3, rel=1e-6)
    sends = {p.workload.plan.interleave: p.ops.loc[p.ops["name"] == "pp.send_activations", "count"].sum() for p in (p1, p3)}
    assert sends[3] == 3 * sends[1]
    p_none = dse.predict(wl, "dgx-a100", interleave=3, recompute="none", **kw)
    assert p3.time_s > 1.15 * p_none.time_s  # full recomputation costs time in plans too


@pytest.mark.parametrize(("v", "pp"), [(5, 8), (2, 1)])
def test_interleave_not_dividing_the_layers_per_stage_is_one_line(v: int, pp: int) -> None:
    wl = dse.workload("gpt3-175b", phase="training", batch=64, seq=2048)
    with pytest.raises(DseError) as exc:
        dse.predict(wl, "dgx-a100", chips=8 * pp, tp=8, pp=pp, microbatches=8, interleave=v)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"plan.interleave: got {v}")
    assert ("12 layers per stage (1, 2, 3, 4, 6, 12)" in msg) if pp == 8 else ("pp > 1" in msg)
