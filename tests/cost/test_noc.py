"""The area of the on-chip network (dse.cost.noc): router pricing, the A100 fit, published routers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.cost import noc
from dse.cost.area import area
from dse.hardware.designs import DesignBatch
from dse.hardware.templates import load_hardware, load_node
from dse.hardware.topologies import TOPOLOGIES
from tests.hardware.noc_designs import network, npu_with_noc


def test_router_area_is_the_crossbar_and_buffer_terms_at_the_node() -> None:
    hw, d, g = network(npu_with_noc(topology="mesh", link_bytes=64))
    node = load_node("7nm")
    bits = 64 * 8
    per_router = 25 * bits * noc.XPT_7NM_UM2 + 5 * 4 * bits * noc.FIFO_BIT_TRANSISTORS / 96.3
    assert area(d).parts["noc"][0] == pytest.approx(24 * per_router * 1e-6)
    # an older node: crosspoints and bits grow by the logic-density ratio
    n12 = load_node("12nm")
    assert noc.xpt_um2(n12) == pytest.approx(noc.XPT_7NM_UM2 * 96.3 / n12.logic_density_mtr_per_mm2.value)
    assert noc.bit_um2(node) == pytest.approx(30 / 96.3)


def test_the_crosspoint_area_refits_on_the_a100_interconnect() -> None:
    # the one fitted figure: a100-80gb's 108-port crossbar prices at 76.44 mm2 (LLMCompass die_area.csv)
    d = DesignBatch.from_hardware(load_hardware("a100-80gb"))
    g = d.noc()
    assert g.topology == "crossbar" and g.ports[0] == 108
    node = load_node("7nm")
    fitted = (76.44e6 - g.buffer_bits[0] * noc.bit_um2(node)) / g.crosspoint_bits[0]
    assert pytest.approx(fitted, rel=1e-3) == noc.XPT_7NM_UM2
    assert area(d).parts["noc"][0] == pytest.approx(76.44, rel=1e-3)


def test_one_core_has_no_network_and_a_256_core_mesh_is_no_longer_priced_by_bandwidth_alone() -> None:
    assert dse.area("tpu-v5e").breakdown["noc"] == 0.0  # one TensorCore: its VMEM is its own
    # 256 cores of npu-7nm at 12 nm with a 32 MiB global level at the per-core bandwidth of npu-7nm (4 TB/s / 24)
    data = npu_with_noc(topology="mesh", link_bytes=32, networks=2)
    data["process_node"] = "12nm"
    hw, d, g = network(data, cores=256)
    d = d.with_field("memory.global.bandwidth_tbps", np.array([4.0 / 24 * 256]))
    ar = area(d)
    mm2 = ar.parts["noc"][0]
    # a Wormhole-like network (two networks of 32-byte links, a router per core): 256 x 2 routers
    assert g.routers[0] == 256 and mm2 < 0.25 * ar.total[0]
    wider = area(d.with_field("memory.global.bandwidth_tbps", np.array([100.0]))).parts["noc"][0]
    assert wider == pytest.approx(mm2)  # a given link width: the level's bandwidth no longer sets the area


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(list(TOPOLOGIES)), st.integers(3, 512), st.floats(1.0, 512.0))
def test_more_cores_or_wider_links_never_shrink_the_network(topology: str, cores: int, link: float) -> None:
    data = npu_with_noc(topology=topology, link_bytes=link)
    _, d, g = network(data, cores=cores)
    _, d2, g2 = network(data, cores=cores + 1)
    wide = npu_with_noc(topology=topology, link_bytes=link * 2)
    _, d3, _ = network(wide, cores=cores)
    a, a_more, a_wide = (area(x).parts["noc"][0] for x in (d, d2, d3))
    assert a_more >= a and a_wide >= a
    assert g2.delivered_bps[0] >= g.delivered_bps[0] * (1 - 1e-12) or topology == "ring"


@pytest.mark.parametrize(("name", "density", "ports", "bits", "published_mm2", "low", "high"), [
    ("Intel SCC (45 nm; Salihundam et al., JSSC 2011)", 7.7, 5, 128, 1.32, 0.4, 0.6),
    ("Intel Teraflops (65 nm; Vangal et al., JSSC 2008)", 3.3, 5, 39, 0.34, 1.3, 1.6),
    ("Piton (32 nm; McKeown et al., CACM 2019: ~0.95 % of a 1.17 mm2 tile)", 10.9, 5, 64, 0.0113, 15, 25),
])
def test_published_routers_check_the_fit_as_docs_say(name, density, ports, bits, published_mm2, low, high) -> None:
    # docs/area_calibration.md: SCC and Teraflops within about 2x, Piton about 20x smaller than the formula;
    # densities: ttm-cas table (45 nm 7.7, 65 nm 3.3 MTr/mm2; 32 nm the geometric mean of 45 and 28 nm)
    xpt = noc.XPT_7NM_UM2 * 96.3 / density
    model = (ports**2 * bits * xpt + ports * 4 * bits * noc.FIFO_BIT_TRANSISTORS / density) * 1e-6
    assert low < model / published_mm2 < high, (name, model)
