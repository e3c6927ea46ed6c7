"""dse.predict.fused: the compiled lean path gives numpy's times and binding ceilings on every kind of design and mix.

Each case runs the same batch through both paths (``FUSED_MIN`` lowered so that small batches compile, ``DSE_FUSED=0``
for numpy's) and compares: step times to a few ulp (the step sums add in another order than numpy's matrix product),
each ceiling's time likewise, and every binding ceiling exactly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dse
from dse.hardware.designs import DesignBatch
from dse.hardware.system import load_system
from dse.predict import fused, mix_arrays, mix_bindings, mix_times, mix_times_bounds
from dse.search.space import designs_from_params
from dse.workloads.mix import Mix
from tests.conftest import need


@pytest.fixture(autouse=True)
def _numba():
    """The ``fast`` extra (skipped without it; in CI, where .ci/run installs it, a failure)."""
    need("numba", "fast")


N = 257  # designs: not a multiple of the kernel's block of 512 or of anything else


def _inference_mix(eager_training: bool = True) -> Mix:
    wls = [dse.workload("resnet50", batch=8), dse.workload("bert-base", batch=4, seq=128),
           dse.workload("gpt2", phase="decode", batch=8, context=1024),
           dse.workload("llama2-7b", phase="prefill", batch=1, seq=512),
           dse.workload("llama2-7b", phase="decode", batch=4, context=2048)]
    if eager_training:
        wls.append(dse.workload("gpt2", phase="training", batch=2, seq=256, execution="eager"))
    return Mix.of(wls, [1.0 + i for i in range(len(wls))])


def _knobs(d: DesignBatch, rng: np.random.Generator, **extra: np.ndarray) -> DesignBatch:
    """The base at ``N`` random design points: peak, DRAM bandwidth, SRAM and whatever ``extra`` sets."""
    params = {"peak_tflops": rng.uniform(0.2, 2.0, N) * float(np.nanmax(d.matrix_peak)) / 1e12,
              "sram_mib": rng.uniform(1, 512, N), **extra}
    if d.offchip.any():
        params["dram_bandwidth_tbps"] = rng.uniform(0.3, 6.0, N)
    return designs_from_params(d, params)


def _both(monkeypatch, fn):
    """(fn() on the compiled path, fn() on numpy's)."""
    monkeypatch.setattr(fused, "FUSED_MIN", 0)
    monkeypatch.delenv("DSE_FUSED", raising=False)
    got = fn()
    monkeypatch.setenv("DSE_FUSED", "0")
    ref = fn()
    monkeypatch.delenv("DSE_FUSED")
    return got, ref


def _check(monkeypatch, d: DesignBatch, mix: Mix) -> None:
    a = mix_arrays(mix)
    _check_energy(monkeypatch, d, mix, a)
    assert fused.available()
    monkeypatch.setattr(fused, "FUSED_MIN", 0)
    assert fused.applies(d, a.o)
    t_got, t_ref = _both(monkeypatch, lambda: mix_times(d, mix, arrays=a))
    np.testing.assert_allclose(t_got, t_ref, rtol=1e-13, atol=0)
    (tb_got, by_got), (tb_ref, by_ref) = _both(monkeypatch, lambda: mix_times_bounds(d, mix, a))
    np.testing.assert_allclose(tb_got, tb_ref, rtol=1e-13, atol=0)
    np.testing.assert_allclose(by_got, by_ref, rtol=1e-13, atol=1e-300)
    assert ((by_got > 0) == (by_ref > 0)).all()  # every op lands under the same ceiling
    w = np.arange(1.0, by_ref.shape[1] + 1)
    (_, top_got, b_got, sh_got), (_, top_ref, b_ref, sh_ref) = _both(monkeypatch, lambda: mix_bindings(d, mix, w, a))
    np.testing.assert_array_equal(top_got, top_ref)
    np.testing.assert_array_equal(b_got, b_ref)
    np.testing.assert_allclose(sh_got, sh_ref, rtol=1e-12, atol=1e-15)


def _check_energy(monkeypatch, d: DesignBatch, mix: Mix, a) -> None:
    """The energy model's bytes per level and workload, summed by the kernel, are numpy's to a few ulp."""
    from dse.cost.power import mix_energy

    t = np.ones((d.n, a.member.shape[1]))
    got, ref = _both(monkeypatch, lambda: mix_energy(d, mix, times=t, arrays=a))
    assert got.parts_j.keys() == ref.parts_j.keys()
    for name in ref.parts_j:
        np.testing.assert_allclose(got.parts_j[name], ref.parts_j[name], rtol=1e-12, atol=0, err_msg=name)


def test_npu_designs_of_every_knob(monkeypatch):
    """npu-7nm (scratchpads kept across steps, weights pinned in SRAM) with its cores, clock and array shape
    searched: the fill and the core-count wave fill differ per design."""
    rng = np.random.default_rng(0)
    base = DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    d = _knobs(base, rng, **{"compute.matrix.array_rows": rng.choice([32.0, 64.0, 128.0], N),
                             "compute.clock_ghz": rng.uniform(0.8, 2.0, N)})
    _check(monkeypatch, d, _inference_mix())


@pytest.mark.parametrize("name", ["h100-sxm", "a100-80gb"])
def test_gpu_designs_with_their_l2_and_graph_kernels(monkeypatch, name):
    """A GPU's L2 is a cache (a step's working set stays whole or in part) and its graph kernels pay the streaming
    ramp by the share of bytes that reach HBM (``graph_kernel_us``)."""
    rng = np.random.default_rng(1)
    base = DesignBatch.from_hardware(dse.hardware(name))
    assert base.graph_s is not None and not np.isnan(base.graph_s).all()
    _check(monkeypatch, _knobs(base, rng), _inference_mix())


def test_a_runtime_of_one_program_per_operator_pays_its_pipelines_in_the_kernel(monkeypatch):
    """tt-n150 as shipped (``op_boundaries: serial``): every GEMM and convolution pays its software pipeline's fill
    and drain (``dse.predict.pipeline``); the kernel adds it as numpy does, designs of every knob and a lone GEMM
    alike, and the same template run as one graph takes none of it."""
    rng = np.random.default_rng(2)
    d = _knobs(DesignBatch.from_hardware(dse.hardware("tt-n150")), rng)
    _check(monkeypatch, d, _inference_mix(eager_training=False))
    _check(monkeypatch, d, Mix.of([dse.workload("gemm:3328x2560x2560", dtype="bf16")]))
    hw = dse.hardware("tpu7x")  # a lone GEMM on a graph compiler's chip pays it too
    _check(monkeypatch, _knobs(DesignBatch.from_hardware(hw), rng), Mix.of([dse.workload("gemm:1024x1024x1024",
                                                                                        dtype="bf16")]))


@pytest.mark.parametrize("name", ["tpu-v5e", "gaudi2", "tt-n150", "trainium2", "inferentia2"])
def test_npu_templates(monkeypatch, name):
    """Configurable array geometries, vector units that take low-fill matrix ops, reserved cores."""
    rng = np.random.default_rng(2)
    base = DesignBatch.from_hardware(dse.hardware(name))
    _check(monkeypatch, _knobs(base, rng), _inference_mix(eager_training=False))


@pytest.mark.parametrize("name", ["tt-n150", "h100-sxm"])
def test_block_scaled_weights(monkeypatch, name):
    """Weights in bfp8 / bfp4 beside bf16 activations: decoded for free where the matrix unit ``unpacks`` them
    (Tensix), by a dequantization kernel on the vector units elsewhere; both paths agree either way."""
    rng = np.random.default_rng(3)
    base = DesignBatch.from_hardware(dse.hardware(name))
    mix = Mix.of([dse.workload("llama3-8b", phase="decode", batch=32, context=128, weight_dtype="bfp8",
                               weight_dtypes={"ffn_up": "bfp4"}, kv_dtype="bfp8"),
                  dse.workload("llama2-7b", phase="prefill", batch=1, seq=256, weight_dtype="bfp4")], [1.0, 2.0])
    _check(monkeypatch, _knobs(base, rng), mix)


def test_collectives_and_their_overlap(monkeypatch):
    """A training step on 8 chips of a DGX with tensor and data parallelism: network terms per collective and
    the data-parallel gradient all-reduce partly hidden behind the backward pass."""
    rng = np.random.default_rng(3)
    sysm = load_system("dgx-h100")
    wl = dse.workload("llama2-7b", phase="training", batch=16, seq=1024, plan={"tp": 2, "dp": 4})
    mix = Mix.of([wl, dse.workload("gpt2", phase="decode", batch=8, context=512, plan={"tp": 2})])
    a = mix_arrays(mix)
    assert a.o.coll_idx.size and a.overlap is not None
    base = DesignBatch.from_hardware(dse.hardware(sysm.chip)).with_system(sysm.resized(8))
    d = _knobs(base, rng, **{"network.link_bandwidth_gbps": rng.uniform(10, 100, N)})
    _check(monkeypatch, d, mix)


def test_a_chip_without_dram(monkeypatch, tmp_path):
    """An all-SRAM chip: no off-chip level, everything resident."""
    from tests.test_all_sram import sram_template

    path = sram_template(tmp_path)
    rng = np.random.default_rng(4)
    base = DesignBatch.from_hardware(dse.hardware(path))
    assert not base.offchip.any()
    mix = Mix.of([dse.workload("gpt2", phase="decode", batch=1, context=256), dse.workload("resnet50", batch=1)])
    _check(monkeypatch, _knobs(base, rng), mix)


def test_designs_in_several_calls(monkeypatch):
    """A batch prepared in chunks (a large table per design is built a chunk at a time) gives the same answer."""
    rng = np.random.default_rng(6)
    base = DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    d = _knobs(base, rng, **{"compute.matrix.array_rows": rng.choice([32.0, 64.0, 128.0], N)})
    monkeypatch.setattr(fused, "CHUNK_ELEMENTS", 1)
    monkeypatch.setattr(fused, "MIN_CHUNK", 100)  # 100 + 100 + 57 designs
    _check(monkeypatch, d, _inference_mix())


def test_power_cap_and_small_batches_stay_on_numpy(monkeypatch):
    """Under a power cap (its clock iteration is numpy's) and below FUSED_MIN the compiled path does not run."""
    capped = DesignBatch.from_hardware(dse.hardware("h100-sxm").model_copy(update={"power_limit_w": 500.0}), 4)
    o = mix_arrays(_inference_mix()).o
    monkeypatch.setattr(fused, "FUSED_MIN", 0)
    assert not fused.applies(capped, o)
    monkeypatch.setattr(fused, "FUSED_MIN", 1 << 17)
    assert not fused.applies(DesignBatch.from_hardware(dse.hardware("h100-sxm"), 4), o)
    monkeypatch.setenv("DSE_FUSED", "0")
    assert not fused.available()


_MIX = None


def _small_mix() -> Mix:
    """A decode, a prefill and a CNN (built once: hypothesis calls the property many times)."""
    global _MIX
    if _MIX is None:
        _MIX = Mix.of([dse.workload("gpt2", phase="decode", batch=4, context=512),
                       dse.workload("llama2-7b", phase="prefill", batch=1, seq=256), dse.workload("resnet50", batch=2)])
    return _MIX


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 40), seed=st.integers(0, 2**31 - 1))
def test_property_any_npu_batch_is_numpys(monkeypatch, n, seed):
    """Property: for any batch of npu-7nm designs (peak, DRAM bandwidth, SRAM, array rows and clock drawn over the
    search ranges), the compiled path's step times are numpy's to a few ulp and its ceilings numpy's exactly."""
    rng = np.random.default_rng(seed)
    base = DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    d = designs_from_params(base, {"peak_tflops": rng.uniform(16, 2048, n), "dram_bandwidth_tbps": rng.uniform(0.2, 8, n),
                                   "sram_mib": rng.uniform(1, 2048, n),
                                   "compute.matrix.array_rows": rng.choice([16.0, 32.0, 64.0, 128.0, 256.0], n),
                                   "compute.clock_ghz": rng.uniform(0.5, 2.5, n)})
    mix = _small_mix()
    a = mix_arrays(mix)
    (t_got, by_got), (t_ref, by_ref) = _both(monkeypatch, lambda: mix_times_bounds(d, mix, a))
    np.testing.assert_allclose(t_got, t_ref, rtol=1e-13, atol=0)
    assert ((by_got > 0) == (by_ref > 0)).all()


def test_a_numba_that_does_not_import_leaves_numpy_running(monkeypatch):
    """An installed numba that fails to import (built for another numpy) turns the compiled path off with one
    warning; the batch is still predicted, by numpy."""
    def broken():
        raise ImportError("Numba needs NumPy 1.0 or less")

    monkeypatch.setattr(fused, "_jit", broken)
    fused._importable.cache_clear()
    monkeypatch.setattr(fused, "FUSED_MIN", 0)
    try:
        d = DesignBatch.from_hardware(dse.hardware("npu-7nm"), 3)
        mix = Mix.of([dse.workload("resnet50", batch=1)])
        with pytest.warns(RuntimeWarning, match="numba does not import"):
            assert not fused.applies(d, mix_arrays(mix).o)
        assert mix_times(d, mix).shape == (3, 1)
    finally:
        fused._importable.cache_clear()


def test_predict_many_is_the_same_frame(monkeypatch):
    """The public entry point: times, each workload's binding ceiling and the mix's, on both paths."""
    rng = np.random.default_rng(5)
    knobs = {"peak_tflops": rng.uniform(64, 1024, N), "dram_bandwidth_tbps": rng.uniform(0.4, 4, N),
             "sram_mib": rng.uniform(8, 256, N)}
    import pandas as pd

    wls = list(_inference_mix().workloads)
    got, ref = _both(monkeypatch, lambda: dse.predict_many(wls, pd.DataFrame(knobs), base="npu-7nm"))
    assert list(got.columns) == list(ref.columns)
    for c in got.columns:
        if got[c].dtype.kind == "f":
            np.testing.assert_allclose(got[c], ref[c], rtol=1e-12)
        else:
            assert (got[c].astype(str) == ref[c].astype(str)).all(), c
