"""The collective-algorithm table: every collective has a default on every topology, every row is
linear in 1/b, 1/B and alpha (the network code's matrix product relies on it), and a new row is all
it takes to add an algorithm."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.hardware import collectives as coll
from dse.hardware.system import NetworkLevel


@pytest.mark.parametrize("topology", coll.TOPOLOGIES)
@pytest.mark.parametrize("collective", coll.COLLECTIVES)
def test_every_collective_has_a_default_on_every_topology(collective: str, topology: str) -> None:
    a = coll.choose(collective, topology)
    assert a.collective == collective and not a.requested
    assert a.topology in (topology, "*")


def test_requested_algorithms_are_chosen_only_when_asked() -> None:
    assert coll.choose("all_reduce", "switch").name == "ring"
    assert coll.choose("all_reduce", "switch", "tree").name == "tree"
    assert coll.choose("all_reduce", "switch", in_network_reduction=True).name == "in_network"
    assert coll.choose("all_reduce", "torus", "tree").name == "dimension"  # a torus reduces by dimension
    assert coll.choose("all_gather", "switch", "tree").name == "ring"  # tree is an all-reduce algorithm


@settings(max_examples=60, deadline=None)
@given(row=st.integers(0, len(coll.TABLE) - 1), S=st.floats(1e3, 1e10), b=st.floats(1e9, 1e12),
       B=st.floats(1e9, 1e13), alpha=st.floats(0, 1e-4))
def test_every_row_is_linear_in_inverse_bandwidths_and_latency(row: int, S: float, b: float, B: float,
                                                               alpha: float) -> None:
    a = coll.TABLE[row]
    n, dims = 8, [2, 4]
    parts = a.time(S, n, b, float("inf"), 0.0, dims) + a.time(S, n, float("inf"), B, 0.0, dims) \
        + a.time(S, n, float("inf"), float("inf"), alpha, dims)
    assert a.time(S, n, b, B, alpha, dims) <= parts * (1 + 1e-12)
    # all-to-all takes the max of two bounds; every other row is an exact sum of the three terms
    if a.collective != "all_to_all":
        assert a.time(S, n, b, B, alpha, dims) == pytest.approx(parts, rel=1e-12)


def test_adding_an_algorithm_is_one_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """Worked example of docs/architecture.md: a halving-doubling all-reduce as one new row."""
    halving_doubling = coll.Algorithm(
        "all_reduce", "*", "halving_doubling",
        lambda S, n, b, B, a, d: 2 * (n - 1) / n * S / B + 2 * (n - 1).bit_length() * a,
        "2(n-1)/n S/B + 2 log2(n) alpha", "Thakur et al. 2005", requested=True)
    monkeypatch.setattr(coll, "TABLE", (halving_doubling, *coll.TABLE))
    a = coll.choose("all_reduce", "switch", "halving_doubling")
    assert a is halving_doubling
    assert a.time(1e6, 8, 1.0, 1e9, 1e-6, [8]) < coll.choose("all_reduce", "switch").time(1e6, 8, 1.0, 1e9, 1e-6, [8])


def test_system_levels_accept_the_table_algorithms_and_name_them_on_error() -> None:
    base = dict(name="l0", size=8, latency_us=1.0, efficiency=0.8, source="test")
    for name in coll.LEVEL_ALGORITHMS:
        topology = "torus" if "*" not in coll.algorithm_topologies(name) else "switch"
        dims = {"dims": [2, 4]} if topology == "torus" else {}
        assert NetworkLevel(**base, topology=topology, algorithm=name, **dims).algorithm == name
    with pytest.raises(ValueError, match="tree"):
        NetworkLevel(**base, topology="switch", algorithm="butterfly")
    assert dataclasses.is_dataclass(coll.TABLE[0])


def test_a_torus_only_algorithm_on_a_switch_is_one_line_naming_what_the_switch_runs() -> None:
    from dse.errors import DseError
    from dse.hardware.system import load_system

    bad = load_system("dgx-h100").model_dump(mode="python", exclude_none=True)
    bad["network"][0]["algorithm"] = "multi_axis"
    with pytest.raises(DseError, match="algorithm: got 'multi_axis' on a switch; accepted: ") as ei:
        load_system(bad)
    line = str(ei.value)
    assert "\n" not in line and "'ring'" in line and "'multi_axis'" not in line.split("accepted:")[1]


def test_multi_axis_uses_every_spanned_axis_at_once() -> None:
    """scaling-book: a collective over m torus axes gets m times the bandwidth of one; the per-step latency is the
    same walk. On one axis it is the dimension-by-dimension row."""
    S, b = 6.0e8, 1.0e11
    dim = coll.choose("all_reduce", "torus")
    multi = coll.choose("all_reduce", "torus", "multi_axis")
    assert multi.name == "multi_axis" and dim.name == "dimension"
    for dims in ([16, 16], [4, 4, 4]):
        m, k = len(dims), dims[0]
        # bandwidth: each part is one dimension-by-dimension pass on S/m
        assert multi.time(S, k ** m, b, 0, 0.0, dims) == pytest.approx(dim.time(S / m, k ** m, b, 0, 0.0, dims))
        assert multi.time(S, k ** m, b, 0, 0.0, dims) < dim.time(S, k ** m, b, 0, 0.0, dims) / m * (1 + 1 / k)
        # latency: the same 2 (k - 1) steps per axis
        inf = float("inf")
        assert multi.time(S, k ** m, inf, inf, 1e-6, dims) == pytest.approx(dim.time(S, k ** m, inf, inf, 1e-6, dims))
    assert multi.time(S, 16, b, 0, 1e-6, [16]) == dim.time(S, 16, b, 0, 1e-6, [16])
    # unequal axes and a line without wraparound: the slowest rotation, never faster than m axes' bandwidth allows
    dims = [coll.Axis(8, False), coll.Axis(16, True)]
    t = multi.time(S, 128, b, 0, 0.0, dims)
    assert dim.time(S, 128, b, 0, 0.0, dims) / 2 <= t < dim.time(S, 128, b, 0, 0.0, dims)
    half = coll.choose("all_gather", "torus", "multi_axis").time(S, 256, b, 0, 1e-6, [16, 16])
    assert half == pytest.approx(multi.time(S, 256, b, 0, 1e-6, [16, 16]) / 2)


# ---------------------------------------------------------------------------------- protocols
@pytest.mark.parametrize("p", coll.PROTOCOLS, ids=lambda p: f"{p.library}-{p.name}")
def test_protocol_records_are_sane_and_sourced(p: coll.Protocol) -> None:
    assert 0 < p.bandwidth_fraction <= 1 and p.step_latency_scale > 0 and p.base_latency_us >= 0
    assert p.library in coll.LIBRARIES and len(p.source) > 10
    assert set(p.topologies) <= {*coll.TOPOLOGIES, "*"}
    names = {a.name for a in coll.TABLE}
    assert set(p.algorithms) <= {*names, "*"}


@pytest.mark.parametrize("library", coll.LIBRARIES)
def test_every_library_has_a_simple_protocol_that_runs_every_row(library: str) -> None:
    """So every collective on every topology has at least one protocol to run under."""
    simple = coll.protocol(library, "simple")
    assert simple is not None and simple.bandwidth_fraction == 1.0 and simple.step_latency_scale == 1.0
    assert all(coll.offers(simple, a, t) for a in coll.TABLE for t in coll.TOPOLOGIES)


def test_low_latency_protocols_trade_bandwidth_for_latency() -> None:
    """NCCL's LL: lower per-step latency and lower bandwidth than Simple; it does not drive NVLS or a torus."""
    ll, simple = coll.protocol("nccl", "ll"), coll.protocol("nccl", "simple")
    assert ll is not None and simple is not None
    assert ll.step_latency_scale < simple.step_latency_scale and ll.bandwidth_fraction < simple.bandwidth_fraction
    ring, innet = coll.choose("all_reduce", "switch"), coll.choose("all_reduce", "switch", in_network_reduction=True)
    assert coll.offers(ll, ring, "switch") and not coll.offers(ll, innet, "switch")
    assert not coll.offers(ll, coll.choose("all_reduce", "torus"), "torus")
    # protocol_time scales the row: bandwidth term / fraction, latency term x scale
    S, n, B, a = 1e6, 8, 100e9, 1e-6
    assert coll.protocol_time(ll, ring, S, n, 1.0, B, a, [n]) == pytest.approx(
        coll.ring_all_reduce(S, n, B * ll.bandwidth_fraction, a * ll.step_latency_scale))


def test_a_neuron_ring_pays_every_hop_where_nccl_s_ll_would_not() -> None:
    """The Neuron runtime has one protocol (no low-latency wire protocol like NCCL's LL): a small all-reduce on the
    12-chip ring of an inf2.48xlarge pays its 2(n-1) = 22 hops at the level's 1.5 us, where the same ring naming NCCL
    ran LL at 0.18 of it."""
    import numpy as np

    import dse
    from dse.hardware.system import load_system
    from dse.predict.network import best_variant

    sysm = load_system("inf2-48xlarge")
    assert {lv.collective_library for lv in sysm.network} == {"neuron"}
    links, bw, _, _ = sysm.level_arrays(dse.hardware("inferentia2"))
    b = np.array(bw) * sysm.network[0].efficiency
    neuron = best_variant("all_reduce", 16384, 12, 1, sysm.network, b, b * np.array(links))
    nccl_levels = [lv.model_copy(update={"collective_library": "nccl"}) for lv in sysm.network]
    nccl = best_variant("all_reduce", 16384, 12, 1, nccl_levels, b, b * np.array(links))
    assert neuron[0] == "simple" and neuron[2] >= 22 * 1.5e-6
    assert nccl[0] == "ll" and nccl[2] < neuron[2] / 3


def test_system_levels_accept_the_protocol_libraries() -> None:
    base = dict(name="l0", size=8, topology="switch", latency_us=1.0, efficiency=0.8, source="test")
    for lib in coll.LIBRARIES:
        assert NetworkLevel(**base, collective_library=lib).collective_library == lib
    assert NetworkLevel(**base).collective_library == "nccl"
    with pytest.raises(ValueError, match="nccl"):
        NetworkLevel(**base, collective_library="mpi")


def test_adding_a_protocol_is_one_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hypothetical zero-copy NCCL protocol (full bandwidth, LL's step latency, no extra fixed cost) is one
    record; the network code then weighs it and, being no worse than LL or Simple anywhere, picks it."""
    import numpy as np

    from dse.hardware.system import load_system
    from dse.predict import network as net

    ll = coll.protocol("nccl", "ll")
    assert ll is not None
    fast = dataclasses.replace(ll, name="zero_copy", bandwidth_fraction=1.0, source="test")
    monkeypatch.setattr(coll, "PROTOCOLS", (*coll.PROTOCOLS, fast))
    specs = load_system("dgx-a100").network
    assert ("zero_copy", True) in net.variants(specs)
    for S in (1e3, 1e9):
        assert net.best_variant("all_reduce", S, 8, 1, specs, np.array([20e9, 20e9]),
                                np.array([240e9, 20e9]))[0] == "zero_copy"


def test_a_fully_connected_level_gives_a_group_only_its_peers_links() -> None:
    """HLS-Gaudi: 21 links per card, 3 to each of 7 peers; a group of n uses (n-1)/7 of them."""
    from dse.predict.network import level_time

    S, B, a = 1e9, 21 * 12.5e9, 3e-6
    two = level_time("all_reduce", S, 2, "fully_connected", b=12.5e9, B=B, alpha=a, dims=[8])
    assert two == pytest.approx(2 * (0.5 * S / (B / 7) + a))  # one peer's 3 links
    eight = level_time("all_reduce", S, 8, "fully_connected", b=12.5e9, B=B, alpha=a, dims=[8])
    assert eight == pytest.approx(2 * (7 / 8 * S / B + a))  # every link, one step each way
    ring = level_time("all_reduce", S, 8, "ring", b=12.5e9, B=B, alpha=a)
    assert eight < ring  # direct exchange: 2 steps of latency, not 2 (n - 1)
    p2p = level_time("p2p", S, 2, "fully_connected", b=12.5e9, B=B, alpha=a, dims=[8])
    assert p2p == pytest.approx(S / (B / 7) + a)


def test_the_gaudi_boxes_are_the_default_systems_of_their_chips() -> None:
    import dse
    from dse.hardware.system import default_system

    for g in ("gaudi2", "gaudi3"):
        s = default_system(dse.hardware(g))
        assert s.name == f"hls-{g}" and s.network[0].topology == "fully_connected" and s.network[0].size == 8
        assert s.network[0].links_per_chip == 21


def test_a_box_resized_below_its_size_keeps_its_per_peer_links() -> None:
    """Two cards of an 8-card HLS-Gaudi3 box talk over the 3 ports they share (box_size 8), not all 21: their
    tensor-parallel all-reduce takes 7x as long as over all of a card's links; box_size off a fully connected level,
    or below its size, is one line naming the field."""
    import dse
    from dse.errors import DseError
    from dse.hardware.system import load_system

    two = load_system("hls-gaudi3").resized(2)
    assert (two.network[0].size, two.network[0].box_size) == (2, 8)
    assert load_system("hls-gaudi3").resized(8).network[0].box_size is None
    wl = dse.workload("llama3-70b", phase="prefill", batch=8, seq=2048, dtype="fp8", plan={"tp": 2})
    def net_time(system) -> float:
        ops = dse.predict(wl, "gaudi3", system=system).ops
        return float(ops.loc[ops["kind"] == "collective", "t_network_s"].sum())

    data = two.model_dump(mode="python", exclude_none=True)
    data["network"][0].pop("box_size")
    assert net_time(two) > 5 * net_time(load_system(data))
    for topology, size in (("switch", 8), ("fully_connected", 4)):
        bad = load_system("hls-gaudi3").model_dump(mode="python", exclude_none=True)
        bad["network"][0].update(topology=topology, box_size=size if topology == "fully_connected" else 8)
        with pytest.raises(DseError, match="box_size: got") as ei:
            load_system(bad)
        assert "\n" not in str(ei.value)


@pytest.mark.parametrize("pod", ["tpu-v4-pod", "tpu-v5e-pod", "tpu-v5p-pod", "tpu-v6e-pod"])
def test_tpu_pods_run_collectives_over_every_axis_of_the_slice_at_once(pod: str) -> None:
    """XLA on a TPU slice (scaling-book): a 256-chip psum over m torus axes (2 on v5e/v6e, 3 on v4/v5p) takes about
    1/m of the dimension-by-dimension time."""
    import dse
    from dse.hardware.system import load_system

    system = load_system(pod)
    assert system.network[0].algorithm == "multi_axis"
    data = system.model_dump(mode="python", exclude_none=True)
    data["network"][0]["algorithm"] = "ring"  # a torus's default row: dimension by dimension

    def psum_s(s) -> float:
        ops = dse.predict("all_reduce:606076928", system.chip, system=s, chips=256).ops
        return float(ops["t_network_s"].sum())

    m = len(system.network[0].dims)
    ratio = psum_s(system) / psum_s(load_system(data))
    assert 0.9 / m < ratio < 1.25 / m
