"""dse.predict.traffic: bytes per memory level against the reuse formulas of its docstring, by hand."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.hardware.designs import DesignBatch
from dse.predict.roofline import evaluate, evaluate_times
from dse.predict.traffic import OpArrays, inner_capacity, level_traffic, max_memory_time, traffic, write_weighted
from dse.workloads import ops
from tests.hardware.edge_npu import EDGE_NPU

NPU = dse.hardware("npu-7nm")  # levels: local 12 MiB x 24 instances, global 32 MiB, hbm; 64 KiB registers
MIB = 2**20


def _none(rows: list) -> OpArrays:
    """The table of ``rows`` with residency off: every byte to and from main memory (the reuse formulas alone)."""
    return OpArrays.from_table(ops.with_residency(ops.table(rows), {}, "none"))


def _tiled(a: float, b: float, c: float, M: int, N: int, S: float, e: float) -> float:
    """The tiled formula as the docstring states it: t = sqrt(S/e), capped by M and N."""
    t = max(math.sqrt(S / e), 1.0)
    return a * math.ceil(N / min(t, N)) + b * math.ceil(M / min(t, M)) + c


def test_inner_capacity_is_registers_then_one_private_copy_then_the_whole_shared_level() -> None:
    S = inner_capacity(DesignBatch.from_hardware(NPU))
    # registers 64 KiB; one local scratchpad = 12 MiB / 24 = 512 KiB; the global SRAM 32 MiB whole
    assert S[0].tolist() == [64 * 1024, 512 * 1024, 32 * MIB]


def test_inner_capacity_pools_a_reuse_group() -> None:
    data = NPU.model_dump(mode="python", exclude_none=True)
    data["memory"][0]["reuse_group"] = 2
    hw = dse.hardware(data)
    assert inner_capacity(DesignBatch.from_hardware(hw))[0, 1] == 2 * 512 * 1024


def test_tiled_gemm_traffic_per_level_by_hand() -> None:
    # bf16 1024^3: A = B = C = 2 MiB; e = 2+2+2 = 6 bytes per tile element (residency off: the formula alone)
    o = _none([ops.gemm("g", 1024, 1024, 1024, dtype="bf16")])
    tr = traffic(DesignBatch.from_hardware(NPU), o)[0, 0]
    two = 2 * MIB
    # level 0: S = 64 KiB -> t = sqrt(65536/6) = 104.5 -> ceil(1024/104.5) = 10 passes of A and of B
    assert tr[0] == 10 * two + 10 * two + two
    # level 1: S = 512 KiB -> t = 295.6 -> 4 passes
    assert tr[1] == 4 * two + 4 * two + two
    # level 2 (hbm): S = 32 MiB -> t = 2365 > 1024 -> one pass: the compulsory bytes
    assert tr[2] == 3 * two == o.compulsory[0]
    for lv, S in enumerate((64 * 1024, 512 * 1024, 32 * MIB)):
        assert tr[lv] == pytest.approx(_tiled(two, two, two, 1024, 1024, S, 6.0))


def test_rectangular_gemm_caps_the_tile_at_each_side() -> None:
    # decode-like: M = 16 rows, so B (the weight) is read once even with a 64 KiB inner buffer
    o = OpArrays.from_table(ops.table([ops.gemm("g", 16, 4096, 4096, dtype="bf16")]))
    S = np.array([64 * 1024.0])
    got = level_traffic(S, o, offchip=True)[0, 0]
    a, b, c = 16 * 4096 * 2, 4096 * 4096 * 2, 16 * 4096 * 2
    t = math.sqrt(65536 / 6)
    assert got == a * math.ceil(4096 / t) + b * 1 + c


def test_flash_attention_streams_k_and_v_once_per_query_tile() -> None:
    rows = ops.attention("attn", batch=1, heads=8, kv_heads=8, q_len=1024, kv_len=1024, head_dim=128,
                         causal=False, dtype="bf16")
    o = _none(rows)
    tr = traffic(DesignBatch.from_hardware(NPU), o)
    i = int(np.flatnonzero(o.perm == 0)[0])  # the attention row (table row 0) in sorted order
    q = o_ = 8 * 1024 * 128 * 2  # 2 MiB each
    kv = 2 * 8 * 1024 * 128 * 2  # 4 MiB
    assert o.head_bytes[i] == 4 * 128 * 2
    # t_q = S / 1024 query rows: 64 at level 0 (16 tiles), 512 at level 1 (2 tiles), all 1024 at level 2
    assert tr[0, i].tolist() == [q + o_ + 16 * kv, q + o_ + 2 * kv, q + o_ + kv]


def test_streaming_ops_move_each_byte_once_and_fused_ones_stay_on_chip() -> None:
    add = ops.streaming("add", kind="elementwise", elems=2**20, flops_per_elem=1, inputs=2, dtype="bf16")
    fused = ops.streaming("act", kind="elementwise", elems=2**19, flops_per_elem=4, dtype="bf16", fused=True)
    o = _none([add, fused])
    tr = traffic(DesignBatch.from_hardware(NPU), o)[0]
    tr = o.to_table_order(tr, axis=0)
    assert tr[0].tolist() == [6 * MIB] * 3  # read two 2 MiB inputs, write one
    assert tr[1].tolist() == [2 * MIB, 2 * MIB, 0.0]  # on-chip levels see it, hbm never does


def test_ops_are_sorted_by_model_and_to_table_order_undoes_it() -> None:
    rows = [ops.streaming("s", kind="elementwise", elems=100, flops_per_elem=1, dtype="fp32"),
            *ops.attention("a", batch=1, heads=2, kv_heads=1, q_len=8, kv_len=8, head_dim=64, causal=True,
                           dtype="bf16"),
            ops.gemm("g", 64, 32, 16, dtype="fp32")]
    t = ops.table(rows, compact=False)
    o = OpArrays.from_table(t)
    assert (o.tiled, o.attn, o.stream) == (slice(0, 1), slice(1, 2), slice(2, 4))
    assert t["reuse"].to_numpy()[o.perm].tolist() == ["tiled", "attention", "stream", "stream"]
    arr = np.arange(4.0)[None, :] * np.ones((2, 1))
    back = o.to_table_order(arr)
    assert back[0, o.perm].tolist() == arr[0].tolist()
    assert o.flops[0] == 2.0 * 64 * 32 * 16 and o.matrix.tolist() == [True, True, False, False]


def test_unknown_reuse_model_names_the_accepted_ones() -> None:
    t = ops.table([ops.gemm("g", 8, 8, 8, dtype="fp32")])
    t.loc[0, "reuse"] = "magic"
    msg = r"unknown reuse model\(s\) \['magic'\]; accepted: \['attention', 'stream', 'tiled'\]"
    with pytest.raises(ValueError, match=msg):
        OpArrays.from_table(t)


def test_a_resized_level_is_computed_per_design_the_others_broadcast() -> None:
    o = _none([ops.gemm("g", 4096, 4096, 4096, dtype="bf16")])
    base = DesignBatch.stack([DesignBatch.from_hardware(NPU)] * 3)
    d = base.with_knobs(sram_bytes=np.array([2, 8, 128]) * MIB)
    tr = traffic(d, o)[:, 0, :]
    assert np.all(tr[:, :2] == tr[0, :2])  # registers and local do not change with the global SRAM size
    assert tr[0, 2] > tr[1, 2] > tr[2, 2]  # hbm traffic falls as the global SRAM grows
    two = 4096 * 4096 * 2.0
    assert tr[2, 2] == pytest.approx(_tiled(two, two, two, 4096, 4096, 128 * MIB, 6.0))


def test_memory_time_is_the_slowest_level_at_its_achievable_bandwidth() -> None:
    o = OpArrays.from_table(ops.table([ops.gemm("g", 1024, 1024, 1024, dtype="bf16")]))
    d = DesignBatch.from_hardware(NPU)
    out = max_memory_time(d, o, np.zeros((1, 1)))
    tr = traffic(d, o)[0, 0]
    rate = d.bandwidth[0] * d.bw_eff[0]
    assert out[0, 0] == pytest.approx(max(tr / rate))
    floor = np.full((1, 1), 1.0)  # an existing larger time is kept
    assert max_memory_time(d, o, floor)[0, 0] == 1.0


def test_a_level_with_its_own_write_bandwidth_times_writes_at_it_by_hand() -> None:
    """A copy of 2 MiB into 2 MiB through a level that absorbs writes at half its read bandwidth: the level's time is
    2 MiB / BW + 2 MiB / (BW / 2) (docs: MemoryLevel.write_bandwidth_tbps); every other level, and the bytes each level
    carries (what the energy model prices), are as without it."""
    level = NPU.memory[1].model_dump()
    level["write_bandwidth_tbps"] = level["bandwidth_tbps"] / 2
    hw = NPU.model_copy(update={"memory": [NPU.memory[0], type(NPU.memory[1])(**level), NPU.memory[2]]})
    assert hw.memory[1].write_ratio == pytest.approx(2.0)
    copy = ops.streaming("copy", kind="elementwise", elems=2**20, flops_per_elem=0, dtype="bf16")
    o = _none([copy])
    plain, slow = DesignBatch.from_hardware(NPU), DesignBatch.from_hardware(hw)
    assert np.array_equal(traffic(plain, o), traffic(slow, o))
    rate = slow.bandwidth[0] * slow.bw_eff[0]
    t = evaluate(slow, o).t_memory[0, 0]
    assert t[1] == pytest.approx(2 * MIB / rate[1] + 2 * MIB / (rate[1] / 2))
    assert t[0] == pytest.approx(4 * MIB / rate[0]) and t[2] == pytest.approx(4 * MIB / rate[2])
    assert max_memory_time(slow, o)[0, 0] == pytest.approx(t.max())
    assert evaluate_times(slow, o)[0, 0] >= evaluate_times(plain, o)[0, 0]


def test_written_bytes_never_count_above_the_level_traffic() -> None:
    """write_weighted charges at most the traffic a level carries: a level that sees less than the op's output
    (kept inside) pays the ratio on what it sees."""
    o = _none([ops.streaming("copy", kind="elementwise", elems=2**20, flops_per_elem=0, dtype="bf16")])
    tr = np.array([[1.0 * MIB], [6.0 * MIB]])
    assert write_weighted(tr, o, 3.0).ravel().tolist() == [3.0 * MIB, 6.0 * MIB + 2.0 * 2 * MIB]
    assert write_weighted(tr, o, 1.0) is tr


def _l2_writes_at(tbps: float | None):
    """h200 with its L2's write bandwidth set to ``tbps`` (None: the field left out)."""
    hw = dse.hardware("h200")
    levels = [m.model_dump() for m in hw.memory]
    levels[1]["write_bandwidth_tbps"] = tbps
    return hw.model_copy(update={"memory": [type(hw.memory[0])(**m) for m in levels]})


@settings(max_examples=25, deadline=None)
@given(w1=st.floats(0.5, 40.0), w2=st.floats(0.5, 40.0), elems=st.integers(1, 2**24),
       gemm=st.tuples(st.integers(1, 4096), st.integers(1, 4096), st.integers(1, 4096)))
def test_a_faster_write_port_never_makes_an_op_slower(w1, w2, elems, gemm) -> None:
    """Time at every level is non-increasing in the write bandwidth, and a write bandwidth equal to the read one
    predicts exactly what the template without the field does (a copy and a GEMM, L2-resident or not)."""
    rows = [ops.streaming("copy", kind="elementwise", elems=elems, flops_per_elem=0, dtype="bf16"),
            ops.gemm("g", *gemm, dtype="bf16")]
    o = _none(rows)
    lo, hi = sorted((w1, w2))
    t_lo = evaluate_times(DesignBatch.from_hardware(_l2_writes_at(lo)), o)
    t_hi = evaluate_times(DesignBatch.from_hardware(_l2_writes_at(hi)), o)
    assert (t_hi <= t_lo * (1 + 1e-12)).all()
    same = DesignBatch.from_hardware(_l2_writes_at(9.91))
    assert np.array_equal(evaluate_times(same, o), evaluate_times(DesignBatch.from_hardware(_l2_writes_at(None)), o))


dims = st.integers(1, 8192)
caps = st.floats(64.0, 1e9)


@settings(max_examples=60, deadline=None)
@given(M=dims, N=dims, K=dims, s1=caps, s2=caps, attn=st.booleans())
def test_traffic_never_below_compulsory_and_never_rises_with_capacity(M, N, K, s1, s2, attn) -> None:
    if attn:
        rows = ops.attention("a", batch=1, heads=4, kv_heads=2, q_len=M, kv_len=K, head_dim=64, causal=False,
                             dtype="bf16")[:1]
    else:
        rows = [ops.gemm("g", M, N, K, dtype="bf16")]
    o = OpArrays.from_table(ops.table(rows))
    lo, hi = sorted((s1, s2))
    tr = level_traffic(np.array([lo, hi]), o, offchip=True)[:, 0]
    assert tr[0] >= o.compulsory[0] - 1e-6 and tr[1] >= o.compulsory[0] - 1e-6
    assert tr[1] <= tr[0]


def test_tiled_traffic_of_a_whole_mix_matches_the_formula_op_by_op() -> None:
    """Pass counts are computed once per distinct (tile class, N) and (tile class, M) pair and gathered: every
    op of a real mix still gets exactly the per-op formula (bit for bit), at capacities from 1 KiB to 4 GiB."""
    from dse.workloads.mix import Mix

    mix = Mix.of([dse.workload("resnet50", batch=32, dtype="bf16"), dse.workload("bert-base", batch=16, seq=384),
                  dse.workload("llama2-7b", phase="prefill", seq=1024),
                  dse.workload("llama2-7b", phase="decode", batch=1, context=1024)])
    o = OpArrays.from_table(mix.ops)
    ti = o.tiled
    assert ti.stop - ti.start > 20
    S = np.geomspace(2**10, 2**32, 37)
    got = level_traffic(S, o, offchip=True)[:, ti]
    for k, s in enumerate(S):
        want = [_tiled(o.a_bytes[i], o.b_bytes[i], o.c_bytes[i], o.M[i], o.N[i], s, o.tile_elem_bytes[i])
                for i in range(ti.start, ti.stop)]
        np.testing.assert_array_equal(got[k], want)


def test_each_in_kernel_softmax_is_linked_to_its_attention_row_across_a_mix() -> None:
    from dse.workloads.mix import Mix

    mix = Mix.of([dse.workload("llama2-7b", phase="prefill", seq=2048),
                  dse.workload("bert-base", batch=8, seq=384, fuse_elementwise=True),
                  dse.workload("resnet50", batch=2)])
    o = OpArrays.from_table(mix.ops)
    kinds = mix.ops["kind"].to_numpy()[o.perm]  # sorted order, as OpArrays holds its rows
    soft = np.flatnonzero(o.kernel_of >= 0)
    assert soft.size == 2  # one fused softmax per attention kernel: llama's and bert's
    assert (kinds[soft] == "softmax").all() and (kinds[o.kernel_of[soft]] == "attention").all()
    assert np.array_equal(o.units[soft], o.units[o.kernel_of[soft]])  # the same CTAs
    assert (o.kernel_of[kinds != "softmax"] == -1).all()
    # an unfused attention (QK^T, softmax, PV as kernels of their own) links nothing
    unfused = OpArrays.from_table(dse.workload("bert-base", fused_attention=False).ops)
    assert (unfused.kernel_of == -1).all()


def _decode_attention(gqa: str, kv_heads: int = 8) -> list[dict]:
    """One decode step of a Mistral-shaped attention: 32 query heads, ``kv_heads`` KV heads, 4096 keys."""
    return ops.attention("attn", batch=16, heads=32, kv_heads=kv_heads, q_len=1, kv_len=4096, head_dim=128,
                         causal=True, dtype="fp16", kv_dtype="fp8", gqa=gqa)


def test_a_per_head_gqa_kernel_rereads_its_kv_head_inside_the_cores_and_dram_sees_it_once() -> None:
    """attention_gqa: per_head runs a CTA per query head: each re-streams its KV head through the levels whose inner
    storage is a core's own (registers, L1/shared memory), while the L2 that the group's side-by-side CTAs share
    serves the repeats, so the DRAM level still reads each KV head once; grouped tiles read it once everywhere."""
    d = DesignBatch.from_hardware(dse.hardware("h100-sxm"))  # smem x 132, l2, hbm
    kv = 2 * 16 * 8 * 4096 * 128 * 1.0  # K and V of 8 KV heads, fp8
    qo = 2 * 16 * 32 * 1 * 128 * 2.0  # Q in and O out, fp16
    got = {}
    for gqa in ("grouped", "per_head"):
        o = OpArrays.from_table(ops.table(_decode_attention(gqa)))
        i = int(np.flatnonzero(o.perm == 0)[0])
        got[gqa] = traffic(d, o)[0, i]
    assert got["grouped"].tolist() == pytest.approx([qo + kv] * 3)
    assert got["per_head"].tolist() == pytest.approx([qo + 4 * kv, qo + 4 * kv, qo + kv])  # 4 query heads a KV head


def test_the_gqa_layout_changes_nothing_without_grouped_heads_and_keeps_a_tables_work() -> None:
    mha = [OpArrays.from_table(ops.table(_decode_attention(g, kv_heads=32))) for g in ("grouped", "per_head")]
    d = DesignBatch.from_hardware(dse.hardware("h100-sxm"))
    assert np.array_equal(traffic(d, mha[0]), traffic(d, mha[1]))
    grouped, per_head = (ops.table(_decode_attention(g)) for g in ("grouped", "per_head"))
    cols = ["flops", "bytes_read", "bytes_written", "M", "N", "K", "batch"]
    assert grouped[cols].iloc[0].equals(per_head[cols].iloc[0])  # the same work; the tile a CTA stacks differs
    assert grouped["head_rows"].tolist()[0] == 4 and per_head["head_rows"].tolist()[0] == 1
    assert per_head["ctas"].tolist()[0] == 4 * grouped["ctas"].tolist()[0]


def test_a_table_from_before_the_head_rows_column_stacks_a_whole_row() -> None:
    t = ops.table(_decode_attention("grouped"))
    old = OpArrays.from_table(t.drop(columns=["head_rows"]))
    new = OpArrays.from_table(t)
    assert np.array_equal(old.head_rows, new.head_rows)


def test_gemm_kernel_codes_give_auto_and_an_empty_cell_the_templates_default() -> None:
    """Code 0 means 'the template's compute.matrix.gemm_kernel' (dse.predict.tiles.serial_epilogue); every named
    structure has its own nonzero code."""
    from typing import get_args

    from dse.predict.traffic import GEMM_KERNEL_CODES
    from dse.units import GemmKernelStructure

    assert GEMM_KERNEL_CODES[""] == GEMM_KERNEL_CODES["auto"] == 0
    codes = [GEMM_KERNEL_CODES[k] for k in get_args(GemmKernelStructure)]
    assert 0 not in codes and len(set(codes)) == len(codes)


# ---------------------------------------------------------------- residency (tensors that stay on chip)
from dse.predict.traffic import Resident, residency_keep, resident_capacity  # noqa: E402


def _keep(R: list[float], cache: bool, o: OpArrays, steps: bool = True):
    """:func:`residency_keep` for resident storages of ``R`` bytes (a cache of exactly that size, or a scratchpad)."""
    r = np.array(R)[:, None]
    n = r.shape[0]
    return residency_keep(Resident(r, np.full((n, 1), cache), r.copy(), np.full((n, 1), steps)), 0, o)


def _with_global(mib: float, hbm: bool = True, organization: str = "scratchpad") -> dse.Hardware:
    data = NPU.model_dump(mode="python", exclude_none=True)
    for m in data["memory"]:
        if m["name"] == "global":
            m["capacity_mib"], m["organization"] = mib, organization
    if not hbm:
        data["memory"] = [m for m in data["memory"] if m["name"] != "hbm"]
    return dse.hardware(data)


def _gemm_table(policy: str = "auto", M: int = 1024, N: int = 1024, K: int = 1024):
    t = ops.table([ops.gemm("g", M, N, K, dtype="bf16")])
    w = float(t["held_bytes"].iloc[0])
    return OpArrays.from_table(ops.with_residency(t, {"weights": w}, policy))


def test_resident_capacity_is_the_largest_shared_on_chip_level_inside() -> None:
    R, cache, full, steps = resident_capacity(DesignBatch.from_hardware(NPU)).storage
    # local (per core) keeps nothing between operators; the 32 MiB global scratchpad serves the hbm level, and
    # npu-7nm's runtime keeps what fits there across steps (its template says keeps: steps)
    assert R[0].tolist() == [0.0, 0.0, 32 * MIB] and not cache.any() and steps[0].tolist() == [False, False, True]
    R, cache, full, steps = resident_capacity(DesignBatch.from_hardware(dse.hardware("h200"))).storage
    # smem is per SM; the 50 MiB L2 is a cache kept at the template's resident_fraction
    share = dse.hardware("h200").memory[1].resident_share
    assert R[0, 2] == pytest.approx(50 * MIB * share) and cache[0, 2] and R[0, 1] == 0.0 and full[0, 2] == 50 * MIB
    # a TPU's VMEM holds a kernel's blocks only (keeps: tiles): nothing stays in it between operators
    R, cache, full, steps = resident_capacity(DesignBatch.from_hardware(dse.hardware("tpu-v5e"))).storage
    assert R[0, 1] == 0.0 and not steps[0, 1]
    # Gaudi 2's SRAM is a scratchpad its graph compiler places a step's activations in, not kept across steps
    R, cache, full, steps = resident_capacity(DesignBatch.from_hardware(dse.hardware("gaudi2"))).storage
    assert R[0, 1] == 48 * MIB and not steps[0, 1] and not cache[0, 1]


def test_a_gemm_that_fits_the_global_scratchpad_never_reaches_hbm_and_none_restores_it() -> None:
    d = DesignBatch.from_hardware(NPU)  # A = B = C = 2 MiB, all inside 32 MiB
    assert traffic(d, _gemm_table("auto"))[0, 0, 2] == 0.0
    none = _gemm_table("none")
    assert traffic(d, none)[0, 0, 2] == none.compulsory[0]
    # the on-chip levels still carry their tiles: residency only spares the levels outside the resident storage
    assert (traffic(d, _gemm_table("auto"))[0, 0, :2] == traffic(d, none)[0, 0, :2]).all()


def test_a_scratchpad_pins_the_share_of_the_weights_that_fits_beside_the_activations() -> None:
    two = 2 * MIB
    o = _gemm_table("auto")
    # R = 3 MiB: the activation set A + C = 4 MiB does not fit; the weights get min(1, 3 / 2) = all of the room
    ka, kh = _keep([3.0 * MIB], False, o)
    assert ka[0, 0] == 1.0 and kh[0, 0] == 0.0
    # R = 5 MiB: activations (4 MiB) stay, 1 MiB is left for the 2 MiB of weights: half of them stay
    ka, kh = _keep([5.0 * MIB], False, o)
    assert ka[0, 0] == 0.0 and kh[0, 0] == pytest.approx(0.5)
    got = level_traffic(np.array([32.0 * MIB]), o, offchip=True, keep=(ka, kh))[0, 0]
    assert got == pytest.approx(0.5 * two)
    # a cache keeps nothing unless the whole working set (4 + 2 MiB) fits
    ka, kh = _keep([5.0 * MIB, 6.0 * MIB], True, o)
    assert ka[:, 0].tolist() == [1.0, 0.0] and kh[:, 0].tolist() == [1.0, 0.0]
    # ... and between its resident share (R) and its whole capacity the share it serves falls linearly
    res = Resident(np.array([[4.0 * MIB]]), np.array([[True]]), np.array([[8.0 * MIB]]), np.array([[True]]))
    ka, kh = residency_keep(res, 0, o)  # working set 6 MiB: (8 - 6) / (8 - 4) = 1/2 stays
    assert ka[0, 0] == pytest.approx(0.5) and kh[0, 0] == pytest.approx(0.5)
    # a scratchpad that does not keep tensors across steps pins no weights, and a one-kernel step's activations
    # are its inputs and outputs: they come from main memory
    ka, kh = _keep([64.0 * MIB], False, o, steps=False)
    assert ka[0, 0] == 1.0 and kh[0, 0] == 1.0


def test_policies_keep_only_their_kind() -> None:
    ka, kh = _keep([5.0 * MIB], False, _gemm_table("weights"))
    assert ka[0, 0] == 1.0 and kh[0, 0] == 0.0  # no activations reserved: all 5 MiB for the 2 MiB of weights
    ka, kh = _keep([5.0 * MIB], False, _gemm_table("activations"))
    assert ka[0, 0] == 0.0 and kh[0, 0] == 1.0


@settings(max_examples=40, deadline=None)
@given(M=st.integers(1, 4096), N=st.integers(1, 4096), K=st.integers(1, 4096), r1=caps, r2=caps,
       cache=st.booleans(), policy=st.sampled_from(["auto", "none", "weights", "activations"]))
def test_more_resident_storage_never_adds_traffic(M, N, K, r1, r2, cache, policy) -> None:
    o = _gemm_table(policy, M, N, K)
    lo, hi = sorted((r1, r2))
    keep = _keep([lo, hi], cache, o)
    tr = level_traffic(np.array([8.0 * MIB, 8.0 * MIB]), o, offchip=True, keep=keep)[:, 0]
    full = level_traffic(np.array([8.0 * MIB]), o, offchip=True)[0, 0]
    assert tr[1] <= tr[0] + 1e-6 and tr[0] <= full + 1e-6 and tr[1] >= 0.0


def test_gpt2_decode_sram_knee_and_no_penalty_for_adding_hbm() -> None:
    """Issue 30's bar on npu-7nm copies that differ only in global SRAM, GPT-2 decode at batch 1."""
    wl = dse.workload("gpt2", phase="decode", batch=1)
    sizes = [8, 32, 128, 256, 512, 1024, 2048]
    t = [dse.predict(wl, _with_global(m)).time_s for m in sizes]
    assert all(b <= a * (1 + 1e-9) for a, b in zip(t, t[1:], strict=False))  # more SRAM never slower
    assert t[sizes.index(512)] <= 0.75 * t[0]
    no_hbm = dse.predict(wl, _with_global(1024, hbm=False)).time_s
    assert t[sizes.index(1024)] <= no_hbm * 1.02
    # the same knee through one batch of designs that differ in the global level (the [D, O] path)
    d = DesignBatch.stack([DesignBatch.from_hardware(_with_global(m)) for m in sizes])
    from dse.predict import evaluate_times

    per_op = evaluate_times(d, OpArrays.from_table(wl.ops))
    batch_t = (per_op * wl.ops["count"].to_numpy()).sum(axis=1)
    single = [(dse.predict(wl, _with_global(m)).ops["time_s"] * wl.ops["count"]).sum() for m in sizes]
    assert np.allclose(batch_t, single, rtol=1e-9)


def test_the_residency_doc_shows_the_sram_knee_the_predictor_gives() -> None:
    """docs/residency.md's GPT-2 knee table: step time (0.1 us), weights on chip (whole %) and binding shares (whole
    %) for each global SRAM size, as ``dse.predict`` gives them on npu-7nm copies."""
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "residency.md").read_text()
    row = re.compile(r"^\| (\d+) \| ([\d.]+) \| (\d+) % \| (.+) \|$")
    shown = {int(m[1]): m.groups()[1:] for m in map(row.match, doc.splitlines()) if m}
    assert sorted(shown) == [8, 32, 128, 256, 512, 1024]
    wl = dse.workload("gpt2", phase="decode", batch=1)
    for mib, (step, weights, binding) in shown.items():
        p = dse.predict(wl, _with_global(mib))
        o = p.ops
        w = o["held"] == "weights"
        share = float((o.loc[w, "held_on_chip"] * o.loc[w, "held_bytes"] * o.loc[w, "count"]).sum()
                      / (o.loc[w, "held_bytes"] * o.loc[w, "count"]).sum())
        bound = p.time_by_bound().sort_values(ascending=False)
        text = ", ".join(f"{k} {round(v * 100)} %" for k, v in bound.items() if round(v * 100) > 0)
        assert (float(step), int(weights), binding) == (round(p.time_s * 1e6, 1), round(share * 100), text), mib


def test_a_2d_multicast_grid_reads_each_operand_block_from_dram_once_per_row_or_column() -> None:
    """tt-metal's 2D-multicast matmul on a Blackhole p150 (L1 reuse_group 130: the worker grid pools its tiles): a
    4160^3 bf16 GEMM moves about its operands' 104 MB through GDDR6, where 140 separate 1.5 MB L1s re-read them
    several times over; a design with fewer cores than the group pools only what it has."""
    import dse

    p150 = dse.hardware("tt-p150")
    wl = dse.gemm(4160, 4160, 4160, dtype="bf16")
    pooled = float(dse.predict(wl, p150).ops.iloc[0]["traffic_gddr6_bytes"])
    data = p150.model_dump(mode="python", exclude_none=True)
    data["memory"][0]["reuse_group"] = 1
    alone = float(dse.predict(wl, dse.hardware(data)).ops.iloc[0]["traffic_gddr6_bytes"])
    operands = 3 * 4160 * 4160 * 2
    assert pooled < 1.5 * operands < 3 * operands < alone


def _npu_with_global(mib: float | None):
    data = dse.hardware("npu-7nm").model_dump(mode="python", exclude_none=True)
    if mib is None:
        data["memory"] = [m for m in data["memory"] if m["name"] != "global"]
    else:
        next(m for m in data["memory"] if m["name"] == "global")["capacity_mib"] = mib
    return dse.hardware(data)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(0.001, 256.0), min_size=2, max_size=4),
       st.sampled_from([("llama2-7b", dict(phase="prefill", seq=1024)), ("resnet50", dict(batch=32)),
                        ("bert-base", dict(batch=16, seq=384))]))
def test_a_shared_sram_level_of_any_size_never_slows_a_step_and_more_of_it_never_does(mibs, model) -> None:
    """npu-7nm's shared 'global' scratchpad sits between 512 KiB per-core scratchpads and HBM. Sized down to 1 KiB it
    made a Llama-2-7B prefill 23x slower than the same chip without it (HBM's reuse was sized by the 1 KiB level, not
    the per-core ones inside it: ``inner_capacity``); now a level of any size is no slower than none (its 4 TB/s never
    binds before HBM's 2.4), and a larger one is never slower than a smaller one, to 1e-3 of the step. The residency
    rule keeps every activation set that fits and pins weights in the room the largest of them leaves
    (``resident_room``), so a level just large enough for one more activation set pins fewer weights than a slightly
    smaller one (docs/residency.md says so). Hypothesis found Llama-2-7B prefill at 33 vs 51 MiB (2.6e-7 of the step)
    and bert-base at 29 vs 36 MiB (1.1e-5); on a 120-point grid from 1 KiB to 256 MiB the worst is ResNet-50 at 0.194
    vs 0.183 MiB, 2.5e-4 (bert-base 2.9e-5, Llama-2-7B 3.5e-6)."""
    wl = dse.workload(model[0], **model[1])
    none = dse.predict(wl, _npu_with_global(None)).time_s
    times = [dse.predict(wl, _npu_with_global(m)).time_s for m in sorted(mibs)]
    assert all(t <= none * (1 + 1e-5) for t in times)
    assert all(b <= a * (1 + 1e-3) for a, b in zip(times, times[1:], strict=False))


def test_a_level_smaller_than_one_inside_it_leaves_the_outer_reuse_to_the_inner_one() -> None:
    """Registers 64 KiB, one local scratchpad 512 KiB, a 1 KiB global buffer: inside HBM the reuse storage is the
    scratchpad's 512 KiB, not the buffer's 1 KiB."""
    S = inner_capacity(DesignBatch.from_hardware(_npu_with_global(1 / 1024)))
    assert S[0].tolist() == [64 * 1024, 512 * 1024, 512 * 1024]


def _local_keeps(keeps: str | None, local_mib: float = 12.0, global_sram: bool = False) -> dse.Hardware:
    """npu-7nm with its 24 per-core scratchpads saying ``keeps`` (None: the default, tiles) and, unless
    ``global_sram``, no global SRAM: a distributed-SRAM NPU (Tenstorrent's Tensix L1, IBM NorthPole)."""
    data = NPU.model_dump(mode="python", exclude_none=True)
    for m in data["memory"]:
        if m["name"] == "local":
            m["capacity_mib"] = local_mib
            if keeps is not None:
                m["keeps"] = keeps
    if not global_sram:
        data["memory"] = [m for m in data["memory"] if m["name"] != "global"]
    return dse.hardware(data)


def test_a_per_core_scratchpad_that_keeps_step_holds_activations_in_all_its_copies() -> None:
    """Before, a per-core level kept nothing between operators whatever it said, so SRAM on a chip without a shared
    level was worth only its area. ``keeps: step`` on a per-core scratchpad keeps an op's activations where they fit
    in the copies together (12 MiB over 24 cores), sparing main memory; the level's own tile traffic is unchanged."""
    tiles, step = (DesignBatch.from_hardware(_local_keeps(k)) for k in (None, "step"))
    R0 = resident_capacity(tiles).R
    R1, cache, full, steps = resident_capacity(step).storage
    assert R0[0].tolist() == [0.0, 0.0]  # levels: local (24 copies), hbm
    assert R1[0].tolist() == [0.0, 12 * MIB] and not cache.any() and not steps.any()
    # two GEMMs in a row, 2 MiB activations each way and 2 MiB of weights: the tensor between them stays
    t = ops.table([ops.gemm("g1", 1024, 1024, 1024, dtype="bf16"), ops.gemm("g2", 1024, 1024, 1024, dtype="bf16")])
    o = OpArrays.from_table(ops.with_residency(t, {"weights": float(t["held_bytes"].sum())}, "auto"))
    t0, t1 = traffic(tiles, o), traffic(step, o)
    assert (t1[0, :, 1] < t0[0, :, 1]).all()  # HBM: only the weights (re-read per row block) and nothing else
    assert (t0[0, :, 0] == t1[0, :, 0]).all()  # the scratchpads' own tile traffic is the same
    # keeps: steps also pins the weights that fit beside the activations across steps: nothing crosses HBM
    assert (traffic(DesignBatch.from_hardware(_local_keeps("steps")), o)[0, :, 1] == 0.0).all()
    # activations larger than the copies together go to HBM as before
    small = DesignBatch.from_hardware(_local_keeps("step", local_mib=3.0))
    assert (traffic(small, o)[0, :, 1] == traffic(DesignBatch.from_hardware(_local_keeps(None, 3.0)), o)[0, :, 1]).all()


def test_a_distributed_scratchpad_makes_an_edge_cnn_faster_never_slower() -> None:
    """MobileNet-v2 at batch 1 on npu-7nm's cores without HBM bandwidth to spare: the step with the per-core
    scratchpads keeping activations is faster, and keeping also across steps is never slower than within one."""
    w = dse.workload("mobilenet-v2", batch=1)
    t = {k: dse.predict(w, _local_keeps(k)).time_s for k in (None, "step", "steps")}
    assert t["step"] < 0.9 * t[None] and t["steps"] <= t["step"]



def test_the_distributed_sram_figures_of_the_residency_doc() -> None:
    """docs/residency.md quotes MobileNet-v2 at batch 1 (int8) on the edge NPU without and with ``keeps: step``, and
    ResNet-50 at batch 16 on an n150 whose L1 would keep activations, as this code computes them."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "residency.md").read_text()
    kept = copy.deepcopy(EDGE_NPU)
    kept["memory"][0]["keeps"] = "step"
    w = dse.workload("mobilenet-v2", batch=1, dtype="int8")
    before, after = (dse.predict(w, dse.hardware(h)).time_s * 1e3 for h in (EDGE_NPU, kept))
    assert f"took {before:.3f} ms bound by DRAM, and takes {after:.3f} ms with `keeps: step`" in doc
    n150 = dse.hardware("tt-n150").model_dump(mode="python", exclude_none=True)
    n150["memory"][0]["keeps"] = "step"
    r50 = dse.workload("resnet50", batch=16, dtype="fp8", fuse_elementwise=True)
    rate = 16 / dse.predict(r50, dse.hardware(n150)).time_s
    assert f"at {round(rate, -1):,.0f} img/s where 4,700 are measured" in doc


def test_the_distributed_sram_knee_table_of_the_residency_doc() -> None:
    """docs/residency.md's ResNet-50 (batch 1, int8, elementwise fused) on the edge NPU at each per-core SRAM total:
    the SRAM's area and the step under keeps tiles, step and steps, as dse computes them; more SRAM or a level that
    keeps more never makes the step slower."""
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "residency.md").read_text()
    row = re.compile(r"^\| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$")
    shown = {int(m[1]): m.groups()[1:] for m in map(row.match, doc.splitlines()) if m}
    assert sorted(shown) == [1, 2, 4, 8, 16, 32, 64]
    w = dse.workload("resnet50", batch=1, dtype="int8", fuse_elementwise=True)
    last = None
    for mib, cells in shown.items():
        times = []
        for keeps in (None, "step", "steps"):
            h = copy.deepcopy(EDGE_NPU)
            h["memory"][0]["capacity_mib"] = mib
            if keeps:
                h["memory"][0]["keeps"] = keeps
            times.append(dse.predict(w, dse.hardware(h)).time_s * 1e3)
        sram = dse.area(dse.hardware(h)).breakdown["sram"]
        assert cells == (f"{sram:.1f}", *(f"{t:.3f}" for t in times)), mib
        assert times[0] >= times[1] >= times[2]
        assert last is None or all(a <= b for a, b in zip(times, last, strict=True))
        last = times
