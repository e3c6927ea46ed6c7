"""Operator tables against published FLOP and parameter counts (docs/reference/model_flops.csv;
torchvision's "GFLOPS" are multiply-adds, so they are doubled here); a parallelism plan applied once, when a
workload is built (``plan_for``, ``with_plan``)."""

import numpy as np
import pandas as pd
import pytest

import dse
from dse.errors import DseError
from dse.workloads import library, parallel
from dse.workloads.ops import COLUMNS, RESIDENCY_COLUMNS
from dse.workloads.parallel import Plan
from tests.conftest import one_line_error_with_cache_cleared


def test_every_library_model_expands_with_the_full_schema() -> None:
    lib = dse.list_workloads()
    assert {"resnet50", "mobilenet-v2", "bert-base", "gpt2", "llama2-7b", "vit-b16"} <= set(lib["name"])
    for name in lib["name"]:
        wl = dse.workload(name)
        assert list(wl.ops.columns) == COLUMNS + RESIDENCY_COLUMNS
        assert (wl.ops["flops"] >= 0).all() and (wl.ops["count"] >= 1).all()
        assert wl.flops > 0 and wl.bytes > 0
    assert (lib["source"].str.len() > 20).all()


@pytest.mark.parametrize(
    ("name", "scenario", "gflops_ref", "rel"),
    [
        # torchvision resnet50 4.0892 GMACs (FlopCounterMode on meta: 8.1784 GFLOPs, ENVIRONMENT.md)
        ("resnet50", {}, 8.1784, 1e-4),
        # torchvision vit_b_16 17.56 GMACs
        ("vit-b16", {}, 35.12, 2e-3),
        # calflops LLaMA-2-7B (1,128) forward: 1700.06 GFLOPs (all logits, full attention matrix)
        ("llama2-7b", {"phase": "prefill", "seq": 128, "fused_attention": False, "logits": "all"}, 1700.06, 1e-4),
        # Megatron formula 12*(24*s*h^2 + 4*s^2*h): 22.35 GFLOPs at s=128, 96.64 at s=512
        ("bert-base", {"seq": 128, "fused_attention": False}, 22.35, 1e-3),
        ("bert-base", {"seq": 512, "fused_attention": False}, 96.64, 1e-3),
    ],
)
def test_matrix_flops_match_published_counts(name: str, scenario: dict, gflops_ref: float, rel: float) -> None:
    wl = dse.workload(name, **scenario)
    assert wl.matrix_flops / 1e9 == pytest.approx(gflops_ref, rel=rel)


def test_mobilenet_v2_conv_macs_match_torchvision() -> None:
    wl = dse.workload("mobilenet-v2")
    conv = wl.ops[wl.ops["kind"].isin(["conv", "gemm"])]
    gmacs = (conv["flops"] * conv["count"]).sum() / 2e9
    assert gmacs == pytest.approx(0.30, abs=0.006)  # torchvision: 0.30 GMACs (rounded to 2 digits)


@pytest.mark.parametrize(
    ("name", "params"),
    [("resnet50", 25_557_032), ("mobilenet-v2", 3_504_872), ("llama2-7b", 6_738_415_616)],
)
def test_parameter_counts_are_exact(name: str, params: int) -> None:
    assert dse.workload(name).scenario["params"] == params


def test_decode_flops_per_token_is_about_twice_the_parameters() -> None:
    wl = dse.workload("llama2-7b", phase="decode", batch=1, context=2048)
    # 2 FLOPs per weight (embeddings are lookups) + QK^T and PV over the context: 2 x 2*ctx*h per
    # layer. Kaplan et al.'s C_fwd = 2N + 2*n_layer*n_ctx*d_attn counts one of the two products
    # (model_flops.csv quotes 14.01 GFLOPs/token from it; the exact count is 14.29).
    n_nonembed = 6_738_415_616 - 32000 * 4096
    expected = 2 * n_nonembed + 4 * 32 * 2048 * 4096
    assert wl.matrix_flops == pytest.approx(expected, rel=1e-4)


def test_kv_cache_bytes_scale_with_context_and_gqa() -> None:
    def attn_bytes(**kw) -> float:
        wl = dse.workload("llama2-7b", phase="decode", **kw)
        a = wl.ops[wl.ops["kind"] == "attention"].iloc[0]
        return float(a["b_bytes"])

    b1 = attn_bytes(context=1024)
    assert b1 == pytest.approx(2 * 32 * 1024 * 128 * 2)  # K and V, 32 heads x 128, bf16, per layer
    assert attn_bytes(context=2048) == pytest.approx(2 * b1)
    assert attn_bytes(context=1024, kv_dtype="fp8") == pytest.approx(b1 / 2)


def test_causal_fused_prefill_counts_half_the_attention_pairs() -> None:
    fused = dse.workload("llama2-7b", phase="prefill", seq=1024)
    unfused = dse.workload("llama2-7b", phase="prefill", seq=1024, fused_attention=False)
    af = fused.ops[fused.ops["kind"] == "attention"]["flops"].sum()
    au = unfused.ops[unfused.ops["kind"] == "attention"]["flops"].sum()
    # 1024 keys: a flash kernel, 8 query tiles of 128, tile m computing (m + 1) * 128 keys: 36/64 of the square
    assert af / au == pytest.approx(8 * 9 / 2 / 64)
    whole = dse.workload("llama2-7b", phase="prefill", seq=1024, attention_kernel="whole_row")
    aw = whole.ops[whole.ops["kind"] == "attention"]["flops"].sum()
    assert aw / au == pytest.approx((1024 + 1) / 2 / 1024)  # whole rows: the triangle
    # unfused attention writes and re-reads the score matrix: more bytes
    assert unfused.bytes > fused.bytes


def test_textbook_gemm_intensity() -> None:
    wl = dse.gemm(1024, 1024, 1024, dtype="fp32")
    assert wl.flops == 2 * 1024**3
    assert wl.ai == pytest.approx(2 * 1024**3 / (4 * 3 * 1024**2))
    assert wl.ai == pytest.approx(170.67, abs=0.01)


def test_elementwise_intensity_is_an_eighth() -> None:
    wl = dse.elementwise(2**20, dtype="fp32")
    assert wl.ai == pytest.approx(0.125)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: dse.workload("llama9-1b"), "unknown workload .llama9-1b."),
        (lambda: dse.workload("resnet50", phase="decode"), "accepted phase: forward"),
        (lambda: dse.workload("gpt2", context=4096), "context: got 4096 tokens; accepted: at most gpt2.s max_seq 1024"),
        (lambda: dse.workload("bert-base", batch=0), "batch"),
        (lambda: dse.workload("bert-base", dtype="fp7"), "dtype"),
        (lambda: dse.gemm(0, 4, 4), "M: got 0; accepted: a whole number"),
        (lambda: dse.workload("vit-b16", resolution=100), "not a multiple of patch"),
    ],
)
def test_bad_scenarios_give_one_line_errors(call, match: str) -> None:
    with pytest.raises(DseError, match=match) as ei:
        call()
    assert "\n" not in str(ei.value)


def test_bad_model_description_names_file_and_field(tmp_path, monkeypatch) -> None:
    from dse.workloads import library

    (tmp_path / "broken.yaml").write_text(
        "name: broken\nfamily: transformer\nsource: test file\narch:\n  kind: decoder\n  layers: 2\n"
        "  hidden: 64\n  heads: 4\n  ffn: 128\n  activation: gelu\n  norm: layernorm\n  hiddden: 3\n")
    monkeypatch.setattr(library, "workloads_dir", lambda: tmp_path)
    msg = one_line_error_with_cache_cleared(library.load_description, lambda: library.workload("broken"))
    assert "broken.yaml" in msg and "arch.hiddden" in msg and "hidden" in msg


@pytest.mark.parametrize(("name", "fwd", "train"), [
    ("resnet50", {"batch": 8}, {"phase": "training", "batch": 8}),
    ("llama2-7b", {"phase": "prefill", "seq": 256, "fused_attention": False, "logits": "all"},
     {"phase": "training", "seq": 256, "fused_attention": False}),
])
def test_training_step_is_three_forwards_of_matrix_flops_plus_adamw(name, fwd, train) -> None:
    f, t = dse.workload(name, **fwd), dse.workload(name, **train)
    assert t.matrix_flops == pytest.approx(3 * f.matrix_flops, rel=1e-9)
    opt = t.ops[t.ops["name"] == "optimizer.adamw"].iloc[0]
    params = t.scenario["params"]
    # fused AdamW: fp32 master, grad, m, v read (+ the grad again for norm clipping), fp32 state + bf16 copy written
    assert opt["bytes_read"] + opt["bytes_written"] == pytest.approx((20 + 14) * params)
    assert t.scenario["phase"] == "training"


@pytest.mark.parametrize(
    ("name", "scenario", "per", "gflops_ref"),
    [
        # model_flops.csv: GPT-3 175B exact forward per token at s=2048 incl. attention and logits: 358.8 GFLOPs
        ("gpt3-175b", {"phase": "prefill", "seq": 2048, "fused_attention": False, "logits": "all"}, 2048, 358.8),
        # BERT-large (24L, H=1024) at s=512: 335.01 GFLOPs (Megatron formula)
        ("bert-large", {"seq": 512, "fused_attention": False}, 1, 335.01),
        # GPT-2 small: per-token MACs ~= 124 M parameters (tied LM head) -> ~0.248 GFLOPs
        ("gpt2", {"phase": "prefill", "seq": 8, "fused_attention": False, "logits": "all"}, 8, 0.248),
        # VGG-16 and ResNet-18: torchvision 15.47 / 1.81 GMACs
        ("vgg16", {}, 1, 30.94),
        ("resnet18", {}, 1, 3.628),
    ],
)
def test_more_published_flop_counts(name: str, scenario: dict, per: int, gflops_ref: float) -> None:
    assert dse.workload(name, **scenario).matrix_flops / per / 1e9 == pytest.approx(gflops_ref, rel=0.02)


@pytest.mark.parametrize(("name", "params"), [("llama2-13b", 13_015_864_320), ("llama3-8b", 8_030_261_248),
                                              ("vgg16", 138_357_544), ("resnet18", 11_689_512),
                                              ("mixtral-8x7b", 46_702_792_704), ("deepseek-v3", 671_026_419_200),
                                              ("gpt-j-6b", 6_053_381_344),  # EleutherAI/gpt-j-6b card
                                              ("llama3.1-8b", 8_030_261_248), ("qwen3-8b", 8.2e9),  # model cards
                                              ("qwen3-32b", 32.8e9), ("qwen3-30b-a3b", 30_532_122_624),  # keras-hub
                                              ("qwen3-235b-a22b", 235e9),  # Qwen3 report, Table 2
                                              ("gpt-oss-20b", 20.91e9), ("gpt-oss-120b", 116.83e9),  # model card
                                              ("gemma3-27b", 25_600e6 + 1_416e6),  # Gemma 3 report, Table 1
                                              ("gemma2-9b", 9.24e9), ("gemma2-27b", 27.2e9),
                                              ("llama4-maverick", 400e9)])  # Meta's model card
def test_more_parameter_counts(name: str, params: int) -> None:
    # published totals (model_flops.csv, model cards); biases are not counted (VGG: -0.003 %)
    assert dse.workload(name).scenario["params"] == pytest.approx(params, rel=0.005)


@pytest.mark.parametrize(("name", "active"), [("gpt-oss-20b", 3.61e9), ("gpt-oss-120b", 5.13e9)])
def test_a_decode_token_of_gpt_oss_multiplies_its_published_active_parameters(name: str, active: float) -> None:
    """OpenAI's model card, Table 1: active parameters per token, the unembedding counted and the embedding (a
    lookup) not; a decode token at context 1 does 2 FLOPs per active weight (its attention is one key)."""
    assert dse.workload(name, phase="decode", batch=1, context=1).matrix_flops / 2 == pytest.approx(active, rel=0.005)


def test_scenario_keyword_a_model_does_not_use_is_an_error() -> None:
    with pytest.raises(DseError, match="resnet50 does not use context; accepted: batch, dtype"):
        dse.workload("resnet50", context=1024)
    assert dse.workload("llama2-7b", phase="inference").scenario["phase"] == "prefill"
    assert dse.workload("resnet50", phase="inference").scenario["phase"] == "forward"


@pytest.mark.parametrize(("scenario", "field", "reads"), [
    ({"phase": "decode", "seq": 4096}, "seq", "phase decode reads context"),
    ({"phase": "training", "context": 4096}, "context", "phase training reads seq"),
    ({"phase": "prefill", "input_len": 128}, "input_len", "phase prefill reads seq"),
    ({"phase": "serving", "input_len": 128, "output_len": 128, "seq": 256}, "seq", "reads input_len and output_len"),
    ({"phase": "training", "seq": 256, "logits": "last"}, "logits", "phase training reads seq"),
])
def test_a_length_field_the_phase_does_not_read_is_one_line_naming_it(scenario: dict, field: str, reads: str) -> None:
    # before, --seq 4096 on a decode (KV length: context) was dropped without a word and the model default ran
    with pytest.raises(DseError) as err:
        dse.workload("llama2-7b", **scenario)
    assert err.value.field == f"workload llama2-7b: {field}" and reads in str(err.value)
    assert "\n" not in str(err.value)


def test_a_length_field_beside_the_models_default_phase_says_which_phase_to_give() -> None:
    """``dse predict llama2-7b h100-sxm --seq 2048`` ran into decode, the decoder's default, with a message that did not
    say the phase was a default; it now names the phases to give."""
    with pytest.raises(DseError) as err:
        dse.workload("llama2-7b", seq=2048)
    assert "(phase decode is llama2-7b's default: give phase forward or prefill or training)" in str(err.value)
    with pytest.raises(DseError) as err:
        dse.workload("llama2-7b", phase="decode", seq=2048)
    assert "default" not in str(err.value)  # a phase the caller chose is not called a default


def test_the_phase_that_reads_a_length_field_takes_it() -> None:
    assert dse.workload("llama2-7b", phase="decode", context=4096).scenario["context"] == 4096
    assert dse.workload("llama2-7b", phase="prefill", seq=4096).scenario["seq"] == 4096
    # an encoder-decoder's decode reads seq too: the encoder input its cross-attention attends to
    dec = dse.workload("t5-small", phase="decode", seq=256, context=16)
    assert dec.ops[dec.ops["name"] == "decoder.cross_attn"].iloc[0]["K"] == 256


def test_library_holds_100_architectures_with_sources() -> None:
    lib = dse.list_workloads()
    assert len(lib) >= 100 and lib["source"].str.len().min() > 20
    assert {"cnn", "transformer", "rnn", "mamba", "recsys"} <= set(lib["family"])


def test_suites_expand_and_feed_a_mix() -> None:
    from dse.workloads.suites import list_suites, load_suite

    assert {"mlperf-inference", "llm-serving", "edge-vision", "training", "all"} <= set(list_suites())
    for s in list_suites():
        for e in load_suite(s):
            dse.workload(e["name"], **{k: v for k, v in e.items() if k not in ("name", "weight")})


@pytest.mark.parametrize(("name", "params", "rel"), [("t5-small", 60_506_624, 0.01), ("t5-base", 222_903_552, 0.01),
                                                     ("whisper-large-v3", 1_550_000_000, 0.02),
                                                     ("densenet121", 7_978_856, 1e-9), ("googlenet", 6_624_904, 1e-9),
                                                     ("swin-t", 28_288_354, 1e-9), ("unet", 31_037_698, 1e-3),
                                                     ("wav2vec2-base", 95_000_000, 0.02),
                                                     ("yolov3", 61_949_149, 1e-3), ("sd-vae-decoder", 49_490_179, 1e-3),
                                                     ("swin-b", 87_768_224, 1e-9), ("densenet201", 20_013_928, 1e-9)])
def test_encoder_decoder_and_graph_model_parameter_counts(name: str, params: int, rel: float) -> None:
    # t5-*: Hugging Face counts; Whisper large-v3 1550 M (Radford et al. 2022); torchvision densenet121,
    # googlenet, swin_t/b, densenet201; milesial U-Net 31.04 M; wav2vec 2.0 base 95 M (Baevski et al. 2020);
    # darknet yolov3 61.95 M; SD v1 AutoencoderKL decoder 49.49 M
    assert dse.workload(name).scenario["params"] == pytest.approx(params, rel=rel)


def test_encoder_decoder_phases() -> None:
    enc = dse.workload("whisper-small", phase="prefill")
    dec = dse.workload("whisper-small", phase="decode", context=64)
    assert enc.scenario["seq"] == 1500 and enc.matrix_flops > 100 * dec.matrix_flops
    cross = dec.ops[dec.ops["name"] == "decoder.cross_attn"].iloc[0]
    assert cross["K"] == 1500  # each decode step attends the 1500 cached encoder positions
    with pytest.raises(DseError, match="accepted phase: prefill, decode, training"):
        dse.workload("t5-small", phase="forward")


def test_yolov3_flops_match_darknet() -> None:
    # darknet reports 65.86 BFLOPs for yolov3 at 416x416 (2 x multiply-adds)
    w = dse.workload("yolov3")
    conv = w.ops[w.ops["kind"].isin(["conv", "gemm"])]
    assert float((conv["flops"] * conv["count"]).sum()) / 1e9 == pytest.approx(65.86, rel=0.005)


def test_diffusion_unet_structure() -> None:
    w = dse.workload("sd15-unet")
    # 859.5 M published, less the timestep-embedding MLP and per-block projections (~28 M), not modelled
    assert w.scenario["params"] == pytest.approx(859.5e6 - 28e6, rel=0.01)
    cross = w.ops[w.ops["name"].str.endswith("cross_attn")]
    assert set(cross["K"]) == {77}  # cross-attention always attends the 77 text tokens


def test_eager_execution_makes_every_unfused_operator_take_the_host_dispatch_time() -> None:
    graph = dse.workload("bert-base", batch=1, seq=128)
    eager = dse.workload("bert-base", batch=1, seq=128, execution="eager")
    assert not graph.ops["eager"].any()
    assert (eager.ops["eager"] == ~eager.ops["fused"]).all()
    hw = dse.hardware("a100-80gb")
    pg, pe = dse.predict(graph, hw), dse.predict(eager, hw)
    host = hw.compute.eager_overhead_us * 1e-6
    launched = ~pe.ops["fused"]
    assert (pe.ops.loc[launched, "time_s"] >= host - 1e-15).all()
    assert (pe.ops["time_s"] >= pg.ops["time_s"] - 1e-15).all()
    expect = (np.maximum(pg.ops["time_s"], np.where(launched, host, 0.0)) * pg.ops["count"]).sum()
    assert pe.time_s == pytest.approx(expect, rel=1e-12)
    with pytest.raises(DseError) as ei:
        dse.workload("bert-base", execution="lazy")
    assert "execution" in str(ei.value) and "'graph' or 'eager'" in str(ei.value)


def test_weight_groups_add_their_scales_and_must_divide_k() -> None:
    kw = {"phase": "decode", "batch": 1, "context": 128}
    per_channel = dse.workload("llama2-7b", weight_dtype="int4", **kw)
    g128 = dse.workload("llama2-7b", weight_dtype="int4", weight_group=128, **kw)
    g32 = dse.workload("llama2-7b", weight_dtype="int4", weight_group=32, **kw)
    assert per_channel.bytes < g128.bytes < g32.bytes
    row = g128.ops[g128.ops["name"].str.startswith("layer.qkv_proj") & (g128.ops["reuse"] == "tiled")].iloc[0]
    ref = per_channel.ops[per_channel.ops["name"] == row["name"]].iloc[0]
    # (K/128 - 1) more groups per column, a bf16 scale and a bf16 zero point each
    assert row["b_bytes"] - ref["b_bytes"] == pytest.approx((row["K"] // 128 - 1) * row["N"] * 4.0)
    deq = g128.ops[g128.ops["name"].str.endswith(".dequant")]
    assert (deq["flops"] > 0).all()
    for bad, needle in ((100, "weight_group: got 100; accepted: a divisor of K = 4096"),
                        (0, "weight_group: got 0; accepted: a number > 0")):
        with pytest.raises(DseError) as ei:
            dse.workload("llama2-7b", weight_dtype="int4", weight_group=bad, **kw)
        assert needle in str(ei.value) and "\n" not in str(ei.value)
    with pytest.raises(DseError, match="only with weight-only quantization"):
        dse.workload("llama2-7b", weight_group=128, **kw)


def test_batch_norm_after_a_conv_folds_away_at_inference_with_fusion() -> None:
    plain = dse.workload("resnet50", batch=8)
    fused = dse.workload("resnet50", batch=8, fuse_elementwise=True)
    assert (plain.ops["kind"] == "norm").any() and not (fused.ops["kind"] == "norm").any()
    gone = plain.ops[plain.ops["kind"].isin(["norm", "elementwise"])]  # BN folded; act/add in epilogues
    assert plain.flops - fused.flops == pytest.approx((gone["flops"] * gone["count"]).sum())
    train = dse.workload("resnet50", batch=8, fuse_elementwise=True, phase="training")
    assert (train.ops["kind"] == "norm").any()  # training keeps its batch statistics
    dense = dse.workload("densenet121", batch=8, fuse_elementwise=True)
    assert (dense.ops["kind"] == "norm").any()  # pre-activation norms have no conv before them to fold into


def test_activation_and_residual_add_run_in_the_conv_epilogue_at_inference_with_fusion() -> None:
    plain = dse.workload("resnet50", batch=8)
    fused = dse.workload("resnet50", batch=8, fuse_elementwise=True)
    assert (plain.ops["kind"] == "elementwise").any() and not (fused.ops["kind"] == "elementwise").any()
    convs = lambda w: w.ops[w.ops["kind"] == "conv"]  # noqa: E731
    pc, fc = convs(plain), convs(fused)
    # the epilogue of one conv per residual block reads the shortcut: 16 bottlenecks in ResNet-50
    extra = (fc["c_bytes"] * fc["count"]).sum() - (pc["c_bytes"] * pc["count"]).sum()
    adds = plain.ops[plain.ops["name"].str.contains(r"\.add")]
    assert extra == pytest.approx((adds["bytes_written"] * adds["count"]).sum())
    assert fused.bytes < plain.bytes
    train = dse.workload("resnet50", batch=8, fuse_elementwise=True, phase="training")
    assert (train.ops["kind"] == "elementwise").any()  # training keeps its activations for the backward pass


def test_row_norms_stay_kernels_and_absorb_the_residual_add_with_fusion() -> None:
    plain = dse.workload("bert-large", batch=2, seq=128)
    fused = dse.workload("bert-large", batch=2, seq=128, fuse_elementwise=True)
    norms = lambda w: w.ops[w.ops["kind"] == "norm"]  # noqa: E731
    assert not norms(fused)["fused"].any()  # a LayerNorm reduces a whole row: a kernel of its own
    # fused: the norm reads the stream and the residual (2 inputs), the add itself leaves no traffic
    np.testing.assert_allclose(norms(fused)["bytes_read"], 2 * norms(plain)["bytes_read"])
    adds = fused.ops[fused.ops["name"].str.contains("residual")]
    assert adds["fused"].all()
    a100 = dse.hardware("a100-80gb")
    assert dse.predict(fused, a100).time_s < dse.predict(plain, a100).time_s


# ------------------------------------------------ a plan applied once, at construction (plan_for, with_plan)
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


@pytest.mark.parametrize(("b", "h", "s", "d"), [(16, 32, 1024, 128), (2, 16, 8192, 64), (1, 1, 4096, 256)])
def test_attention_workload_counts_the_flashattention2_forward_flops(b: int, h: int, s: int, d: int) -> None:
    full = dse.workload(f"attention:{b}x{h}x{s}x{s}x{d}", dtype="fp16")
    assert full.matrix_flops == 4 * b * h * s * s * d  # Dao 2023 Sec. 4.1
    causal = dse.workload(f"attention:{b}x{h}x{s}x{s}x{d}", dtype="fp16", causal=True, attention_kernel="whole_row")
    # the pairs on and below the diagonal: s(s+1)/2 per head, the paper's s^2/2 up to 1/s
    assert causal.matrix_flops == 2 * b * h * s * (s + 1) * d
    assert causal.matrix_flops == pytest.approx(full.matrix_flops / 2, rel=1.0 / s)
    # a flash kernel (the default beyond 512 keys) also computes the masked half of each diagonal block
    flash = dse.workload(f"attention:{b}x{h}x{s}x{s}x{d}", dtype="fp16", causal=True)
    assert flash.scenario["attention_kernel"] == "auto"
    assert causal.matrix_flops < flash.matrix_flops == pytest.approx(full.matrix_flops / 2, rel=128.0 / s)
    unfused = dse.workload(f"attention:{b}x{h}x{s}x{s}x{d}", fused_attention=False)
    assert unfused.matrix_flops == full.matrix_flops and len(unfused.ops) == 3  # QK^T, softmax, PV
    gqa = dse.workload(f"attention:{b}x{h}x{s}x{s}x{d}", kv_heads=1)
    assert gqa.matrix_flops == full.matrix_flops and (gqa.bytes < full.bytes) == (h > 1)  # fewer K/V bytes, same work
    assert full.name == f"attention:{b}x{h}x{s}x{s}x{d}" and full.scenario["phase"] == "forward"


@pytest.mark.parametrize(
    ("name", "kw", "match"),
    [
        ("attention:1x2x3", {}, r"accepted: attention:BxHxSQxSKxD"),
        ("attention:1x2x0x4x8", {}, r"accepted: attention:BxHxSQxSKxD"),
        ("attention:ax2x3x4x8", {}, r"accepted: attention:BxHxSQxSKxD"),
        ("attention:1x2x4x4x8", {"batch": 2}, r"does not use batch; accepted: dtype, causal"),
        ("attention:1x6x4x4x8", {"kv_heads": 4}, r"kv_heads: got 4; accepted: a divisor of heads = 6"),
        ("attention:1x2x8x4x8", {"causal": True}, r"accepted: seq_q <= seq_k"),
        ("attention:1x2x4x4x8", {"causal": "yes"}, r"causal: got 'yes'; accepted: true, false"),
        ("attention:1x2x4x4x8", {"dtype": "fp7"}, r"dtype"),
    ],
)
def test_attention_workload_bad_input_is_one_line(name: str, kw: dict, match: str) -> None:
    with pytest.raises(DseError, match=match) as ei:
        dse.workload(name, **kw)
    assert "\n" not in str(ei.value)
    with pytest.raises(DseError, match="single operator"):
        dse.workload("attention:1x2x4x4x8", plan={"tp": 2, "chips": 2})


def test_one_operator_workloads_hold_their_operands() -> None:
    """gemm, attention and elementwise workloads need at least their operands on the chip: [M,K]+[K,N]+[M,N]
    for a GEMM, so a GEMM too large for a chip's memory is reported as not fitting."""
    g = dse.gemm(4096, 2048, 1024, dtype="bf16")
    assert g.memory == {"operands": 2.0 * (4096 * 1024 + 1024 * 2048 + 4096 * 2048)}
    a = dse.workload("attention:2x8x1024x1024x64")  # fp16 Q, K, V, O
    assert a.memory_bytes == 2.0 * 4 * (2 * 8 * 1024 * 64)
    c = dse.workload("copy:1000")
    assert c.memory_bytes == pytest.approx(float((c.ops["bytes_read"] + c.ops["bytes_written"]).max()))
    big = dse.predict(dse.gemm(200_000, 200_000, 200_000, dtype="bf16"), "a100-80gb")
    assert not big.fits and dse.predict(g, "a100-80gb").fits


def test_attention_dtype_runs_the_attention_apart_from_the_gemms() -> None:
    # TensorRT-LLM's FP8 engines: FP8 GEMMs, the context attention in fp16 (--gpt_attention_plugin float16)
    kw = dict(phase="prefill", seq=2048, dtype="fp8", kv_dtype="fp8")
    mixed = dse.workload("llama2-7b", attention_dtype="fp16", **kw).ops
    plain = dse.workload("llama2-7b", **kw).ops
    att = mixed[mixed["kind"] == "attention"]
    assert set(att["dtype"]) == {"fp16"} and set(plain[plain["kind"] == "attention"]["dtype"]) == {"fp8"}
    assert set(mixed[mixed["kind"] == "gemm"]["dtype"]) == {"fp8"}
    assert att["flops"].sum() == plain[plain["kind"] == "attention"]["flops"].sum()  # the same work, another mode
    h100 = dse.hardware("h100-sxm")
    assert dse.predict(dse.workload("llama2-7b", attention_dtype="fp16", **kw), h100).time_s > dse.predict(
        dse.workload("llama2-7b", **kw), h100).time_s  # fp16 tensor cores run at half the fp8 rate
    with pytest.raises(DseError, match="attention_dtype"):
        dse.workload("llama2-7b", attention_dtype="fp7", **kw)
    with pytest.raises(DseError, match="does not use attention_dtype"):
        dse.workload("resnet50", attention_dtype="fp16")


def test_gemm_kernel_marks_the_matrix_gemms_and_convs_only() -> None:
    wl = dse.workload("llama2-7b", phase="prefill", seq=512, gemm_kernel="one_tile")
    tiled = (wl.ops["reuse"] == "tiled") & (wl.ops["unit"] == "matrix")
    assert tiled.any() and (wl.ops.loc[tiled, "gemm_kernel"] == "one_tile").all()
    assert (wl.ops.loc[~tiled, "gemm_kernel"] == "").all()
    assert (dse.workload("llama2-7b", phase="prefill", seq=512).ops["gemm_kernel"] == "").all()  # auto: the template's
    assert "gemm:one_tile" in wl.label()
    conv = dse.workload("resnet50", gemm_kernel="persistent").ops
    assert (conv.loc[conv["kind"] == "conv", "gemm_kernel"].isin(["persistent", ""])).all()
    assert (conv.loc[(conv["kind"] == "conv") & (conv["unit"] == "matrix"), "gemm_kernel"] == "persistent").all()
    g = dse.workload("gemm:8192x8192x256", dtype="fp8", gemm_kernel="one_tile")
    assert list(g.ops["gemm_kernel"]) == ["one_tile"] and g.scenario["gemm_kernel"] == "one_tile"
    # the H100's kernels are persistent unless a workload says otherwise: a one-tile kernel pays its epilogue
    h100 = dse.hardware("h100-sxm")
    t_auto = dse.predict(dse.workload("gemm:8192x8192x256", dtype="fp8"), h100).time_s
    assert dse.predict(g, h100).time_s > t_auto == dse.predict(
        dse.workload("gemm:8192x8192x256", dtype="fp8", gemm_kernel="persistent"), h100).time_s


@pytest.mark.parametrize("name", ["llama2-7b", "gemm:64x64x64"])
def test_a_bad_gemm_kernel_is_one_line_naming_the_field(name: str) -> None:
    with pytest.raises(DseError) as exc:
        dse.workload(name, gemm_kernel="stream_k")
    msg = str(exc.value)
    assert "\n" not in msg and "gemm_kernel" in msg and "stream_k" in msg and "one_tile" in msg


def test_attention_gqa_sets_the_rows_a_gqa_attention_tile_stacks() -> None:
    per_head = dse.workload("mistral-7b", phase="decode", batch=8, context=1024, attention_gqa="per_head")
    grouped = dse.workload("mistral-7b", phase="decode", batch=8, context=1024)
    att = {k: w.ops[w.ops["kind"] == "attention"].iloc[0] for k, w in (("per_head", per_head), ("grouped", grouped))}
    assert att["grouped"]["head_rows"] == 4 and att["per_head"]["head_rows"] == 1  # 32 query heads, 8 KV heads
    assert att["per_head"]["ctas"] == 4 * att["grouped"]["ctas"]
    assert per_head.matrix_flops == grouped.matrix_flops and "gqa:per_head" in per_head.label()
    assert "gqa" not in grouped.label()
    with pytest.raises(DseError) as exc:
        dse.workload("mistral-7b", attention_gqa="per_group")
    assert "\n" not in str(exc.value) and "attention_gqa" in str(exc.value) and "per_head" in str(exc.value)
    with pytest.raises(DseError, match="does not use attention_gqa"):
        dse.workload("resnet50", attention_gqa="per_head")


@pytest.mark.parametrize(("name", "key"), [("gemm:64x64x64", "seq"), ("copy:1000", "batch"), ("copy:1000", "causal"),
                                           ("attention:1x2x16x16x8", "batch")])
def test_a_single_operator_names_a_keyword_it_does_not_use(name: str, key: str) -> None:
    """copy:, gemm: and attention: reject what they would otherwise ignore, in one line naming what they accept."""
    with pytest.raises(DseError) as ei:
        library.workload(name, **{key: 3})
    assert f"does not use {key}; accepted: dtype" in str(ei.value) and "\n" not in str(ei.value)


def test_a_gemm_writes_its_output_in_the_activation_dtype() -> None:
    """FP8 operands with a 16-bit output (cuBLASLt's FP8 GEMMs): the output bytes, not the FLOPs, change."""
    base = library.workload("gemm:256x512x128", dtype="fp8")
    wide = library.workload("gemm:256x512x128", dtype="fp8", activation_dtype="fp16")
    assert float(wide.ops["c_bytes"].sum()) == 2 * float(base.ops["c_bytes"].sum()) == 2 * 256 * 512
    assert float(wide.ops["a_bytes"].sum()) == float(base.ops["a_bytes"].sum())
    assert wide.flops == base.flops and "act:fp16" in wide.label() and "act:" not in base.label()
    with pytest.raises(DseError, match="activation_dtype: got 'fp7'"):
        library.workload("gemm:256x512x128", dtype="fp8", activation_dtype="fp7")


def test_an_attention_kernel_beside_unfused_attention_is_one_line() -> None:
    # the label said 'flash' over the unfused time
    with pytest.raises(DseError) as err:
        dse.workload("llama2-7b", phase="prefill", seq=2048, fused_attention=False, attention_kernel="flash")
    assert err.value.field == "workload llama2-7b: attention_kernel" and "fused_attention false" in str(err.value)
    assert dse.workload("llama2-7b", phase="prefill", seq=2048, fused_attention=False, attention_kernel="auto")


@pytest.mark.parametrize(("call", "field"), [
    (lambda: dse.gemm(2**40, 1, 1), "workload gemm: M"), (lambda: dse.gemm(1.5, 1, 1), "workload gemm: M"),
    (lambda: dse.elementwise(1000, inputs=-3), "workload elementwise: inputs"),
    (lambda: dse.elementwise(1000, flops_per_elem=float("nan")), "workload elementwise: flops_per_elem"),
    (lambda: dse.elementwise(10, dtype="foo"), "workload elementwise: dtype"),
])
def test_a_single_operator_built_in_python_has_the_command_lines_limits(call, field: str) -> None:
    # dse.gemm(2**40, 1, 1) and (1.5, 1, 1) were built; the command line's gemm:MxNxK refuses them
    with pytest.raises(DseError) as err:
        call()
    assert err.value.field == field


def test_a_collective_workload_is_one_collective_over_the_plans_chips() -> None:
    """``all_reduce:BYTES`` over 8 chips is one collective row of group 8; predicted on dgx-a100 it takes the network
    model's time of that collective plus one launch; on one chip it moves nothing; bad sizes and keywords are one
    line."""
    from dse.hardware.system import load_system
    from dse.predict import network as net

    wl = dse.workload("all_reduce:1073741824", plan={"tp": 8, "chips": 8})
    row = wl.ops.iloc[0]
    assert len(wl.ops) == 1 and row["coll"] == "all_reduce" and row["group"] == 8 and wl.chips == 8
    hw = dse.hardware("a100-80gb")
    sysm = load_system("dgx-a100").resized(8)
    links, bw, eff, _ = sysm.level_arrays(hw)
    b = np.array(bw) * np.array(eff)
    t = net.best_variant("all_reduce", float(1 << 30), 8, 1, sysm.network, b, b * np.array(links))[2]
    p = dse.predict(wl, hw, system=sysm)
    assert p.time_s == pytest.approx(t + hw.compute.launch_overhead_us * 1e-6, rel=1e-9)
    assert p.ops.iloc[0]["ran_on"] == "network" and p.ops.iloc[0]["bound"] == "network"
    assert dse.predict("all_gather:1e9", "dgx-h100", chips=8).time_s > 0
    for name, needle in (("all_reduce:-5", "accepted: all_reduce:BYTES with 0 < BYTES"),
                         ("all_reduce:lots", "accepted: all_reduce:BYTES with a number of bytes")):
        with pytest.raises(DseError, match=needle):
            dse.workload(name)
    with pytest.raises(DseError, match="accepted: none"):
        dse.workload("all_reduce:1e6", dtype="bf16")


def test_a_bad_phase_lists_inference_beside_the_schemas_phases() -> None:
    """'inference' is accepted (prefill for an LLM, forward otherwise) but the error for a misspelt phase listed only
    the schema's five."""
    with pytest.raises(DseError, match=r"or 'inference' \(prefill for a language model, else forward\)"):
        dse.workload("llama2-7b", phase="decoding")
    assert dse.workload("llama2-7b", phase="inference").scenario["phase"] == "prefill"


def test_weight_only_group_scales_are_held_beside_the_weights() -> None:
    """LLaMA-2-7B int4 at group 32 read 4.13 GB of weights and scales per decode step and held 3.37 GB: the scales
    (a bf16 scale and zero point per 32 weights, 0.25 B per weight) are in the footprint now, every expert's for MoE."""
    plain = dse.workload("llama2-7b", phase="decode", weight_dtype="int4").memory["weights"]
    g32 = dse.workload("llama2-7b", phase="decode", weight_dtype="int4", weight_group=32)
    linear = 32 * 4096 * (3 * 4096 + 4096 + 3 * 11008) + 4096 * 32000  # the quantized matrices' weights
    assert g32.memory["weights"] - plain == pytest.approx(linear / 32 * 4 - linear / 4096 * 4, rel=0.02)
    o = g32.ops
    assert g32.memory["weights"] >= float((o["b_bytes"] * o["count"])[o["held"] == "weights"].sum())
    moe = dse.workload("mixtral-8x7b", phase="decode", weight_dtype="int4", weight_group=128).memory["weights"]
    moe0 = dse.workload("mixtral-8x7b", phase="decode", weight_dtype="int4").memory["weights"]
    assert moe - moe0 == pytest.approx(46.7e9 / 128 * 4, rel=0.05)


def test_a_variant_is_the_model_with_its_arch_fields_replaced() -> None:
    from dse.errors import DseError
    from dse.workloads.library import variant

    own = dse.workload("gemma3-27b", phase="decode", batch=2, context=16384)
    same = variant("gemma3-27b", {}, phase="decode", batch=2, context=16384)
    assert same.ops.equals(own.ops) and same.memory == own.memory
    every = variant("gemma3-27b", {"window": None}, phase="decode", batch=2, context=16384)
    assert every.memory["kv_cache"] > 4 * own.memory["kv_cache"]  # 62 layers' KV at 16K against 10 + 52 x 1024
    with pytest.raises(DseError, match=r"^arch\.window\.tokens: got 0; accepted: a number > 0"):
        variant("gemma3-27b", {"window": {"tokens": 0}}, phase="decode")
    # a plan rebuilds a workload from its name, which would drop the change: refused
    with pytest.raises(DseError, match=r"^plan: .* is a variant of its model"):
        dse.predict(every, "h100-sxm", chips=2)
