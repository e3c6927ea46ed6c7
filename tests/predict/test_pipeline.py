"""A scratchpad NPU's software-pipeline fill and drain (dse.predict.pipeline)."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.hardware.designs import DesignBatch
from dse.predict import OpArrays, evaluate, evaluate_times
from dse.predict.pipeline import block_counts, lone_op, pipeline_exposed, staging_level
from dse.predict.roofline import evaluate_bound
from dse.workloads import ops

TPU7X = dse.hardware("tpu7x")


def _terms(n: int) -> tuple[float, float, float]:
    """(compute, input load, output store) seconds of a bf16 n^3 GEMM on one TPU7x TensorCore from the template's
    own figures: 1153.5 TFLOP/s x 0.829 on a full 256x256 array, HBM 3690 GB/s x 0.87."""
    hbm = 3690e9 * 0.87
    return 2.0 * n**3 / (1153.5e12 * 0.829), 2 * n * n * 2 / hbm, n * n * 2 / hbm


@pytest.mark.parametrize("n", [512, 1024, 2048])
def test_a_gemm_that_fits_one_block_loads_computes_and_stores_in_series(n: int) -> None:
    """One block (its A, B and C fit half the 64 MiB VMEM): nothing overlaps, the kernel takes launch + load +
    compute + store, where the roofline alone gave launch + max(compute, memory)."""
    t_c, t_in, t_out = _terms(n)
    p = dse.predict(dse.workload(f"gemm:{n}x{n}x{n}", dtype="bf16"), TPU7X)
    want = TPU7X.compute.launch_overhead_us * 1e-6 + t_in + t_c + t_out
    assert p.time_s == pytest.approx(want, rel=1e-9)
    assert p.ops["t_overhead_s"].iloc[0] == pytest.approx(want - max(t_c, t_in + t_out), rel=1e-9)


def test_the_tpu7x_gemm_sweep_is_predicted_within_ten_percent() -> None:
    """The 256^3-16384^3 bf16 GEMMs on one TPU7x TensorCore (accelerator-microbenchmarks, never fitted) were 7-38 %
    too fast without the pipeline's serial load and store: 1024^3 ran at 349.7 TFLOP/s, the roofline gave 561."""
    from dse.validate.suite import load_measurements, run_suite

    df = load_measurements()
    rows = df[df["id"].str.startswith("amb-tpu7x-gemm-") & (df["fitted_into"].fillna("") == "")]
    res = run_suite(rows)
    assert len(res) == 6 and (res["status"] == "covered").all()
    assert res["time_error_pct"].abs().max() <= 10.0


def test_a_graph_compiler_hides_it_between_operators() -> None:
    """The same GEMM run twice in one program (count 2): XLA loads the second's blocks while the first computes, so
    neither pays the fill and drain; the lone one does."""
    d = DesignBatch.from_hardware(TPU7X)
    g = ops.gemm("g", 1024, 1024, 1024, dtype="bf16")
    one = OpArrays.from_table(ops.table([g]))
    two = OpArrays.from_table(ops.table([{**g, "count": 2}]))
    assert lone_op(one) and not lone_op(two)
    t_c = evaluate(d, one).t_compute
    assert pipeline_exposed(d, one, np.ones((1, 1), bool), t_c)[0, 0] > 0
    assert pipeline_exposed(d, two, np.ones((1, 1), bool), t_c) is None
    assert evaluate(d, two).t_overhead[0, 0] == pytest.approx(TPU7X.compute.launch_overhead_us * 1e-6)


def test_a_runtime_that_runs_each_operator_as_a_program_pays_it_on_every_gemm() -> None:
    """tt-metal (op_boundaries: serial): every GEMM of a decode step pays its fill and drain; the vector ops and
    the GPU-style templates pay none."""
    n150 = dse.hardware("tt-n150")
    assert n150.compute.op_boundaries == "serial"
    p = dse.predict(dse.workload("llama2-7b", phase="decode", batch=8, context=512), n150)
    gemm = p.ops[(p.ops["kind"] == "gemm") & (p.ops["ran_on"] == "matrix")]
    launch = n150.compute.launch_overhead_us * 1e-6
    assert len(gemm) and (gemm["t_overhead_s"] > launch * 1.001).all()
    rest = p.ops[p.ops["kind"].isin(["norm", "elementwise"])]
    assert len(rest) and (rest["t_overhead_s"] <= launch * (1 + 1e-12)).all()
    for gpu in ("h100-sxm", "a100-80gb"):
        assert staging_level(DesignBatch.from_hardware(dse.hardware(gpu))) is None


@pytest.mark.parametrize("chip", ["tpu7x", "tt-n150", "tt-p150", "gaudi2"])
def test_every_path_adds_the_same_fill_and_drain(chip: str) -> None:
    """evaluate, the lean evaluate_times and evaluate_bound give the same times, lone op and model alike."""
    d = DesignBatch.stack([DesignBatch.from_hardware(dse.hardware(chip))] * 2)
    d = replace(d, capacity=d.capacity * np.array([[1.0], [0.25]]))  # a second design with a quarter of each level
    for wl in (dse.workload("gemm:3072x4096x3072", dtype="bf16"),
               dse.workload("llama2-7b", phase="prefill", seq=512, dtype="bf16")):
        o = OpArrays.from_table(wl.ops)
        full = evaluate(d, o).time
        np.testing.assert_allclose(evaluate_times(d, o), full, rtol=1e-12)
        np.testing.assert_allclose(evaluate_bound(d, o)[0], full, rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(M=st.integers(1, 65536), N=st.integers(1, 65536), K=st.integers(1, 65536),
       S=st.floats(2.0**10, 2.0**30), cores=st.integers(1, 256))
def test_block_counts_are_whole_and_one_block_holds_what_fits(M, N, K, S, cores) -> None:
    o = OpArrays.from_table(ops.table([ops.gemm("g", M, N, K, dtype="bf16")]))
    n, n_out = block_counts(o, np.array([S]), np.array([float(cores)]))
    assert n_out[0, 0] >= 1 and n[0, 0] >= n_out[0, 0] and n[0, 0] == np.round(n[0, 0])
    side = np.sqrt(S / (2.0 * 6))  # bf16 A, B and out, every block double-buffered
    if max(M, N, K) <= side:
        assert n[0, 0] == 1


def test_a_larger_scratchpad_lengthens_a_serial_runtimes_fill_and_drain_as_the_doc_says() -> None:
    """docs/npu_validation.md: the blocks are the largest that fit, so on tt-n150 (serial) 27, 108 and 432 MiB of L1
    give ResNet-50 b16 5.00, 5.45 and 5.71 ms and a 4096^3 GEMM 2.48, 2.54 and 2.64 ms; the same designs run as one
    graph do not slow down with L1."""
    from dse.predict import mix_times
    from dse.workloads.mix import Mix

    hw = dse.hardware("tt-n150")
    sizes = np.array([27.0, 108.0, 432.0]) * 2.0**20
    d = DesignBatch.stack([DesignBatch.from_hardware(hw)] * 3).with_knobs(sram_bytes=sizes)
    resnet = Mix.of([dse.workload("resnet50", batch=16, fuse_elementwise=True)])
    gemm = Mix.of([dse.workload("gemm:4096x4096x4096", dtype="bf16")])
    assert np.round(mix_times(d, resnet)[:, 0] * 1e3, 2).tolist() == [5.0, 5.45, 5.71]
    assert np.round(mix_times(d, gemm)[:, 0] * 1e3, 2).tolist() == [2.48, 2.54, 2.64]
    graph = hw.model_copy(update={"compute": hw.compute.model_copy(update={"op_boundaries": "overlapped"})})
    g = DesignBatch.stack([DesignBatch.from_hardware(graph)] * 3).with_knobs(sram_bytes=sizes)
    t = mix_times(g, resnet)[:, 0]
    assert (np.diff(t) <= 1e-12).all()


def test_a_small_staging_buffer_leaves_the_blocks_to_the_scratchpads_inside_it() -> None:
    """A 64 KiB shared buffer between npu-7nm's 0.5 MiB per-core scratchpads and its HBM: the blocks are the per-core
    scratchpads' (as the traffic model's inner capacity says), not the buffer's 2.7 KiB share per core."""
    from dse.predict.pipeline import staging_bytes

    hw = dse.hardware("npu-7nm")
    small = hw.model_copy(update={"memory": [hw.memory[0], hw.memory[1].model_copy(update={"capacity_mib": 1 / 16}),
                                             hw.memory[2]]})
    d = DesignBatch.from_hardware(small)
    assert staging_level(d) == 1
    assert staging_bytes(d, 1)[0] == pytest.approx(hw.memory[0].capacity_bytes / hw.compute.cores)


def test_an_eager_frameworks_gemms_pay_it_on_a_graph_compilers_chip() -> None:
    """execution: eager dispatches each operator on its own, so no compiled graph overlaps a GEMM with its
    neighbours: on npu-7nm (overlapped) an eager training step's GEMMs pay their fill and drain, the same step
    compiled pays none."""
    from dse.predict.pipeline import paying, pays

    d = DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    eager = OpArrays.from_table(dse.workload("gpt2", phase="training", batch=2, seq=256, execution="eager").ops)
    graph = OpArrays.from_table(dse.workload("gpt2", phase="training", batch=2, seq=256).ops)
    assert paying(d, eager).all() and not pays(d, graph)
    matrix = np.ones((1, eager.n), dtype=bool)
    t_c = np.take(evaluate(d, eager).t_compute, eager.perm, axis=1)  # the table's order -> the sorted one
    ex = pipeline_exposed(d, eager, matrix, t_c)
    assert ex is not None and (ex[0, eager.tiled] > 0).any() and (ex[0, eager.attn.start:] == 0).all()


def test_the_table_shows_the_pipelines_part_of_the_fixed_cost() -> None:
    """dse predict's table: t_pipeline_s is the part of t_overhead_s that is the fill and drain (launch + it), and a
    lone 1024^3 GEMM on TPU7x, overhead-bound, says bound_via pipeline; a large one, compute-bound, says nothing."""
    small = dse.predict(dse.workload("gemm:1024x1024x1024", dtype="bf16"), TPU7X).ops.iloc[0]
    launch = TPU7X.compute.launch_overhead_us * 1e-6
    assert small["t_overhead_s"] == pytest.approx(launch + small["t_pipeline_s"], rel=1e-12)
    assert small["bound"] == "overhead" and small["bound_via"] == "pipeline"
    large = dse.predict(dse.workload("gemm:4096x4096x4096", dtype="bf16"), TPU7X).ops.iloc[0]
    assert large["t_pipeline_s"] > 0 and large["bound"] == "compute" and large["bound_via"] == ""
    gpu = dse.predict(dse.workload("gemm:1024x1024x1024", dtype="bf16"), "h100-sxm").ops.iloc[0]
    assert gpu["t_pipeline_s"] == 0 and gpu["bound_via"] == ""
