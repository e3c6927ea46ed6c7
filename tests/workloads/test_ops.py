"""dse.workloads.ops: operator rows carry exact FLOPs and compulsory bytes for GEMM, conv, attention, by hand."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.workloads import ops


def test_gemm_counts_two_flops_per_mac_and_each_tensor_once() -> None:
    r = ops.gemm("g", 128, 256, 512, dtype="bf16", weight_dtype="int8", out_dtype="fp32", batch=3, count=5)
    assert r["flops"] == 2 * 3 * 128 * 256 * 512
    assert r["a_bytes"] == 3 * 128 * 512 * 2  # bf16 activation
    assert r["b_bytes"] == 3 * 512 * 256 * 1  # int8 weight
    assert r["c_bytes"] == 3 * 128 * 256 * 4  # fp32 output
    assert r["bytes_read"] == r["a_bytes"] + r["b_bytes"] and r["bytes_written"] == r["c_bytes"]
    assert (r["elem_a"], r["elem_b"], r["elem_out"]) == (2.0, 1.0, 4.0)
    assert (r["unit"], r["reuse"], r["count"], r["coll"]) == ("matrix", "tiled", 5, "")


def test_resnet_stem_conv_is_its_gemm_equivalent_without_im2col_blow_up() -> None:
    row, out = ops.conv2d("stem", n=2, h=224, w=224, c_in=3, c_out=64, k=7, stride=2, pad=3, dtype="fp16")
    assert out == (112, 112, 64)  # floor((224 + 6 - 6 - 1) / 2) + 1 = 112
    assert (row["M"], row["N"], row["K"], row["batch"]) == (2 * 112 * 112, 64, 3 * 49, 1)
    assert row["flops"] == 2 * 2 * 112 * 112 * 64 * 147
    assert row["a_bytes"] == 2 * 224 * 224 * 3 * 2  # the input tensor, not the 49x im2col matrix
    assert row["b_bytes"] == 64 * 3 * 49 * 2
    assert row["c_bytes"] == 2 * 112 * 112 * 64 * 2
    assert row["unit"] == "matrix"


def test_depthwise_conv_runs_on_the_vector_unit_and_grouped_splits_channels() -> None:
    dw, out = ops.conv2d("dw", n=1, h=56, w=56, c_in=32, c_out=32, k=3, groups=32, dtype="bf16")
    assert out == (56, 56, 32) and dw["unit"] == "vector"
    assert (dw["M"], dw["N"], dw["K"], dw["batch"]) == (56 * 56, 1, 9, 32)
    assert dw["flops"] == 2 * 32 * 56 * 56 * 9
    g, _ = ops.conv2d("g", n=1, h=14, w=14, c_in=64, c_out=128, k=3, groups=4, dtype="bf16", bias=True)
    assert g["unit"] == "matrix" and (g["N"], g["K"], g["batch"]) == (32, 16 * 9, 4)
    assert g["b_bytes"] == (128 * 16 * 9 + 128) * 2  # grouped weights plus the bias
    with pytest.raises(ValueError, match="not divisible by groups 3"):
        ops.conv2d("bad", n=1, h=8, w=8, c_in=8, c_out=8, k=1, groups=3, dtype="bf16")
    with pytest.raises(ValueError, match="too small for kernel 7"):
        ops.conv2d("bad", n=1, h=2, w=2, c_in=8, c_out=8, k=7, pad=0, dtype="bf16")


def test_conv1d_and_output_size_formula() -> None:
    row, length = ops.conv1d("c", n=4, length=1000, c_in=80, c_out=256, k=3, stride=2, dtype="fp32")
    assert length == (1000 + 2 - 2 - 1) // 2 + 1 == 500
    assert (row["M"], row["N"], row["K"]) == (4 * 500, 256, 240)
    assert row["flops"] == 2 * 4 * 500 * 256 * 240
    assert ops.conv_out(32, 3, 1, 2, dilation=2) == 32


def test_fused_causal_gqa_attention_counts_only_unmasked_pairs() -> None:
    # batch 2, 32 query heads over 8 KV heads, 512 new queries against 2048 keys, head_dim 128
    rows = ops.attention("a", batch=2, heads=32, kv_heads=8, q_len=512, kv_len=2048, head_dim=128, causal=True,
                         dtype="bf16", kv_dtype="fp8")
    att, soft = rows
    # 2048 keys: a flash kernel. Query tile m (128 rows) computes whole 64-key blocks up to its diagonal:
    # 1536 + 128 (m + 1) keys (FlashAttention-2's n_block_max), the masked upper half of each diagonal block too
    keys = sum(128 * (1536 + 128 * (m + 1)) for m in range(4)) / 512
    pairs = 2 * 32 * 512 * keys
    assert att["flops"] == pytest.approx(4 * pairs * 128)  # QK^T and PV, 2 FLOPs per MAC each
    triangle = sum(2048 - 512 + i + 1 for i in range(512)) / 512  # the unmasked pairs: 2048 - 511/2 per query
    assert keys - triangle == pytest.approx((128 - 1) / 2)  # half a diagonal block per query row
    whole = ops.attention("a", batch=2, heads=32, kv_heads=8, q_len=512, kv_len=2048, head_dim=128, causal=True,
                          dtype="bf16", kv_dtype="fp8", kernel="whole_row")[0]
    assert whole["flops"] == pytest.approx(4 * 2 * 32 * 512 * triangle * 128)  # whole rows: the triangle exactly
    assert att["a_bytes"] == 2 * 32 * 512 * 128 * 2 == att["c_bytes"]
    assert att["b_bytes"] == 2 * 2 * 8 * 2048 * 128 * 1  # K and V once, fp8
    assert (att["M"], att["N"], att["K"], att["batch"]) == (512 * 4, 128, 2048, 16)
    # 2048 keys (flash attention): one exp at 8 FP32-FLOP slots (the special-function unit's 16/clk vs 128
    # FLOP/clk), the busiest pipe; max, sub, sum and the packed bf16 rounding of P issue beside it
    assert soft["fused"] and soft["flops"] == pytest.approx(8 * pairs) and soft["bytes_read"] == 0
    # 2048 keys: a flash kernel, one CTA per (KV head, sequence, 128-query tile of the 4 x 512 query rows)
    assert soft["batch"] == soft["ctas"] == att["ctas"] == 16 * 16 == ops.attention_ctas(16, 512 * 4, 2048)
    assert ops.attention_ctas(16, 384, 384) == 16  # up to 512 keys: TensorRT's one CTA per (head, sequence)
    assert ops.attention_ctas(16, 384, 384, "flash") == 16 * 3  # a flash kernel tiles them at any length
    assert ops.attention_ctas(16, 4096, 4096, "whole_row") == 16
    with pytest.raises(ValueError, match="heads 6 not divisible by kv_heads 4"):
        ops.attention("x", batch=1, heads=6, kv_heads=4, q_len=1, kv_len=1, head_dim=8, causal=False, dtype="bf16")


def test_fused_int8_attention_pays_two_conversions_per_score() -> None:
    # IMMA scores are int32: converted to fp32 for the softmax and P back to int8 for the PV product, each at
    # the conversion rate (16/clk/SM = 8 FP32-FLOP slots); a float MMA converts once, fp32 never
    def per_score(dtype: str) -> float:
        soft = ops.attention("a", batch=1, heads=2, kv_heads=2, q_len=64, kv_len=64, head_dim=32, causal=False,
                             dtype=dtype)[1]
        return soft["flops"] / (2 * 64 * 64)

    assert per_score("int8") == pytest.approx(12 + 2 * ops.CONVERT_FLOPS) == pytest.approx(28)
    assert per_score("fp16") == pytest.approx(20) == per_score("bf16") == per_score("fp8")
    assert per_score("fp32") == pytest.approx(12)


def test_flash_softmax_pays_its_busiest_pipe_not_the_sum() -> None:
    # beyond 512 keys (flash attention's online softmax) a score costs one exp2 on the special-function unit
    # (8 FP32 slots) while the FP32 work (4 slots) and the packed P rounding issue beside it; IMMA's int32
    # scores add a second special-function-unit op. Up to 512 keys the whole-row kernel keeps the sum.
    def per_score(dtype: str, keys: int) -> float:
        soft = ops.attention("a", batch=1, heads=2, kv_heads=2, q_len=64, kv_len=keys, head_dim=64, causal=False,
                             dtype=dtype)[1]
        return soft["flops"] / (2 * 64 * keys)

    for dtype in ("fp16", "bf16", "fp8", "fp32"):
        assert per_score(dtype, 1024) == pytest.approx(ops.EXP_FLOPS) == pytest.approx(8)
    assert per_score("int8", 1024) == pytest.approx(ops.EXP_FLOPS + ops.CONVERT_FLOPS) == pytest.approx(16)
    assert per_score("fp16", 512) == pytest.approx(20) and per_score("int8", 512) == pytest.approx(28)
    for dtype in ("fp16", "int8", "fp32"):  # never dearer than the whole-row sum of the same work
        assert ops.fused_softmax_flops(dtype, 4096) < ops.fused_softmax_flops(dtype, 512)


def test_unfused_attention_writes_and_reads_the_full_score_matrix() -> None:
    qk, soft, pv = ops.attention("a", batch=1, heads=4, kv_heads=4, q_len=256, kv_len=256, head_dim=64, causal=True,
                                 dtype="fp16", fused=False)
    assert qk["flops"] == 2 * 4 * 256 * 256 * 64 == pv["flops"]  # masked scores computed anyway
    assert qk["c_bytes"] == 4 * 256 * 256 * 2  # scores written ...
    assert soft["bytes_read"] == 4 * 256 * 256 * 2 and not soft["fused"]  # ... and read back
    assert pv["a_bytes"] == 4 * 256 * 256 * 2


def test_streaming_and_embedding_bytes() -> None:
    s = ops.streaming("add", kind="elementwise", elems=1000, flops_per_elem=1, inputs=2, dtype="fp32")
    assert (s["flops"], s["bytes_read"], s["bytes_written"], s["reuse"]) == (1000, 8000, 4000, "stream")
    e = ops.embedding("emb", tokens=16, dim=4096, dtype="bf16", table_dtype="int8")
    assert e["flops"] == 0 and e["bytes_read"] == 16 * 4096 * 1 and e["bytes_written"] == 16 * 4096 * 2


def test_weight_only_int4_gemm_adds_a_dequant_row_and_group_scales() -> None:
    rows = ops.weight_gemm("w", 8, 4096, 4096, dtype="bf16", weight_dtype="int4")
    g, dq = rows
    assert g["b_bytes"] == 4096 * 4096 * 0.5
    assert dq["name"] == "w.dequant" and dq["fused"] and dq["flops"] == 2 * 4096 * 4096
    out = ops.group_scales(rows, 128)
    # scales and zero points: 4096/128 groups x 4096 columns x 4 bytes
    assert out[0]["b_bytes"] == 4096 * 4096 * 0.5 + 32 * 4096 * 4
    assert out[0]["bytes_read"] == g["bytes_read"] + 32 * 4096 * 4
    assert out[1]["flops"] == 4 * 4096 * 4096  # int4: unpack, convert, zero point, scale
    per_channel = ops.group_scales(rows, None)
    assert per_channel[0]["b_bytes"] == 4096 * 4096 * 0.5 + 4096 * 4
    with pytest.raises(ValueError, match="weight_group: got 100; accepted: a divisor of K = 4096"):
        ops.group_scales(rows, 100)
    same = ops.weight_gemm("w", 8, 64, 64, dtype="bf16")
    assert len(same) == 1
    with pytest.raises(ValueError, match="only with weight-only quantization"):
        ops.group_scales(same, 32)


def test_table_merges_identical_operators_and_keeps_column_types() -> None:
    rows = [ops.gemm(f"layer{i}.q", 64, 64, 64, dtype="bf16") for i in range(3)]
    rows.append(ops.gemm("head", 64, 1000, 64, dtype="bf16"))
    t = ops.table(rows)
    assert list(t.columns) == ops.COLUMNS
    assert len(t) == 2 and t["count"].tolist() == [3, 1]
    assert t.loc[0, "name"] == "layer0.q (+2 same shape)"
    assert str(t["M"].dtype) == "int64" and str(t["flops"].dtype) == "float64" and t["fused"].dtype == bool
    assert len(ops.table(rows, compact=False)) == 4
    assert (t["flops"] * t["count"]).sum() == 3 * 2 * 64**3 + 2 * 64 * 1000 * 64


def test_check_positive_names_the_bad_value() -> None:
    ops.check_positive("m", seq=1, dim=2.5)
    with pytest.raises(ValueError, match=r"m: dim = 0; accepted: a positive number"):
        ops.check_positive("m", seq=1, dim=0)
    with pytest.raises(ValueError, match=r"m: seq = nan"):
        ops.check_positive("m", seq=float("nan"))


@settings(max_examples=40, deadline=None)
@given(M=st.integers(1, 4096), N=st.integers(1, 4096), K=st.integers(1, 4096), batch=st.integers(1, 8),
       dt=st.sampled_from(["fp32", "bf16", "fp8", "int4"]))
def test_gemm_intensity_is_the_harmonic_form(M, N, K, batch, dt) -> None:
    """AI = 2MNK / (e(MK + KN + MN)) = 2 / (e(1/M + 1/N + 1/K)), so it never exceeds 2 min(M, N, K) / e."""
    r = ops.gemm("g", M, N, K, dtype=dt, batch=batch)
    e = {"fp32": 4, "bf16": 2, "fp8": 1, "int4": 0.5}[dt]
    ai = r["flops"] / (r["bytes_read"] + r["bytes_written"])
    assert ai == pytest.approx(2 / (e * (1 / M + 1 / N + 1 / K)))
    assert ai <= 2 * min(M, N, K) / e * (1 + 1e-12)
    assert r["flops"] == 2 * batch * M * N * K


def test_compaction_equals_a_pandas_groupby_of_the_rows() -> None:
    """The Python-side merge of identical operators gives the table pandas' groupby gave (issue 17)."""
    import pandas as pd

    from dse.workloads import library, ops

    captured = []
    real = ops.table

    def spy(rows, **kw):
        captured.append(list(rows))
        return real(rows, **kw)

    ops.table = spy
    try:
        for name, kw in (("llama2-7b", {"phase": "decode"}), ("resnet50", {}), ("bert-base", {"phase": "training"})):
            library._expand(name, **kw)
        library._expand("llama2-7b", plan={"tp": 4}, phase="prefill")
    finally:
        ops.table = real
    assert captured
    for rows in captured:
        full = ops.table(rows, compact=False)
        keys = [c for c in ops.COLUMNS if c not in ("name", "count")]
        ref = (full.groupby(keys, sort=False, dropna=False)
               .agg(name=("name", lambda s: str(s.unique()[0]) if s.nunique() == 1
                          else f"{s.unique()[0]} (+{s.nunique() - 1} same shape)"), count=("count", "sum"))
               .reset_index()[ops.COLUMNS])
        got = ops.table(rows)
        assert len(got) < len(full) or len(got) == len(full)
        pd.testing.assert_frame_equal(got, ref, check_dtype=False)


@pytest.mark.parametrize(("s", "d", "n_block"), [(512, 64, 128), (1024, 128, 64), (4096, 128, 64), (8192, 64, 128)])
def test_flash_causal_pairs_are_whole_blocks_up_to_the_diagonal(s: int, d: int, n_block: int) -> None:
    # FlashAttention-2 sm80 forward tiles: 128 queries x 128 keys (head dim 64) or x 64 keys (head dim 128)
    assert ops.flash_kv_tile(d) == n_block
    n = s // 128
    # 128-key blocks (or 64-key blocks that tile 128 evenly): tile m computes (m + 1) * 128 keys
    assert ops.causal_pairs(s, s, d, "flash") == 128 * 128 * n * (n + 1) / 2
    assert ops.causal_pairs(s, s, d, "flash") / ops.causal_pairs(s, s, d, "whole_row") == pytest.approx(
        (1 + 1 / n) / (1 + 1 / s))
    assert ops.causal_pairs(s, s, d, "whole_row") == s * (s + 1) / 2


def test_attention_kernel_names_are_checked() -> None:
    assert ops.attention_kernel("auto", 512) == "whole_row" and ops.attention_kernel("auto", 513) == "flash"
    assert ops.attention_kernel("flash", 64) == "flash"
    with pytest.raises(ValueError, match="attention_kernel: got 'fa9'; accepted: auto, whole_row, flash"):
        ops.attention_kernel("fa9", 64)
    # the kernel sets the softmax's cost per score: whole rows pay the sum of their work, flash its busiest pipe
    assert ops.fused_softmax_flops("fp16", 256, "flash") == ops.fused_softmax_flops("fp16", 4096)
    assert ops.fused_softmax_flops("fp16", 4096, "whole_row") == ops.fused_softmax_flops("fp16", 256)


@settings(max_examples=200, deadline=None)
@given(q=st.integers(1, 5000), extra=st.integers(0, 5000), d=st.sampled_from([32, 64, 80, 128, 256]))
def test_flash_causal_pairs_lie_between_the_triangle_and_the_rectangle(q: int, extra: int, d: int) -> None:
    k = q + extra
    tri = ops.causal_pairs(q, k, d, "whole_row")
    flash = ops.causal_pairs(q, k, d, "flash")
    assert tri <= flash <= q * k
    # at most one diagonal block per query tile beyond the triangle: 128 rows x (128 + kBlockN) keys
    assert flash - tri <= -(-q // 128) * 128 * (128 + ops.flash_kv_tile(d))


def test_an_unknown_residency_policy_is_one_line_naming_the_field() -> None:
    accepted = "accepted: one of 'auto', 'none', 'weights' or 'activations'"
    with pytest.raises(dse.DseError, match=f"residency: got 'most'; {accepted}"):
        dse.workload("gpt2", phase="decode", residency="most")


def test_an_encoder_without_a_kv_cache_reads_k_and_v_as_activations() -> None:
    wl = dse.workload("bert-base", batch=1, seq=128)
    assert (wl.ops["held"] != "kv_cache").all() and wl.ops["footprint_kv"].eq(0).all()
    dec = dse.workload("gpt2", phase="decode", batch=1)
    att = dec.ops[dec.ops["kind"] == "attention"]
    assert (att["held"] == "kv_cache").all() and dec.ops["footprint_kv"].iloc[0] == dec.memory["kv_cache"]


def _table_by_pandas(rows: list[dict]) -> Any:
    """The operator table as pandas builds it from the row dicts and converts column by column (dse before the typed
    build of :func:`ops.table`): the oracle of the test below."""
    import pandas as pd

    df = pd.DataFrame(rows)
    for col in ops.COLUMNS:
        if col not in df.columns:
            df[col] = ops._default(col)
    df = df[ops.COLUMNS]
    for col in ("gemm_kernel", "held", "coll"):
        df[col] = df[col].fillna("").astype(str)
    df["held_bytes"] = df["held_bytes"].fillna(0.0).astype("float64")
    df["full_ratio"] = df["full_ratio"].fillna(1.0).astype("float64")
    for col in ("overlap", "net_bytes", "scale", "flops", "bytes_read", "bytes_written", "a_bytes", "b_bytes", "c_bytes"):
        df[col] = df[col].astype("float64")
    for col in ops.INT_COLUMNS:
        df[col] = (df[col] if col in ("group", "stride") else df[col].fillna(0)).astype("int64")
    for col in ("fused", "eager"):
        df[col] = df[col].astype(bool)
    return df.reset_index(drop=True)


def test_the_typed_table_is_what_pandas_conversions_give() -> None:
    """ops.table builds each column once with its type (the plan search builds a table per candidate plan: 1,608 for
    LLaMA-2-70B on 32 chips); it equals pandas' build-then-convert on the rows of models of every family, rows
    that leave columns unset included, and on no rows."""
    import pandas as pd

    from dse.workloads import library

    captured = []
    real = ops.table

    def spy(rows, **kw):
        captured.append([dict(r) for r in rows])
        return real(rows, **kw)

    ops.table = spy
    try:
        for name, kw in (("llama2-7b", {"phase": "decode", "kv_block": 128}), ("resnet50", {}),
                         ("bert-base", {"phase": "training"}), ("mixtral-8x7b", {"phase": "decode"}),
                         ("dlrm-v2-dcn", {}), ("mamba-1.4b", {})):
            library._expand(name, **kw)
        library._expand("llama2-7b", plan={"tp": 4, "zero": 1, "dp": 2}, phase="training", batch=4)
    finally:
        ops.table = real
    captured.append([{"name": "g", "kind": "gemm", "M": 2, "N": 2, "K": 2}, {"name": "c", "kind": "copy", "flops": 1.0}])
    captured.append([])
    assert len(captured) > 8
    for rows in captured:
        pd.testing.assert_frame_equal(ops.table([dict(r) for r in rows], compact=False), _table_by_pandas(rows))


def _key_value_reference(col: str, v: Any) -> Any:
    """What the merge compared before its converters were specialised per column: a row's value as the table's
    column type holds it, a missing value (None or NaN) the column's default."""
    import math

    if col in ops._STR_DEFAULTS:
        return ops._STR_DEFAULTS[col] if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        v = ("" if col == "coll" else
             ops._FLOAT_DEFAULTS.get(col, ops.NET_DEFAULTS.get(col, False if col in ops._BOOL_COLS else None)))
        if v is None:
            return None
    for cols, cast in ((ops._INT_COLS, int), (ops._FLOAT_COLS, float), (ops._BOOL_COLS, bool), (("coll",), str)):
        if col in cols:
            return cast(v)
    return v


@settings(max_examples=60, deadline=None)
@given(v=st.one_of(st.none(), st.just(float("nan")), st.integers(-5, 5), st.floats(-1e3, 1e3), st.booleans(),
                   st.sampled_from(["", "x", "bf16", "all_reduce"])))
def test_the_merge_key_converters_are_the_reference_per_column(v) -> None:
    import math

    for col, _, conv in ops._key_spec():
        try:
            want = _key_value_reference(col, v)
        except (TypeError, ValueError) as exc:
            with pytest.raises(type(exc)):
                conv(v)
            continue
        got = conv(v)
        assert type(got) is type(want) and (got == want or (math.isnan(got) and math.isnan(want))), (col, v)
