import pytest

import dse
from dse.hardware.designs import DesignBatch
from dse.predict.intensity import op_intensity
from dse.workloads.intensity import compulsory_intensity, summary
from dse.workloads.mix import Mix


def test_mix_shares_follow_mix_weights() -> None:
    mix = Mix.of([dse.gemm(1024, 1024, 1024, dtype="bf16"), dse.elementwise(1 << 20, dtype="bf16")], [3, 1])
    df = op_intensity(mix, DesignBatch.from_hardware(dse.hardware("npu-7nm")))
    assert df["share_flops"].sum() == pytest.approx(1.0) and df["share_time"].sum() == pytest.approx(1.0)
    assert df.loc[0, "share_flops"] == pytest.approx(0.75)
    st = summary(df)
    assert st["p90"] == pytest.approx(df.loc[0, "ai_compulsory"])
    assert "ai_hbm" in df and "ai_local" in df


def test_without_a_design_it_is_the_compulsory_table() -> None:
    mix = Mix.of([dse.gemm(512, 512, 512, dtype="bf16")])
    assert op_intensity(mix).equals(compulsory_intensity(mix))


def test_ai_document_names_its_table_and_three_distributions() -> None:
    from dse.predict.intensity import ai_document

    design = DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    df = op_intensity(Mix.of([dse.gemm(512, 512, 512, dtype="bf16")]), design)
    d = ai_document(df, "s", "suite s", design, "npu-7nm")
    assert d.body == () and d.files == ["ai_s.csv", "ai_s_flops.png", "ai_s_time.png", "ai_s_family.png"]
    assert d.figures[1].data[1:3] == (design.level_names[-1], "share_time")
    assert d.figures[0].data[3] == {"npu-7nm": float(design.ridge[0])}
