import numpy as np
import pytest

import dse
from dse.hardware.designs import DesignBatch
from dse.workloads.intensity import band_share, op_intensity, summary, weighted_percentiles
from dse.workloads.mix import Mix


def test_weighted_percentiles_and_band_share_by_hand() -> None:
    ai = np.array([1.0, 8.0, 100.0, np.inf])
    w = np.array([1.0, 2.0, 1.0, 5.0])  # the infinite-AI op is left out
    p10, p50, p90 = weighted_percentiles(ai, w)
    assert p50 == pytest.approx(8.0) and p10 < p50 < p90
    assert band_share(ai, w, 4, 16) == pytest.approx(0.5)


def test_mix_shares_follow_mix_weights() -> None:
    mix = Mix.of([dse.gemm(1024, 1024, 1024, dtype="bf16"), dse.elementwise(1 << 20, dtype="bf16")], [3, 1])
    df = op_intensity(mix, DesignBatch.from_hardware(dse.hardware("npu-7nm")))
    assert df["share_flops"].sum() == pytest.approx(1.0) and df["share_time"].sum() == pytest.approx(1.0)
    assert df.loc[0, "share_flops"] == pytest.approx(0.75)
    st = summary(df)
    assert st["p90"] == pytest.approx(df.loc[0, "ai_compulsory"])
    assert "ai_hbm" in df and "ai_local" in df
