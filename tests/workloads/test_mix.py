"""dse.workloads.mix: weights normalise, ops carry their workload, membership sums counts per workload."""

from __future__ import annotations

import numpy as np
import pytest

import dse
from dse.workloads.mix import Mix


def _two() -> list[dse.Workload]:
    return [dse.gemm(256, 256, 256, dtype="bf16"), dse.workload("resnet18", batch=2)]


def test_weights_normalise_and_ops_are_tagged_with_their_workload() -> None:
    a, b = _two()
    mix = Mix.of([a, b], [3, 1])
    assert mix.weights.tolist() == [0.75, 0.25]
    assert len(mix.ops) == len(a.ops) + len(b.ops)
    assert mix.ops["workload"].tolist() == [0] * len(a.ops) + [1] * len(b.ops)
    assert mix.labels == [a.label(), b.label()]
    assert Mix.of([a, b]).weights.tolist() == [0.5, 0.5]


def test_membership_times_op_times_gives_time_per_workload() -> None:
    a, b = _two()
    mix = Mix.of([a, b])
    m = mix.membership()
    assert m.shape == (len(mix.ops), 2)
    assert m[:, 1].sum() == b.ops["count"].sum() and m[:, 0].sum() == a.ops["count"].sum()
    op_time = np.arange(1.0, len(mix.ops) + 1)
    per_wl = op_time @ m
    cnt = mix.ops["count"].to_numpy(dtype=float)
    assert per_wl[1] == pytest.approx((op_time * cnt)[mix.ops["workload"].to_numpy() == 1].sum())
    half = mix.membership(np.full(len(mix.ops), 0.5))
    assert np.allclose(half, m / 2)


def test_memory_bytes_per_workload() -> None:
    a, b = _two()
    assert Mix.of([a, b]).memory_bytes.tolist() == [a.memory_bytes, b.memory_bytes]


@pytest.mark.parametrize("weights", [[1.0], [-1.0, 2.0], [0.0, 0.0]])
def test_bad_weights_are_rejected(weights) -> None:
    with pytest.raises(ValueError, match="one non-negative number per workload, not all zero"):
        Mix.of(_two(), weights)


def test_an_empty_mix_is_rejected() -> None:
    with pytest.raises(ValueError, match="at least one workload"):
        Mix.of([])
