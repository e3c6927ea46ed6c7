import numpy as np
import pytest

import dse
from dse.workloads.intensity import band_share, compulsory_intensity, weighted_percentiles
from dse.workloads.mix import Mix


def test_weighted_percentiles_and_band_share_by_hand() -> None:
    ai = np.array([1.0, 8.0, 100.0, np.inf])
    w = np.array([1.0, 2.0, 1.0, 5.0])  # the infinite-AI op is left out
    p10, p50, p90 = weighted_percentiles(ai, w)
    assert p50 == pytest.approx(8.0) and p10 < p50 < p90
    assert band_share(ai, w, 4, 16) == pytest.approx(0.5)


def test_compulsory_shares_follow_mix_weights_without_a_design() -> None:
    mix = Mix.of([dse.gemm(1024, 1024, 1024, dtype="bf16"), dse.elementwise(1 << 20, dtype="bf16")], [3, 1])
    df = compulsory_intensity(mix)
    assert df["share_flops"].sum() == pytest.approx(1.0) and df.loc[0, "share_flops"] == pytest.approx(0.75)
    assert df.loc[0, "ai_compulsory"] == pytest.approx(df.loc[0, "flops"] / df.loc[0, "bytes"])
    assert "time_s" not in df and "share_time" not in df


def test_ai_of_a_config_uses_its_weighted_mix_and_base_design(tmp_path, capsys) -> None:
    import pandas as pd

    from dse.cli import main
    from tests.conftest import SMALL_STUDY, write_config

    cfg = write_config(tmp_path, SMALL_STUDY)  # resnet50 weight 1, llama2-7b decode weight 2
    assert main(["workloads", "ai", str(cfg), "--out", str(tmp_path / "ai"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("config tiny: 2 workloads") and "design npu-7nm (ridge 168 FLOP/byte)" in out
    df = pd.read_csv(tmp_path / "ai" / "ai_tiny.csv")
    by_wl = df.groupby("wl")["share_flops"].sum()
    assert by_wl.to_numpy() == pytest.approx([1 / 3, 2 / 3])
    assert (tmp_path / "ai" / "ai_tiny_flops.png").is_file()
    assert main(["workloads", "ai", str(cfg), "--batch", "4", "--out", str(tmp_path / "ai")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {cfg}: --batch: got --batch with a config") and err.count("\n") == 1
