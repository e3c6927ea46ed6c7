"""Parallel plans: interleaved pipeline bubble and p2p traffic (dse.workloads.parallel)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


def test_collectives_move_the_activation_dtype_not_the_gemm_dtype() -> None:
    """An FP8 GEMM writes its output in the activation dtype (Transformer Engine's FP8 Linear returns bf16), so the
    tensor-parallel all-reduce of a row-parallel block, the pipeline send and the sequence-parallel scatter move
    ``activation_dtype`` bytes (``dtype``'s when none is given), as the memory check counts the activations."""
    from dse.units import DTYPE_BYTES

    for act in (None, "bf16", "fp32"):
        extra = {"activation_dtype": act} if act else {}
        e = DTYPE_BYTES[act or "fp8"]
        wl = dse.workload("llama2-7b", phase="serving", batch=4, input_len=128, output_len=8, dtype="fp8", **extra)
        p = dse.predict(wl, "dgx-h100", chips=4, tp=4)
        assert _coll(p, "decode.tp.layer_all_reduce")[1] == pytest.approx(4 * 4096 * e)  # 4 tokens x hidden 4096
        p_pp = dse.predict(wl, "dgx-h100", chips=8, tp=4, pp=2)  # 2 micro-batches of 2 sequences
        assert _coll(p_pp, "decode.pp.send_activations")[1] == pytest.approx(2 * 4096 * e / 4)  # a tp slice per rank
        wl_t = dse.workload("llama2-7b", phase="training", batch=1, seq=2048, dtype="fp8", **extra)
        p_t = dse.predict(wl_t, "dgx-h100", chips=8, tp=8, sp=True)
        assert _coll(p_t, "tp.layer_reduce_scatter")[1] == pytest.approx(2048 * 4096 * e)


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


def test_uneven_pipeline_split_prices_the_slowest_stage_with_head_only_on_the_last() -> None:
    wl = dse.workload("gpt3-175b", phase="training", batch=64, seq=2048)
    kw = dict(chips=64, tp=8, pp=8, microbatches=64)
    even = dse.predict(wl, "dgx-a100", **kw)
    assert even.workload.scenario["pipeline_stage"] == "last"  # 12 layers + the LM head
    assert even.ops["name"].str.startswith("lm_head").any() and not even.ops["name"].str.startswith("embed.tokens").any()
    # a light last stage (5 layers + head) leaves 13 layers on the others: the first stage paces the step
    light = dse.predict(wl, "dgx-a100", last_stage_layers=5, **kw)
    assert light.workload.scenario["pipeline_stage"] == "first" and light.time_s > even.time_s
    assert not light.ops["name"].str.startswith("lm_head").any() and light.ops["name"].str.startswith("embed.").any()
    with pytest.raises(DseError) as exc:
        dse.predict(wl, "dgx-a100", last_stage_layers=10, **kw)  # 86 layers do not split over 7 stages
    assert "\n" not in str(exc.value) and str(exc.value).startswith("plan.last_stage_layers: got last 10 of ")


@pytest.mark.parametrize(("layers", "pp", "f", "l_", "flops", "head", "stage"), [
    (96, 8, None, None, 1.0, 0.3, "last"), (96, 8, None, 5, 1.0, 0.3, "first"), (96, 8, 6, 6, 1.0, 0.3, "middle"),
])
def test_stage_layers_and_slowest_stage(layers, pp, f, l_, flops, head, stage) -> None:
    from dse.workloads.parallel import slowest_stage, stage_layers

    first, mid, last = stage_layers(layers, Plan(pp=pp, first_stage_layers=f, last_stage_layers=l_))
    assert first + (pp - 2) * mid + last == layers or (f is None and l_ is None)
    assert slowest_stage(first, mid, last, pp, flops, head) == stage


def test_zero_shards_the_optimizer_step_over_the_data_parallel_ranks() -> None:
    """ZeRO-1 splits the AdamW update (and ZeRO-2 the gradient zeroing) over dp: each rank steps 1/dp of the
    parameters (Rajbhandari et al. 2020, P_os), so the step is faster than ZeRO-0 by what the optimizer saves."""
    import dse

    def opt(zero: int) -> dict[str, float]:
        w = dse.workload("llama2-7b", phase="training", batch=16, seq=1024, plan={"dp": 8, "zero": zero})
        o = w.ops
        return {n: float((o.loc[o["name"] == n, "flops"] + o.loc[o["name"] == n, "bytes_written"]).sum())
                for n in ("optimizer.adamw", "optimizer.zero_grad")}

    z0, z1, z2, z3 = (opt(z) for z in range(4))
    assert z1["optimizer.adamw"] == pytest.approx(z0["optimizer.adamw"] / 8, rel=1e-6)
    assert z1["optimizer.zero_grad"] == z0["optimizer.zero_grad"]  # gradients are whole until ZeRO-2
    assert z2["optimizer.zero_grad"] == pytest.approx(z0["optimizer.zero_grad"] / 8, rel=1e-6)
    assert z3 == z2
    t0 = dse.predict(dse.workload("llama2-7b", phase="training", batch=16, seq=1024, plan={"dp": 8}), "dgx-h100")
    t1 = dse.predict(dse.workload("llama2-7b", phase="training", batch=16, seq=1024, plan={"dp": 8, "zero": 1}),
                     "dgx-h100")
    opt0 = t0.ops.loc[t0.ops["name"] == "optimizer.adamw", "total_time_s"].sum()
    opt1 = t1.ops.loc[t1.ops["name"] == "optimizer.adamw", "total_time_s"].sum()
    assert opt1 < opt0 / 4 and t1.time_s < t0.time_s
    with pytest.raises(DseError, match=r"plan.zero: got 1 with dp = 1; accepted: 0"):  # one rank: nothing to shard
        dse.workload("llama2-7b", phase="training", batch=2, seq=1024, plan={"dp": 1, "zero": 1})
    with pytest.raises(DseError, match=r"plan.sp: got true with tp = 1"):
        dse.workload("llama2-7b", phase="training", batch=2, seq=1024, plan={"dp": 2, "sp": True})
    with pytest.raises(DseError, match=r"plan.microbatches: got 4 on 1 chip"):
        dse.workload("llama2-7b", phase="training", batch=8, seq=1024, plan={"microbatches": 4})


@pytest.mark.parametrize("model", ["resnet50", "llama2-7b"])
def test_zero_shards_the_footprint_by_stage_in_every_family(model: str) -> None:
    """ZeRO-1 shards the optimizer state over dp, ZeRO-2 the gradients too, ZeRO-3 the weights too (Rajbhandari et
    al. 2020): a CNN's footprint follows the same rule as a transformer's (it sharded only the optimizer state), and
    each part is sharded at the stage the op table's optimizer step shards it (zero_grad from ZeRO-2)."""
    import dse

    kw = {"batch": 64} if model == "resnet50" else {"batch": 16, "seq": 1024}
    mem = [dse.workload(model, phase="training", plan={"dp": 8, "zero": z}, **kw).memory for z in range(4)]
    for part, stage in (("optimizer", 1), ("gradients", 2), ("weights", 3)):
        for z in range(4):
            assert mem[z][part] == pytest.approx(mem[0][part] / (8 if z >= stage else 1), rel=1e-6), (part, z)
    assert mem[3]["activations"] == mem[0]["activations"]


def test_fsdp_is_data_parallel_with_everything_sharded() -> None:
    import dse
    from dse.errors import DseError

    f = dse.workload("llama2-7b", phase="training", batch=16, seq=1024, plan={"fsdp": 8})
    z = dse.workload("llama2-7b", phase="training", batch=16, seq=1024, plan={"dp": 8, "zero": 3})
    assert (f.plan.dp, f.plan.zero) == (8, 3) and f.memory == z.memory
    assert "fsdp8" in f.label() and "dp8" not in f.label().replace("fsdp8", "")
    with pytest.raises(DseError, match=r"plan.dp: got dp = 4 with fsdp = 8; accepted: an fsdp dividing dp \(2, 4: "
                                       r".*or a dp that is a multiple of fsdp \(8, 16"):
        dse.workload("llama2-7b", phase="training", batch=16, seq=1024, plan={"fsdp": 8, "dp": 4})
    with pytest.raises(DseError, match="plan.zero"):
        dse.workload("llama2-7b", phase="training", batch=16, seq=1024, plan={"fsdp": 8, "zero": 1})


def test_hybrid_sharding_shards_within_the_group_and_all_reduces_the_shards_across_replicas() -> None:
    # PyTorch HYBRID_SHARD (Zhao et al., VLDB 2023): fsdp 8 x 4 replicas on 32 chips holds what fsdp 8 holds,
    # runs fsdp 8's collectives inside each group of 8, and all-reduces its 1/8 gradient shard over the 4 replicas
    import dse

    kw = dict(phase="training", batch=64, seq=1024)
    h = dse.workload("llama2-7b", plan={"fsdp": 8, "dp": 32}, **kw)
    f8 = dse.workload("llama2-7b", plan={"fsdp": 8}, **kw)
    f32 = dse.workload("llama2-7b", plan={"fsdp": 32}, **kw)
    assert (h.plan.shards, h.plan.replicas, h.chips) == (8, 4, 32) and "fsdp8 x4" in h.label()
    for part in ("weights", "gradients", "optimizer"):
        assert h.memory[part] == pytest.approx(f8.memory[part])
        assert h.memory[part] == pytest.approx(4 * f32.memory[part])
    ops = h.ops.set_index("name")
    grads = 6.738e9 * 4  # llama2-7b parameters x fp32 gradients (a bf16 step reduces them in fp32)
    assert ops.loc["dp.zero3_param_all_gather", ["group", "stride"]].tolist() == [8, 1]
    rep = ops.loc[["dp.replica_all_reduce", "dp.replica_all_reduce.last_bucket"]]
    assert (rep["group"] == 4).all() and (rep["stride"] == 8).all()  # one rank per group of 8: across nodes
    assert rep["net_bytes"].sum() == pytest.approx(grads / 8, rel=2e-3)
    # each rank steps only its 1/8 of AdamW, as in fsdp 8
    adam = [w.ops.loc[w.ops["name"] == "optimizer.adamw", "flops"].sum() for w in (h, f8)]
    assert adam[0] == pytest.approx(adam[1])
    # on dgx-h100 (NVLink inside 8-GPU nodes, InfiniBand between): the shard group's all-gathers stay on NVLink
    p = dse.predict(h, "h100-sxm", system="dgx-h100")
    assert p.time_s > 0 and p.fits


def test_a_partial_overlap_hides_that_share_of_the_collective_in_both_prediction_paths() -> None:
    """Overlap fractions: exposed = (1 - f) T + max(0, f T - compute); the computation of a training step covers
    its TP all-reduces, so f = 0.5 hides exactly half of what f = 1 hides, in dse.predict and in mix_times."""
    from dse.hardware.designs import DesignBatch
    from dse.hardware.system import load_system
    from dse.predict import mix_times
    from dse.workloads.library import with_plan
    from dse.workloads.mix import Mix

    wl = dse.workload("llama2-7b", phase="training", batch=8, seq=1024)
    t = {f: dse.predict(wl, "dgx-a100", chips=8, tp=8, overlap={"tp": f, "dp": True}).time_s for f in (0.0, 0.5, 1.0)}
    assert t[1.0] < t[0.5] < t[0.0]
    assert t[0.0] - t[0.5] == pytest.approx(0.5 * (t[0.0] - t[1.0]), rel=1e-9)
    d = DesignBatch.from_hardware(dse.hardware("a100-80gb")).with_system(load_system("dgx-a100"))
    planned = [with_plan(wl, chips=8, tp=8, overlap={"tp": f, "dp": True}) for f in (0.0, 0.5, 1.0)]
    m = mix_times(d, Mix.of(planned))[0]
    assert m == pytest.approx([t[0.0], t[0.5], t[1.0]], rel=1e-9)
    assert Plan(chips=8, tp=8, overlap={"tp": 0.5}).label() == "tp8 overlap:tp0.5"
    assert Plan(chips=8, tp=8, overlap={"tp": True}).overlap.tp == 1.0
    with pytest.raises(ValueError, match="accepted: a fraction from 0 to 1"):
        Plan(chips=8, tp=8, overlap={"tp": 1.5})


@pytest.mark.parametrize("m", [1, 4, 12])
def test_interleaving_needs_micro_batches_in_groups_of_pp(m: int) -> None:
    # with 1 micro-batch (or 12 on 8 stages) the interleaved schedule cannot fill the pipeline: before, v = 2 halved
    # a bubble that a single micro-batch cannot hide and a 2-stage pipeline came out faster than tp8
    wl = dse.workload("gpt3-175b", phase="training", batch=96, seq=2048)
    with pytest.raises(DseError) as exc:
        dse.predict(wl, "dgx-a100", chips=64, tp=8, pp=8, microbatches=m, interleave=2)
    assert str(exc.value).startswith(f"plan.interleave: got 2 with {m} micro-batch") and "multiple of pp" in str(exc.value)
    ok = dse.predict(wl, "dgx-a100", chips=64, tp=8, pp=8, microbatches=16, interleave=2)
    assert ok.workload.plan.m % 8 == 0


def test_a_plan_search_with_interleave_offers_micro_batches_in_groups_of_pp() -> None:
    from dse.workloads.plans import candidates

    wl = dse.workload("llama2-7b", phase="training", batch=64, seq=2048)
    keys = candidates(wl, 8, 8, interleave=2)
    assert keys and all(k["pp"] > 1 and k["microbatches"] % k["pp"] == 0 for k in keys)


@pytest.mark.parametrize(("pp", "stage_gb"), [(2, 8.03), (16, 1.92)])
def test_a_pipeline_stage_holds_only_its_own_vocabulary_matrices(pp: int, stage_gb: float) -> None:
    """Llama 3 8B (untied, 128,256 x 4,096 embedding and LM head, 0.525 B each): the paced stage held both matrices
    (9.08 GB of bf16 weights at pp 2, 2.97 at pp 16). The last stage holds its layers and the LM head only: at pp 2,
    16 of 32 layers (3.49 B) + head + final norm = 4.01 B parameters, 8.03 GB; gradients alike."""
    import dse
    from dse.workloads.library import stage_params

    wl = dse.workload("llama3-8b", phase="training", batch=16, seq=2048, plan=dict(chips=pp, pp=pp, microbatches=pp))
    p = dse.predict(wl, "h100-sxm")
    assert p.workload.scenario["pipeline_stage"] == "last"
    assert p.memory["weights"] / 1e9 == pytest.approx(stage_gb, abs=0.01)
    assert p.memory["gradients"] == pytest.approx(2 * p.memory["weights"])  # fp32 gradients of bf16 weights

    class Arch:  # tied embeddings: a copy on the first and the last stage, neither in the middle
        vocab, hidden, head, tied_embeddings = 1000, 10, "lm", True

    e = 1000 * 10
    assert [stage_params(Arch, 50 + e, s) for s in ("first", "middle", "last")] == [50 + e, 50, 50 + e]
    Arch.tied_embeddings = False
    assert [stage_params(Arch, 50 + 2 * e, s) for s in ("first", "middle", "last")] == [50 + e, 50, 50 + e]


@pytest.mark.parametrize(("args", "expect"), [
    (["llama3-8b", "dgx-h100", "--chips", "64", "--pp", "64", "--microbatches", "64", "--phase", "training",
      "--batch", "64"], "workload llama3-8b: got pp = 64; accepted: at most its 32 layers"),
    (["mixtral-8x7b", "dgx-h100", "--chips", "8", "--ep", "3"],
     "plan: got ep = 3, which does not divide dp = 8; accepted: an ep dividing dp (2, 4, 8)"),
    # ep 8 over tp 8 x dp 2 was accepted as dividing dp x tp = 16, then failed placement (a group of 8 at stride 8)
    (["mixtral-8x7b", "dgx-h100", "--phase", "training", "--batch", "32", "--seq", "4096", "--chips", "16", "--ep",
      "8", "--tp", "8", "--dp", "2"], "plan: got ep = 8, which does not divide dp = 2; accepted: an ep dividing dp (2)"),
    (["mixtral-8x7b", "trn2-node", "--phase", "decode", "--batch", "16", "--chips", "16", "--tp", "2", "--dp", "8",
      "--ep", "8"], "a group of 2 ranks, which fills no whole dimensions of the torus [4, 4] (groups of 4, 16 ranks do"),
])
def test_a_plan_that_cannot_build_says_what_it_got_and_what_would(args: list[str], expect: str, capsys) -> None:
    """Plan errors said 'pp = 64 exceeds its 32 layers' or 'ep = 3 must divide dp x tp' (no got / accepted), repeated
    the plan dict before a validator's own 'got', and a torus group that splits an axis did not say which sizes fit."""
    from dse.cli import main

    assert main(["predict", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expect in err[0] and "accepted: " in err[0] and err[0].count("got ") == 1, err


@pytest.mark.parametrize(("overlap", "expect"), [
    ("pp", "plan.overlap.pp: got overlap pp = 1 with pp = 1; accepted: an overlap share for a collective the plan runs"),
    ("tp,tp", "--overlap: got tp twice in 'tp,tp'; accepted: each kind once"),
])
def test_an_overlap_share_that_would_act_on_nothing_is_one_line(overlap: str, expect: str, capsys) -> None:
    """--overlap pp on a plan without pipeline stages ran and labelled the plan 'overlap:pp+'; a kind named twice
    was accepted (the last one won)."""
    from dse.cli import main

    args = ["predict", "llama2-70b", "dgx-h100", "--phase", "training", "--batch", "32", "--chips", "16", "--tp", "8",
            "--dp", "2", "--overlap", overlap]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {expect}"), err


@pytest.mark.parametrize(("model", "eps"), [("mixtral-8x7b", (1, 2, 4, 8)), ("deepseek-v3", (1, 8, 64, 256))])
def test_expert_parallelism_moves_experts_not_work(model: str, eps: tuple[int, ...]) -> None:
    """Each of ep ranks holds experts / ep experts and receives its share of every rank's routed tokens, so its
    expert FLOPs are T x top-k whatever ep; top-k was capped at the experts a rank holds (mixtral at ep 8: top-2
    became top-1, half the expert work, plans faster than the chip's peak)."""
    phase = {"phase": "training", "batch": 8, "seq": 1024} if model == "mixtral-8x7b" else {"phase": "prefill",
                                                                                            "batch": 256, "seq": 128}
    flops, weights = [], []
    for ep in eps:
        wl = dse.workload(model, plan={"chips": max(eps), "dp": max(eps), "ep": ep}, **phase)
        o = wl.ops
        e = o[o["name"].str.startswith("moe.expert")]
        flops.append(float((e["flops"] * e["count"]).sum()))
        weights.append(wl.memory["weights"])
    assert flops == pytest.approx([flops[0]] * len(eps), rel=1e-12)
    assert all(a > b for a, b in zip(weights, weights[1:], strict=False))  # the experts are what moves


@pytest.mark.parametrize("plan", [{"chips": 8, "dp": 8, "zero": 3}, {"chips": 8, "fsdp": 8}, {"chips": 8, "dp": 8,
                                                                                               "zero": 1}])
def test_zero_and_fsdp_outside_training_are_one_line(plan) -> None:
    """ZeRO / fsdp at decode sharded the weights' memory 8 ways and charged no gather: 2.2 GB of weights per chip
    and the same step time as 8 full copies."""
    with pytest.raises(DseError, match=r"got zero \d for phase decode; accepted: 0") as e:
        dse.workload("llama2-7b", phase="decode", batch=8, context=1024, plan=plan)
    assert e.value.field == ("plan.fsdp" if "fsdp" in plan else "plan.zero")


def test_hybrid_sharding_exposes_one_shard_of_the_last_bucket_across_replicas() -> None:
    """The replicas all-reduce each rank's 1/fsdp shard of a bucket after the shard group's reduce-scatter: the last,
    exposed one is 25 MB / fsdp, not a whole 25 MB bucket (which made hybrid sharding over two TPU slices 10 ms slower
    than sharding over both)."""
    wl = dse.workload("llama2-7b", phase="training", batch=512, seq=2048, plan={"chips": 512, "dp": 512, "fsdp": 256})
    rows = wl.ops.set_index("name")
    assert rows.loc["dp.replica_all_reduce.last_bucket", "net_bytes"] == pytest.approx(25e6 / 256)
    grads = rows.loc["dp.gradient_reduce_scatter.last_bucket", "net_bytes"] + rows.loc["dp.gradient_reduce_scatter",
                                                                                       "net_bytes"]
    replica = rows.loc["dp.replica_all_reduce.last_bucket", "net_bytes"] + rows.loc["dp.replica_all_reduce", "net_bytes"]
    assert replica == pytest.approx(grads / 256)


@pytest.mark.parametrize("n", [0, 1])
def test_an_fsdp_group_of_fewer_than_two_names_fsdp(n: int) -> None:
    """fsdp 1 was reported as 'plan.zero: got 3 with dp = 1' (a field the user never set), fsdp 0 as 'plan.dp'."""
    with pytest.raises(ValueError, match=rf"got {n}; accepted: an integer >= 2") as e:
        Plan(chips=8, fsdp=n)
    assert "@fsdp@" in str(e.value)


def test_a_bucket_without_data_parallelism_is_one_line_and_an_overlap_of_a_missing_group_is_not_in_the_label() -> None:
    """--bucket-mb 100 on a tp8 decode printed 'tp8 bucket100MB' and changed nothing; --overlap none printed
    'overlap:dp-' on a plan with no data parallelism."""
    with pytest.raises(ValueError, match=r"got 100 with dp = 1; accepted: unset"):
        Plan(chips=8, tp=8, bucket_mb=100)
    assert Plan(chips=8, tp=8, overlap={"tp": 0, "pp": 0, "dp": 0, "ep": 0}).label() == "tp8"
    assert Plan(chips=16, tp=8, dp=2, overlap={"tp": 0, "dp": 0}).label() == "tp8 dp2 overlap:dp-"


def test_degrees_that_do_not_fill_the_chips_say_what_would() -> None:
    """'--chips 8 --fsdp 3' and '--chips 32 --tp 2' said only 'accepted: degrees whose product is the chip count'."""
    with pytest.raises(ValueError, match=r"here dp = 8: fsdp 8, or for hybrid sharding fsdp dividing 8 \(2, 4, 8\)"):
        Plan(chips=8, fsdp=3)
    with pytest.raises(ValueError, match=r"here dp = 16 with tp 2 x pp 1 on 32 chips"):
        Plan(chips=32, tp=2)


def test_chips_with_only_ep_is_data_parallel_with_the_experts_split_inside_it() -> None:
    """``--chips 8 --ep 8`` (the reference's ep divides dp x tp) read as tp 8 and placed the expert group past the 8
    chips ('a group of 8 ranks with stride 8 needs 64 chips'); chips with only ep is dp over all of them."""
    from dse.workloads.library import plan_for

    p = plan_for(8, ep=8)
    assert (p.tp, p.dp, p.ep) == (1, 8, 8)
    assert (plan_for(8).tp, plan_for(8).dp) == (8, 1)
    wl = dse.workload("mixtral-8x7b", phase="decode", batch=16, plan=p)
    assert dse.predict(wl, "dgx-h100").time_s > 0


@pytest.mark.parametrize("zero", [0, 1])
def test_data_parallel_gradients_move_in_the_gradient_dtype_and_zero_gathers_the_weights_in_theirs(zero: int) -> None:
    """A bf16 step reduces fp32 gradients (Megatron-LM's rule): twice the bytes of the same step told to reduce bf16
    ones. Without ZeRO an all-reduce; with ZeRO-1 a reduce-scatter of the gradients and an all-gather of the updated
    bf16 weights (Megatron-LM's distributed optimizer)."""
    import dse

    def moved(**kw) -> tuple[dict[str, float], float]:
        wl = dse.workload("llama2-7b", phase="training", batch=8, seq=1024, plan={"dp": 8, "zero": zero}, **kw)
        ops = wl.ops[wl.ops["name"].str.startswith("dp.")]
        kinds = ops.groupby("coll")["net_bytes"].sum()
        return {k: float(v) for k, v in kinds.items()}, wl.scenario["params"]

    (fp32, params), (bf16, _) = moved(), moved(grad_dtype="bf16")
    grads = "all_reduce" if zero == 0 else "reduce_scatter"
    assert fp32[grads] == pytest.approx(4 * params, rel=2e-3) and bf16[grads] == pytest.approx(2 * params, rel=2e-3)
    if zero:
        assert fp32["all_gather"] == pytest.approx(2 * params, rel=2e-3) == bf16["all_gather"]
    else:
        assert "all_gather" not in fp32


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_zero_2_and_3_reduce_every_micro_batch_and_zero_3_gathers_in_each(zero: int) -> None:
    """A rank that keeps only its gradient shard (ZeRO-2/3) reduce-scatters each micro-batch's gradients, and ZeRO-3
    gathers the weights again in each micro-batch's forward and backward: with 4 micro-batches, 4x the reduce-scatter
    bytes and 8 gathers against 1 micro-batch's 2; ZeRO-1 accumulates and reduces once, whatever the micro-batches."""
    import dse

    def dp_rows(mb: int):
        wl = dse.workload("llama2-7b", phase="training", batch=32, seq=1024,
                          plan={"dp": 8, "zero": zero, "microbatches": mb})
        ops = wl.ops[wl.ops["name"].str.startswith("dp.")].set_index("name")
        return ops, wl.scenario["params"]

    (one, params), (four, _) = dp_rows(1), dp_rows(4)
    grads = 4 * params  # fp32 gradients of a bf16 step
    rs = [n for n in one.index if n.startswith("dp.gradient_reduce_scatter")]
    sent = {k: float((t.loc[rs, "net_bytes"] * t.loc[rs, "count"]).sum()) for k, t in (("one", one), ("four", four))}
    assert sent["one"] == pytest.approx(grads, rel=2e-3)
    assert sent["four"] == pytest.approx((4 if zero >= 2 else 1) * grads, rel=2e-3)
    gather = "dp.zero3_param_all_gather" if zero == 3 else "dp.param_all_gather"
    assert (one.loc[gather, "count"], four.loc[gather, "count"]) == ((2, 8) if zero == 3 else (1, 1))
    assert four.loc["dp.gradient_reduce_scatter.last_bucket", "overlap"] == 0  # one exposed bucket a step


def test_zero_shards_routed_experts_over_their_own_data_parallel_replicas() -> None:
    """With ep 8 inside dp 16 each routed expert has 2 data-parallel replicas, the dense weights 16: ZeRO-1 shards
    the expert state over 2 and the dense state over 16 (it sharded both over 16, 5.4 GB of optimizer state for
    Mixtral's 7.2 B parameters a chip where 35 GB is held)."""
    import dse

    wl = dse.workload("mixtral-8x7b", phase="training", batch=32, seq=4096,
                      plan={"chips": 16, "ep": 8, "dp": 16, "zero": 1, "microbatches": 2})
    p, pe = wl.scenario["params"], wl.scenario["expert_params"]
    assert 0 < pe < p
    assert wl.memory["optimizer"] == pytest.approx(12 * ((p - pe) / 16 + pe / 2))
    dense = dse.workload("llama2-7b", phase="training", batch=32, seq=1024, plan={"dp": 16, "zero": 1})
    assert dense.memory["optimizer"] == pytest.approx(12 * dense.scenario["params"] / 16)


# ------------------------------------------------------------------ per-core TP ranks and transformers-neuronx padding
@pytest.mark.parametrize(("heads", "kv", "ranks", "want"), [
    (32, 8, 24, (2, 1)),    # Llama 3 8B at TP 24: 48 query heads, 8 KV heads replicated to 24
    (64, 8, 24, (3, 1)),    # Llama 3 70B at TP 24: 72 query heads
    (40, 40, 24, (2, 2)),   # Llama 2 13B (MHA): K and V padded with Q to 48
    (32, 8, 32, (1, 1)),    # divides: 8 KV heads replicated to 32
    (72, 24, 32, (3, 1)),   # get_qkv_padding's own example: 96 query heads after padding, one KV head per core
    (64, 8, 8, (8, 1)),     # Hkv divisible by the ranks: no replication
])
def test_padded_heads_follow_transformers_neuronx(heads: int, kv: int, ranks: int, want: tuple[int, int]) -> None:
    from dse.workloads.parallel import padded_heads

    assert padded_heads(heads, kv, ranks) == want


@given(h=st.integers(1, 128), g=st.sampled_from([1, 2, 4, 8]), r=st.integers(2, 64))
def test_padding_never_drops_a_head(h: int, g: int, r: int) -> None:
    from dse.workloads.parallel import padded_heads

    kv = max(1, h // g) if h % g == 0 else h
    q_rank, kv_rank = padded_heads(h, kv, r)
    assert q_rank * r >= h and q_rank * r - h < r  # rounded up to the next multiple of the ranks, no further
    assert kv_rank >= 1 and kv_rank * r >= kv


def test_tp_per_chip_cuts_the_shards_per_core_and_a_chip_holds_its_cores_share() -> None:
    """inf2.48xlarge: TP 24 over 12 chips, two NeuronCores each. The padded shards make the step slower than an
    unpadded tp 12 with the same weights would be (more query heads and replicated KV heads), and the chip holds
    twice a rank's share."""
    kw = dict(phase="decode", batch=8, context=4096, dtype="fp16")
    padded = dse.workload("llama3-8b", plan=Plan(chips=12, tp=12, tp_per_chip=2, pad_heads=True), **kw)
    per_rank = dse.workload("llama3-8b", plan=Plan(chips=24, tp=24, pad_heads=True), **kw)
    plain = dse.workload("llama3-8b", plan=Plan(chips=8, tp=8), **kw)
    assert padded.label().endswith("tp12 x2/chip padheads]")
    # KV cache per chip: two replicated KV heads (one per core) vs one per rank and one per chip at tp 8
    assert padded.memory["kv_cache"] == pytest.approx(2 * per_rank.memory["kv_cache"])
    assert padded.memory["kv_cache"] == pytest.approx(2 * plain.memory["kv_cache"])
    # weights: 48 padded query heads over 24 ranks, two ranks per chip (the norms, replicated, are held once)
    assert padded.memory["weights"] == pytest.approx(2 * per_rank.memory["weights"], rel=1e-3)
    assert padded.memory["weights"] > plain.memory["weights"] * 8 / 12
    p = dse.predict(padded, "inferentia2")
    assert p.time_s > 0 and "inf2-48xlarge" in p.system.name


def test_padding_reaches_the_experts_and_a_chip_holds_its_cores_expert_shards() -> None:
    """Mixtral 8x7B at TP 24: expert FFN 14336 padded to 14352 (598 per rank), two ranks per chip."""
    wl = dse.workload("mixtral-8x7b", phase="decode", plan=Plan(chips=12, tp=12, tp_per_chip=2, pad_heads=True))
    ops = wl.ops.set_index("name")
    assert ops.loc["moe.expert_down", "K"] == 2 * 598  # a chip's two ranks' padded expert FFN columns
    assert ops.loc["moe.expert_up", "N"] == 2 * 2 * 598  # gate and up (SwiGLU)
    with pytest.raises(DseError, match="pad_heads"):
        dse.workload("mixtral-8x7b", phase="decode", plan=Plan(chips=12, tp=12, tp_per_chip=2))


def test_a_tp_that_does_not_divide_the_heads_names_pad_heads_and_padding_one_rank_is_refused() -> None:
    with pytest.raises(DseError) as exc:
        dse.workload("llama3-8b", phase="decode", plan=Plan(chips=12, tp=12, tp_per_chip=2))
    assert "\n" not in str(exc.value) and "pad_heads" in str(exc.value)
    with pytest.raises(DseError) as exc:
        dse.workload("llama3-8b", phase="decode", plan={"pad_heads": True})
    assert "\n" not in str(exc.value) and "pad_heads" in str(exc.value) and "got true" in str(exc.value)
