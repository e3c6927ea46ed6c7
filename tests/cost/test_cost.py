"""Cost model: hand-computed dies-per-wafer and yield, monotonicity, and cost in studies."""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.cost.area import area
from dse.cost.cost import dies_per_wafer, harvested_yield, negative_binomial_yield, unit_cost
from dse.hardware.designs import DesignBatch
from dse.hardware.templates import load_node
from tests.cost.growth import grown_pair
from tests.hardware.far import with_far_level


def test_dies_per_wafer_by_hand() -> None:
    # 826 mm2: pi*150^2/826 - pi*300/sqrt(1652) = 85.575 - 23.187 = 62.388 (ttm-cas derive.py: ~62.4)
    assert dies_per_wafer(826.0) == pytest.approx(np.pi * 22500 / 826 - np.pi * 300 / np.sqrt(1652), rel=1e-12)
    assert dies_per_wafer(826.0) == pytest.approx(62.388, abs=1e-3)
    # 100 mm2: 706.858 - 66.643 = 640.215
    assert dies_per_wafer(100.0) == pytest.approx(640.215, abs=1e-3)


def test_negative_binomial_yield_by_hand() -> None:
    # 826 mm2 at D0 0.15/cm2, alpha 3: (1 + 8.26*0.15/3)^-3 = 1.413^-3 = 0.35446 (ttm-cas: 0.354)
    assert negative_binomial_yield(826.0, 0.15, 3.0) == pytest.approx(1.413 ** -3, rel=1e-12)
    assert negative_binomial_yield(826.0, 0.15, 3.0) == pytest.approx(0.35446, abs=1e-5)
    # alpha -> infinity tends to Poisson exp(-A*D0)
    assert negative_binomial_yield(826.0, 0.15, 1e9) == pytest.approx(np.exp(-8.26 * 0.15), rel=1e-6)
    assert negative_binomial_yield(0.0, 0.15, 3.0) == 1.0


def test_a100_class_die_cost_matches_the_reference_example() -> None:
    # ttm-cas derive.py example: 826 mm2 at 7 nm -> ~$423 per good die (wafer only)
    node = load_node("7nm")
    cost = node.wafer_cost_usd.value / (dies_per_wafer(826.0) * negative_binomial_yield(826.0, 0.15, 3.0))
    assert cost == pytest.approx(423, abs=1.0)


@settings(max_examples=60, deadline=None)
@given(which=st.sampled_from(["matrix_peak", "bandwidth", "capacity"]), level=st.integers(0, 2),
       factor=st.floats(1.0, 10.0), scale=st.floats(0.2, 3.0))
def test_cost_never_decreases_when_a_resource_grows(which, level, factor, scale) -> None:
    d0, d1 = grown_pair(which, level, factor, scale)
    c0, c1 = unit_cost(d0, area(d0)), unit_cost(d1, area(d1))
    assert c1.total[0] >= c0.total[0] * (1 - 1e-12)
    for part in c0.parts:
        assert c1.parts[part][0] >= c0.parts[part][0] * (1 - 1e-12)


def test_every_level_of_a_kind_bought_per_gb_is_in_the_dram_cost() -> None:
    h100 = dse.hardware("h100-sxm")
    d0, d1 = DesignBatch.from_hardware(h100), DesignBatch.from_hardware(with_far_level(h100))
    c0, c1 = unit_cost(d0, area(d0)).parts["dram"][0], unit_cost(d1, area(d1)).parts["dram"][0]
    hbm_gb = h100.dram.capacity_bytes / 1e9  # 80 GiB
    assert c1 == pytest.approx(c0 * (hbm_gb + 4096) / hbm_gb, rel=1e-12)


# ---------------------------------------------------------------- multi-die packages

def test_a_multi_die_package_buys_known_good_dies_over_the_bond_yield_by_hand() -> None:
    hw = dse.hardware("mi300x")
    d = DesignBatch.from_hardware(hw)
    ar = area(d)
    c = unit_cost(d, ar)
    xcd, iod = ar.dies
    n5, n6 = load_node("5nm"), load_node("6nm")

    def kgd(a: float, node, y: float | None = None) -> float:
        y = negative_binomial_yield(a, node.defect_density_per_cm2.value, node.yield_alpha.value) if y is None else y
        return node.wafer_cost_usd.value / (dies_per_wafer(a) * y)

    y_asm = 0.95 ** 8 * 0.95 ** 4  # hybrid-bond and 2.5D bond yields (Chiplet Actuary, 3D-Carbon), per die
    assert c.assembly_yield[0] == pytest.approx(y_asm)
    # an XCD is 40 CU tiles of which 2 may be faulty (38 active): the harvested yield; the IOD has no cores
    assert (xcd.tiles[0], xcd.spare[0], iod.tiles) == (40, 2, None)
    y_xcd = harvested_yield(xcd.mm2, xcd.tile_mm2, xcd.tiles, xcd.spare, n5.defect_density_per_cm2.value,
                            n5.yield_alpha.value)[0]
    assert c.die_yields["xcd"][0] == pytest.approx(y_xcd, rel=1e-12)
    expect = (8 * kgd(xcd.mm2[0], n5, y_xcd) + 4 * kgd(iod.mm2[0], n6)) / y_asm
    assert c.parts["die"][0] == pytest.approx(expect, rel=1e-12)
    # the XCDs sit on the IODs: only the IODs and the HBM stacks take interposer area
    footprint = 4 * iod.mm2[0] + 8 * n5.dram_stack_footprint_mm2.value
    assert c.parts["interposer"][0] == pytest.approx(footprint * n5.interposer_usd_per_mm2.value / y_asm)
    assert set(c.die_yields) == {"xcd", "iod"} and c.die_yields["xcd"][0] > c.die_yields["iod"][0]


def test_splitting_a_big_die_pays_when_its_yield_gain_beats_the_bond_loss() -> None:
    # b200's ~1,494 mm2 (160 SMs, 12 spare) as one die yields ~64 %; as two dies of 80 SMs (6 spare) ~80 % each,
    # 0.95^2 assembled: silicon a quarter cheaper (docs/area_calibration.md; without the spares 31 -> 53 %, -45 %)
    hw = dse.hardware("b200")
    d = DesignBatch.stack([DesignBatch.from_hardware(hw)] * 2).with_field("package.dies.gpu.count", np.array([1.0, 2.0]))
    c = unit_cost(d, area(d))
    assert c.die_yields["gpu"] == pytest.approx([0.635, 0.800], abs=0.005)
    assert c.parts["die"][1] == pytest.approx(0.738 * c.parts["die"][0], rel=0.01)
    assert c.assembly_yield[0] == 1.0 and c.assembly_yield[1] == pytest.approx(0.95 ** 2)
    # a small die gains too little yield to pay for bonding: npu-decode-7nm (~240 mm2) in eight costs more
    npu = dse.hardware("npu-decode-7nm").model_dump(mode="python", exclude_none=True)
    npu["package"] = {**npu.get("package", {}), "source": "test",
                      "dies": [{"name": "c", "count": 1, "d2d_bandwidth_tbps": 2, "source": "test"}]}
    dn = DesignBatch.stack([DesignBatch.from_hardware(dse.hardware(npu))] * 2).with_field(
        "package.dies.c.count", np.array([1.0, 8.0]))
    cn = unit_cost(dn, area(dn))
    assert cn.parts["die"][1] > cn.parts["die"][0]


def _inclusion_exclusion_yield(area_mm2: float, tile: float, tiles: int, spare: int, d0: float, alpha: float) -> float:
    """The harvested yield as a finite sum (small dies only: it cancels badly for many tiles): P(exactly the tiles
    of a set K faulty, the rest of the die clean) by inclusion-exclusion over K, under one gamma-distributed
    defect density per die, where P(an area B clean) = (1 + B D0 / alpha)^-alpha."""
    from math import comb

    rest = area_mm2 - tiles * tile
    clean = lambda b: (1 + b / 100 * d0 / alpha) ** -alpha  # noqa: E731
    return sum(comb(tiles, k) * (-1) ** j * comb(k, j) * clean(rest + (tiles - k + j) * tile)
               for k in range(spare + 1) for j in range(k + 1))


def test_harvested_yield_is_the_closed_form_without_spares_and_the_finite_sum_with_them() -> None:
    a = np.array([100.0, 400.0, 814.0, 1500.0])
    closed = negative_binomial_yield(a, 0.1, 3.0)
    # the quadrature over the defect density, with no spare tile, is (1 + A D0 / alpha)^-alpha
    assert harvested_yield(a, a / 200, np.full(4, 144.0), np.zeros(4), 0.1, 3.0) == pytest.approx(closed, rel=1e-9)
    for area_mm2, tile, tiles, spare, d0, alpha in ((600.0, 40.0, 8, 2, 0.2, 3.0), (300.0, 20.0, 6, 1, 0.5, 1.5),
                                                    (800.0, 30.0, 10, 3, 0.1, 10.0)):
        got = harvested_yield(np.array([area_mm2]), np.array([tile]), np.array([float(tiles)]),
                              np.array([float(spare)]), d0, alpha)[0]
        assert got == pytest.approx(_inclusion_exclusion_yield(area_mm2, tile, tiles, spare, d0, alpha), rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.floats(50.0, 1200.0), st.floats(0.05, 0.6), st.integers(4, 200), st.integers(0, 8))
def test_property_a_spare_tile_never_lowers_the_yield(area_mm2: float, core_share: float, tiles: int, spare: int) -> None:
    """At a fixed die, one more tile allowed to fail never lowers the yield, and the yield stays in [NB, 1]."""
    tile = area_mm2 * core_share / tiles
    y = [harvested_yield(np.array([area_mm2]), np.array([tile]), np.array([float(tiles)]), np.array([float(s)]),
                         0.1, 3.0)[0] for s in (spare, spare + 1)]
    assert y[0] <= y[1] + 1e-12 and y[1] <= 1.0 + 1e-12
    assert y[0] >= negative_binomial_yield(area_mm2, 0.1, 3.0) - 1e-9


def test_a_harvested_gpu_die_yields_more_than_the_same_die_with_none_spare() -> None:
    """H100's 814 mm2 with 6 of its 72 TPCs (12 of 144 SMs) spare: ~75 % where the same area with no spare yields
    ~49 % (docs)."""
    hw = dse.hardware("h100-sxm")
    d = DesignBatch.from_hardware(hw)
    ar = area(d)
    c = unit_cost(d, ar)
    die = ar.dies[0]
    assert (die.tiles[0], die.spare[0]) == (72, 6)  # TPCs of 2 SMs, the unit NVIDIA fuses off
    node = load_node(hw.process_node)
    plain = negative_binomial_yield(ar.total, node.defect_density_per_cm2.value, node.yield_alpha.value)
    assert float(plain[0]) == pytest.approx(0.487, abs=0.005) and float(c.yield_[0]) == pytest.approx(0.755, abs=0.005)
    assert c.parts["die"][0] == pytest.approx(node.wafer_cost_usd.value / (dies_per_wafer(ar.total[0]) * c.yield_[0]))


def test_one_spare_core_pays_for_itself_on_an_npu_die_and_more_do_not() -> None:
    """npu-7nm (390 mm2, 24 cores of ~10 mm2): one spare core lifts the yield from 72 to 85 % and cuts the cost per
    good die by about 14 %; each further spare adds its area for almost no yield (the rest of the die's faults
    dominate), so the die cost rises again: the searchable knob compute.spare_cores has an optimum."""
    hw = dse.hardware("npu-7nm")
    d = DesignBatch.from_hardware(hw, 4).with_field("compute.spare_cores", np.array([0.0, 1.0, 2.0, 8.0]))
    ar = area(d)
    c = unit_cost(d, ar)
    assert np.all(np.diff(ar.total) > 0) and np.all(np.diff(c.yield_) >= 0)
    assert c.yield_[:2] == pytest.approx([0.717, 0.855], abs=0.005)
    die = c.parts["die"]
    assert die[1] == pytest.approx(0.863 * die[0], rel=0.01) and die[1] < die[2] < die[3]
    assert d.peak_flops.tolist() == [d.peak_flops[0]] * 4  # the spares add no peak


@pytest.mark.parametrize(("template", "harvested", "plain"), [("a100-80gb", 0.758, 0.525), ("v100-sxm", 0.783, 0.554),
                                                             ("tt-n150", 0.863, 0.603)])
def test_the_harvested_yields_the_area_doc_quotes(template: str, harvested: float, plain: float) -> None:
    """docs/area_calibration.md: A100 76 % (53 % with no spare at the same area), V100 78 % (55 %), the n150 86 %
    with one of its ten rows of 8 Tensix spare (60 %)."""
    hw = dse.hardware(template)
    d = DesignBatch.from_hardware(hw)
    ar = area(d)
    node = load_node(hw.process_node)
    assert unit_cost(d, ar).yield_[0] == pytest.approx(harvested, abs=0.005)
    assert negative_binomial_yield(ar.total[0], node.defect_density_per_cm2.value, node.yield_alpha.value) == \
        pytest.approx(plain, abs=0.005)


def test_without_its_spare_sms_a_split_b200_gained_more_than_it_does() -> None:
    """docs/area_calibration.md: with no spare SMs the two-die split took the yield from 31 to 53 % and cut the die
    cost by 45 %; with them 64 -> 80 % and 26 % (test_splitting_a_big_die_pays_when_its_yield_gain_beats_the_bond_loss)."""
    data = dse.hardware("b200").model_dump(mode="python", exclude_none=True)
    data["compute"]["spare_cores"] = 0
    d = DesignBatch.stack([DesignBatch.from_hardware(dse.hardware(data))] * 2).with_field(
        "package.dies.gpu.count", np.array([1.0, 2.0]))
    c = unit_cost(d, area(d))
    assert c.die_yields["gpu"] == pytest.approx([0.313, 0.535], abs=0.005)
    assert c.parts["die"][1] == pytest.approx(0.546 * c.parts["die"][0], rel=0.01)


def test_a_die_that_fuses_off_whole_rows_yields_less_than_one_that_fuses_single_cores() -> None:
    """The n150 fuses off a whole row of 8 Tensix (spare_granule_cores 8): a fault anywhere in a second row kills the
    die, where 8 single spare cores would survive 8 faults in 8 rows; same area, lower yield."""
    hw = dse.hardware("tt-n150")
    single = hw.model_dump(mode="python", exclude_none=True)
    single["compute"]["spare_granule_cores"] = 1
    rows, cores = DesignBatch.from_hardware(hw), DesignBatch.from_hardware(dse.hardware(single))
    ar_rows, ar_cores = area(rows), area(cores)
    assert ar_rows.total[0] == pytest.approx(ar_cores.total[0], rel=1e-12)
    assert (ar_rows.dies[0].tiles[0], ar_rows.dies[0].spare[0]) == (10, 1)
    assert unit_cost(rows, ar_rows).yield_[0] < unit_cost(cores, ar_cores).yield_[0] - 0.05


def test_a_package_s_own_price_replaces_the_node_s_and_nothing_else() -> None:
    """The node files price every package at ttm-cas's 21 USD starter figure; an edge NPU's small BGA or a large
    flip-chip part says its own (``package.package_usd``), and only the package part moves."""
    hw = dse.hardware("npu-7nm")
    data = hw.model_dump(mode="python", exclude_none=True)
    data["package"] = {"package_usd": 3.5, "source": "test: a small BGA"}
    own = dse.hardware(data)
    a, b = (unit_cost(DesignBatch.from_hardware(h), area(DesignBatch.from_hardware(h))) for h in (hw, own))
    assert a.parts["package"][0] == load_node("7nm").package_usd.value and b.parts["package"][0] == 3.5
    assert all(a.parts[k][0] == b.parts[k][0] for k in a.parts if k != "package")
