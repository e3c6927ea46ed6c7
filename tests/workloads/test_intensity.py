import numpy as np
import pytest

import dse
from dse.workloads.intensity import band_share, compulsory_intensity, weighted_percentiles
from dse.workloads.mix import Mix


def test_weighted_percentiles_and_band_share_by_hand() -> None:
    ai = np.array([1.0, 8.0, 100.0])
    w = np.array([1.0, 2.0, 1.0])
    p10, p50, p90 = weighted_percentiles(ai, w)
    assert p50 == pytest.approx(8.0) and p10 < p50 < p90
    assert band_share(ai, w, 4, 16) == pytest.approx(0.5)
    # an op that moves no byte across the level (AI infinite: its data stays on chip) sits above every finite AI:
    # with 5 of 9 of the weight there, the median and p90 are infinite and 2 of 9 is in the band (it was dropped,
    # which gave the finite ops' median, 8, and a share of 1/2)
    ai_inf, w_inf = np.append(ai, np.inf), np.append(w, 5.0)
    p10, p50, p90 = weighted_percentiles(ai_inf, w_inf)
    assert 1.0 < p10 < 8.0 and p50 == p90 == np.inf
    assert band_share(ai_inf, w_inf, 4, 16) == pytest.approx(2 / 9)
    assert weighted_percentiles(np.array([np.inf]), np.array([1.0])) == [np.inf] * 3


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


def test_phase_inference_covers_prefill_and_decode(tmp_path, capsys, monkeypatch) -> None:
    """``--phase inference`` on a suite: a language model without a phase of its own is two rows, prefill and
    decode at half its weight each; a vision model runs forward; an entry with its own phase keeps it."""
    import pandas as pd

    from dse.cli import main
    from dse.workloads import suites
    from dse.workloads.library import inference_phases

    assert inference_phases("llama2-7b") == ("prefill", "decode")
    assert inference_phases("resnet50") == ("forward",)
    entries = [{"name": "gpt2", "weight": 2.0, "batch": 1}, {"name": "resnet50", "weight": 1.0, "batch": 1},
               {"name": "llama2-7b", "weight": 1.0, "phase": "decode", "batch": 1, "context": 512}]
    monkeypatch.setattr(suites, "load_suite", lambda name: entries)
    assert main(["workloads", "ai", "mine", "--phase", "inference", "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].lstrip().startswith("time-weighted")  # the memo leads with where the time goes
    df = pd.read_csv(tmp_path / "ai_mine.csv")
    labels = set(df["workload"])
    assert any(x.startswith("gpt2[prefill") for x in labels) and any(x.startswith("gpt2[decode") for x in labels)
    assert any(x.startswith("resnet50[forward") for x in labels)
    assert [x for x in labels if x.startswith("llama2-7b")] == ["llama2-7b[decode b1 ctx512 bf16]"]
    share = df.groupby("workload")["share_flops"].sum()
    gpt2 = share[[x for x in share.index if x.startswith("gpt2")]]
    assert gpt2.sum() == pytest.approx(0.5)  # weight 2 of 4, split between its two phases


def test_a_model_of_ones_own_is_in_its_declared_family(tmp_path) -> None:
    """A description YAML outside the library was looked up by its name and fell to 'other' (dse workloads ai on a
    config with one's own llm): its domain comes from the file it was built from."""
    from dse.workloads.library import description_path

    src = description_path("llama3-8b").read_text().replace("name: llama3-8b", "name: my-llm")
    path = tmp_path / "my-llm.yaml"
    path.write_text(src)
    mix = Mix.of([dse.workload(str(path), phase="decode"), dse.gemm(64, 64, 64)], [1, 1])
    fams = dict(zip(compulsory_intensity(mix)["wl"], compulsory_intensity(mix)["family"], strict=True))
    assert fams[0] == "llm" and fams[1] == "other"
