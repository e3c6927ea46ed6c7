"""The pinned end-to-end results (``tests/pinned.csv``, rewritten by ``python -m tests.pinned_cases``)
still come out of the code: a change that moves one shows in review as a diff of that file."""

from __future__ import annotations

import csv

import pytest

from tests.pinned_cases import CASES, PINNED, compute


def _pinned() -> dict[tuple[str, str], str]:
    with PINNED.open() as f:
        return {(r["case"], r["quantity"]): r["value"] for r in csv.DictReader(f)}


def test_every_case_is_pinned_and_every_pin_has_a_case() -> None:
    assert {c for c, _ in _pinned()} == set(CASES)


def test_the_code_reproduces_the_pinned_results() -> None:
    pinned = _pinned()
    got = {(r["case"], r["quantity"]): r["value"] for r in compute()}
    assert set(got) == set(pinned)
    for key, want in pinned.items():
        try:
            w = float(want)
        except ValueError:
            assert got[key] == want, key  # a binding ceiling's name
            continue
        assert float(got[key]) == pytest.approx(w, rel=2e-6), f"{key}: {got[key]} != pinned {want}; " \
            "if the change is intended, run python -m tests.pinned_cases and commit tests/pinned.csv"
