"""The on-chip network's geometry (dse.hardware.noc) and what it delivers to the predictor
(DesignBatch.delivered_bandwidth); its area is tested in tests/cost/test_noc.py."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.errors import DseError
from dse.hardware.designs import DesignBatch
from dse.hardware.templates import hardware_from_mapping, load_hardware, templates_dir
from dse.hardware.topologies import TOPOLOGIES
from dse.yamlio import load_yaml
from tests.hardware.noc_designs import network, npu_with_noc


def test_mesh_geometry_follows_dally_and_towles() -> None:
    hw, d, g = network(npu_with_noc(topology="mesh", traffic="uniform"))
    assert g.topology == "mesh" and g.routers[0] == 24 and g.ports[0] == 5  # a router per core, 5 ports
    x, y = 5, 5  # ceil(sqrt 24) x ceil(24 / 5)
    assert g.links[0] == 2 * ((x - 1) * y + (y - 1) * x)
    # auto width: the whole bytes with which uniform traffic gets the 4 TB/s global level through at 1.4 GHz
    assert g.link_bytes[0] == np.ceil(4.0e12 / (4 * 5 * 1.4e9))  # 4 min(x, y) links' worth
    assert g.delivered_bps[0] == pytest.approx(4 * 5 * g.link_bytes[0] * 1.4e9) and g.delivered_bps[0] >= 4.0e12


def test_local_traffic_is_the_default_and_needs_each_cores_share_at_its_port() -> None:
    # the default: each core's share of the 4 TB/s global level through its own port, N W f
    _, _, g = network(npu_with_noc(topology="mesh"))
    assert g.link_bytes[0] == np.ceil(4.0e12 / (24 * 1.4e9))
    assert g.delivered_bps[0] == pytest.approx(24 * g.link_bytes[0] * 1.4e9) and g.delivered_bps[0] >= 4.0e12
    # on a 16 x 16 mesh uniform traffic crosses a bisection of 4 x 16 links' worth, a quarter of the 256 ports:
    # links four times as wide for the same level, and four times the router area
    local = network(npu_with_noc(topology="mesh", link_bytes=32), cores=256)[2]
    uniform = network(npu_with_noc(topology="mesh", link_bytes=32, traffic="uniform"), cores=256)[2]
    assert local.delivered_bps[0] == pytest.approx(4 * uniform.delivered_bps[0])
    auto_l = network(npu_with_noc(topology="mesh"), cores=256)[1].noc(demand_bps=np.array([4.0e12]))
    auto_u = network(npu_with_noc(topology="mesh", traffic="uniform"), cores=256)[1].noc(demand_bps=np.array([4.0e12]))
    assert auto_u.link_bytes[0] == pytest.approx(4 * auto_l.link_bytes[0], abs=4)
    # they agree where the bisection holds every port: a crossbar, a mesh of up to 16 cores
    for block, cores in (({"topology": "crossbar"}, 24), ({"topology": "mesh"}, 16), ({"topology": "mesh"}, 12)):
        a = network(npu_with_noc(**block, link_bytes=32), cores=cores)[2]
        b = network(npu_with_noc(**block, link_bytes=32, traffic="uniform"), cores=cores)[2]
        assert a.delivered_bps[0] == pytest.approx(b.delivered_bps[0]), (block, cores)


def test_torus_ring_and_crossbar_deliver_their_bisection() -> None:
    f = 1.4e9
    _, _, torus = network(npu_with_noc(topology="torus", link_bytes=32, traffic="uniform"))
    _, _, ring = network(npu_with_noc(topology="ring", link_bytes=32, traffic="uniform"))
    _, _, xbar = network(npu_with_noc(topology="crossbar", link_bytes=32, traffic="uniform"))
    assert torus.delivered_bps[0] == pytest.approx(24 * 32 * f)  # 8 min(x, y) = 40 > the 24 injection ports
    assert ring.delivered_bps[0] == pytest.approx(8 * 32 * f) and ring.ports[0] == 3 and ring.links[0] == 48
    assert xbar.routers[0] == 1 and xbar.ports[0] == 24 and xbar.delivered_bps[0] == pytest.approx(24 * 32 * f)


def test_tenstorrents_two_one_way_tori() -> None:
    # each NoC a torus of one-way rings (3-port routers, one x and one y link per router), two of them
    _, _, g = network(npu_with_noc(topology="unidirectional_torus", grid=[6, 4], link_bytes=32, clock_ghz=1.0,
                                   networks=2, traffic="uniform"))
    assert g.routers[0] == 24 and g.ports[0] == 3 and g.links[0] == 2 * 24
    assert g.delivered_bps[0] == pytest.approx(2 * 4 * 32 * 1e9 * 2)  # 2 min(x, y) W f per network
    # on 16 x 16 cores (where no torus reaches its injection ports): two one-way tori deliver half a two-way one
    one_way = network(npu_with_noc(topology="unidirectional_torus", link_bytes=32, networks=2, traffic="uniform"),
                      cores=256)[2]
    two_way = network(npu_with_noc(topology="torus", link_bytes=32, traffic="uniform"), cores=256)[2]
    assert one_way.delivered_bps[0] == pytest.approx(two_way.delivered_bps[0] / 2)


def test_every_topology_is_one_record_the_schema_accepts() -> None:
    for (name, t), traffic in itertools.product(TOPOLOGIES.items(), ("local", "uniform")):
        block = {"topology": name, "link_bytes": 16, "traffic": traffic} | ({"grid": [5, 5]} if t.grid else {})
        _, d, g = network(npu_with_noc(**block))
        assert g.topology == name and g.routers[0] >= 1 and g.delivered_bps[0] > 0
        assert d.delivered_bandwidth[0, d.noc_level] <= d.bandwidth[0, d.noc_level]


def test_a_given_grid_clock_and_networks_are_used() -> None:
    _, _, g = network(npu_with_noc(topology="mesh", grid=[8, 3], link_bytes=64, clock_ghz=1.0, networks=2,
                                   traffic="uniform"))
    assert g.delivered_bps[0] == pytest.approx(4 * 3 * 64 * 1e9 * 2)  # min(8, 3) = 3, two networks
    assert g.buffer_bits[0] == 2 * 24 * 5 * 4 * 64 * 8  # networks x routers x ports x flits x bits
    # a design with other cores falls back to the near-square grid
    _, _, g48 = network(npu_with_noc(topology="mesh", grid=[8, 3], link_bytes=64, clock_ghz=1.0, networks=2,
                                     traffic="uniform"), cores=48)
    assert g48.delivered_bps[0] == pytest.approx(4 * 7 * 64 * 1e9 * 2)  # 7 x 7 grid


@pytest.mark.parametrize(("block", "expected"), [
    ({"topology": "hypercube"}, "chip.yaml: compute.noc.topology: got 'hypercube'; accepted: one of 'auto', 'mesh'"),
    ({"topology": "mesh", "grid": [4, 4]}, "chip.yaml: compute.noc.grid: got [4, 4] for 24 cores; accepted: [x, y] "
     "with x * y >= 24 and no empty row, e.g. [5, 5]"),
    ({"topology": "mesh", "grid": [6, 5]}, "chip.yaml: compute.noc.grid: got [6, 5] for 24 cores"),
    ({"topology": "crossbar", "grid": [5, 5]}, "chip.yaml: compute.noc.grid: got [5, 5] with topology crossbar; "
     "accepted: a grid only for topology mesh, torus, unidirectional_torus"),
    ({"grid": [24]}, "chip.yaml: compute.noc.grid: got [24]; accepted: [x, y]"),
    ({"link_bytes": 0}, "chip.yaml: compute.noc.link_bytes: got 0; accepted: a number > 0"),
    ({"traffic": "random"}, "chip.yaml: compute.noc.traffic: got 'random'; accepted: one of 'local' or 'uniform'"),
])
def test_bad_network_input_is_one_line_naming_the_field(block: dict, expected: str) -> None:
    with pytest.raises(DseError) as ei:
        hardware_from_mapping(npu_with_noc(**block), file="chip.yaml")
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith(expected), msg


def test_a_ring_needs_three_cores() -> None:
    data = npu_with_noc(topology="ring")
    data["compute"]["cores"] = 2
    data["compute"]["matrix"]["peak_tflops"] = {k: v / 12 for k, v in data["compute"]["matrix"]["peak_tflops"].items()}
    data["compute"]["vector"]["peak_tflops"] = {k: v / 12 for k, v in data["compute"]["vector"]["peak_tflops"].items()}
    data["memory"][0]["instances"] = 2
    with pytest.raises(DseError, match="compute.noc.topology: got ring for 2 cores"):
        hardware_from_mapping(data, file="chip.yaml")




def test_default_links_carry_their_level_so_the_predictor_reads_it_in_full() -> None:
    for name in dse.list_hardware():
        d = DesignBatch.from_hardware(load_hardware(name))
        assert np.all(d.noc().delivered_bps >= d.noc_demand * (1 - 1e-12)), name
        # only a die-to-die link can bind (mi300x's Infinity Cache; tests/hardware/test_designs.py)
        assert np.array_equal(d.delivered_bandwidth, np.minimum(d.bandwidth, d.d2d_ceiling)), name


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(list(TOPOLOGIES)), st.integers(3, 1024), st.floats(0.05, 50.0),
       st.sampled_from(["local", "uniform"]))
def test_auto_links_get_any_demand_through_under_their_traffic(topology: str, cores: int, tbps: float,
                                                               traffic: str) -> None:
    _, d, _ = network(npu_with_noc(topology=topology, traffic=traffic), cores=cores)
    g = d.noc(demand_bps=np.array([tbps * 1e12]))
    assert g.delivered_bps[0] >= tbps * 1e12 * (1 - 1e-12)
    # and one byte narrower would not (the narrowest whole-byte link), unless the link is already one byte
    assert g.link_bytes[0] == 1 or g.delivered_bps[0] * (g.link_bytes[0] - 1) / g.link_bytes[0] < tbps * 1e12


def test_a_given_narrow_network_slows_the_level_it_carries() -> None:
    # npu-7nm's 4 TB/s global level over a 5 x 5 mesh of 16-byte links at 1.4 GHz, uniform traffic:
    # 4 min(x, y) W f = 448 GB/s
    wide_hw = hardware_from_mapping(npu_with_noc(topology="mesh", link_bytes=256, traffic="uniform"),
                                    file="chip.yaml")  # 7.2 TB/s uniform
    narrow_hw = hardware_from_mapping(npu_with_noc(topology="mesh", link_bytes=16, traffic="uniform"), file="chip.yaml")
    d = DesignBatch.from_hardware(narrow_hw)
    j = d.noc_level
    assert d.level_names[j] == "global"
    assert d.delivered_bandwidth[0, j] == pytest.approx(4 * 5 * 16 * 1.4e9)
    others = [k for k in range(len(d.level_names)) if k != j]
    assert np.array_equal(d.delivered_bandwidth[:, others], d.bandwidth[:, others])
    wl = dse.workload("gemm:2048x2048x2048")
    auto, wide, narrow = (dse.predict(wl, h) for h in (load_hardware("npu-7nm"), wide_hw, narrow_hw))
    assert wide.time_s == auto.time_s  # a network that carries the level in full changes nothing
    assert set(auto.ops["bound"]) == {"compute"} and set(narrow.ops["bound"]) == {"global"}
    assert round(narrow.time_s / auto.time_s, 2) == 1.57  # docs/area_calibration.md quotes it


def test_one_core_has_no_network_to_bind() -> None:
    data = load_yaml(str(templates_dir() / "tpu-v5e.yaml"))
    data["compute"]["noc"] = {"link_bytes": 1}
    d = DesignBatch.from_hardware(hardware_from_mapping(data, file="chip.yaml"))
    assert np.array_equal(d.delivered_bandwidth, d.bandwidth)


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 300), st.floats(1.0, 4096.0))
def test_delivered_bandwidth_never_exceeds_the_level_and_grows_with_the_link(cores: int, link: float) -> None:
    _, d, _ = network(npu_with_noc(topology="mesh", link_bytes=link), cores=cores)
    _, d2, _ = network(npu_with_noc(topology="mesh", link_bytes=link * 2), cores=cores)
    assert np.all(d.delivered_bandwidth <= d.bandwidth)
    assert np.all(d2.delivered_bandwidth >= d.delivered_bandwidth)


def test_the_tenstorrent_templates_state_their_networks_as_the_doc_says() -> None:
    # docs/area_calibration.md, On-chip network
    for name, noc_mm2, total in (("tt-n150", 15.5, 698.3), ("tt-p150", 19.0, None)):
        hw = load_hardware(name)
        d = DesignBatch.from_hardware(hw)
        g = d.noc()
        assert g.topology == "unidirectional_torus" and g.networks == 2 and g.ports[0] == 3
        assert g.delivered_bps[0] / d.noc_demand[0] >= 3.5  # carries its DRAM traffic with room to spare
        assert np.array_equal(d.delivered_bandwidth, d.bandwidth)
        a = dse.area(name)
        assert round(a.breakdown["noc"], 1) == noc_mm2 and (total is None or round(a.total_mm2, 1) == total)
