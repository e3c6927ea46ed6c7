"""Collective cost models pinned on hand-computed cases, and multi-chip predictions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import dse
from dse.errors import DseError
from dse.hardware import collectives as coll
from dse.hardware.designs import DesignBatch
from dse.hardware.system import load_system
from dse.predict import network as net

S, B, A = 1e9, 100e9, 1e-6


def test_ring_all_reduce_hand_case():
    # 2(n-1)/n * S/B + 2(n-1) alpha with n = 8
    assert coll.ring_all_reduce(S, 8, B, A) == pytest.approx(2 * 7 / 8 * 0.01 + 14e-6)
    assert net.level_time("all_reduce", S, 8, "switch", b=B / 12, B=B, alpha=A) == pytest.approx(0.0175 + 14e-6)


def test_all_gather_and_reduce_scatter_are_half_a_ring_all_reduce():
    for c in ("all_gather", "reduce_scatter"):
        assert net.level_time(c, S, 8, "ring", b=B / 2, B=B, alpha=A) == pytest.approx(7 / 8 * 0.01 + 7e-6)


def test_tree_and_in_network_reduction():
    assert coll.tree_all_reduce(S, 8, B, A) == pytest.approx(2 * 0.01 + 2 * 3 * A)
    assert net.level_time("all_reduce", S, 8, "switch", b=1, B=B, alpha=A, in_network_reduction=True) == \
        pytest.approx(0.01 + 2 * A)


def test_torus_dimension_by_dimension():
    b = 45e9
    # 4x4 torus: a 4-ring over 2b on S, then a 4-ring over 2b on S/4
    want = (2 * 3 / 4 * S / (2 * b) + 6 * A) + (2 * 3 / 4 * (S / 4) / (2 * b) + 6 * A)
    assert net.level_time("all_reduce", S, 16, "torus", b=b, B=6 * b, alpha=A, dims=[4, 4, 4]) == pytest.approx(want)
    with pytest.raises(ValueError, match="whole dimensions"):
        net.torus_group_dims([4, 4, 4], 8)


def test_a_group_spans_any_whole_torus_axes_never_a_split_one():
    """JAX's mesh_utils maps a mesh axis onto whole physical axes, any of them: 8 ranks on a 4x4x8 slice take its
    8-long axis, 32 on it take 4x8 (the most axes that multiply to the size), 16 the leading 4x4; 16 on 8x8x8
    would split an axis and is refused."""
    assert net.torus_group_dims([4, 4, 8], 16) == [4, 4]
    assert net.torus_group_dims([4, 4, 8], 8) == [8]
    assert net.torus_group_dims([4, 4, 8], 32) == [4, 8]
    with pytest.raises(ValueError, match="whole dimensions"):
        net.torus_group_dims([8, 8, 8], 16)


def test_point_to_point_and_all_to_all():
    assert net.level_time("p2p", S, 2, "switch", b=1, B=B, alpha=A) == pytest.approx(0.01 + A)
    # all-to-all on a switch: injection bound (n-1)/n * S/B; on a ring the bisection n*S/4/B binds
    assert net.level_time("all_to_all", S, 8, "switch", b=1, B=B, alpha=A) == pytest.approx(7 / 8 * 0.01 + 7 * A)
    assert net.level_time("all_to_all", S, 8, "ring", b=1, B=B, alpha=A) == pytest.approx(8 / 4 * 0.01 + 7 * A)


def test_hierarchical_all_reduce_on_two_dgx_nodes():
    sysm = load_system("dgx-a100").resized(16)
    assert net.group_split(16, 1, sysm.sizes) == [8, 2]
    cl, ci, al, sent = net.coefficients("all_reduce", S, 16, 1, sysm.network)  # the typed levels
    # inside the node: ring AR of S over 8 plus the NVLink level's pipeline fill (a chunked protocol); across nodes:
    # ring AR of S/8 over 2 (per injection bandwidth; the InfiniBand level has no fill fitted)
    fill = sysm.network[0].pipeline_fill_mib * 2**20
    assert fill > 0 and sysm.network[1].pipeline_fill_mib == 0
    assert ci[0] == pytest.approx(2 * 7 / 8 * S + fill) and ci[1] == pytest.approx(2 * 1 / 2 * S / 8)
    assert cl.sum() == 0
    levels = sysm.network
    assert al == pytest.approx(14 * levels[0].latency_s + 2 * levels[1].latency_s)
    assert sent == pytest.approx(2 * 7 / 8 * S + S / 8)
    # a data-parallel group of 2 with stride 8 lives on the outer level only
    assert net.group_split(2, 8, sysm.sizes) == [1, 2]
    with pytest.raises(ValueError):
        net.group_split(4, 8, [8, 2])


def test_single_chip_has_no_network_time():
    w = dse.workload("gpt2", phase="decode", batch=4, context=256)
    p = dse.predict(w, "a100-80gb")
    assert p.network_s == 0 and (p.ops["coll"] == "").all() and p.system is None


def test_tensor_parallel_adds_collectives_and_network_bound_ops():
    w = dse.workload("llama2-7b", phase="decode", batch=1, context=128)
    p1 = dse.predict(w, "a100-80gb")
    p8 = dse.predict(w, "a100-80gb", chips=8, tp=8)
    coll = p8.ops[p8.ops["coll"] != ""]
    # a batch-1 all-reduce is latency-bound: network (LL steps) or the 4.7 us kernel boundary (overhead) binds
    assert len(coll) >= 1 and coll["bound"].isin(["network", "overhead"]).all() and p8.network_s > 0
    assert (coll["t_network_s"] > 0).all()
    # 2 all-reduces per layer + 1 for the embedding, of tokens x hidden x 2 bytes
    assert coll["count"].sum() == 2 * 32 + 1 and (coll["net_bytes"] == 4096 * 2).all()
    assert p8.time_s < p1.time_s  # weights read 8x faster outweigh the all-reduces
    assert p8.system.name == "dgx-a100"


def _tp_design(link_gbps: float) -> DesignBatch:
    d = DesignBatch.from_hardware(dse.hardware("npu-7nm")).with_system(load_system("npu-board"))
    return d.with_field("network.link_bandwidth_gbps", np.array([link_gbps]))


@settings(max_examples=25, deadline=None)
@given(st.floats(1.0, 400.0), st.floats(0.05, 1.0))
def test_time_never_decreases_when_link_bandwidth_drops(gbps: float, factor: float):
    w = dse.workload("gpt2", phase="prefill", batch=4, seq=128, plan={"tp": 4})
    hi = dse.predict(w, _tp_design(gbps)).time_s
    lo = dse.predict(w, _tp_design(gbps * factor)).time_s
    assert lo >= hi * (1 - 1e-12)


def test_405b_does_not_fit_one_80gb_chip_but_fits_with_tp_x_pp():
    w = dse.workload("llama3.1-405b", phase="decode", batch=1, context=1024)
    one = dse.predict(w, "a100-80gb")
    assert not one.fits and "needs 812" in one.infeasible_reason and "85.9 GB" in one.infeasible_reason
    many = dse.predict(w, "a100-80gb", chips=16, tp=8, pp=2)
    assert many.fits and many.infeasible_reason == ""
    assert many.memory["weights"] == pytest.approx(one.memory["weights"] / 16, rel=0.02)
    assert many.bubble_s > 0  # one sequence walks the two stages in turn


def test_pipeline_bubble_factor():
    w = dse.workload("gpt2", phase="training", batch=8, seq=256)
    p = dse.predict(w, "a100-80gb", chips=2, pp=2, microbatches=4)
    o = p.ops
    work = (o["time_s"] * o["count"])[o["scale"] > 1].sum()
    assert p.bubble_s == pytest.approx(work * (4 + 2 - 1) / 4 - work)


def test_training_memory_parts_and_zero():
    w = dse.workload("gpt3-6.7b", phase="training", batch=8, seq=2048)
    p0 = dse.predict(w, "a100-80gb", chips=8, dp=8)
    p1 = dse.predict(w, "a100-80gb", chips=8, dp=8, zero=1)
    assert set(p0.memory) == {"weights", "gradients", "optimizer", "activations"}
    assert p1.memory["optimizer"] == pytest.approx(p0.memory["optimizer"] / 8)
    ar = p0.ops[p0.ops["coll"] == "all_reduce"].set_index("name")
    assert ar.loc["dp.gradient_all_reduce", "overlap"]  # DP all-reduce hides behind backward ...
    assert not ar.loc["dp.gradient_all_reduce.last_bucket", "overlap"]  # ... but for its last 25 MB bucket
    assert ar.loc["dp.gradient_all_reduce.last_bucket", "net_bytes"] == pytest.approx(25e6)


@pytest.mark.parametrize(("kw", "match"), [
    ({"chips": 8, "tp": 4}, "tp x pp x dp = 4 x 1 x 1 = 4, but chips = 8"),
    ({"chips": 3, "tp": 3}, r"got tp = 3 \(32 attention heads are not divisible by it"),
    ({"chips": 12, "tp": 4, "dp": 3}, "12 chips do not match the topology of dgx-a100"),
])
def test_bad_plans_are_one_line_errors(kw, match):
    w = dse.workload("llama2-7b", phase="decode", batch=6, context=128)
    with pytest.raises(DseError, match=match) as exc:
        dse.predict(w, "a100-80gb", **kw)
    assert "\n" not in str(exc.value)


def test_a_torus_slice_is_the_most_balanced_shape_inside_the_pod():
    assert load_system("tpu-v4-pod").resized(8).network[0].dims == [2, 2, 2]
    assert math.prod(load_system("tpu-v4-pod").resized(16).network[0].dims) == 16
    with pytest.raises(DseError, match="make no slice of the torus"):
        load_system("tpu-v4-pod").resized(17)


# ---------------------------------------------------------------------------------- protocol choice
def _levels(system: str, chips: int, chip: str = "a100-80gb") -> tuple[list, np.ndarray, np.ndarray]:
    """(typed network levels, b [N], B [N]) of a system: per-link and per-chip bandwidth with efficiency, byte/s."""
    sysm = load_system(system).resized(chips)
    links, bw, eff, _ = sysm.level_arrays(dse.hardware(chip))
    b = np.array(bw) * np.array(eff)
    return sysm.network, b, b * np.array(links)


def test_small_all_reduce_on_nvswitch_is_latency_bound_and_runs_ll():
    """32 KiB over 8 NVSwitch GPUs: NCCL's tuner picks LL; a few us, not the 2(n-1) Simple steps of 1 us."""
    specs, b, B = _levels("dgx-a100", 8)
    name, innet, t = net.best_variant("all_reduce", 32 * 1024, 8, 1, specs, b, B)
    assert name == "ll" and not innet
    alpha = specs[0].latency_s  # a Simple ring step on NVLink (NCCL's 3.4 us)
    simple = net.level_time("all_reduce", 32 * 1024, 8, "switch", b=b[0], B=B[0], alpha=alpha)
    ll_steps = 2 * 7 * alpha * coll.protocol("nccl", "ll").step_latency_scale  # 14 LL steps of 0.6 us
    assert ll_steps < t < ll_steps + 2e-6 and t < simple / 4  # Simple: 14 x 3.4 us


def test_large_all_reduce_runs_simple_at_full_bandwidth():
    S = float(1 << 30)
    specs, b, B = _levels("dgx-a100", 8)
    name, innet, t = net.best_variant("all_reduce", S, 8, 1, specs, b, B)
    assert name == "simple" and not innet
    base = (coll.protocol("nccl", "simple").base_latency_us - coll.protocol("nccl", "ll").base_latency_us) * 1e-6
    fill = specs[0].pipeline_fill_mib * 2**20  # the chunk pipeline's fill at the chip's bandwidth
    assert t == pytest.approx((2 * 7 / 8 * S + fill) / B[0] + 14 * specs[0].latency_s + base, rel=1e-9)


def test_dgx_h100_weighs_nvls_against_ring_ll():
    """NVLS (in-switch reduction, Simple only) wins large all-reduces; small ones take the faster of NVLS and
    the ring under LL, which is what runs where the switch cannot reduce."""
    specs, b, B = _levels("dgx-h100", 8, "h100-sxm")
    assert net.best_variant("all_reduce", float(1 << 30), 8, 1, specs, b, B)[:2] == ("simple", True)
    plain = [lv.model_copy(update={"in_network_reduction": False}) for lv in specs]
    for S in (1e3, 16 * 1024):
        without = net.best_variant("all_reduce", S, 8, 1, plain, b, B)
        assert without[:2] == ("ll", False)
        assert net.best_variant("all_reduce", S, 8, 1, specs, b, B)[2] <= without[2]


def test_a_torus_runs_simple_only_with_no_extra_fixed_cost():
    specs, b, B = _levels("tpu-v4-pod", 16, "tpu-v4")
    S = 1e6
    name, _, t = net.best_variant("all_reduce", S, 16, 1, specs, b, B)
    pure = net.level_time("all_reduce", S, 16, "torus", b=b[0], B=B[0], alpha=specs[0].latency_s,
                          dims=specs[0].dims, wrap_min=specs[0].wrap_min_dim, algorithm=specs[0].algorithm)
    assert name == "simple" and t == pytest.approx(pure, rel=1e-12)


def test_rccl_levels_use_rccl_protocols():
    sysm = dse.predict(dse.workload("llama2-7b", phase="decode", batch=1, context=128), "mi300x", chips=8).system
    assert {lv.collective_library for lv in sysm.network} == {"rccl"}
    assert net.variants(sysm.network) == [("ll", True), ("simple", True)]  # no LL128 in RCCL's default


@settings(max_examples=60, deadline=None)
@given(coll_name=st.sampled_from(["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p"]),
       system=st.sampled_from([("dgx-a100", 16, "a100-80gb"), ("dgx-h100", 8, "h100-sxm"),
                               ("npu-board", 8, "npu-7nm")]),
       S=st.floats(1.0, 1e10), grow=st.floats(1.0, 100.0))
def test_collective_time_is_monotone_in_size(coll_name, system, S, grow):
    """The fastest variant of a bigger message is never faster (each variant is monotone; so is their min)."""
    specs, b, B = _levels(*system)
    n = system[1] if coll_name != "p2p" else 2
    t1 = net.best_variant(coll_name, S, n, 1, specs, b, B)[2]
    t2 = net.best_variant(coll_name, S * grow, n, 1, specs, b, B)[2]
    assert t2 >= t1 * (1 - 1e-12)


def test_network_times_take_the_fastest_variant_per_op():
    w = dse.workload("llama2-7b", phase="decode", batch=1, context=128)
    p8 = dse.predict(w, "a100-80gb", chips=8, tp=8)
    specs, b, B = _levels("dgx-a100", 8)
    t = net.best_variant("all_reduce", 4096 * 2, 8, 1, specs, b, B)[2]
    coll_rows = p8.ops[p8.ops["coll"] != ""]
    assert coll_rows["t_network_s"].to_numpy() == pytest.approx(t)


def test_a_slice_axis_shorter_than_the_wrap_length_is_a_line_with_half_the_ring_bandwidth():
    """TPU v5e wraps only a full 16-chip axis (wrap_min_dim 16): on a 4x4 slice each axis is a line, whose ring runs
    one way per link, so an all-reduce's bandwidth term doubles against a wrapped 4x4; a 16-long axis keeps its
    bidirectional ring. wrap_min_dim off a torus is one line naming the field."""
    b = 45e9
    wrapped = net.level_time("all_reduce", S, 16, "torus", b=b, B=math.inf, alpha=0.0, dims=[4, 4])
    lines = net.level_time("all_reduce", S, 16, "torus", b=b, B=math.inf, alpha=0.0, dims=[4, 4], wrap_min=16)
    assert lines == pytest.approx(2 * wrapped)
    full = net.level_time("all_reduce", S, 16, "torus", b=b, B=math.inf, alpha=0.0, dims=[16], wrap_min=16)
    assert full == pytest.approx(net.level_time("all_reduce", S, 16, "torus", b=b, B=math.inf, alpha=0.0, dims=[16]))
    from dse.errors import DseError
    from dse.hardware.system import load_system

    assert load_system("tpu-v5e-pod").network[0].wrap_min_dim == 16
    data = load_system("dgx-h100").model_dump(mode="python", exclude_none=True)
    data["network"][0]["wrap_min_dim"] = 4
    with pytest.raises(DseError, match="wrap_min_dim: got 4 on a") as ei:
        load_system(data)
    assert "\n" not in str(ei.value)


def _offload(hw):  # noqa: ANN001, ANN202 - a Hardware template
    """``hw`` with its collectives run beside the compute (``network.collective_engine: offload``)."""
    return hw.model_copy(update={"network": hw.network.model_copy(update={"collective_engine": "offload"})})


def test_a_chip_that_runs_collectives_on_its_compute_core_hides_none_of_them():
    """``network.collective_engine: compute_core`` (TPU v4-v6e under XLA: continuation fusions on the TensorCore)
    adds every collective's whole time to the step whatever the plan's overlap says; ``offload`` hides them as the
    plan says. Every path agrees: ``dse.predict``, ``mix_times`` over a design batch, and the validation suite."""
    from dse.hardware.templates import hardware_from_mapping
    from dse.predict import hides_collectives, mix_times
    from dse.workloads.library import with_plan
    from dse.workloads.mix import Mix

    core = dse.hardware("tpu-v6e")
    assert core.network.collective_engine == "compute_core"
    offload = _offload(core)
    w = with_plan(dse.workload("llama3-8b", phase="training", batch=16, seq=4096, framework="xla"), chips=16, fsdp=16,
                  recompute="full")
    p_core, p_off = dse.predict(w, core), dse.predict(w, offload)
    o = p_core.ops
    coll = o["coll"] != ""
    assert o.loc[coll, "overlap"].max() == 1.0  # the plan says the FSDP collectives may hide ...
    every = (o["time_s"] * o["count"] * o["scale"]).sum()
    assert p_core.time_s == pytest.approx(every, rel=1e-9)  # ... but on the core none does
    assert p_off.time_s < p_core.time_s
    assert p_core.time_s - p_off.time_s == pytest.approx(
        (o.loc[coll, "time_s"] * o.loc[coll, "count"] * o.loc[coll, "overlap"]).sum(), rel=1e-6)  # all hidden here
    for hw, p in ((core, p_core), (offload, p_off)):
        d = DesignBatch.from_hardware(hw).with_system(p.system)
        assert hides_collectives(d) == (hw is offload)
        assert mix_times(d, Mix.of([w]))[0, 0] == pytest.approx(p.time_s, rel=1e-9)
    data = core.model_dump(mode="json", exclude_none=True)
    data["network"]["collective_engine"] = "sparsecore"
    with pytest.raises(DseError) as exc:
        hardware_from_mapping(data, file="t.yaml")
    assert "network.collective_engine" in str(exc.value) and "\n" not in str(exc.value)


@settings(max_examples=12, deadline=None)
@given(f=st.floats(0.0, 1.0), g=st.floats(0.0, 1.0))
@example(f=0.0, g=5e-324)  # a share whose hideable time underflows to 0 once gave 0/0 (NaN) in dse.predict
def test_overlap_never_changes_a_compute_core_step_and_only_shortens_an_offload_one(f, g):
    """Property: on a chip whose collectives run on its compute core the step is the same whatever share the plan
    lets hide; on an offload chip a larger share never lengthens the step, and no share makes it shorter than its
    computation or longer than the compute core's."""
    from dse.workloads.library import with_plan

    core = dse.hardware("tpu-v5e")
    offload = _offload(core)
    base = dse.workload("llama2-7b", phase="training", batch=32, seq=2048, framework="xla")
    lo, hi = sorted((f, g))
    w_lo, w_hi = (with_plan(base, chips=16, fsdp=16, overlap={"dp": x}) for x in (lo, hi))
    assert dse.predict(w_lo, core).time_s == pytest.approx(dse.predict(w_hi, core).time_s, rel=1e-12)
    t_lo, t_hi = dse.predict(w_lo, offload), dse.predict(w_hi, offload)
    assert t_hi.time_s <= t_lo.time_s * (1 + 1e-12)
    o = t_hi.ops
    compute = (o["time_s"] * o["count"] * o["scale"])[o["coll"] == ""].sum()
    assert compute * (1 - 1e-12) <= t_hi.time_s <= dse.predict(w_hi, core).time_s * (1 + 1e-12)
