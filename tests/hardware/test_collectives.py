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
    base = dict(name="l0", size=8, topology="switch", latency_us=1.0, efficiency=0.8, source="test")
    for name in coll.LEVEL_ALGORITHMS:
        assert NetworkLevel(**base, algorithm=name).algorithm == name
    with pytest.raises(ValueError, match="tree"):
        NetworkLevel(**base, algorithm="butterfly")
    assert dataclasses.is_dataclass(coll.TABLE[0])
