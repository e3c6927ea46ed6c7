"""dse.hardware.d2d: every die-to-die link kind is complete, sourced and ordered as the physics says."""

import pytest

from dse.hardware.d2d import D2D, D2D_LINKS, D2D_NAMES


@pytest.mark.parametrize("link", D2D_LINKS, ids=D2D_NAMES)
def test_every_link_kind_is_positive_sourced_and_bonds_with_a_yield_below_one(link) -> None:
    assert link.gbps_per_mm2 > 0 and link.pj_per_bit > 0
    assert 0 < link.bond_yield < 1
    assert link.integration in ("organic", "interposer", "stacked")
    # a stacked die bonds face to face: it uses area, not die edge
    assert (link.gbps_per_mm is None) == (link.integration == "stacked")
    assert "UCIe" in link.source and len(link.description) > 20


def test_denser_packaging_is_denser_and_cheaper_per_bit() -> None:
    # UCIe 1.0: the advanced (2.5D) package beats the standard (2D) one on shoreline, area and energy, and 3D
    # hybrid bonding beats both on area and energy
    std, adv, hyb = D2D["ucie-standard"], D2D["ucie-advanced"], D2D["hybrid-bond"]
    assert std.gbps_per_mm < adv.gbps_per_mm
    assert std.gbps_per_mm2 < adv.gbps_per_mm2 < hyb.gbps_per_mm2
    assert std.pj_per_bit > adv.pj_per_bit > hyb.pj_per_bit
