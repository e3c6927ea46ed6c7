"""dse.hardware.system: network levels, chip counts, resizing, links taken from the chip, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import dse
from dse.errors import DseError
from dse.hardware.system import (
    NetworkLevel,
    System,
    default_system,
    is_system,
    list_systems,
    load_system,
    systems_dir,
)

H100 = dse.hardware("h100-sxm")


def _level(**kw) -> dict:
    return {"name": "l0", "size": 8, "topology": "switch", "latency_us": 1.0, "efficiency": 0.8, "source": "test",
            **kw}


def test_shipped_systems_load_and_multiply_their_level_sizes() -> None:
    assert {"dgx-a100", "dgx-h100", "npu-board", "tpu-v4-pod"} <= set(list_systems())
    assert is_system("dgx-h100") and not is_system("h100-sxm")
    dgx = load_system("dgx-h100")
    assert dgx.chips == 8 and dgx.sizes == [8, 1]
    pod = load_system("tpu-v4-pod")
    assert pod.chips == 4096 == 16 * 16 * 16
    assert {"tpu-v5e-pod", "tpu-v5p-pod", "tpu-v6e-pod"} <= set(list_systems())


def test_level_zero_takes_the_chip_links_and_bidirectional_bandwidth_is_halved() -> None:
    links, bw, eff, linked = load_system("dgx-h100").level_arrays(H100)
    assert links == [18.0, 1.0]  # 18 NVLink4 links from h100-sxm.yaml, one NIC per GPU
    assert bw == [25e9, 50e9] and eff == [0.5653, 0.8] and linked == [True, False]
    lv = NetworkLevel(**_level(link_bandwidth_gbps=900, links_per_chip=1, bandwidth_direction="bidirectional"))
    assert lv.per_direction(900) == 450e9
    assert NetworkLevel(**_level()).per_direction(50) == 50e9


def test_levels_carry_latency_in_seconds() -> None:
    levels = load_system("dgx-h100").network  # typed levels; NCCL's Simple ring steps: NVLink 3.4 us, network 14 us
    assert levels[0].latency_s == pytest.approx(3.4e-6) and levels[0].in_network_reduction is True
    assert levels[1].latency_s == pytest.approx(14e-6) and levels[1].topology == "switch"
    assert levels[0].collective_library == "nccl"


def test_dgx_b200_is_eight_b200_on_nvlink5_with_sharp_and_a_400g_nic_per_gpu() -> None:
    """DGX B200 User Guide (8 x B200, two NVLink 5 switches, 14.4 TB/s aggregate; 8 x 400 Gb/s ConnectX-7); NVLink
    page (18 x 100 GB/s = 1.8 TB/s bidirectional per Blackwell GPU); NCCL's NVLink / NET ring step latencies."""
    dgx = load_system("dgx-b200")
    assert dgx.chip == "b200" and dgx.chips == 8 and dgx.sizes == [8, 1]
    nvl, ib = dgx.network
    assert (nvl.name, nvl.topology, nvl.in_network_reduction) == ("nvlink5", "switch", True)
    assert (ib.name, ib.topology, ib.in_network_reduction) == ("infiniband-ndr", "switch", False)
    assert nvl.latency_s == pytest.approx(3.4e-6) and ib.latency_s == pytest.approx(14e-6)  # as dgx-h100
    links, bw, eff, linked = dgx.level_arrays(dse.hardware("b200"))
    assert links == [18.0, 1.0] and bw == [50e9, 50e9] and linked == [True, False]
    # NVLS: dgx-h100's fitted efficiency x NCCL's Blackwell / Hopper NVLS factor (0.74 / 0.85), its fill as is
    h100 = load_system("dgx-h100").network[0]
    assert eff == [pytest.approx(h100.efficiency * 0.74 / 0.85, rel=1e-3), 0.8]
    assert nvl.pipeline_fill_mib == h100.pipeline_fill_mib
    assert 2 * links[0] * bw[0] == pytest.approx(1.8e12)  # per GPU, both directions
    assert 8 * 2 * links[0] * bw[0] == pytest.approx(14.4e12)  # the node's aggregate NVLink bandwidth
    assert links[1] * bw[1] * 8 == pytest.approx(400e9)  # one 400 Gb/s NIC per GPU, in bits
    assert dgx.resized(16).sizes == [8, 2] and dgx.resized(4).sizes == [4]
    assert default_system(dse.hardware("b200")).name == "dgx-b200"


def test_trn2_node_is_a_4x4_neuronlink_torus_joined_by_one_200g_efa_per_chip() -> None:
    """Neuron docs, Amazon EC2 Trn2 Architecture (16 chips, 4x4 2D torus, 1,024 GB/s intra-instance NeuronLink-v3 per
    chip, EFAv3 3,200 Gbps) and Collective communication (4 torus neighbours, 200 Gbps EFA per chip); the torus level
    brings its own links, the EFA level scales with the instances."""
    from dse.predict.network import level_time

    trn = load_system("trn2-node")
    assert trn.chip == "trainium2" and trn.chips == 16 and trn.sizes == [16, 1]
    nl, efa = trn.network
    assert (nl.name, nl.topology, nl.dims) == ("neuronlink-v3", "torus", [4, 4])
    assert (efa.name, efa.topology) == ("efa-v3", "switch")
    links, bw, eff, linked = trn.level_arrays(dse.hardware("trainium2"))
    assert links == [4.0, 1.0] and bw == [128e9, 25e9] and eff == [0.85, 0.75] and linked == [False, False]
    assert 2 * links[0] * bw[0] == pytest.approx(1024e9)  # intra-instance NeuronLink-v3 per chip, both directions
    assert 16 * links[1] * bw[1] * 8 == pytest.approx(3.2e12)  # 16 x 200 Gbps EFA per instance, in bits
    assert nl.latency_s == pytest.approx(1.5e-6) and efa.latency_s == pytest.approx(15e-6)
    # a 1 GB all-reduce over the whole torus: two rings of 4 (one per dimension) on bidirectional links,
    # 2*3/4 * S/(2b) * (1 + 1/4) + 2 * 6 alpha
    S, b = 1e9, bw[0] * eff[0]
    t = level_time("all_reduce", S, 16, nl.topology, b, 4 * b, nl.latency_s, dims=nl.dims)
    assert t == pytest.approx(0.75 * S / b * 1.25 + 12 * 1.5e-6)
    assert trn.resized(32).sizes == [16, 2] and trn.resized(32).network[0].dims == [4, 4]  # two instances
    assert trn.resized(8).sizes == [8] and trn.resized(8).network[0].dims == [2, 4]  # a slice of one instance
    with pytest.raises(DseError, match="24 chips do not match the topology of trn2-node"):
        trn.resized(24)


def test_resizing_scales_the_outer_level_or_shrinks_the_node() -> None:
    dgx = load_system("dgx-h100")
    assert dgx.resized(8) is dgx
    assert dgx.resized(64).sizes == [8, 8]
    assert dgx.resized(2).sizes == [2]
    pod = load_system("tpu-v4-pod")
    small = pod.resized(16)
    assert small.sizes == [16] and small.network[0].dims == [2, 2, 4]  # the most balanced slice
    # any count that factors inside the pod into the axes its slices take (issue 31): 4x4x12, not 4x6x8
    assert pod.resized(192).network[0].dims == [4, 4, 12]
    with pytest.raises(DseError, match="chips: got chips=0; accepted: a positive integer"):
        dgx.resized(0)
    with pytest.raises(DseError, match=r"12 chips do not match the topology of dgx-h100 .*divisor of 8 or a multiple of 8"):
        dgx.resized(12)


def test_resizing_a_one_level_torus_takes_the_published_slice_shapes() -> None:
    """TPU slices (Google Cloud TPU docs, Configurations): v5p 2x2x1 .. 16x16x24, v5e/v6e 2x2 .. 16x16."""
    v5p, v5e = load_system("tpu-v5p-pod"), load_system("tpu-v5e-pod")
    shapes = {n: sorted(v5p.resized(n).network[0].dims) for n in (4, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096, 6144)}
    assert shapes == {4: [2, 2], 8: [2, 2, 2], 32: [2, 4, 4], 64: [4, 4, 4], 128: [4, 4, 8], 256: [4, 8, 8],
                      512: [8, 8, 8], 1024: [8, 8, 16], 2048: [8, 16, 16], 4096: [16, 16, 16], 6144: [16, 16, 24]}
    assert {n: sorted(v5e.resized(n).network[0].dims) for n in (8, 32, 128, 256)} == {
        8: [2, 4], 32: [4, 8], 128: [8, 16], 256: [16, 16]}
    with pytest.raises(DseError, match=r"chips: got 17 chips, which make no slice of the torus \[16, 16\] of tpu-v5e-pod; "
                                       r"accepted: a count of at most 256 chips .*\(e.g. 4, 8, 16, 32, 64, 128, 256\)"):
        v5e.resized(17)
    # a count that factors inside the pod but only into axes no published slice has (3x4 on v6e, 2x3x4 or 4x4x6 on
    # v5p) is refused too: they were accepted as the most balanced factorisation
    for system, chips in (("tpu-v6e-pod", 12), ("tpu-v5p-pod", 24), ("tpu-v5p-pod", 96), ("tpu-v6e-pod", 48)):
        with pytest.raises(DseError, match=r"each axis power of two"):
            load_system(system).resized(chips)


def test_more_chips_than_a_tpu_slice_are_whole_slices_over_the_data_centre_network() -> None:
    # Multislice (Google Cloud TPU docs): slices talk through their hosts over the DCN, 25 Gbps per v5e chip
    # (2 x 100 Gbps NICs per 8-chip host), 50 Gbps per v5p chip, 100 Gbps per v6e chip (4 x 200 Gbps per 8-chip host)
    v5e, v5p, v6e = load_system("tpu-v5e-pod"), load_system("tpu-v5p-pod"), load_system("tpu-v6e-pod")
    v6e_two = v6e.resized(512)
    assert [(lv.name, lv.size) for lv in v6e_two.network] == [("ici", 256), ("dcn", 2)]
    assert v6e_two.network[1].per_direction(v6e_two.network[1].link_bandwidth_gbps) == pytest.approx(100e9 / 8)
    two = v5e.resized(512)
    assert [(lv.name, lv.size) for lv in two.network] == [("ici", 256), ("dcn", 2)]
    assert two.network[1].per_direction(two.network[1].link_bandwidth_gbps) == pytest.approx(25e9 / 8)
    assert v5p.resized(2 * 6144).network[1].size == 2
    assert [lv.name for lv in v5e.resized(64).network] == ["ici"]  # within one slice: no DCN
    with pytest.raises(DseError, match=r"384 chips do not match the topology of tpu-v5e-pod .* a multiple of 256"):
        v5e.resized(384)


def test_hybrid_sharding_across_tpu_slices_keeps_the_all_gathers_on_ici() -> None:
    # MaxText-style fsdp within a 256-chip v5e slice, data parallel across 2 slices over the DCN, against fsdp over
    # all 512 chips: the hybrid's gathers and reduce-scatter stay within the slice (256 ranks) and only the 1/256
    # gradient shard crosses the 25 Gbps DCN, all-reduced between the replicas; the full shard's collectives span
    # both slices (dse runs them hierarchically, so its DCN step moves 1/512 of each: the two plans come out close)
    kw = dict(phase="training", batch=512, seq=2048)
    full = dse.predict(dse.workload("llama2-7b", plan={"fsdp": 512}, **kw), "tpu-v5e", system="tpu-v5e-pod")
    hyb = dse.predict(dse.workload("llama2-7b", plan={"fsdp": 256, "dp": 512}, **kw), "tpu-v5e", system="tpu-v5e-pod")
    assert hyb.system.network[1].size == 2
    ops = hyb.ops.set_index("name")
    grads = float(ops.loc["dp.gradient_reduce_scatter", "net_bytes"] + ops.loc["dp.gradient_reduce_scatter.last_bucket",
                                                                                "net_bytes"])
    replica = float(ops.loc["dp.replica_all_reduce", "net_bytes"] + ops.loc["dp.replica_all_reduce.last_bucket",
                                                                            "net_bytes"])
    assert replica == pytest.approx(grads / 256)
    assert "dp.replica_all_reduce" not in set(full.ops["name"])
    assert hyb.time_s == pytest.approx(full.time_s, rel=0.05)


@pytest.mark.parametrize(("level", "words"), [
    (_level(topology="torus", size=64), "a torus level needs dims"),
    (_level(topology="torus", size=64, dims=[4, 4, 2]), "torus dims [4, 4, 2] multiply to 32, not size 64"),
    (_level(dims=[2, 4]), "dims apply to a torus only"),
    (_level(topology="ring", in_network_reduction=True), "in_network_reduction needs a switch topology"),
])
def test_inconsistent_levels_are_rejected(level: dict, words: str) -> None:
    with pytest.raises(ValueError) as ei:
        NetworkLevel(**level)
    assert words in str(ei.value)


def test_outer_levels_need_their_own_links_and_names_are_unique() -> None:
    with pytest.raises(ValueError, match=r"network level 1 \(l1\) needs links_per_chip and link_bandwidth_gbps"):
        System(name="s", chip="h100-sxm", source="test", network=[_level(), _level(name="l1")])
    with pytest.raises(ValueError, match="network level names must be unique"):
        System(name="s", chip="h100-sxm", source="test",
               network=[_level(), _level(links_per_chip=1, link_bandwidth_gbps=50)])


def test_a_system_yaml_with_a_bad_field_is_one_line_with_file_and_field(tmp_path: Path) -> None:
    data = yaml.safe_load((systems_dir() / "dgx-h100.yaml").read_text())
    data["network"][1]["efficiency"] = 1.2
    path = tmp_path / "sys.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(DseError) as ei:
        load_system(path)
    assert str(ei.value) == f"{path}: network.1.efficiency: got 1.2; accepted: a number <= 1.0"
    data["network"][1]["efficiency"] = 0.8
    data["chip"] = "h900"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(DseError, match="unknown hardware template 'h900'"):
        load_system(path)
    with pytest.raises(DseError, match=r"unknown system 'dgx-z' \(did you mean [^)]+\?\); accepted: dgx-a100, dgx-b200"):
        load_system("dgx-z")
    with pytest.raises(DseError, match="unknown system 'zzzz'; accepted: dgx-a100, dgx-b200, dgx-h100"):
        load_system("zzzz")


def test_a_level_taking_chip_links_needs_a_chip_with_a_network_block() -> None:
    data = H100.model_dump(mode="python", exclude_none=True)
    data.pop("network")
    with pytest.raises(DseError, match="network.nvlink4: network level nvlink4 takes its links from the chip"):
        load_system("dgx-h100").level_arrays(dse.hardware(data))


def test_default_system_is_the_shipped_one_else_a_switch_over_the_chip_links() -> None:
    assert default_system(dse.hardware("npu-7nm")).name == "npu-board"
    assert default_system(dse.hardware("tpu-v5e")).name == "tpu-v5e-pod"
    assert default_system(dse.hardware("trainium2")).name == "trn2-node"
    assert default_system(dse.hardware("trainium1")).name == "trn1-node"
    ring = default_system(dse.hardware("inferentia2"))  # inf2.48xlarge: 12 chips on a ring of the chip's links
    assert ring.name == "inf2-48xlarge" and ring.chips == 12 and ring.network[0].topology == "ring"
    g = default_system(dse.hardware("mi300x"))  # no shipped system: one switch over the chip's links
    assert g.name == "mi300x-switch" and g.chips == 8
    links, bw, _, _ = g.level_arrays(dse.hardware("mi300x"))
    hw = dse.hardware("mi300x")
    assert links == [float(hw.network.links)] and bw == [hw.network.link_bandwidth_gbps * 1e9]
    data = H100.model_dump(mode="python", exclude_none=True)
    data.pop("network")
    data["name"] = "h100-nolinks"
    with pytest.raises(DseError, match="system: h100-nolinks has no network block"):
        default_system(dse.hardware(data))


def test_a_system_file_path_is_a_system_and_a_template_path_is_not() -> None:
    from dse.hardware.system import is_system, systems_dir
    from dse.hardware.templates import template_file

    assert is_system(str(systems_dir() / "dgx-h100.yaml")) and is_system("tpu-v5e-pod")
    assert not is_system(str(template_file("h100-sxm"))) and not is_system("h100-sxm") and not is_system("nope.yaml")


def test_a_torus_under_an_inner_level_slices_and_says_per_node_counts() -> None:
    """tpu7x-pod: two TensorCore devices per chip (a die-to-die level) under the ICI torus of chips. A device count
    takes the most balanced torus slice of count / 2 chips; one chip is the d2d level alone; a count that makes no
    slice is one line that counts devices, 2 per torus node."""
    pod = load_system("tpu7x-pod")
    assert [(lv.name, lv.size) for lv in pod.network] == [("d2d", 2), ("ici", 9216), ("dcn", 1)]
    s = pod.resized(128)
    assert [(lv.name, lv.size, lv.dims) for lv in s.network] == [("d2d", 2, None), ("ici", 64, [4, 4, 4])]
    assert [lv.name for lv in pod.resized(2).network] == ["d2d"]
    assert pod.resized(4 * 18432).network[-1].size == 4  # whole pods over the data-centre network
    with pytest.raises(DseError, match=r"chips: got 6 chips.*2 per torus node") as ei:
        pod.resized(6)
    assert "\n" not in str(ei.value)
    # a pod whose torus is level 0 slices as before
    assert load_system("tpu-v5p-pod").resized(64).network[0].dims == [4, 4, 4]
