import numpy as np
import pytest

from dse.score import constraints, mix_score, objective_value


def test_base_scores_one_and_uniform_speedup_scores_the_speedup() -> None:
    base = np.array([2.0, 5.0, 1e-3])
    w = np.array([0.5, 0.25, 0.25])
    times = np.stack([base, base / 2, base * np.array([1.0, 0.25, 1.0])])
    s = mix_score(times, base, w)
    assert s[0] == pytest.approx(1.0)
    assert s[1] == pytest.approx(2.0)
    assert s[2] == pytest.approx(4.0**0.25)  # geometric mean: only the 0.25-weighted workload got 4x


def test_score_per_mm2_and_constraints() -> None:
    s = np.array([1.0, 2.0])
    a = np.array([500.0, 1000.0])
    assert list(objective_value(s, a, 500.0, "score_per_mm2")) == [1.0, 1.0]
    c, reason = constraints(np.array([700.0, 800.0, 900.0]), 750.0, 858.0)
    assert list(c <= 0) == [True, False, False]
    assert reason[0] == "" and "area budget 750" in reason[1] and "area budget 750" in reason[2]
    c, reason = constraints(np.array([900.0]), None, 858.0)
    assert c[0] > 0 and "reticle limit 858" in reason[0]
