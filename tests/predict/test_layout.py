"""The predictor's data layout (row-ordered gathers, shared rows, cache-sized chunks) changes no result:
the lean path and ``mix_times`` are bit-identical to the straightforward column-pick implementation
kept here as the reference (the code before issue 17)."""

from dataclasses import replace

import numpy as np
import pytest

import dse
from dse.hardware.designs import DesignBatch
from dse.predict import evaluate, evaluate_times, mix_arrays, mix_times, step_times
from dse.predict.network import network_times
from dse.predict.power_cap import apply_cap
from dse.predict.roofline import overhead_times
from dse.predict.traffic import OpArrays, per_level
from dse.workloads.mix import Mix


# --------------------------------------------------------------------------- reference (column picks)
def _ref_on_matrix(o, d):
    """The MAC arrays run a matrix op unless the vector units finish it first (the array fill without the wave)."""
    able = o.matrix[None, :] & ~np.isnan(d.matrix_peak[:, o.dtype_idx])
    r, c = d.array_rows[:, None], d.array_cols[:, None]
    M, N = np.minimum(o.M, o.head_rows)[None, :], o.N[None, :]
    fill = (M / (np.ceil(M / r) * r)) * (N / (np.ceil(N / c) * c))
    vec = np.nan_to_num(d.vector_peak[:, o.dtype_idx]) * d.vector_eff[:, None]
    mat = d.matrix_peak[:, o.dtype_idx] * d.matrix_eff[:, None]
    runs = d.base.compute.vector.runs
    may = o.matrix if runs is None else o.matrix & np.isin(o.kind, runs)
    return able & ~(may[None, :] & (vec > mat * fill))


def _ref_fill(o, d, matrix):
    r, c = d.array_rows, d.array_cols
    if np.all(r == r[0]) and np.all(c == c[0]) and np.all(matrix == matrix[:1]):
        r, c, matrix = r[:1], c[:1], matrix[:1]
    r, c = r[:, None], c[:, None]
    M, N = o.M[None, :], o.N[None, :]
    C = d.cores[:, None]  # wave fill of attention kernels (CTAs per head and sequence) on each design's cores
    u = o.units[None, :]
    wave = np.where(u > 0, u / np.maximum(np.ceil(u / C) * C, 1.0), 1.0)
    return np.where(matrix, (M / (np.ceil(M / r) * r)) * (N / (np.ceil(N / c) * c)), 1.0) * wave


def _ref_evaluate_times(d, o, table_order=True):
    matrix = _ref_on_matrix(o, d)
    peak = np.where(matrix, d.matrix_peak[:, o.dtype_idx], d.vector_peak[:, o.dtype_idx])
    eff = np.where(matrix, d.matrix_eff[:, None], d.vector_eff[:, None])
    rate = peak * eff
    rate *= _ref_fill(o, d, matrix)
    t = o.flops / np.where(o.flops > 0, rate, 1.0)
    rest = np.zeros_like(t)
    bw = d.bandwidth * d.bw_eff
    for lv, tr in per_level(d, o):
        ratio = d.write_ratio[lv]  # written bytes at the level's own write bandwidth (traffic.write_weighted)
        tr = tr if ratio == 1.0 else tr + (ratio - 1.0) * np.minimum(o.written, tr)
        np.maximum(rest, tr / bw[:, lv : lv + 1], out=rest)
    if o.coll_idx.size:
        rest[:, o.coll_idx] = np.maximum(rest[:, o.coll_idx], network_times(d, o))
    t_over = overhead_times(d, o, matrix)  # the fixed time of each op (the graph-kernel split included)
    if d.base.power_limit_w is not None:
        t /= apply_cap(d, o, matrix, t, rest, t_over, per_level(d, o))
    np.maximum(t, rest, out=t)
    t += t_over
    if o.eager.any():
        np.maximum(t, np.where(o.eager, d.host_s[:, None], 0.0), out=t)
    return o.to_table_order(t) if table_order else t


def _ref_mix_times(d, mix):
    a = mix_arrays(mix)
    out = np.empty((d.n, a.member.shape[1]))
    for start in range(0, d.n, 2048):
        sl = slice(start, min(start + 2048, d.n))
        out[sl] = step_times(_ref_evaluate_times(d.take(sl), a.o, table_order=False), a)
    return out


def _same_step_times(got: np.ndarray, ref: np.ndarray) -> None:
    """The per-op times are compared bit for bit; their step sums (``t @ member``, BLAS) agree to rounding only:
    OpenBLAS may sum the same values in another order for another memory alignment or thread split (numpy 2.4 on
    this machine: 414 of 600 sums of bit-identical inputs differ in the last bit)."""
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=0.0)


# --------------------------------------------------------------------------- cases
def _mix(*specs) -> Mix:
    return Mix.of([dse.workload(name, **kw) for name, kw in specs])


DEFAULT = (("resnet50", dict(batch=32, dtype="bf16")), ("vit-b16", dict(batch=16, dtype="bf16")),
           ("bert-base", dict(batch=16, seq=384, dtype="bf16")),
           ("gpt2", dict(phase="decode", batch=8, context=1024, dtype="bf16")),
           ("llama2-7b", dict(phase="decode", batch=1, context=1024, dtype="bf16")))


def _searched(base: DesignBatch, n: int, rng) -> DesignBatch:
    """The common search case: peak, DRAM bandwidth and SRAM per design, the rest shared."""
    d = DesignBatch.stack([base] * n)
    d = d.with_knobs(peak_flops=d.peak_flops * rng.uniform(0.2, 4, n),
                     dram_bandwidth=d.dram_bandwidth * rng.uniform(0.2, 4, n),
                     sram_bytes=d.capacity[:, d.sram_level] * rng.uniform(0.2, 8, n))
    return d


def _everything(base: DesignBatch, n: int, rng) -> DesignBatch:
    """Every per-design array differs (no shared row applies)."""
    d = _searched(base, n, rng)
    L = d.capacity.shape[1]
    return replace(d, capacity=d.capacity * rng.uniform(0.3, 3, (n, L)), bandwidth=d.bandwidth * rng.uniform(0.3, 3, (n, L)),
                   bw_eff=rng.uniform(0.5, 1, (n, L)), reg_bytes=d.reg_bytes * rng.uniform(0.3, 3, n),
                   array_rows=rng.choice([8.0, 32, 64, 128], n), array_cols=rng.choice([8.0, 64, 256], n),
                   overhead_s=rng.uniform(0, 5e-6, n), host_s=rng.uniform(0, 2e-5, n),
                   matrix_eff=rng.uniform(0.5, 1, n), vector_eff=rng.uniform(0.5, 1, n),
                   vector_peak=d.vector_peak * rng.uniform(0.5, 2, (n, 1)))


@pytest.mark.parametrize("make", [_searched, _everything])
@pytest.mark.parametrize("n", [1, 7, 5000])
def test_mix_times_bit_identical_to_column_picks(make, n) -> None:
    rng = np.random.default_rng(n)
    mix = _mix(*DEFAULT)
    d = make(DesignBatch.from_hardware(dse.hardware("npu-7nm")), n, rng)
    a = mix_arrays(mix)
    assert np.array_equal(evaluate_times(d, a.o), _ref_evaluate_times(d, a.o))
    _same_step_times(mix_times(d, mix), _ref_mix_times(d, mix))


def _untiled(name: str):
    """A template without its CTA tile list: the reference above predates the tile model (dse.predict.tiles)."""
    hw = dse.hardware(name)
    m = hw.compute.matrix.model_copy(update={"cta_tiles": None})
    return hw.model_copy(update={"compute": hw.compute.model_copy(update={"matrix": m})})


def test_eager_collectives_power_cap_and_missing_modes_bit_identical() -> None:
    rng = np.random.default_rng(1)
    hw = _untiled("h100-sxm")
    capped = hw.model_copy(update={"power_limit_w": 350.0})
    wl_eager = dse.workload("gpt2", phase="decode", batch=4, context=512, dtype="fp32", execution="eager")
    wl_tp = dse.workload("llama2-7b", phase="decode", batch=8, context=1024, dtype="bf16", plan={"tp": 4})
    mix = Mix.of([wl_eager, wl_tp])
    for h in (hw, capped):
        base = DesignBatch.from_hardware(h)
        base = base.with_system(dse.api.load_system("dgx-h100").resized(4))
        for d in (_searched(base, 300, rng), _everything(base, 300, rng)):
            mp = d.matrix_peak.copy()
            mp[::3, :] = np.where(np.isnan(mp[::3]), 1e15, mp[::3])  # some designs gain modes (fp32 on the arrays)
            d = replace(d, matrix_peak=mp)
            o = OpArrays.from_table(mix.ops)
            assert np.array_equal(evaluate_times(d, o), _ref_evaluate_times(d, o))
            _same_step_times(mix_times(d, mix), _ref_mix_times(d, mix))
            np.testing.assert_allclose(evaluate(d, o).time, evaluate_times(d, o), rtol=1e-12)


def test_chunk_size_follows_the_operator_count() -> None:
    from dse.predict import chunk_designs

    assert chunk_designs(100) > chunk_designs(1000) >= 16
    assert chunk_designs(100) * 100 * 8 <= 2**20 and chunk_designs(10**6) == 16


def _cases():
    rng = np.random.default_rng(5)
    npu = DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    yield _mix(*DEFAULT), _searched(npu, 500, rng)
    yield _mix(*DEFAULT), _everything(npu, 500, rng)
    hw = dse.hardware("h100-sxm")  # with its CTA tiles: the lean pass and the full evaluation share them
    mix = Mix.of([dse.workload("gpt2", phase="decode", batch=4, context=512, dtype="fp32", execution="eager"),
                  dse.workload("llama2-7b", phase="decode", batch=8, context=1024, dtype="bf16", plan={"tp": 4})])
    for h in (hw, hw.model_copy(update={"power_limit_w": 350.0})):
        base = DesignBatch.from_hardware(h).with_system(dse.api.load_system("dgx-h100").resized(4))
        yield mix, _everything(base, 200, rng)


@pytest.mark.parametrize("case", range(4))
def test_lean_binding_pass_matches_the_full_evaluation(case) -> None:
    from dse.predict import mix_times_bounds
    from dse.predict.roofline import evaluate_bound

    mix, d = list(_cases())[case]
    o = OpArrays.from_table(mix.ops)
    t, code = evaluate_bound(d, o)
    assert np.array_equal(t, evaluate_times(d, o))
    assert np.array_equal(code, evaluate(d, o).bound)
    times, by = mix_times_bounds(d, mix)
    assert np.array_equal(times, mix_times(d, mix))
    np.testing.assert_allclose(by.sum(axis=2), evaluate(d, o).time @ mix.membership(), rtol=1e-12)
