"""Training steps: activation recomputation is charged in time (dse.workloads.training)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.errors import DseError
from dse.workloads.library import load_description
from dse.workloads.ops import VECTOR_FLOPS_PER_ELEM
from dse.workloads.training import RECOMPUTE_SUFFIX, is_forward, recompute_rows


def _step(rc: str, **kw) -> tuple[float, dse.Workload]:
    wl = dse.workload("gpt3-1.3b", phase="training", batch=4, seq=1024, plan={"recompute": rc}, **kw)
    return dse.predict(wl, "a100-80gb").time_s, wl


def test_full_recompute_costs_about_one_more_forward_on_one_chip() -> None:
    t_none, wl_none = _step("none")
    t_full, wl_full = _step("full")
    # a step is ~3 forward-equivalents of layer work; full recompute adds one: ~4/3 (head and optimizer not redone)
    assert 1.2 < t_full / t_none < 1.34
    assert wl_full.flops > wl_none.flops
    rc = wl_full.scenario["recompute_flops"]
    assert rc == pytest.approx(wl_full.flops - wl_none.flops, rel=1e-9)
    assert 0.2 < rc / wl_none.flops < 1 / 3
    assert "rc:full" in wl_full.label()


def test_selective_recompute_with_flash_attention_is_free_and_unfused_costs_the_attention_core() -> None:
    t_none, _ = _step("none")
    t_sel, wl = _step("selective")
    assert t_sel == pytest.approx(t_none) and wl.scenario["recompute_flops"] == 0
    t_none_u, wl_none_u = _step("none", fused_attention=False)
    t_sel_u, wl_u = _step("selective", fused_attention=False)
    t_full_u, _ = _step("full", fused_attention=False)
    assert t_none_u < t_sel_u < t_full_u
    a = load_description("gpt3-1.3b").arch  # the attention core once per layer: QK^T, PV and the softmax
    B, s, H, d = 4, 1024, a["heads"], a["hidden"] // a["heads"]
    core = a["layers"] * (4.0 * B * H * s * s * d + VECTOR_FLOPS_PER_ELEM["softmax"] * B * H * s * s)
    assert wl_u.scenario["recompute_flops"] == pytest.approx(core)


def test_predict_keeps_a_one_chip_recompute_plan_when_adding_chips() -> None:
    wl = dse.workload("gpt3-1.3b", phase="training", batch=8, seq=1024, plan={"recompute": "full"})
    p = dse.predict(wl, "dgx-a100", chips=2, dp=2)
    assert p.workload.plan.recompute == "full"


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_recompute_on_an_inference_phase_is_one_line_naming_the_field(phase: str) -> None:
    with pytest.raises(DseError) as exc:
        dse.workload("gpt3-1.3b", phase=phase, plan={"recompute": "full"})
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("plan.recompute: got 'full'") and "accepted: 'none'" in msg


def test_recompute_rows_skip_head_loss_optimizer_and_backward() -> None:
    rows = [{"name": n, "flops": 1.0, "count": 1} for n in
            ("embed.tokens", "layer.qkv_proj", "layer.attention.qk", "layer.qkv_proj.bwd.dinput", "lm_head",
             "loss.softmax_xent", "optimizer.adamw")]
    assert [r["name"] for r in recompute_rows(rows, "full")] == ["layer.qkv_proj.recompute", "layer.attention.qk.recompute"]
    assert [r["name"] for r in recompute_rows(rows, "selective", fused_attention=False)] == ["layer.attention.qk.recompute"]
    assert recompute_rows(rows, "none") == []


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["layer.a", "layer.attention.x", "lm_head", "x.bwd", "x.bwd.dweight"]), max_size=12))
def test_recomputed_rows_are_forward_rows_and_never_recomputed_twice(names: list[str]) -> None:
    rows = [{"name": n} for n in names]
    once = recompute_rows(rows, "full")
    assert all(r["name"].endswith(RECOMPUTE_SUFFIX) and not is_forward(r["name"]) for r in once)
    assert recompute_rows(rows + once, "full") == once


@pytest.mark.parametrize("dtype, unscaled", [("fp16", True), ("bf16", False)])
def test_every_step_zeroes_the_gradients_and_fp16_unscales_them(dtype: str, unscaled: bool) -> None:
    wl = dse.workload("gpt3-1.3b", phase="training", batch=1, seq=256, dtype=dtype)
    ops = wl.ops.set_index("name")
    p = ops.loc["optimizer.adamw", "M"]  # parameters on this chip
    zero = ops.loc["optimizer.zero_grad"]
    assert (zero["bytes_read"], zero["bytes_written"], zero["count"]) == (0, 4 * p, 1)
    assert ("optimizer.unscale" in ops.index) == unscaled  # only fp16 trains with a loss scale
    if unscaled:
        assert ops.loc["optimizer.unscale", "bytes_read"] == ops.loc["optimizer.unscale", "bytes_written"] == 4 * p
    # the per-step passes run once per step, not once per micro-batch
    piped = dse.workload("gpt3-1.3b", phase="training", batch=4, seq=256, dtype=dtype, plan={"pp": 2, "microbatches": 4})
    assert piped.ops.set_index("name").loc["optimizer.zero_grad", "count"] == 1


def test_minimal_recompute_redoes_the_attention_core_and_elementwise_ops_but_no_weight_matmul() -> None:
    """MaxText's ``remat_policy: minimal``: the projections' outputs are saved, so no weight GEMM runs again; the
    attention core and every norm/activation/residual op do. Its time lies between none and full, its activation
    memory between full and none (Korthikanti et al. 2022 Table 2's tensors: 20 sbh instead of 34)."""
    t_none, wl_none = _step("none")
    t_min, wl_min = _step("minimal")
    t_full, wl_full = _step("full")
    assert t_none < t_min < t_full
    assert 0 < wl_min.scenario["recompute_flops"] < wl_full.scenario["recompute_flops"]
    rows = [{"name": n, "kind": k} for n, k in (("layer.qkv_proj", "gemm"), ("layer.attention", "attention"),
            ("layer.attention.qk", "gemm"), ("layer.norm1", "norm"), ("layer.ffn_act", "elementwise"),
            ("layer.ffn_up", "gemm"), ("lm_head", "gemm"), ("layer.ffn_up.bwd.dinput", "gemm"))]
    assert [r["name"] for r in recompute_rows(rows, "minimal")] == [
        f"{n}{RECOMPUTE_SUFFIX}" for n in ("layer.attention", "layer.attention.qk", "layer.norm1", "layer.ffn_act")]
    act = {rc: dse.workload("gpt3-1.3b", phase="training", batch=4, seq=1024, plan={"recompute": rc}).memory["activations"]
           for rc in ("none", "minimal", "full")}
    assert act["full"] < act["minimal"] < act["none"] and act["minimal"] / act["none"] == pytest.approx(20 / 34)
    assert "rc:minimal" in wl_min.label()


# ---- how the framework runs the step: weight casts, optimizer kernels, gradient zeroing (issue 31 item 3) ----

def _train(**kw) -> dse.Workload:
    return dse.workload("gpt3-1.3b", phase="training", batch=4, seq=1024, **kw)


def _rows(wl: dse.Workload, suffix: str):
    """Rows whose name ends with ``suffix`` (before a compacted table's `` (+N same shape)``)."""
    return wl.ops[wl.ops["name"].str.replace(r" \(\+\d+ same shape\)$", "", regex=True).str.endswith(suffix)]


def test_foreach_adamw_moves_the_eight_passes_bytes_and_fused_one() -> None:
    fused, foreach = _train(), _train(optimizer="foreach")
    p = fused.scenario["params"]
    f, e = _rows(fused, "optimizer.adamw").iloc[0], _rows(foreach, "optimizer.adamw").iloc[0]
    assert f["count"] == 1 and e["count"] == 8
    # fused: 16 B update read + 4 B clipping read, 12 B master/moments + 2 B bf16 copy written
    assert f["bytes_read"] + f["bytes_written"] == pytest.approx(p * (20 + 14))
    # foreach: 48 read + the clipping's 4, 32 written + the bf16 copy, over eight launches
    assert e["count"] * (e["bytes_read"] + e["bytes_written"]) == pytest.approx(p * (52 + 34))
    assert e["count"] * e["flops"] == pytest.approx(f["flops"])  # the same arithmetic
    assert dse.predict(foreach, "h200").time_s > dse.predict(fused, "h200").time_s


@pytest.mark.parametrize("optimizer", ["fused", "foreach"])
def test_bf16_optimizer_state_halves_every_optimizer_pass_and_keeps_4_bytes_per_parameter(optimizer: str) -> None:
    """Pure bf16 training (torchtune's): every optimizer pass moves half the fp32 case's bytes and writes no weight
    copy, the zeroing writes bf16 gradients, the state is 4 bytes per parameter (two bf16 moments) against 12, and the
    step is faster; the arithmetic is the same."""
    mixed, pure = (_train(optimizer=optimizer, zero_grad="memset", optimizer_dtype=d) for d in ("fp32", "bf16"))
    p = mixed.scenario["params"]
    m, b = _rows(mixed, "optimizer.adamw"), _rows(pure, "optimizer.adamw")
    copy = 2.0 * p  # the bf16 weight copy the mixed-precision update writes
    moved = (m["bytes_read"] + m["bytes_written"]) * m["count"]
    assert float(((b["bytes_read"] + b["bytes_written"]) * b["count"]).sum()) == pytest.approx(
        (float(moved.sum()) - copy) / 2)
    assert float((b["flops"] * b["count"]).sum()) == pytest.approx(float((m["flops"] * m["count"]).sum()))
    z_m, z_b = _rows(mixed, "optimizer.zero_grad").iloc[0], _rows(pure, "optimizer.zero_grad").iloc[0]
    assert z_b["bytes_written"] == pytest.approx(z_m["bytes_written"] / 2) == pytest.approx(2 * p)
    assert mixed.memory["optimizer"] == pytest.approx(12 * p) and pure.memory["optimizer"] == pytest.approx(4 * p)
    assert dse.predict(pure, "a100-80gb").time_s < dse.predict(mixed, "a100-80gb").time_s
    assert "optimizer_dtype:bf16" in pure.label()


def test_bf16_optimizer_state_needs_a_bf16_model_without_autocast() -> None:
    for kw in ({"dtype": "fp16"}, {"weight_cast": "kernel"}, {"framework": "pytorch-eager"}):
        with pytest.raises(DseError, match="optimizer_dtype: got bf16.*accepted: fp32, or bf16 with dtype bf16"):
            _train(optimizer_dtype="bf16", **kw)
    with pytest.raises(DseError, match="optimizer_dtype: got 'bf16' for phase decode"):
        dse.workload("gpt3-1.3b", phase="decode", optimizer_dtype="bf16")


def test_autocast_weight_casts_cover_the_weight_matrices_once_each_way() -> None:
    wl = _train(weight_cast="kernel")
    p = wl.scenario["params"]
    cast, grad = _rows(wl, ".cast"), _rows(wl, ".cast.bwd")
    elems = (cast["M"] * cast["count"]).sum()  # a streaming row's M is its element count
    # every weight matrix of the model but the position embedding and the norms' vectors: ~all parameters
    assert 0.9 * p < elems <= p
    assert ((cast["bytes_read"] * cast["count"]).sum() == pytest.approx(4 * elems)
            and (cast["bytes_written"] * cast["count"]).sum() == pytest.approx(2 * elems))
    assert ((grad["bytes_read"] * grad["count"]).sum() == pytest.approx(2 * elems)
            and (grad["bytes_written"] * grad["count"]).sum() == pytest.approx(4 * elems))
    # the fp32 parameters are the weights: the optimizer writes no bf16 copy
    opt = _rows(wl, "optimizer.adamw").iloc[0]
    assert opt["bytes_written"] == pytest.approx(12 * p)
    # an fp32 step has nothing to cast
    assert _rows(_train(weight_cast="kernel", dtype="fp32"), ".cast").empty


def test_full_recompute_recasts_the_weights() -> None:
    def cast_elems(wl: dse.Workload) -> float:  # compacted tables merge a recompute copy into its row's count
        o = wl.ops[wl.ops["name"].str.contains(".cast", regex=False) & ~wl.ops["name"].str.contains(".cast.bwd",
                                                                                                   regex=False)]
        return float((o["M"] * o["count"]).sum())

    none = _train(weight_cast="kernel")
    full = _train(weight_cast="kernel", plan={"recompute": "full"})
    head = float(_rows(none, "lm_head.cast")["M"].sum())  # the head is not recomputed
    assert cast_elems(full) - cast_elems(none) == pytest.approx(cast_elems(none) - head)


def test_zero_grad_none_drops_the_memset() -> None:
    assert not _rows(_train(), "optimizer.zero_grad").empty
    assert _rows(_train(zero_grad="none"), "optimizer.zero_grad").empty


def test_framework_preset_sets_defaults_and_a_given_field_wins() -> None:
    eager = _train(framework="pytorch-eager")
    assert eager.scenario["execution"] == "eager" and not _rows(eager, ".cast").empty
    assert _rows(eager, "optimizer.adamw").iloc[0]["count"] == 8
    assert _rows(eager, "optimizer.zero_grad").empty
    assert "fw:pytorch-eager" in eager.label()
    fused = _train(framework="pytorch-eager", optimizer="fused")
    assert _rows(fused, "optimizer.adamw").iloc[0]["count"] == 1 and "optimizer:fused" in fused.label()
    graph = _train(framework="pytorch-eager", execution="graph")
    assert graph.scenario["execution"] == "graph"
    # the label says an execution given against the framework's own (it read as the framework's step)
    assert graph.label().endswith("fw:pytorch-eager graph]") and eager.label().endswith("fw:pytorch-eager]")
    assert _train(framework="xla", execution="eager").label().endswith("fw:xla eager]")
    assert "graph" not in _train(framework="xla").label() and _train(execution="eager").label().endswith(" eager]")
    # the megatron preset is the step dse models by default: the same prediction
    meg, plain = _train(framework="megatron"), _train()
    assert dse.predict(meg, "a100-80gb").time_s == pytest.approx(dse.predict(plain, "a100-80gb").time_s)
    # each mechanism makes the eager step slower, never faster
    t = {k: dse.predict(v, "h200").time_s for k, v in
         (("eager", eager), ("fused", fused), ("plain", _train(execution="eager")))}
    assert t["plain"] < t["fused"] < t["eager"]


def test_framework_preset_on_a_cnn_takes_only_the_fields_it_uses() -> None:
    wl = dse.workload("resnet50", phase="training", batch=32, framework="pytorch-eager")
    assert wl.scenario["execution"] == "eager" and not _rows(wl, ".cast").empty  # conv weights are cast too


def test_framework_bad_input_is_one_line_naming_the_field() -> None:
    with pytest.raises(DseError, match="framework.*accepted: megatron, pytorch-compile, pytorch-eager, xla"):
        _train(framework="pytorch-eagr")
    with pytest.raises(DseError, match="weight_cast.*accepted: 'none'"):
        dse.workload("gpt3-1.3b", phase="decode", weight_cast="kernel")
    with pytest.raises(DseError, match="optimizer"):
        dse.workload("gpt3-1.3b", phase="prefill", optimizer="foreach")
    # a preset's training fields are inert outside training: no error
    assert dse.workload("gpt3-1.3b", phase="decode", framework="pytorch-eager").scenario["execution"] == "eager"


def test_every_shipped_framework_loads_and_sets_only_valid_scenario_values() -> None:
    from dse.workloads.frameworks import FIELDS, framework_names, load_framework
    from dse.workloads.scenario import Scenario

    names = framework_names()
    assert {"pytorch-eager", "megatron", "xla"} <= set(names)
    for n in names:
        fw = load_framework(n)
        assert set(fw.scenario) <= set(FIELDS) and len(fw.source) > 40
        Scenario.model_validate(fw.scenario)  # each value valid


@pytest.mark.parametrize(("kw", "expected"), [
    ({"dtype": "bf16"}, "fp32"),  # Megatron-LM: bf16 accumulates and all-reduces gradients in fp32
    ({"dtype": "fp8"}, "fp32"),  # fp8 GEMMs over bf16 parameters: the bf16 rule
    ({"dtype": "fp16"}, "fp16"),  # Megatron-LM's fp16 default: the parameters' dtype
    ({"dtype": "bf16", "weight_cast": "kernel"}, "fp32"),  # autocast: fp32 parameters, fp32 gradients
    ({"dtype": "bf16", "optimizer_dtype": "bf16"}, "bf16"),  # pure bf16: the parameters' dtype
    ({"dtype": "bf16", "grad_dtype": "bf16"}, "bf16"),  # given: it wins
    ({"dtype": "fp16", "grad_dtype": "fp32"}, "fp32"),
])
def test_gradient_dtype_follows_the_mixed_precision_rule_unless_given(kw: dict, expected: str) -> None:
    from dse.workloads.training import gradient_dtype

    assert gradient_dtype(**kw) == expected


def test_a_bf16_megatron_step_holds_18_bytes_per_parameter_and_xla_16() -> None:
    """Megatron-LM's distributed-optimizer table: 18 bytes per parameter without sharding (2 bf16 weights, 4 fp32
    gradients, 12 optimizer state); the XLA preset's bf16 gradient reduction keeps MaxText's 16 (fp32 parameters,
    gradients and two moments: 4 + 4 + 8)."""
    for framework, per_param in (("megatron", 18), ("xla", 16), (None, 18)):
        wl = _train(**({"framework": framework} if framework else {}))
        p = wl.scenario["params"]
        held = sum(wl.memory[k] for k in ("weights", "gradients", "optimizer"))
        assert held == pytest.approx(per_param * p, rel=1e-6), framework
    assert "grad_dtype:bf16" in _train(grad_dtype="bf16").label()
    with pytest.raises(DseError, match="grad_dtype: got 'fp32' for phase decode"):
        dse.workload("gpt3-1.3b", phase="decode", grad_dtype="fp32")


def test_autocast_holds_fp32_parameters_and_their_saved_casts_and_two_moments() -> None:
    """Autocast (weight_cast: kernel) keeps the fp32 parameters as the weights and as the optimizer's master, so the
    state is the two moments (8 bytes), and autograd saves each forward cast (2 bytes) for the backward unless the
    forward is checkpointed whole; it held the Megatron-style 2 + 12 before, whatever the framework."""
    p = _train().scenario["params"]
    eager = _train(framework="pytorch-eager")
    assert eager.memory["weights"] == pytest.approx(6 * p) and eager.memory["optimizer"] == pytest.approx(8 * p)
    assert eager.memory["gradients"] == pytest.approx(4 * p)
    full = dse.workload("gpt3-1.3b", phase="training", batch=4, seq=1024, framework="pytorch-eager",
                        plan={"recompute": "full"})
    assert full.memory["weights"] == pytest.approx(4 * p)
    megatron = _train()
    assert megatron.memory["weights"] == pytest.approx(2 * p) and megatron.memory["optimizer"] == pytest.approx(12 * p)
