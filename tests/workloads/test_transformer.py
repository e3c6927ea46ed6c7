"""Transformer rows: dropout, activation dtype (dse.workloads.transformer)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.errors import DseError
from dse.units import DTYPE_BYTES
from dse.workloads.scenario import Scenario


def _bytes(wl, prefix: str) -> float:
    o = wl.ops[wl.ops["name"].str.startswith(prefix)]
    return float(((o["bytes_read"] + o["bytes_written"]) * o["count"]).sum())


def test_dropout_adds_masks_and_the_attention_probability_pass() -> None:
    kw = dict(phase="training", batch=2, seq=1024, fused_attention=False)
    base = dse.workload("gpt3-1.3b", **kw)
    drop = dse.workload("gpt3-1.3b", dropout=0.1, **kw)
    assert drop.bytes > base.bytes
    # fused bias-dropout-add: only the 1-byte mask is extra, written forward and read back in backward,
    # for both dropouts of each of the 24 layers (same shape: one merged row)
    assert _bytes(drop, "layer.dropout") == pytest.approx(2 * 1024 * 2048 * 24 * 2 * (1 + 1))
    flash = dse.workload("gpt3-1.3b", phase="training", batch=2, seq=1024, dropout=0.1)
    assert _bytes(flash, "layer.attention.dropout") == 0.0  # flash attention fuses it
    assert _bytes(drop, "layer.attention.dropout") > 0


def test_dropout_outside_training_is_one_line() -> None:
    with pytest.raises(DseError) as exc:
        dse.workload("gpt3-1.3b", phase="prefill", dropout=0.1)
    assert "\n" not in str(exc.value) and "dropout: got 0.1" in str(exc.value) and "accepted: 0" in str(exc.value)


def _ops(name: str, **kw):
    """The operator rows of a workload (rows merged by shape, names with their suffix)."""
    return dse.workload(name, **kw).ops


@pytest.mark.parametrize("model", ["llama2-7b", "mixtral-8x7b", "deepseek-v3", "bert-base"])
def test_activation_dtype_equal_to_dtype_changes_nothing(model: str) -> None:
    kw = dict(dtype="fp8") if model == "bert-base" else dict(phase="prefill", seq=256, dtype="fp8")
    pd.testing.assert_frame_equal(_ops(model, **kw), _ops(model, activation_dtype="fp8", **kw))


@pytest.mark.parametrize("model", ["llama2-7b", "mixtral-8x7b", "deepseek-v3"])
def test_activation_dtype_keeps_16_bit_activations_beside_fp8_gemms(model: str) -> None:
    """FP8 GEMMs with fp16 activations between kernels: every GEMM reads 1-byte inputs and weights and writes
    2-byte outputs; vector kernels read 2 bytes per element; the norm and the gated activation write the next
    GEMM's 1-byte input; the FLOPs are those of the all-fp8 run."""
    kw = dict(phase="prefill", seq=256, dtype="fp8")
    fp8, mixed = _ops(model, **kw), _ops(model, activation_dtype="fp16", **kw)
    g = mixed[mixed["kind"] == "gemm"]
    assert (g["elem_a"] == 1).all() and (g["elem_out"] == 2).all()
    assert (g["c_bytes"] == 2 * g["batch"] * g["M"] * g["N"]).all()
    assert mixed["flops"].sum() == fp8["flops"].sum()
    vec = mixed[mixed["unit"] == "vector"]
    vec = vec[~vec["name"].str.contains("softmax|kv_cache|dequant")]
    assert (vec["dtype"] == "fp16").all()
    norms = mixed[mixed["name"].str.startswith("layer.norm")]
    assert (norms["bytes_written"] == norms["M"]).all() and (norms["bytes_read"] >= 2 * norms["M"]).all()
    act = mixed[mixed["name"].str.endswith("_act")]
    assert len(act) and (act["bytes_written"] == act["M"]).all()
    assert (mixed["bytes_read"] + mixed["bytes_written"]).sum() > (fp8["bytes_read"] + fp8["bytes_written"]).sum()


def test_activation_dtype_costs_time_between_the_all_8_and_all_16_bit_runs() -> None:
    # TensorRT-LLM's FP8 engines: a 2048-token Llama-2-7B prefill on an H100 (validation rows trtllm09-h100-*)
    kw = dict(phase="prefill", seq=2048, kv_dtype="fp8", attention_dtype="fp16")
    h100 = dse.hardware("h100-sxm")
    t8 = dse.predict(dse.workload("llama2-7b", dtype="fp8", **kw), h100).time_s
    tmix = dse.predict(dse.workload("llama2-7b", dtype="fp8", activation_dtype="fp16", **kw), h100).time_s
    t16 = dse.predict(dse.workload("llama2-7b", dtype="fp16", **kw), h100).time_s
    assert t8 < tmix < t16


def test_activation_dtype_is_checked_and_named_in_the_label() -> None:
    wl = dse.workload("llama2-7b", phase="prefill", seq=128, dtype="fp8", activation_dtype="bf16")
    assert "act:bf16" in wl.label()
    fp8 = dse.workload("llama2-7b", phase="prefill", seq=128, dtype="fp8")
    assert wl.memory["activations"] == 2 * fp8.memory["activations"]  # held in 16 bits
    assert wl.memory["weights"] == fp8.memory["weights"]
    with pytest.raises(DseError, match="activation_dtype"):
        dse.workload("llama2-7b", dtype="fp8", activation_dtype="fp9")
    with pytest.raises(DseError, match="does not use activation_dtype"):
        dse.workload("resnet50", activation_dtype="fp16")


@pytest.mark.parametrize("model", ["llama2-7b", "mixtral-8x7b", "deepseek-v3"])
def test_input_quant_kernel_puts_a_quantize_kernel_before_every_fp8_gemm(model: str) -> None:
    """vLLM's FP8 linear layers quantize their input in a kernel of their own (``input_quant: kernel``): before
    every FP8 GEMM a vector row, not fused, reads its ``batch x M x K`` input in 16 bits and writes it in 8, as
    often as the GEMM runs; the norms and activation functions then write 16 bits; the GEMMs are unchanged."""
    kw = dict(phase="prefill", seq=256, dtype="fp8", activation_dtype="bf16")
    wl = dse.workload(model, **kw)
    prod, kern = wl.ops, dse.workload(model, input_quant="kernel", **kw).ops
    assert "quant:kernel" in dse.workload(model, input_quant="kernel", **kw).label() and "quant" not in wl.label()
    pd.testing.assert_frame_equal(prod[prod["kind"] == "gemm"].reset_index(drop=True),
                                  kern[kern["kind"] == "gemm"].reset_index(drop=True))
    q = kern[kern["name"].str.contains(r"\.quantize")]
    gemm8 = kern[(kern["kind"] == "gemm") & (kern["elem_a"] == 1)]
    assert len(q) and not q["fused"].any() and (q["dtype"] == "bf16").all()
    assert (q["bytes_read"] == 2 * q["M"]).all() and (q["bytes_written"] == q["M"]).all()
    # as many quantized elements as the FP8 GEMMs read (rows merged by shape keep their counts)
    assert (q["M"] * q["count"]).sum() == (gemm8["batch"] * gemm8["M"] * gemm8["K"] * gemm8["count"]).sum()
    assert not prod["name"].str.contains(r"\.quantize").any()  # producer mode: the norms quantize on write
    norms = kern[kern["name"].str.contains("norm")]
    assert (norms["bytes_written"] == 2 * norms["M"]).all()  # 16 bits out: the quantize kernel narrows them
    h100 = dse.hardware("h100-sxm")
    assert dse.predict(dse.workload(model, input_quant="kernel", **kw), h100).time_s > dse.predict(wl, h100).time_s


def test_input_quant_kernel_needs_wider_activations_in_one_line() -> None:
    for kw in (dict(dtype="fp8"), dict(dtype="bf16", activation_dtype="bf16"), dict(dtype="fp16", activation_dtype="fp8")):
        with pytest.raises(DseError) as exc:
            dse.workload("llama2-7b", phase="prefill", seq=64, input_quant="kernel", **kw)
        msg = str(exc.value)
        assert "\n" not in msg and "input_quant: got 'kernel'" in msg and "accepted" in msg
    with pytest.raises(DseError, match="input_quant"):
        dse.workload("llama2-7b", dtype="fp8", activation_dtype="bf16", input_quant="fused")
    with pytest.raises(DseError, match="does not use input_quant"):
        dse.workload("resnet50", input_quant="kernel")


def _with_arch(tmp_path, name: str, new_name: str, **arch) -> str:
    """``name``'s library YAML with ``arch`` fields changed, written to ``tmp_path`` as ``new_name``."""
    import yaml

    from dse.workloads.library import workloads_dir

    desc = yaml.safe_load((workloads_dir() / f"{name}.yaml").read_text())
    desc["arch"].update(arch)
    desc["name"] = new_name
    path = tmp_path / f"{new_name}.yaml"
    path.write_text(yaml.safe_dump(desc))
    return str(path)


def _sequential_twin(tmp_path, name: str) -> str:
    """``name``'s library YAML (a parallel-block model) with ``parallel_block`` off."""
    import yaml

    from dse.workloads.library import workloads_dir

    assert yaml.safe_load((workloads_dir() / f"{name}.yaml").read_text())["arch"]["parallel_block"] is True
    return _with_arch(tmp_path, name, f"{name}-sequential", parallel_block=False)


@pytest.mark.parametrize("name", ["gpt-j-6b", "phi-2"])
def test_a_parallel_block_has_one_norm_and_one_three_input_add_and_the_same_matrix_work(tmp_path, name) -> None:
    par = dse.workload(name, phase="prefill", seq=256)
    seq = dse.workload(_sequential_twin(tmp_path, name), phase="prefill", seq=256)
    L = 32 if name == "phi-2" else 28
    assert par.matrix_flops == seq.matrix_flops
    norms = {k: int(w.ops.loc[w.ops["kind"] == "norm", "count"].sum()) for k, w in (("par", par), ("seq", seq))}
    assert norms == {"par": L + 1, "seq": 2 * L + 1}  # the final norm besides the layers'
    adds = par.ops[par.ops["name"].str.startswith("layer.residual")]
    assert len(adds) == 1 and adds["count"].iloc[0] == L
    one_add = seq.ops[seq.ops["name"].str.startswith("layer.residual")].iloc[0]
    assert adds["bytes_read"].iloc[0] == pytest.approx(1.5 * one_add["bytes_read"])  # x + attention + MLP
    assert seq.scenario["params"] - par.scenario["params"] == L * (2560 if name == "phi-2" else 4096)  # a norm each
    assert dse.predict(par, "h100-sxm").time_s < dse.predict(seq, "h100-sxm").time_s


def test_a_parallel_block_reduces_its_two_row_parallel_outputs_once_under_tensor_parallelism(tmp_path) -> None:
    def all_reduces(wl) -> float:
        p = dse.predict(wl, "dgx-h100", chips=2, tp=2)
        r = p.ops[p.ops["name"].str.startswith("tp.")]
        return float(r["count"].sum())

    kw = dict(phase="decode", batch=8, context=1024)
    par = all_reduces(dse.workload("gpt-j-6b", **kw))
    seq = all_reduces(dse.workload(_sequential_twin(tmp_path, "gpt-j-6b"), **kw))
    assert (par, seq) == (28 + 1, 2 * 28 + 1)  # one per layer (two), plus the embedding's


def test_a_parallel_block_cannot_hold_a_conformer(tmp_path) -> None:
    with pytest.raises(DseError) as exc:
        dse.workload(_with_arch(tmp_path, "conformer-s", "bad", parallel_block=True))
    assert "\n" not in str(exc.value) and "parallel_block" in str(exc.value)


def test_a_user_model_beyond_a_limit_exits_2_in_one_line_through_predict(tmp_path, capsys) -> None:
    from dse.cli import main

    path = _with_arch(tmp_path, "llama3-8b", "huge", hidden=2**40)
    assert main(["predict", path, "a100-80gb"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {path}: arch.hidden: got 1099511627776; accepted: a number <= 131072\n"


def test_a_model_at_every_limit_loads_and_its_product_beyond_int64_is_one_line(tmp_path) -> None:
    big = dict(layers=2**12, hidden=2**17, heads=2**12, kv_heads=2**12, head_dim=2**12, ffn=2**20, vocab=2**22,
               default_seq=2**24, max_seq=2**24)
    path = _with_arch(tmp_path, "llama3-8b", "big", **big)
    wl = dse.workload(path, phase="decode", batch=1, context=1024)
    assert wl.scenario["params"] > 2**12 * 3 * 2**17 * 2**20
    with pytest.raises(DseError) as exc:  # batch 2^20 x seq 2^24 x hidden 2^17 elements: past int64
        dse.workload(path, phase="prefill", batch=2**20, seq=2**24)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("workload big: operator ") and "accepted: at most 2^63 - 1" in msg


def test_moe_routing_beyond_its_experts_and_dense_layers_past_the_model_are_refused(tmp_path) -> None:
    moe = dict(experts=8, active=9, expert_ffn=2048)
    with pytest.raises(DseError, match=r"arch\.moe\.active: got 9 with 8 experts; accepted: an integer from 1 to "
                                       "experts"):
        dse.workload(_with_arch(tmp_path, "llama3-8b", "moe1", moe=moe))
    moe = dict(experts=8, active=2, expert_ffn=2048, dense_layers=32)
    with pytest.raises(DseError, match=r"arch\.moe\.dense_layers: got 32 with 32 layers; accepted: an integer from 0 "
                                       "to layers - 1"):
        dse.workload(_with_arch(tmp_path, "llama3-8b", "moe2", moe=moe))


def test_the_causal_flag_sets_the_attention_mask_of_a_decoder(tmp_path) -> None:
    """``arch.causal: false`` runs a decoder bidirectionally: its prefill attention computes the whole score
    matrix (about twice a causal kernel's FLOPs at a long prompt); everything else is the same model."""
    import yaml

    import dse
    from dse.workloads.library import workloads_dir

    data = yaml.safe_load((workloads_dir() / "llama2-7b.yaml").read_text(encoding="utf-8"))
    data["arch"]["causal"] = False
    data["name"] = "bidi"
    path = tmp_path / "bidi.yaml"
    path.write_text(yaml.safe_dump(data))
    kw = {"phase": "prefill", "batch": 1, "seq": 4096}
    causal, bidi = dse.workload("llama2-7b", **kw).ops, dse.workload(str(path), **kw).ops
    att = lambda o: float((o.loc[o["kind"] == "attention", "flops"] * o.loc[o["kind"] == "attention", "count"]).sum())  # noqa: E731
    assert 1.9 < att(bidi) / att(causal) < 2.05
    rest = lambda o: float((o.loc[o["kind"] == "gemm", "flops"] * o.loc[o["kind"] == "gemm", "count"]).sum())  # noqa: E731
    assert rest(bidi) == rest(causal)


# weight roles stored in dtypes of their own (``weight_dtypes``)

def _gemm(wl, name: str):
    return wl.ops[wl.ops["name"] == name].iloc[0]


def test_each_role_streams_its_own_dtype_and_the_footprint_adds_them_up() -> None:
    """tt_transformers' performance precision on Llama 3.1 8B: FF1/FF3 in bfp4, the rest in bfp8. The MLP's up
    projection reads 4.5 bits per weight, the others 8.5, and the weights' footprint is params x 1.0625 B less
    the up projection's weights x (1.0625 - 0.5625) B."""
    base = dse.workload("llama3-8b", phase="decode", batch=32, context=128, weight_dtype="bfp8")
    mixed = dse.workload("llama3-8b", phase="decode", batch=32, context=128, weight_dtype="bfp8",
                         weight_dtypes="ffn_up=bfp4")
    up, down = _gemm(mixed, "layer.ffn_up"), _gemm(mixed, "layer.ffn_down")
    assert (up["dtype_b"], down["dtype_b"], _gemm(mixed, "lm_head")["dtype_b"]) == ("bfp4", "bfp8", "bfp8")
    assert up["b_bytes"] == pytest.approx(up["K"] * up["N"] * 0.5625)
    assert down["b_bytes"] == pytest.approx(down["K"] * down["N"] * 1.0625)
    up_weights = up["K"] * up["N"] * up["count"]  # 32 layers of [4096, 2 x 14336]
    assert up_weights == 32 * 4096 * 2 * 14336
    assert mixed.memory["weights"] == pytest.approx(base.memory["weights"] - up_weights * (1.0625 - 0.5625))
    assert "ffn_up:bfp4" in mixed.label()


@pytest.mark.parametrize("role,row", [("qkv_proj", "layer.qkv_proj"), ("out_proj", "layer.out_proj"),
                                      ("ffn_down", "layer.ffn_down"), ("lm_head", "lm_head")])
def test_every_role_names_its_gemm_and_only_it(role: str, row: str) -> None:
    wl = dse.workload("llama2-7b", phase="decode", batch=4, context=512, weight_dtypes={role: "int4"})
    narrowed = wl.ops[wl.ops["dtype_b"] == "int4"]
    assert set(narrowed["name"]) == {row, f"{row}.dequant"}  # its GEMM, and the kernel that dequantizes for it


def test_moe_experts_follow_the_ffn_roles_and_count_every_expert_in_memory() -> None:
    """An MoE's expert up/down projections take the ffn_up / ffn_down dtypes; the footprint counts all experts'
    weights, not only the ones a step touches."""
    kw = dict(phase="decode", batch=1, context=256)
    base = dse.workload("mixtral-8x7b", **kw)
    mixed = dse.workload("mixtral-8x7b", weight_dtypes={"ffn_up": "fp8", "ffn_down": "fp8"}, **kw)
    ex = _gemm(mixed, "moe.expert_up")
    assert ex["dtype_b"] == "fp8" and _gemm(mixed, "moe.expert_down")["dtype_b"] == "fp8"
    experts = 8 * 32 * 4096 * 14336 * 3  # every expert's w1, w3 and w2
    saved = experts * (DTYPE_BYTES["bf16"] - DTYPE_BYTES["fp8"])
    scales = 8 * 32 * (2 * 14336 + 4096) * 2  # fp8 weight-only: a bf16 scale per column of every expert's matrices
    assert base.memory["weights"] - mixed.memory["weights"] == pytest.approx(saved - scales, rel=1e-9)


def test_bad_roles_are_one_line_naming_the_field() -> None:
    for text in ("ffn=bfp4", "ffn_up=", "ffn_up=bfp4,ffn_up=int4", "ffn_up=bfp4;lm_head=bfp8"):
        with pytest.raises(ValueError, match="accepted: role=dtype items, each role once"):
            Scenario(weight_dtypes=text)
    with pytest.raises(DseError, match="does not use weight_dtypes"):
        dse.workload("resnet50", weight_dtypes="ffn_up=bfp4")
    with pytest.raises(DseError, match="weight_group: got 128; accepted: none with a block-scaled weight dtype"):
        dse.workload("llama2-7b", phase="decode", weight_dtype="bfp4", weight_group=128)


def _norm_and_act(wl: dse.Workload) -> tuple[pd.Series, pd.Series]:
    ops = wl.ops.set_index(wl.ops["name"].str.replace(r" \(\+\d+ same shape\)$", "", regex=True))
    return ops.loc["layer.norm1"], ops.loc["layer.ffn_act"]


def test_an_eager_rmsnorm_and_gated_activation_are_their_pytorch_kernels() -> None:
    """PyTorch eager runs an RMSNorm as its reference code's eight kernels (float, pow, mean, + eps, rsqrt, x * rstd,
    type_as, * weight: 16 + 2b bytes read, 12 + 2b written per element in all, where one kernel moves b and b) and a
    SwiGLU as two (silu(gate), * up: 3b read, 2b written); the same FLOPs. A graph step, or one with fused elementwise
    work, keeps one kernel each; LayerNorm, a native kernel, stays one when eager."""
    kw = dict(phase="training", batch=2, seq=512, dtype="bf16")
    graph, eager = dse.workload("llama2-7b", **kw), dse.workload("llama2-7b", execution="eager", **kw)
    (gn, ga), (en, ea) = _norm_and_act(graph), _norm_and_act(eager)
    b = DTYPE_BYTES["bf16"]
    norms, acts = gn["count"], ga["count"]  # 2 per layer + the final norm (one row: the same shape); 1 per layer
    assert (norms, acts) == (2 * 32 + 1, 32) and (en["count"], ea["count"]) == (8 * norms, 2 * acts)
    elems = gn["bytes_written"] / b  # one kernel reads and writes b per element
    assert en["count"] * en["bytes_read"] == pytest.approx(norms * elems * (16 + 2 * b))
    assert en["count"] * en["bytes_written"] == pytest.approx(norms * elems * (12 + 2 * b))
    assert en["count"] * en["flops"] == pytest.approx(norms * gn["flops"])
    act_elems = ga["bytes_written"] / b
    assert ea["count"] * ea["bytes_read"] == pytest.approx(acts * act_elems * 3 * b)
    assert ea["count"] * ea["bytes_written"] == pytest.approx(acts * act_elems * 2 * b)
    assert dse.predict(eager, "a100-80gb").time_s > dse.predict(graph, "a100-80gb").time_s
    fn, fa = _norm_and_act(dse.workload("llama2-7b", execution="eager", fuse_elementwise=True, **kw))
    assert (fn["count"], fa["count"]) == (norms, acts)
    ln = _norm_and_act(dse.workload("gpt3-1.3b", execution="eager", **kw))  # LayerNorm and GELU: one kernel each
    assert (ln[0]["count"], ln[1]["count"]) == (2 * 24 + 1, 24)


def test_heads_that_split_no_hidden_are_named_before_the_kv_heads_they_misfit() -> None:
    """heads 15 over hidden 2048 with kv_heads 4 blamed kv_heads; the heads are what is wrong."""
    from pydantic import ValidationError

    from dse.workloads.transformer import TransformerArch

    with pytest.raises(ValidationError, match=r"got 15 with hidden 2048"):
        TransformerArch(kind="decoder", layers=2, hidden=2048, heads=15, kv_heads=4, ffn=8192, vocab=32000,
                        activation="swiglu", norm="rmsnorm")


# sliding-window (local) attention: ``arch.window``

def _attention_work(o: pd.DataFrame) -> float:
    att = o["kind"] == "attention"
    return float((o.loc[att, "flops"] * o.loc[att, "count"]).sum())


@given(q=st.integers(1, 300), past=st.integers(0, 300), w=st.integers(1, 400))
@settings(max_examples=200, deadline=None)
def test_window_blocks_compute_exactly_the_pairs_of_a_sliding_window(q: int, past: int, w: int) -> None:
    from dse.workloads.ops import causal_pairs
    from dse.workloads.transformer import window_blocks

    kv = q + past
    blocks = window_blocks(q, kv, w)
    exact = sum(min(kv - q + i + 1, w) for i in range(q))
    got = sum(t * (causal_pairs(a, b, 64, "whole_row") if causal else a * b) for a, b, causal, t in blocks)
    assert got == exact and sum(a for a, _, _, _ in blocks) == q and all(b <= max(w, kv) for _, b, _, _ in blocks)


@given(q=st.integers(1, 3000), past=st.integers(0, 3000), c=st.integers(1, 700))
@settings(max_examples=200, deadline=None)
def test_chunk_blocks_compute_exactly_the_pairs_of_chunked_attention(q: int, past: int, c: int) -> None:
    from dse.workloads.ops import causal_pairs
    from dse.workloads.transformer import chunk_blocks

    kv = q + past
    blocks = chunk_blocks(q, kv, c)
    exact = sum((kv - q + i) % c + 1 for i in range(q))
    got = sum(t * causal_pairs(a, b, 64, "whole_row") for a, b, _, t in blocks)
    assert got == exact and sum(a * t for a, _, _, t in blocks) == q and all(b <= c for _, b, _, _ in blocks)


def test_a_window_longer_than_the_context_changes_nothing(tmp_path) -> None:
    wide = _with_arch(tmp_path, "gemma3-27b", "wide", window={"tokens": 1 << 20, "global_every": 6})
    for kw in ({"phase": "decode", "batch": 4, "context": 4096}, {"phase": "prefill", "seq": 4096}):
        a, b = dse.workload(wide, **kw), dse.workload(_with_arch(tmp_path, "gemma3-27b", "none", window=None), **kw)
        assert _attention_work(a.ops) == _attention_work(b.ops) and a.memory == b.memory


def test_local_layers_read_their_window_and_hold_a_rolling_buffer(tmp_path) -> None:
    """Gemma 3 27B at a 32K context: 52 of 62 layers read 1024 keys, 10 read all; its KV cache holds 32K tokens in 10
    layers and 1024 in 52 (16 kv heads x 128 x 2 bytes, K and V): 5.3x less than with every layer global (the user
    guide's figure)."""
    wl = dse.workload("gemma3-27b", phase="decode", batch=2, context=32768)
    full = dse.workload(_with_arch(tmp_path, "gemma3-27b", "full", window=None), phase="decode", batch=2, context=32768)
    assert round(full.memory["kv_cache"] / wl.memory["kv_cache"], 1) == 5.3
    kw = {"phase": "decode", "batch": 4, "context": 32768}  # the user guide's h200 step, with and without windows
    local = dse.predict(dse.workload("gemma3-27b", **kw), "h200")
    glob = dse.predict(dse.workload(_with_arch(tmp_path, "gemma3-27b", "full4", window=None), **kw), "h200")
    assert (round(local.time_s * 1e3, 1), round(glob.time_s * 1e3, 1)) == (19.6, 32.7)
    assert round(glob.time_s / local.time_s, 2) == 1.67
    assert (round(local.memory["kv_cache"] / 1e9, 1), round(glob.memory["kv_cache"] / 1e9, 1)) == (12.5, 66.6)
    o = wl.ops.set_index("name")
    assert (o.loc["layer.attention", "count"], o.loc["layer.attention_local", "count"]) == (10, 52)
    assert (o.loc["layer.attention", "K"], o.loc["layer.attention_local", "K"]) == (32768, 1024)
    per = 2 * 16 * 128 * 2
    assert wl.memory["kv_cache"] == 2 * per * (10 * 32768 + 52 * 1024)


def test_a_fused_windowed_prefill_computes_its_band_and_an_unfused_one_masks_whole_scores() -> None:
    """gpt-oss-20b at an 8192-token prompt: 12 global layers (the causal triangle) and 12 local ones (the first 128
    queries' triangle, then 128 keys each): 4 head_dim FLOPs a pair, 64 heads of 64."""
    kw = {"phase": "prefill", "seq": 8192}
    s, w = 8192, 128
    per_layer = lambda pairs: 4.0 * 64 * 64 * pairs  # noqa: E731
    local = w * (w + 1) / 2 + (s - w) * w
    fused = dse.workload("gpt-oss-20b", attention_kernel="whole_row", **kw)
    assert _attention_work(fused.ops) == pytest.approx(12 * per_layer(s * (s + 1) / 2) + 12 * per_layer(local))
    unfused = dse.workload("gpt-oss-20b", fused_attention=False, **kw)
    qk = unfused.ops[unfused.ops["name"] == "layer.attention.qk"].iloc[0]
    assert qk["count"] == 24 and qk["K"] == 64 and qk["N"] == s  # every layer's whole score matrix


def test_serving_local_layers_read_the_mean_of_their_window_over_a_sequence() -> None:
    from dse.workloads.serving import mean_read_context

    i, o, w = 2048, 4096, 4096
    cap = lambda t: np.minimum(t, w)  # noqa: E731
    assert mean_read_context(i, o, None, cap) == round(sum(min(i + t, w) for t in range(1, o + 1)) / o)
    assert mean_read_context(i, o, None, cap) < min(i + o // 2, w)  # the mean of the min, not the min of the mean
    sv = dse.workload("gemma2-9b", phase="serving", batch=8, input_len=i, output_len=o)
    rows = sv.ops.set_index("name")
    assert rows.loc["decode.layer.attention_local", "K"] == mean_read_context(i, o, None, cap)
    assert rows.loc["decode.layer.attention", "K"] == i + o // 2


@pytest.mark.parametrize(("base", "arch", "field", "says"), [
    ("bert-base", {"window": {"tokens": 128}}, "arch.window", "accepted: a causal decoder"),
    ("deepseek-v3", {"window": {"tokens": 128}}, "arch.window", "with mla"),
    ("llama3-8b", {"window": {"tokens": 128, "global_every": 33}}, "arch.window.global_every",
     "accepted: 0 (every layer local) or 1 to 32"),
    ("llama3-8b", {"window": {"tokens": 0}}, "arch.window.tokens", "got 0"),
])
def test_a_window_the_model_cannot_have_is_one_line_naming_the_field(tmp_path, base, arch, field, says) -> None:
    with pytest.raises(DseError) as exc:
        dse.workload(_with_arch(tmp_path, base, "bad", **arch))
    msg = str(exc.value)
    assert "\n" not in msg and f"{field}: " in msg and says in msg


def test_a_chunked_layer_attends_within_its_chunk() -> None:
    """Llama 4 Scout: 36 of 48 layers attend within aligned chunks of 8192 tokens, 12 globally. A 20000-token prompt
    is two whole chunks and one of 3616 in the local layers; a decode step at KV length 8193 opens a new chunk and
    reads one key there, while the cache holds at most a chunk per local layer."""
    pre = dse.workload("llama4-scout", phase="prefill", seq=20000, attention_kernel="whole_row")
    per_pair = 4.0 * 40 * 128  # 40 query heads of 128
    tri = lambda n: n * (n + 1) / 2  # noqa: E731
    assert _attention_work(pre.ops) == pytest.approx(per_pair * (12 * tri(20000) + 36 * (2 * tri(8192) + tri(3616))))
    dec = dse.workload("llama4-scout", phase="decode", batch=2, context=8193).ops.set_index("name")
    assert (dec.loc["layer.attention", "K"], dec.loc["layer.attention_local", "K"]) == (8193, 1)
    mem = dse.workload("llama4-scout", phase="decode", batch=2, context=8193).memory["kv_cache"]
    assert mem == 2 * (2 * 8 * 128 * 2) * (12 * 8193 + 36 * 8192)


@pytest.mark.parametrize("name", ["llama4-scout", "llama4-maverick"])
def test_llama4_reads_its_published_active_parameters(name: str) -> None:
    """Meta's model cards: 17 B active parameters (rounded to a billion), the embedding counted: a decode token's
    matrix work over 2 plus the embedding's 202048 x 5120. Maverick's MoE layers alternate with dense ones
    (``moe.every: 2``): 24 dense FFNs of 16384 and 24 of one routed and one shared expert of 8192."""
    active = dse.workload(name, phase="decode", context=1).matrix_flops / 2 + 202048 * 5120
    assert active == pytest.approx(17e9, rel=0.03)
    ops = dse.workload(name, phase="decode", context=1).ops.set_index("name")
    assert ops.loc["moe.router", "count"] == (48 if name == "llama4-scout" else 24)
    assert ("dense.ffn_up" in ops.index) == (name == "llama4-maverick")


def test_moe_every_that_leaves_no_moe_layer_is_one_line(tmp_path) -> None:
    with pytest.raises(DseError) as exc:
        dse.workload(_with_arch(tmp_path, "mixtral-8x7b", "sparse", moe={"experts": 8, "active": 2,
                                                                         "expert_ffn": 14336, "every": 33}))
    assert "arch.moe.every: got 33 with 32 layers" in str(exc.value) and "\n" not in str(exc.value)
