"""Tile-and-wave efficiency of GEMMs (dse.predict.tiles) and the wave fill of fused attention kernels."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.errors import DseError
from dse.hardware.designs import DesignBatch
from dse.predict import OpArrays, tiles
from dse.predict.roofline import array_fill, on_matrix, wave_fill
from dse.predict.tiles import tile_fill
from dse.workloads import ops

A100 = dse.hardware("a100-40gb")
D = DesignBatch.from_hardware(A100)
C = A100.compute.cores  # 108


def _one_tile(tiles: list[tuple[int, int]]) -> DesignBatch:
    m = A100.compute.matrix.model_copy(update={"cta_tiles": tiles})
    return DesignBatch.from_hardware(A100.model_copy(update={"compute": A100.compute.model_copy(update={"matrix": m})}))


T128 = _one_tile([(128, 128)])
#: the a100-40gb template's achievable fp16 peak and DRAM write rate (FLOP/s, B/s)
PEAK = 312e12 * 0.869
DRAM = 1555e9 * 0.834
L2 = 40 * 2**20


def _k_epi(e_out: float = 2.0) -> float:
    """K-equivalent of a one-tile kernel's serial epilogue once the op's bytes exceed the L2 (steady state)."""
    return e_out * PEAK / (2.0 * DRAM)


def _fill(M: int, N: int, K: int, dtype: str = "fp16", batch: int = 1, d: DesignBatch = D,
          kernel: str = "auto") -> float:
    rows = ops.with_gemm_kernel([ops.gemm("g", M, N, K, dtype=dtype, batch=batch)], kernel)
    row = tile_fill(OpArrays.from_table(ops.table(rows)), d)
    assert row is not None
    return float(row[0, 0])  # [1, O]: one core count


def test_one_tile_without_a_long_k_keeps_one_core_busy() -> None:
    # 128 x 128 x 64: one CTA, K too short to split: 1 of 108 cores
    assert _fill(128, 128, 64, d=T128) == pytest.approx(1 / C)
    # a ragged edge pads the tile: 100 x 128 fills 100/128 of it
    assert _fill(100, 128, 64, d=T128) == pytest.approx(100 / 128 / C)


def test_split_k_spreads_a_small_grid_with_a_long_k() -> None:
    # one 128x128 tile, K = 8192: each split of s peers pays CUTLASS's fix-up, 2 + 2 s k-blocks of 64, so
    # 8 splits of 1024 (+ 18 x 64) beat 16 of 512 (+ 34 x 64) and 4 of 2048 (+ 10 x 64)
    fix = tiles.MIN_K_SLICE * (tiles.FIXUP_BASE_ITERS + tiles.FIXUP_PEER_ITERS * np.array([2, 4, 8, 16]))
    q = 8192 / (C * (8192 / np.array([2, 4, 8, 16]) + fix))
    assert _fill(128, 128, 8192, d=T128) == pytest.approx(q.max()) == pytest.approx(8192 / (C * (1024 + 18 * 64)))
    # a grid of at least one wave is not split: 120 tiles in 2 waves; its 252 MB A operand exceeds the L2, so each
    # tile also writes its output at its share of the DRAM rate after its mainloop
    assert _fill(128 * 120, 128, 8192, d=T128) == pytest.approx(120 * 8192 / (2 * C * (8192 + _k_epi())))


def test_split_k_fixup_makes_a_near_full_grid_stay_unsplit() -> None:
    # 60 tiles, K = 8192: 16 splits would fill 960 / (9 x 108) = 0.99 of the cores if the fix-up were free; with
    # it (34 k-blocks per split tile on 8 of compute) and each split CTA's own epilogue (A, 126 MB, exceeds the L2,
    # so every tile drains its output) the best split, 4 in 3 waves, falls below no split at all
    unsplit = 60 * 8192 / (C * (8192 + _k_epi()))
    split4 = 60 * 8192 / (3 * C * (2048 + 10 * 64 + _k_epi()))
    assert _fill(128 * 60, 128, 8192, d=T128) == pytest.approx(unsplit)
    assert split4 < unsplit < 60 / C < 0.6 < 960 / (9 * C)
    # the fix-up moves only the tile's valid outputs: a 1-row GEMV tile splits almost for free
    fix16 = tiles.MIN_K_SLICE * (tiles.FIXUP_BASE_ITERS + tiles.FIXUP_PEER_ITERS * 16) / 128
    assert _fill(1, 128, 8192, d=T128) == pytest.approx(8192 / (128 * C * (512 + fix16)))


def test_a_short_k_gemm_whose_output_spills_the_l2_pays_its_serial_epilogue() -> None:
    # a batched attention-score product (K = 128, fp16 out): in the steady state of repeated calls an op whose
    # bytes exceed the 40 MiB L2 finds it full of dirty lines, so a wave's epilogues drain their 128x128 output
    # tiles at each SM's 1/108 share of the DRAM rate, with the tensor cores idle

    def expected(batch: int) -> float:
        out = batch * 2048 * 2048 * 2.0
        operands = 2 * batch * 2048 * 128 * 2.0
        k_epi = _k_epi() if operands + out > L2 else 0.0
        ctas = batch * 16 * 16
        return ctas * 128 / (np.ceil(ctas / C) * C * (128 + k_epi))

    assert _fill(2048, 2048, 128, batch=192, d=T128) == pytest.approx(expected(192))
    assert _fill(2048, 2048, 128, batch=192, d=T128) < 0.5  # the 1.6 GB output costs more than the mainloop
    assert _fill(2048, 2048, 128, batch=16, d=T128) == pytest.approx(expected(16))
    # an op the L2 holds (8 MiB out, 1 MiB in) rewrites its output there: no drain; a long K hides a drained epilogue
    assert _fill(2048, 2048, 128, batch=1, d=T128) == pytest.approx(expected(1)) == pytest.approx(256 / (3 * C))
    assert _fill(8192, 8192, 8192, d=T128) > 0.97


def test_a_grid_of_exactly_full_waves_loses_only_its_epilogue() -> None:
    # 108 x 2 tiles of 128x128: two full waves, and the tile's intensity (64 FLOP/B in fp16) is above what
    # the L2 share needs (271 / 5.4 = 50 FLOP/B): only the serial epilogue is lost (A, 113 MB, exceeds the L2)
    assert _fill(128 * C, 256, 4096, d=T128) == pytest.approx(4096 / (4096 + _k_epi()))
    assert _fill(128 * C, 256, 4096) == pytest.approx(4096 / (4096 + _k_epi()))  # the full set has this choice too
    # the same grid whose operands fit the L2 (K = 512: 14 MB + 7 MB out) runs at the roof
    assert _fill(128 * C, 256, 512, d=T128) == pytest.approx(1.0)


def test_one_wave_too_many_costs_its_tail_and_small_tiles_starve_on_l2() -> None:
    assert _fill(128 * (C + 1), 128, 256, d=T128) == pytest.approx((C + 1) / (2 * C))
    # 64x64 tiles: 32 FLOP/B in fp16, under the 50 the L2 share needs: r = 5.40 * 32 / 271.1 (the measured 5.40 TB/s)
    r = 7.22 * 0.748 * 32 / (312 * 0.869)
    assert _fill(64 * C, 64, 256, d=_one_tile([(64, 64)])) == pytest.approx(r)


def test_templates_without_tiles_keep_the_array_quantization() -> None:
    npu = DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    o = OpArrays.from_table(ops.table([ops.gemm("g", 1, 4096, 4096, dtype="bf16")]))
    assert tile_fill(o, npu) is None
    assert array_fill(o, npu, np.ones((1, 1), dtype=bool))[0, 0] == pytest.approx(1 / 64)  # on the arrays
    assert not on_matrix(o, npu)[0, 0]  # which is why the vector units (68.8 TFLOP/s > 275 / 64) take it


def test_bad_tiles_are_one_line_naming_the_field(tmp_path) -> None:
    text = (dse.units.repo_root() / "hw_templates" / "a100-40gb.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("cta_tiles: [[256, 128]", "cta_tiles: [[0, 128]"))
    with pytest.raises((DseError, ValueError), match="cta_tiles"):
        dse.hardware(str(bad))


def test_bert_attention_at_batch_one_fills_one_core_per_head() -> None:
    rows = ops.attention("a", batch=1, heads=16, kv_heads=16, q_len=384, kv_len=384, head_dim=64, causal=False,
                         dtype="fp16")
    o = OpArrays.from_table(ops.table(rows, compact=False))
    w = wave_fill(o, D)
    assert np.allclose(w, 16 / C)  # the attention row and the softmax inside its kernel
    rows8 = ops.attention("a", batch=8, heads=16, kv_heads=16, q_len=384, kv_len=384, head_dim=64,
                          causal=False, dtype="fp16")
    assert np.allclose(wave_fill(OpArrays.from_table(ops.table(rows8, compact=False)), D), 128 / (2 * C))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 20000), st.integers(1, 20000), st.integers(1, 20000), st.sampled_from(["fp16", "int8"]),
       st.integers(1, 64))
def test_fill_is_a_fraction_and_never_beats_the_roof(M, N, K, dtype, batch) -> None:
    f = _fill(M, N, K, dtype, batch)
    assert 0.0 < f <= 1.0


def _attention_io(b: int, h: int, s: int, d: int, hw: str = "a100-80gb") -> tuple[float, OpArrays, DesignBatch]:
    rows = ops.attention("a", batch=b, heads=h, kv_heads=h, q_len=s, kv_len=s, head_dim=d, causal=False,
                         dtype="fp16", kernel="flash")
    o = OpArrays.from_table(ops.table(rows))
    dd = DesignBatch.from_hardware(dse.hardware(hw))
    io = tiles.attention_fill(o, dd)
    return (None if io is None else float(io[0, o.attn][0])), o, dd


def test_flash_attention_pays_its_serial_q_load_and_o_store_once_they_spill_the_l2() -> None:
    hw = dse.hardware("a100-80gb")
    l2 = hw.memory[1].capacity_bytes
    fit, o, dd = _attention_io(1, 8, 2048, 128)  # Q and O of 4 MiB each: both stay in the 40 MiB L2
    assert o.a_bytes[o.attn][0] < l2 and fit == 1.0
    big, o, dd = _attention_io(32, 16, 512, 128)  # 64 MiB each of Q, K, V, O: beyond the L2, Q and O reach DRAM
    spill = 1.0
    peak = 312e12 * hw.compute.matrix.efficiency
    dram = hw.offchip_level.bandwidth_bps * hw.offchip_level.efficiency
    k_io = 2 * 2.0 * spill * peak / (4.0 * dram)  # Q and O, 2 bytes an element, in keys of the loop
    assert big == pytest.approx(512 / (512 + k_io))
    longer, _, _ = _attention_io(4, 16, 4096, 128)  # the same bytes over 8x the keys
    assert big < longer < 1.0 and longer == pytest.approx(4096 / (4096 + k_io))
    # the array fill of the attention row carries it; templates without CTA tiles have no CTA model
    assert array_fill(o, dd, on_matrix(o, dd))[0, o.attn][0] <= big
    assert _attention_io(32, 16, 512, 128, "b200")[0] is None


@settings(max_examples=150, deadline=None)
@given(u=st.integers(1, 3000), cores=st.integers(1, 160), dur=st.floats(0.1, 100.0))
def test_list_scheduling_of_equal_ctas_is_the_wave_fill(u: int, cores: int, dur: float) -> None:
    fill = tiles.list_schedule_fill(np.full(u, dur), cores)
    assert fill == pytest.approx(u / (np.ceil(u / cores) * cores), rel=1e-9)


@settings(max_examples=150, deadline=None)
@given(durs=st.lists(st.floats(0.5, 50.0), min_size=1, max_size=400), cores=st.integers(1, 64))
def test_list_scheduling_lies_between_the_roof_and_grahams_bound(durs: list[float], cores: int) -> None:
    d = np.array(durs)
    fill = tiles.list_schedule_fill(d, cores)
    ideal = d.sum() / cores  # makespan >= the mean load and <= it plus one CTA (Graham 1966)
    assert ideal / (ideal + d.max()) - 1e-12 <= fill <= 1.0 + 1e-12


def test_a_causal_flash_kernel_pays_the_tail_of_its_longest_query_tiles() -> None:
    def fills(causal: bool) -> tuple[float, float, float]:
        rows = ops.attention("a", batch=1, heads=32, kv_heads=32, q_len=4096, kv_len=4096, head_dim=128,
                             causal=causal, dtype="fp16", kernel="flash")
        o = OpArrays.from_table(ops.table(rows))
        f = wave_fill(o, D)[0]  # [1, O]: one core count
        soft = int(np.flatnonzero(o.kernel_of >= 0)[0])
        return float(f[o.attn][0]), float(f[soft]), float(o.units[o.attn][0])

    full, full_soft, u = fills(False)
    assert full == full_soft == pytest.approx(u / (np.ceil(u / C) * C))  # 1024 equal CTAs: 10 waves on 108 SMs
    causal, causal_soft = fills(True)[:2]
    # query tile m computes (m + 1) x 128 keys, launched in that order head after head: the last heads' long
    # tiles run on after the rest have drained, which the wave count of equal CTAs does not see
    assert causal < full and causal == causal_soft
    assert causal == pytest.approx(0.88, abs=0.03)


def test_a_persistent_kernel_overlaps_the_epilogue_a_one_tile_kernel_pays() -> None:
    # the batched score product above: a persistent kernel hides the drain behind the next tile's mainloop
    ctas = 192 * 16 * 16
    waves_only = ctas * 128 / (np.ceil(ctas / C) * C * 128)
    assert _fill(2048, 2048, 128, d=T128, kernel="persistent", batch=192) == pytest.approx(waves_only)
    assert _fill(2048, 2048, 128, d=T128, kernel="one_tile", batch=192) == pytest.approx(
        ctas * 128 / (np.ceil(ctas / C) * C * (128 + _k_epi())))
    # "auto" is the template's kernel: one_tile on the A100 (sm80 libraries), persistent on the H100 (sm90)
    assert _fill(2048, 2048, 128, d=T128, kernel="auto", batch=192) == _fill(2048, 2048, 128, d=T128,
                                                                               kernel="one_tile", batch=192)
    h100 = DesignBatch.from_hardware(dse.hardware("h100-sxm"))
    assert dse.hardware("h100-sxm").compute.matrix.gemm_kernel == "persistent"
    assert A100.compute.matrix.gemm_kernel == "one_tile"
    auto = _fill(8192, 8192, 256, d=h100, kernel="auto")
    assert auto == _fill(8192, 8192, 256, d=h100, kernel="persistent") > _fill(8192, 8192, 256, d=h100, kernel="one_tile")


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 20000), st.integers(1, 20000), st.integers(1, 20000), st.integers(1, 16),
       st.sampled_from(["fp16", "fp8", "int8"]))
def test_a_persistent_kernel_is_never_slower_than_a_one_tile_kernel(M, N, K, batch, dtype) -> None:
    h100 = DesignBatch.from_hardware(dse.hardware("h100-sxm"))
    for d in (D, h100):
        p = _fill(M, N, K, d=d, kernel="persistent", batch=batch, dtype=dtype)
        one = _fill(M, N, K, d=d, kernel="one_tile", batch=batch, dtype=dtype)
        assert 0.0 < one <= p <= 1.0


def test_an_op_whose_bytes_fit_the_l2_drains_nothing_and_one_beyond_drains_its_whole_output() -> None:
    # steady state: the spill is a step at the L2 (a + b + c against 40 MiB), not a ramp over the output size
    fits = _fill(4096, 2048, 128, d=T128, kernel="one_tile")  # 1 + 0.5 + 16 MiB
    beyond = _fill(4096, 8192, 128, d=T128, kernel="one_tile")  # 1 + 2 + 64 MiB
    assert fits == pytest.approx(4096 * 2048 / (np.ceil(512 / C) * C * 128 * 128))
    assert beyond == pytest.approx(4096 * 8192 * 128 / (np.ceil(2048 / C) * C * 128 * 128 * (128 + _k_epi())))


def test_a_bad_template_gemm_kernel_is_one_line_naming_the_field(tmp_path) -> None:
    text = (dse.units.repo_root() / "hw_templates" / "h100-sxm.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("gemm_kernel: persistent", "gemm_kernel: stream_k"))
    with pytest.raises(DseError) as exc:
        dse.hardware(str(bad))
    assert "\n" not in str(exc.value) and "gemm_kernel" in str(exc.value) and "one_tile" in str(exc.value)


@pytest.mark.parametrize("name", ["h100-sxm", "a100-40gb", "mi300x"])
def test_tile_terms_use_the_rate_the_roofline_computes_at(name: str) -> None:
    """The tile model's achievable peak per dtype is the roofline's compute rate: each dtype's mode (a missing
    mode falls back as ``matrix_peak`` does) times ``efficiency`` times its ``dtype_efficiency`` ratio."""
    from dse.predict.roofline import _matrix_eff

    d = DesignBatch.from_hardware(dse.hardware(name))
    roof = d.matrix_peak[0] * _matrix_eff(d)[0]
    ours = tiles._achievable_peaks(d)
    assert np.array_equal(np.isnan(ours), np.isnan(roof))
    ok = ~np.isnan(roof)
    assert np.allclose(ours[ok], roof[ok], rtol=1e-12)
    if d.base.compute.matrix.dtype_efficiency:  # the case that used to differ: a dtype with its own efficiency
        from dse.units import DTYPES

        fp8 = DTYPES.index("fp8")
        assert ours[fp8] < d.base.compute.matrix.peak_tflops["fp8"] * 1e12 * d.base.compute.matrix.efficiency


def test_a_per_head_decode_kernel_fills_one_row_of_the_mac_array_per_cta() -> None:
    """A decode step's grouped GQA tile stacks the 4 query heads of a KV head (4 rows of the MAC array); a CTA per
    query head fills one, so the same work takes longer where the array fill binds, and never less."""
    from dse.api import predict

    rows = {g: ops.attention("attn", batch=64, heads=32, kv_heads=8, q_len=1, kv_len=2048, head_dim=128, causal=True,
                             dtype="fp16", kv_dtype="fp8", gqa=g) for g in ("grouped", "per_head")}
    o = {g: OpArrays.from_table(ops.table(r)) for g, r in rows.items()}
    d = DesignBatch.from_hardware(dse.hardware("h100-sxm"))
    fill = {g: array_fill(o[g], d, on_matrix(o[g], d))[0, int(np.flatnonzero(o[g].perm == 0)[0])] for g in o}
    assert fill["per_head"] == pytest.approx(fill["grouped"] / 4)
    t = {g: predict(dse.workload("mistral-7b", phase="decode", batch=64, context=2048, dtype="fp8", kv_dtype="fp8",
                                 attention_dtype="fp16", attention_gqa=g), "h100-sxm").time_s for g in o}
    assert t["per_head"] > t["grouped"]


def test_each_design_s_tiles_read_its_own_rates_and_a_frozen_table_the_template_s() -> None:
    """A small tile is starved by its share of the L2 (``r``): a design whose L2 delivers a fiftieth of the template's
    fills less of its cores than the template, on its own row of the batch; a calibration's frozen table
    (:func:`tiles.freeze_rates`) keeps the template's row for every design."""
    base = DesignBatch.from_hardware(dse.hardware("h100-sxm"))
    j = base.level_names.index("l2")
    bw = base.bandwidth.copy()
    bw[0, j] /= 50.0
    from dataclasses import replace

    d = replace(base.take([0, 0]), bandwidth=np.vstack([base.bandwidth, bw]))
    rows = ops.with_gemm_kernel([ops.gemm("g", 4096, 4096, 4096, dtype="bf16")], "auto")
    o = OpArrays.from_table(ops.table(rows))
    fill = tile_fill(o, d)
    assert fill.shape == (2, 1) and fill[1, 0] < 0.5 * fill[0, 0]
    assert fill[0, 0] == pytest.approx(float(tile_fill(OpArrays.from_table(ops.table(rows)), base)[0, 0]))
    frozen = OpArrays.from_table(ops.table(rows))
    tiles.freeze_rates(frozen)
    assert (tile_fill(frozen, d) == fill[0, 0]).all()


def test_many_designs_at_once_are_each_the_one_design_row() -> None:
    """A sweep's grid computes its new tile rows in one vectorized call; each equals the one-design call exactly."""
    base = DesignBatch.from_hardware(dse.hardware("a100-80gb"))
    d = base.take([0] * 6).with_knobs(peak_flops=base.peak_flops[0] * np.array([0.5, 0.5, 1.0, 1.5, 2.0, 2.0]),
                                      dram_bandwidth=base.dram_bandwidth[0] * np.array([0.3, 1.0, 1.0, 2.0, 0.5, 3.0]))
    rows = ops.with_gemm_kernel([ops.gemm("a", 4096, 4096, 4096, dtype="fp16"), ops.gemm("b", 8, 12288, 4096, dtype="fp16"),
                                 ops.gemm("c", 16384, 1024, 128, dtype="fp16", batch=64)], "one_tile")
    o = OpArrays.from_table(ops.table(rows))
    P = tiles.tile_params(d)
    many = tiles.tile_fill_many(o, d, P)
    one = np.stack([tiles.tile_fill_at(OpArrays.from_table(ops.table(rows)), d, tuple(p)) for p in P.tolist()])
    assert np.array_equal(many, one) and len({tuple(r) for r in many.tolist()}) > 1
