"""Power cap: operators that would draw more than power_limit_w run at a lower clock."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.cost.power import mix_energy
from dse.errors import DseError
from dse.hardware.designs import DesignBatch
from dse.predict import OpArrays, evaluate, evaluate_times
from dse.predict.power_cap import F_MIN, capped_clock
from dse.workloads.mix import Mix

GEMM = dse.gemm(8192, 8192, 8192, dtype="bf16")
DECODE = dse.workload("llama2-7b", phase="decode", batch=1, context=1024)


def capped(limit: float | None, name: str = "a100-80gb"):
    return dse.hardware(name).model_copy(update={"power_limit_w": limit})


def power(hw, wl) -> float:
    return float(mix_energy(DesignBatch.from_hardware(hw), Mix.of([wl])).power_w[0, 0])


def test_a_cap_above_the_draw_changes_nothing() -> None:
    for wl in (GEMM, DECODE):
        free = dse.predict(wl, capped(None))
        assert dse.predict(wl, capped(1000.0)).time_s == free.time_s
        assert (free.ops["clock_fraction"] == 1.0).all()


def test_capped_compute_bound_gemm_draws_the_cap_and_slows_down() -> None:
    assert power(capped(None), GEMM) > 330  # the A100 model draws its 400 W TDP at this GEMM
    hw = capped(330.0)
    p = dse.predict(GEMM, hw)
    assert power(hw, GEMM) == pytest.approx(330.0, rel=1e-3)
    f = float(p.ops["clock_fraction"].min())
    assert F_MIN < f < 1
    free = dse.predict(GEMM, capped(None))
    # compute-bound: the compute term x 1/f (the launch overhead does not scale)
    assert p.ops["t_compute_s"].sum() == pytest.approx(free.ops["t_compute_s"].sum() / f, rel=1e-9)
    assert p.time_s > free.time_s


def test_memory_bound_decode_keeps_its_clock_under_an_a100_330_w_cap() -> None:
    # the gpt-fast A100s ran capped at 330 W; HBM-bound decode draws less, so its time does not move
    assert dse.predict(DECODE, capped(330.0)).time_s == dse.predict(DECODE, capped(None)).time_s


def test_lean_and_full_evaluation_agree_under_a_cap() -> None:
    d = DesignBatch.from_hardware(capped(250.0))
    o = OpArrays.from_table(dse.workload("resnet50", batch=32).ops)
    np.testing.assert_allclose(evaluate_times(d, o), evaluate(d, o).time, rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(lo=st.floats(150, 450), hi=st.floats(150, 450))
def test_a_lower_cap_is_never_faster(lo: float, hi: float) -> None:
    lo, hi = min(lo, hi), max(lo, hi)
    wl = dse.workload("resnet50", batch=16)
    assert dse.predict(wl, capped(lo)).time_s >= dse.predict(wl, capped(hi)).time_s * (1 - 1e-12)


def test_capped_clock_by_hand() -> None:
    # E_core f^2 / (t_c / f) = limit  =>  f^3 = limit * t_c / E_core  (no I/O energy, no static, compute-bound)
    f = capped_clock(np.array([[2.0]]), np.zeros((1, 1)), np.array([[1.0]]), np.zeros((1, 1)), np.zeros((1, 1)),
                     np.zeros((1, 1)), limit=1.0)
    assert f[0, 0] == pytest.approx(0.5 ** (1 / 3), rel=1e-6)


@pytest.mark.parametrize("bad", [-5, 0])
def test_a_negative_or_zero_power_limit_is_one_line(bad: float) -> None:
    data = capped(None).model_dump(mode="python")
    data["power_limit_w"] = bad
    with pytest.raises(DseError) as ei:
        dse.hardware(data)
    msg = str(ei.value)
    assert f"power_limit_w: got {bad}; accepted: a number > 0" in msg and "\n" not in msg
