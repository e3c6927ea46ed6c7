"""dse.validate.kernels: profiler exports (generic, Nsight Compute raw) onto a template's roofline, by hand."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dse
from dse.errors import DseError
from dse.validate.kernels import load_kernels, place

A100 = dse.hardware("a100-80gb")  # bf16 312 TFLOP/s, HBM 2039 GB/s: ridge 153 FLOP/byte


def _k(**cols) -> pd.DataFrame:
    return pd.DataFrame(cols)


def test_generic_csv_loads_as_si_numbers(tmp_path: Path) -> None:
    p = tmp_path / "k.csv"
    p.write_text("name,flops,bytes,seconds,extra\ngemm,2e12,1e10,0.01,x\nbad,abc,1,1,y\n")
    k = load_kernels(p)
    assert list(k.columns) == ["name", "flops", "bytes", "seconds"]
    assert k.loc[0, "flops"] == 2e12 and pd.isna(k.loc[1, "flops"])


def test_nsight_compute_raw_export_converts_units_and_counts_fma_twice(tmp_path: Path) -> None:
    p = tmp_path / "ncu.csv"
    p.write_text(
        '"Kernel Name","gpu__time_duration.sum","dram__bytes.sum",'
        '"sm__sass_thread_inst_executed_op_ffma_pred_on.sum","sm__sass_thread_inst_executed_op_hadd_pred_on.sum"\n'
        '"","usecond","Mbyte","inst","inst"\n'
        '"ampere_gemm","1,500","20","1000000","500"\n')
    k = load_kernels(p)
    assert k.loc[0, "name"] == "ampere_gemm"
    assert k.loc[0, "seconds"] == pytest.approx(1.5e-3)  # 1,500 us
    assert k.loc[0, "bytes"] == pytest.approx(20e6)
    assert k.loc[0, "flops"] == 2 * 1_000_000 + 500


@pytest.mark.parametrize(("text", "words"), [
    ("a,b\n1,2\n", "missing column(s) ['name', 'flops', 'bytes', 'seconds']"),
    ("gpu__time_duration.sum,sm__sass_thread_inst_executed_op_ffma_pred_on.sum\nns,inst\n1,2\n",
     "missing a DRAM bytes column"),
    ("gpu__time_duration.sum,dram__bytes.sum\nns,byte\n1,2\n", "missing FLOP counters"),
])
def test_unreadable_exports_are_one_line_errors_naming_the_file(tmp_path: Path, text: str, words: str) -> None:
    p = tmp_path / "x.csv"
    p.write_text(text)
    with pytest.raises(DseError) as ei:
        load_kernels(p)
    assert str(ei.value).startswith(f"{p}: ") and words in str(ei.value)
    with pytest.raises(DseError, match="file not found"):
        load_kernels(tmp_path / "none.csv")


def test_place_by_hand_on_the_a100_roof() -> None:
    k = _k(name=["gemm", "copy", "slow", "zero"], flops=[2e12, 0.0, 1e9, 1e9], bytes=[1e10, 2e9, 1e9, 1e9],
           seconds=[0.01, 0.0015, 0.01, 0.0])
    out = place(k, A100).set_index("name")
    g = out.loc["gemm"]  # AI 200 > ridge 153: compute roof 312 TFLOP/s, achieved 200
    assert (g["ai_flop_per_byte"], g["achieved_tflops"], g["roof_tflops"]) == pytest.approx((200, 200, 312))
    assert g["roof_utilization"] == pytest.approx(200 / 312) and g["region"] == "compute-bound"
    c = out.loc["copy"]  # 2 GB in 1.5 ms = 1.333 TB/s of 2.039
    assert c["achieved_bandwidth_tbps"] == pytest.approx(4 / 3) and c["region"] == "memory-bound"
    assert c["roof_utilization"] == pytest.approx((4 / 3) / 2.039)
    assert out.loc["slow", "region"] == "far below roof"  # 0.1 TB/s: 5 % of the bandwidth roof
    z = out.loc["zero"]
    assert (z["status"], z["reason"], z["region"]) == ("error", "duration is zero or missing", "")
    fp8 = place(k, A100, dtype="fp8").set_index("name")  # A100 runs fp8 in its 16-bit mode
    assert fp8.loc["gemm", "roof_tflops"] == pytest.approx(312)
    assert place(k, A100, dtype="fp32").set_index("name").loc["gemm", "roof_tflops"] == pytest.approx(19.5)  # fp64
    with pytest.raises(DseError, match="--dtype: template npu-7nm has no matrix mode for fp32"):
        place(k, dse.hardware("npu-7nm"), dtype="fp32")


def test_a_kernel_without_dram_traffic_is_measured_against_the_compute_roof() -> None:
    out = place(_k(name=["cached"], flops=[2e12], bytes=[0.0], seconds=[0.01]), A100).iloc[0]
    assert out["region"] == "compute-bound"
    assert out["roof_utilization"] == pytest.approx(200 / 312)


def test_kernels_document_is_the_table_and_the_roofline() -> None:
    import pandas as pd

    from dse.hardware.templates import load_hardware
    from dse.validate.kernels import kernels_document

    hw = load_hardware("a100-80gb")
    df = pd.DataFrame({"name": ["k"], "ai_flop_per_byte": [10.0]})
    d = kernels_document(df, hw, 312.0)
    assert d.body == () and d.files == ["kernels.csv", "kernels_roofline.png"]
    assert d.tables[0].frame is df and d.figures[0].data == (df, hw, 312.0)
    assert d.figures[0].plot == "kernels_roofline" and hw.name in d.figures[0].title


def test_a_kernel_faster_than_the_peak_is_suspect_and_a_file_of_only_bad_rows_is_one_line(tmp_path: Path,
                                                                                           capsys) -> None:
    """1e15 FLOP in 100 us on an A100 (1e7 TFLOP/s) was placed 'ok' at 32,000x its roof; it is now 'suspect', above
    the roof, with the peak it beat named. A file whose every row is unreadable exits 2 with one line (it exited 0)."""
    from dse.cli import main

    hw = dse.hardware("a100-80gb")
    k = pd.DataFrame({"name": ["fast", "fine"], "flops": [1e15, 2e12], "bytes": [3e9, 3e9], "seconds": [1e-4, 1e-2]})
    out = place(k, hw)
    assert list(out["status"]) == ["suspect", "ok"] and out.loc[0, "region"] == "above roof"
    assert "faster than a100-80gb's peak (312 TFLOP/s bf16" in out.loc[0, "reason"]
    bad = tmp_path / "bad.csv"
    bad.write_text("name,flops,bytes,seconds\nneg,-1,3e9,0.01\n")
    assert main(["kernels", str(bad), "--hardware", "a100-80gb", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {bad}: got 1 row(s), none readable")


def test_a_negative_count_is_said_as_negative_not_unreadable() -> None:
    """FLOPs of -5 read fine; the row said 'unreadable FLOPs or bytes'."""
    df = place(pd.DataFrame({"name": ["neg", "ok"], "flops": [-5.0, 1e9], "bytes": [100.0, 1e6],
                             "seconds": [1e-3, 1e-3]}), dse.hardware("h100-sxm"))
    assert df["status"].tolist() == ["error", "ok"] and df.loc[0, "reason"].startswith("negative FLOPs or bytes")
