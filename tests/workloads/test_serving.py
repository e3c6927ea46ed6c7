"""LLM serving: prefill + batched decode combined into tokens/s, TTFT and TPOT (dse.workloads.serving)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.api import best_batch
from dse.errors import DseError
from dse.workloads.serving import serving_metrics

KW = dict(phase="serving", input_len=512, output_len=128)


def test_serving_pass_is_one_prefill_plus_output_len_decode_steps() -> None:
    wl = dse.workload("llama2-7b", batch=8, **KW)
    p = dse.predict(wl, "a100-80gb")
    pre = dse.predict(dse.workload("llama2-7b", phase="prefill", batch=8, seq=512), "a100-80gb").time_s
    dec = dse.predict(dse.workload("llama2-7b", phase="decode", batch=8, context=512 + 64), "a100-80gb").time_s
    assert p.time_s == pytest.approx(pre + 128 * dec, rel=1e-9)
    s = p.serving
    assert s["tokens_per_s"] == pytest.approx(8 * 128 / p.time_s)
    assert s["tpot_s"] == pytest.approx(p.time_s / 128) and s["decode_step_s"] == pytest.approx(dec)
    assert s["ttft_s"] == pytest.approx(dec + pre / 8)  # its iteration runs a decode step of the batch beside it
    assert s["tpot_max_s"] == pytest.approx(s["ttft_s"])  # 8 < 128 steps: one prompt joins an iteration
    assert "in512 out128" in wl.label() and wl.memory["kv_cache"] > 0


def test_batching_raises_throughput_and_tpot_and_chunking_cuts_the_stall() -> None:
    s1 = dse.predict(dse.workload("llama2-7b", batch=1, **KW), "a100-80gb").serving
    s32 = dse.predict(dse.workload("llama2-7b", batch=32, **KW), "a100-80gb").serving
    assert s32["tokens_per_s"] > 8 * s1["tokens_per_s"] and s32["tpot_s"] > s1["tpot_s"]
    c = dse.predict(dse.workload("llama2-7b", batch=32, chunk=128, **KW), "a100-80gb").serving
    assert c["tokens_per_s"] == pytest.approx(s32["tokens_per_s"])  # same work, scheduled differently
    assert c["tpot_max_s"] < s32["tpot_max_s"] and c["ttft_s"] > s32["ttft_s"]


def test_best_batch_respects_the_tpot_limit_and_memory() -> None:
    best, table = best_batch("llama2-7b", "a100-80gb", 0.02, batches=[1, 4, 16, 64, 256], **{k: v for k, v in KW.items()
                                                                                            if k != "phase"})
    ok = table[(table["tpot_s"] <= 0.02) & table["fits"]]
    assert best == int(ok.loc[ok["tokens_per_s"].idxmax(), "batch"])
    assert (table.loc[table["batch"] > best, "tpot_s"] > 0.02).all() or not table.loc[table["batch"] > best, "fits"].all()
    assert best_batch("llama2-7b", "a100-80gb", 1e-6, batches=[1, 2], input_len=64, output_len=8)[0] is None


def test_serving_in_a_plan_and_in_a_mix_score() -> None:
    wl = dse.workload("llama2-70b", batch=16, **KW)
    p = dse.predict(wl, "dgx-a100", chips=8, tp=8)
    assert p.serving["tokens_per_s"] > 0 and p.network_s > 0
    from dse.hardware.designs import DesignBatch
    from dse.predict import mix_times
    from dse.workloads.mix import Mix

    mix = Mix.of([dse.workload("llama2-7b", batch=16, **KW), dse.workload("resnet50")])
    t = mix_times(DesignBatch.from_hardware(dse.hardware("a100-80gb")), mix)
    assert t.shape == (1, 2) and t[0, 0] == pytest.approx(dse.predict(mix.workloads[0], "a100-80gb").time_s)


@pytest.mark.parametrize(("kw", "field"), [({"output_len": 0}, "output_len"), ({"input_len": -1}, "input_len")])
def test_bad_serving_lengths_are_one_line(kw: dict, field: str) -> None:
    with pytest.raises(DseError) as exc:
        dse.workload("llama2-7b", **{**KW, **kw})
    msg = str(exc.value)
    assert "\n" not in msg and field in msg and "accepted" in msg


def test_serving_needs_both_lengths_a_decoder_and_no_recompute() -> None:
    for bad in (lambda: dse.workload("llama2-7b", phase="serving"),
                lambda: dse.workload("bert-base", phase="serving"),
                lambda: dse.workload("llama2-7b", plan={"recompute": "full"}, **KW)):
        with pytest.raises(DseError) as exc:
            bad()
        assert "\n" not in str(exc.value) and "accepted" in str(exc.value)


@settings(max_examples=50, deadline=None)
@given(st.floats(1e-4, 10), st.floats(1e-4, 10), st.integers(1, 512), st.integers(1, 4096), st.integers(1, 2048),
       st.one_of(st.none(), st.integers(1, 4096)))
def test_metrics_invariants(tp: float, td: float, b: int, i: int, o: int, chunk: int | None) -> None:
    s = serving_metrics(tp, td, b, i, o, chunk)
    assert s["tokens_per_s"] * s["tpot_s"] == pytest.approx(b)  # b sequences each emit a token per TPOT
    assert s["tpot_max_s"] >= s["tpot_s"] * (1 - 1e-9)  # the worst gap is never shorter than the mean one
    assert s["tpot_max_s"] >= s["decode_step_s"] and s["ttft_s"] >= tp / b * (1 - 1e-9)
    n = math.ceil(i / (chunk or i))
    assert s["ttft_s"] == pytest.approx(n * td / o + math.ceil(b * n / o) * tp / b)
    if b * n <= o:  # at most one prompt (chunk) joins an iteration: the lone prompt's TTFT
        assert s["ttft_s"] == pytest.approx(n * td / o + tp / b)
    if chunk and chunk >= i:  # a chunk that holds the whole prompt schedules it as no chunking does
        assert serving_metrics(tp, td, b, i, o, None) == pytest.approx(s)


def test_a_study_config_takes_serving_and_training_entries(tmp_path) -> None:
    import copy

    from dse.errors import DseError
    from dse.study import load_context
    from tests.conftest import SMALL_STUDY, write_config

    cfg = copy.deepcopy(SMALL_STUDY)
    cfg["workloads"] = [{"name": "llama2-7b", "phase": "serving", "batch": 8, "input_len": 256, "output_len": 64},
                        {"name": "gpt3-1.3b", "phase": "training", "batch": 4, "seq": 512, "dropout": 0.1,
                         "plan": {"recompute": "full"}}]
    _, ctx = load_context(write_config(tmp_path, cfg))
    assert ctx.mix.labels == ["llama2-7b[serving b8 in256 out64 bf16]", "gpt3-1.3b[training b4 s512 bf16 rc:full]"]
    cfg["workloads"][0]["output_len"] = 0
    with pytest.raises(DseError) as exc:
        load_context(write_config(tmp_path, cfg))
    assert "\n" not in str(exc.value) and "output_len" in str(exc.value) and "accepted" in str(exc.value)


def test_engine_host_time_is_step_base_plus_per_sequence_per_engine_step() -> None:
    """vllm-v0-sync charges t_host = step_base + per_seq x batch on the one prefill step and each of the
    output_len decode steps; without serving_engine nothing is added (the device-only prediction)."""
    from dse.workloads.serving import load_engine

    eng = load_engine("vllm-v0-sync")
    assert eng.step_base_ms > 0 and eng.per_seq_ms > 0 and "6913" in eng.source and "6854" in eng.source
    for b in (1, 64):
        base = dse.predict(dse.workload("llama2-7b", batch=b, **KW), "a100-80gb").serving
        sync = dse.predict(dse.workload("llama2-7b", batch=b, serving_engine="vllm-v0-sync", **KW), "a100-80gb")
        host = (eng.step_base_ms + eng.per_seq_ms * b) * 1e-3
        s = sync.serving
        assert s["decode_step_s"] == pytest.approx(base["decode_step_s"] + host, rel=1e-9)
        assert s["prefill_s"] == pytest.approx(base["prefill_s"] + host, rel=1e-9)
        assert s["tokens_per_s"] == pytest.approx(b * 128 / (base["prefill_s"] + base["decode_s"] + 129 * host))
        assert sync.time_s == pytest.approx(s["prefill_s"] + s["decode_s"], rel=1e-9)  # the pass, host included
    assert "engine:vllm-v0-sync" in sync.workload.label()


def test_engine_host_time_enters_the_validation_of_serving_rows() -> None:
    from dse.validate.suite import predict_case, prepare_row
    from dse.workloads.serving import load_engine

    row = {"id": "x", "workload": "llama2-7b", "scenario": "phase=serving;batch=32;input_len=128;output_len=128",
           "hardware": "a100-80gb", "n_chips": "1", "metric": "tokens_per_s", "value": "100", "source": "test"}
    bare = predict_case(prepare_row(row))
    synced = predict_case(prepare_row({**row, "scenario": row["scenario"] + ";serving_engine=vllm-v0-sync"}))
    host = 129 * load_engine("vllm-v0-sync").step_s(32)
    assert 32 * 128 / synced == pytest.approx(32 * 128 / bare + host, rel=1e-6)


@pytest.mark.parametrize("kw", [dict(serving_engine="tgi", **KW),
                                dict(serving_engine="../vllm-v0-sync", **KW),
                                dict(phase="training", seq=128, serving_engine="vllm-v0-sync")])
def test_bad_serving_engine_is_one_line(kw: dict) -> None:
    with pytest.raises(DseError) as e:
        dse.workload("llama2-7b", **kw)
    assert "serving_engine" in str(e.value) and "accepted" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(("phase", "kw"), [("decode", dict(context=256)), ("prefill", dict(seq=256))])
def test_a_prefill_or_decode_step_through_an_engine_pays_one_engine_step(phase: str, kw: dict) -> None:
    """A time to first token or a time per output token measured through an engine holds one engine step's host
    time, t_host(batch), once; the label names the engine."""
    from dse.workloads.serving import load_engine

    for b in (1, 8):
        bare = dse.predict(dse.workload("llama2-7b", phase=phase, batch=b, **kw), "a100-80gb")
        synced = dse.predict(dse.workload("llama2-7b", phase=phase, batch=b, serving_engine="vllm-v0-sync", **kw),
                             "a100-80gb")
        assert synced.time_s == pytest.approx(bare.time_s + load_engine("vllm-v0-sync").step_s(b), rel=1e-9)
    assert "engine:vllm-v0-sync" in synced.workload.label()


def test_a_batch_larger_than_output_len_prefills_several_prompts_per_iteration() -> None:
    """896 sequences of 128 output tokens: 7 slots free every iteration, so the iteration that prefills a prompt
    prefills 7 and the worst gap is one decode step plus 7 prompts (it was one prompt: below the mean gap)."""
    s = serving_metrics(1.0, 3.0, 896, 128, 128)
    step, one = 3.0 / 128, 1.0 / 896
    assert s["tpot_max_s"] == pytest.approx(step + 7 * one) and s["ttft_s"] == pytest.approx(s["tpot_max_s"])
    assert s["tpot_max_s"] >= s["tpot_s"]
    c = serving_metrics(1.0, 3.0, 896, 128, 128, chunk=32)  # 4 chunks a prompt, 28 chunks an iteration
    assert c["tpot_max_s"] == pytest.approx(step + 28 / 4 * one) and c["ttft_s"] == pytest.approx(4 * c["tpot_max_s"])


def test_kv_block_rounds_each_decode_steps_read_up_to_a_whole_block() -> None:
    """optimum-habana's bucket_internal: the t-th decode step attends to ceil((i + t) / 128) x 128 tokens. For 128
    prompt and 128 generated tokens every step reads 256; for 2048 + 128 every step 2176; the serving pass's decode
    attention is the mean of those, and without kv_block the mean context i + o / 2."""
    from dse.workloads.serving import mean_context, mean_read_context, read_context

    assert [read_context(c, 128) for c in (1, 128, 129, 256, 257)] == [128, 128, 256, 256, 384]
    assert read_context(300, None) == 300
    assert mean_read_context(128, 128, 128) == 256 and mean_read_context(2048, 128, 128) == 2176
    assert mean_read_context(128, 2048, None) == mean_context(128, 2048) == 1152
    assert 1152 + 56 <= mean_read_context(128, 2048, 128) <= 1152 + 72  # about half a block more on average

    kw = dict(phase="serving", batch=64, input_len=128, output_len=128)
    plain, blocked = dse.workload("llama2-7b", **kw), dse.workload("llama2-7b", kv_block=128, **kw)

    def attention(wl):
        r = wl.ops[wl.ops["name"] == "decode.layer.attention"].iloc[0]
        return r["flops"], r["b_bytes"]

    (f0, b0), (f1, b1) = attention(plain), attention(blocked)
    assert b1 / b0 == pytest.approx(256 / 192) and f1 / f0 == pytest.approx(256 / 192)
    assert "kvblock128" in blocked.label()
    decode = dse.workload("llama2-7b", phase="decode", batch=4, context=1000, kv_block=128)
    assert decode.ops[decode.ops["name"] == "layer.attention"].iloc[0]["K"] == 1024  # kv length on the K side


def test_kv_block_outside_decode_is_one_line() -> None:
    with pytest.raises(DseError, match="kv_block: got 128 for phase prefill; accepted: only with phase decode or serving"):
        dse.workload("llama2-7b", phase="prefill", seq=512, kv_block=128)
    with pytest.raises(DseError, match="kv_block"):
        dse.workload("llama2-7b", phase="decode", kv_block=0)


def test_data_parallel_replicas_serve_their_share_of_the_batch() -> None:
    """With dp replicas each serves batch / dp sequences: TTFT and TPOTs equal one replica's at that batch, and
    tokens/s is dp times one replica's (TTFT divided a replica's prefill by the whole batch, 34 ms against 54)."""
    import dse

    kw = dict(phase="serving", input_len=1024, output_len=256)
    two = dse.predict(dse.workload("llama2-70b", batch=32, **kw), "dgx-h100", chips=16, tp=8, dp=2).serving
    one = dse.predict(dse.workload("llama2-70b", batch=16, **kw), "dgx-h100", chips=8, tp=8).serving
    for k in ("ttft_s", "tpot_s", "tpot_max_s", "decode_step_s"):
        assert two[k] == pytest.approx(one[k], rel=1e-9), k
    assert two["tokens_per_s"] == pytest.approx(2 * one["tokens_per_s"], rel=1e-9)


def test_a_training_field_for_serving_is_refused_for_the_phase_asked() -> None:
    """--dropout with phase serving said 'got 0.1 for phase prefill', the pass serving builds, not the phase asked."""
    import dse
    from dse.errors import DseError

    with pytest.raises(DseError, match=r"dropout: got 0.1 for phase serving; accepted: 0"):
        dse.workload("llama3-8b", phase="serving", batch=8, input_len=128, output_len=128, dropout=0.1)


def test_a_lazy_mode_engine_charges_its_host_time_per_operator_of_the_prefill_only() -> None:
    """optimum-habana's prefill forward runs in lazy mode under --limit_hpu_graphs: the host evaluates every operator
    before the device runs the graph, so a prefill step pays per_op_prefill x the operators of its table (every row
    ``count`` times, collectives included); its decode steps replay HPU graphs and pay nothing; a serving pass pays the
    prefill's once."""
    from dse.workloads.serving import load_engine, operators

    eng = load_engine("optimum-habana")
    assert eng.per_op_prefill_us > 0 and eng.step_base_ms == eng.per_seq_ms == 0
    assert "limit_hpu_graphs" in eng.source and "mark_step" in eng.source
    kw = dict(phase="prefill", seq=128, batch=1, dtype="fp8")
    for tp in (1, 8):
        plan = {"tp": tp} if tp > 1 else None
        bare = dse.predict(dse.workload("llama2-7b", plan=plan, **kw), "gaudi2")
        lazy = dse.predict(dse.workload("llama2-7b", plan=plan, serving_engine="optimum-habana", **kw), "gaudi2")
        n = operators(lazy.workload.ops.to_dict("records"))
        assert n > 32 * 8 and lazy.time_s == pytest.approx(bare.time_s + eng.per_op_prefill_us * 1e-6 * n, rel=1e-9)
        if tp > 1:
            assert (lazy.workload.ops["coll"] != "").any()  # the host issues the all-reduces too
    dec = dict(phase="decode", context=256, batch=4)
    assert dse.predict(dse.workload("llama2-7b", serving_engine="optimum-habana", **dec), "gaudi2").time_s == \
        pytest.approx(dse.predict(dse.workload("llama2-7b", **dec), "gaudi2").time_s, rel=1e-12)
    base = dse.predict(dse.workload("llama2-7b", batch=8, **KW), "gaudi2").serving
    s = dse.predict(dse.workload("llama2-7b", batch=8, serving_engine="optimum-habana", **KW), "gaudi2")
    n_p = operators(s.workload.ops[s.workload.ops["name"].str.startswith("prefill.")].to_dict("records"))
    assert s.serving["prefill_s"] == pytest.approx(base["prefill_s"] + eng.per_op_prefill_us * 1e-6 * n_p, rel=1e-9)
    assert s.serving["decode_s"] == pytest.approx(base["decode_s"], rel=1e-12)
