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


def _coll(p, name: str) -> tuple[float, float]:
    r = p.ops[p.ops["name"].str.startswith(name)]  # same-shape rows merge: "name (+1 same shape)"
    return float(r["count"].sum()), float(r["net_bytes"].max()) if len(r) else 0.0


def test_sequence_parallelism_is_reduce_scatter_plus_all_gather_and_splits_the_norms() -> None:
    wl = dse.workload("gpt3-175b", phase="training", batch=8, seq=2048)
    kw = dict(chips=64, tp=8, pp=8, microbatches=8)
    p_sp = dse.predict(wl, "dgx-a100", sp=True, recompute="selective", **kw)
    p_tp = dse.predict(wl, "dgx-a100", sp=False, recompute="selective", **kw)
    n_ar, S = _coll(p_tp, "tp.layer_all_reduce")
    n_rs, S_rs = _coll(p_sp, "tp.layer_reduce_scatter")
    n_ag, _ = _coll(p_sp, "tp.layer_all_gather")
    L, m = 96 // 8, 8
    # 2 per layer in forward and in backward (the TP case's row also holds the embedding's 2 m all-reduces)
    assert n_ar - 2 * m == n_rs == 2 * L * 2 * m and S_rs == S
    assert n_ag == n_rs + 2 * L * m  # the backward re-gathers each linear block's split input
    assert _coll(p_tp, "tp.layer_reduce_scatter")[0] == 0
    norm = {p.workload.plan.sp: p.ops[p.ops["name"].str.startswith("layer.norm1")]["bytes_read"].max()
            for p in (p_sp, p_tp)}
    assert norm[True] == pytest.approx(norm[False] / 8)
    assert p_sp.memory["activations"] < p_tp.memory["activations"]


def test_pipeline_sends_one_tp_slice_per_rank_and_gathers_it_inside_the_node() -> None:
    wl = dse.workload("gpt3-175b", phase="training", batch=8, seq=2048)
    p = dse.predict(wl, "dgx-a100", chips=64, tp=8, pp=8, microbatches=8)
    n, S = _coll(p, "pp.send_activations")
    assert pytest.approx(2048 * 12288 * 2 / 8) == S  # one micro-batch's activations / tp, bf16
    assert _coll(p, "pp.gather_activations")[0] == n


def test_full_recompute_repeats_the_forward_all_reduces() -> None:
    wl = dse.workload("gpt3-175b", phase="training", batch=8, seq=2048)
    kw = dict(chips=64, tp=8, pp=8, microbatches=8)
    n_full = _coll(dse.predict(wl, "dgx-a100", recompute="full", **kw), "tp.layer_all_reduce")[0]
    n_none = _coll(dse.predict(wl, "dgx-a100", recompute="none", **kw), "tp.layer_all_reduce")[0]
    assert n_full - 16 == pytest.approx((n_none - 16) * 3 / 2)  # 16: the embedding's (not recomputed)


def test_the_last_gradient_bucket_is_exposed_and_bigger_buckets_expose_more() -> None:
    wl = dse.workload("gpt3-1.3b", phase="training", batch=16, seq=1024)
    times = {b: dse.predict(wl, "dgx-a100", chips=16, dp=16, bucket_mb=b) for b in (25.0, 1e5)}
    small, whole = times[25.0], times[1e5]
    assert small.network_s > 0  # the last 25 MB bucket waits for the end of the backward pass
    assert whole.network_s > 10 * small.network_s  # one bucket: nothing overlaps
    assert whole.time_s > small.time_s
