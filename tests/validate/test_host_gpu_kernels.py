"""Host health-check pieces, nvidia-smi parsing and profiler imports on small files made here."""

from pathlib import Path

import pytest

import dse
from dse.cli import main
from dse.errors import DseError
from dse.validate.gpu import parse_nvidia_smi, template_for
from dse.validate.host import (
    Caches,
    HostMeasurement,
    host_template,
    panel,
    predict_item,
    read_caches,
    timeit,
)
from dse.validate.kernels import load_kernels, place

# Recorded: nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.memory,memory.total,power.limit
#           --format=csv,noheader,nounits  (format as documented by NVIDIA; values of the parts' datasheets)
SMI = """NVIDIA A100-SXM4-80GB, 1410, 1593, 81920, 400.00
NVIDIA H100 80GB HBM3, 1980, 2619, 81559, 700.00
"""


def test_cache_sizes_are_read_from_a_sys_tree(tmp_path: Path) -> None:
    for i, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"),
                                             (3, "Unified", "96M")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    c = read_caches(str(tmp_path))
    assert (c.l1, c.l2, c.l3) == (48 * 1024, 2 * 1024**2, 96 * 1024**2)


def test_timeit_takes_the_median() -> None:
    calls = []
    t = timeit(lambda: calls.append(1), min_time=0.0, min_repeats=7, warmup=3)
    assert len(calls) >= 10 and 0 <= t < 1e-3


def test_host_template_and_panel_prediction() -> None:
    m = HostMeasurement(Caches(32 * 1024, 1024**2, 32 * 1024**2, 2), {"fp64": 1e11, "fp32": 2e11},
                        {"fp32": 8e9, "fp64": 6e9}, {"l1": 1e11, "l2": 1e11, "l3": 8e10, "dram": 3e10}, 5e-7, 2**34,
                        {"OPENBLAS_CORETYPE": "Haswell"})
    hw = host_template(m)
    assert hw.compute.matrix.peak_tflops["fp32"] == pytest.approx(0.2) and "OPENBLAS_CORETYPE=Haswell" in hw.source
    assert [lv.name for lv in hw.memory] == ["l1", "l2", "l3", "dram"]
    from dse.hardware.designs import DesignBatch

    d = DesignBatch.from_hardware(hw)
    items = {it.name: it for it in panel()}
    t, roof, bound = predict_item(items["gemm 2048x2048x2048 fp32"], d)
    assert bound == "compute" and t == pytest.approx(2 * 2048**3 / 2e11 + 5e-7, rel=1e-6) and roof <= t
    t, roof, bound = predict_item(items["add n=16777216"], d)
    assert bound == "dram" and t == pytest.approx(3 * 4 * 2**24 / 3e10 + 5e-7, rel=1e-6)
    # softmax runs five numpy passes, each with its own call overhead
    assert len(items["softmax 4096x1024"].rows) == 5


def test_nvidia_smi_output_becomes_the_matching_template() -> None:
    gpus = parse_nvidia_smi(SMI)
    assert [g["name"] for g in gpus] == ["NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"]
    a100 = template_for(gpus[0])
    assert a100.name == "a100-80gb-queried" and a100.peak_flops == dse.hardware("a100-80gb").peak_flops
    assert a100.dram.capacity_bytes == pytest.approx(81920 * 2**20) and a100.published.tdp_w == 400
    assert template_for(gpus[1]).name == "h100-sxm-queried"
    with pytest.raises(DseError, match="no shipped template for GPU 'NVIDIA L4'"):
        template_for(parse_nvidia_smi("NVIDIA L4, 2040, 6251, 23034, 72.00")[0])
    with pytest.raises(DseError, match="line 1: 3 fields"):
        parse_nvidia_smi("NVIDIA A100, 1410, 1593")


def test_gpu_command_from_a_recorded_file(tmp_path: Path, capsys) -> None:
    f = tmp_path / "smi.csv"
    f.write_text(SMI)
    assert main(["gpu", "--from-file", str(f), "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "gpu0-a100-80gb-queried.yaml").is_file()
    assert dse.hardware(tmp_path / "o" / "gpu1-h100-sxm-queried.yaml").name == "h100-sxm-queried"


def test_generic_kernel_csv_is_placed_with_regions(tmp_path: Path) -> None:
    f = tmp_path / "k.csv"
    f.write_text("name,flops,bytes,seconds\n"
                 "big_gemm,2.2e12,4e8,0.008\n"      # AI 5500: compute side, 275 TFLOP/s of 312
                 "stream,1e9,8e9,0.005\n"           # AI 0.125: memory side, 1.6 TB/s of 2.04
                 "slow,1e9,8e9,0.1\n"               # far below
                 "zero,1e9,1e9,0\n")
    df = place(load_kernels(f), dse.hardware("a100-80gb")).set_index("name")
    assert df.loc["big_gemm", "region"] == "compute-bound"
    assert df.loc["big_gemm", "roof_utilization"] == pytest.approx(2.2e12 / 0.008 / 312e12)
    assert df.loc["stream", "region"] == "memory-bound"
    assert df.loc["stream", "roof_utilization"] == pytest.approx(8e9 / 0.005 / 2039e9)
    assert df.loc["slow", "region"] == "far below roof"
    assert df.loc["zero", "status"] == "error" and "zero" in df.loc["zero", "reason"]


def test_nsight_compute_raw_csv(tmp_path: Path, capsys) -> None:
    f = tmp_path / "ncu.csv"
    f.write_text(
        '"ID","Kernel Name","gpu__time_duration.sum","dram__bytes.sum",'
        '"sm__sass_thread_inst_executed_op_ffma_pred_on.sum","sm__sass_thread_inst_executed_op_fadd_pred_on.sum"\n'
        '"","","usecond","Mbyte","inst","inst"\n'
        '"0","sgemm_128x128","1,000","16","1000000000","0"\n'
        '"1","vector_add","10","12","0","1000000"\n')
    k = load_kernels(f).set_index("name")
    assert k.loc["sgemm_128x128", "flops"] == 2e9 and k.loc["sgemm_128x128", "seconds"] == pytest.approx(1e-3)
    assert k.loc["vector_add", "bytes"] == pytest.approx(12e6) and k.loc["vector_add", "flops"] == 1e6
    assert main(["kernels", str(f), "--hardware", "a100-80gb", "--out", str(tmp_path / "o")]) == 0
    assert "2 kernels placed, 0 with errors" in capsys.readouterr().out


def test_profiler_csv_missing_a_column_is_one_line(tmp_path: Path, capsys) -> None:
    f = tmp_path / "bad.csv"
    f.write_text("name,flops,seconds\nk,1,1\n")
    assert main(["kernels", str(f), "--hardware", "a100-80gb", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "bad.csv" in err and "missing column(s) ['bytes']" in err and err.count("\n") == 1


def test_host_command_writes_template_chart_and_table(tmp_path: Path, capsys) -> None:
    import pandas as pd

    assert main(["host", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "leave-one-out" in out and "GFLOP/s" in out
    for name in ("host.yaml", "host-calibrated.yaml", "host_panel.csv", "host_roofline.png"):
        assert (tmp_path / name).is_file(), name
    table = pd.read_csv(tmp_path / "host_panel.csv")
    assert len(table) == len(panel()) and (table["measured_s"] > 0).all()
    assert set(table["region"]) <= {"memory-bound", "compute-bound", "far below roof"}
    host = dse.hardware(tmp_path / "host.yaml")
    assert host.compute.matrix.peak_tflops["fp32"] > 0 and host.dram.bandwidth_bps > 0


@pytest.mark.parametrize("name", ["h200-query.csv", "h200-q.txt"])
def test_gpu_reads_a_real_h200_in_both_nvidia_smi_formats(tmp_path, name) -> None:
    from dse.validate.gpu import parse_nvidia_smi, template_for

    text = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "nvidia-smi" / name).read_text()
    (gpu,) = parse_nvidia_smi(text)
    assert gpu["name"] == "NVIDIA H200" and gpu["sm_clock_mhz"] == 1980 and gpu["mem_clock_mhz"] == 3201
    assert gpu["memory_mib"] == 143771 and gpu["power_limit_w"] == 700
    hw = template_for(gpu)
    assert hw.name == "h200-queried" and hw.power_limit_w == 700
    assert hw.dram.capacity_bytes == pytest.approx(143771 * 2**20)
    assert main(["gpu", "--from-file", str(Path(__file__).resolve().parents[2] / "docs" / "reference" / "nvidia-smi"
                                               / name), "--out", str(tmp_path)]) == 0


@pytest.mark.parametrize(("content", "needle"), [
    (b"", "got an empty file"), (b"name,flops,bytes,seconds\n", "got a header and no rows"),
    (b"name,flops\n\xff\xfe,1\n", "is not UTF-8"),
])
def test_empty_or_unreadable_kernel_csv_is_one_line(tmp_path: Path, capsys, content: bytes, needle: str) -> None:
    (tmp_path / "k.csv").write_bytes(content)
    assert main(["kernels", str(tmp_path / "k.csv"), "--hardware", "h100-sxm", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert needle in err and "k.csv" in err and err.count("\n") == 1, err


def test_non_finite_kernel_rows_are_errors_not_roofline_points(tmp_path: Path) -> None:
    (tmp_path / "k.csv").write_text("name,flops,bytes,seconds\na,1e9,1e6,1e-3\nb,inf,1e6,1e-3\nc,1e9,nan,1e-3\n")
    from dse.hardware.templates import load_hardware

    df = place(load_kernels(tmp_path / "k.csv"), load_hardware("h100-sxm"))
    assert list(df["status"]) == ["ok", "error", "error"]


def test_host_document_is_the_panel_and_its_roofline() -> None:
    import pandas as pd

    from dse.hardware.templates import load_hardware
    from dse.validate.host import host_document

    hw = load_hardware("a100-80gb")
    table, after = pd.DataFrame({"operator": ["gemm"]}), pd.DataFrame({"operator": ["gemm"], "x": [1.0]})
    d = host_document(table, after, hw)
    assert d.body == () and d.files == ["host_panel.csv", "host_roofline.png"]
    assert d.tables[0].frame is table and d.figures[0].data == (after, hw) and d.figures[0].plot == "host_roofline"


@pytest.mark.parametrize(("line", "words"), [
    ("NVIDIA H200, 1980, 3201, 1e12, 700.00", "GPU NVIDIA H200: memory.total: got 1e+12; accepted: a finite number > 0 "
                                              "MiB, at most 17179869184 (16 PiB)"),
    ("NVIDIA H200, 1980, 3201, 0, 700.00", "GPU NVIDIA H200: memory.total: got 0; accepted: a finite number > 0 MiB"),
    ("NVIDIA H200, 1980, 3201, 143771, 7e9", "GPU NVIDIA H200: power.limit: got 7e+09; accepted: a finite number >= 0 "
                                             "W, at most 100000"),
    ("NVIDIA H200, nan, 3201, 143771, 700.00", "GPU NVIDIA H200: clocks.max.sm: got nan; accepted: a finite number"),
])
def test_a_queried_value_out_of_range_is_one_line_naming_the_nvidia_smi_field(line: str, words: str) -> None:
    with pytest.raises(DseError) as exc:
        template_for(parse_nvidia_smi(line)[0])
    assert str(exc.value).startswith(words) and "\n" not in str(exc.value)


def test_gpu_matches_the_part_and_its_memory_not_just_the_family_name() -> None:
    """An A100-SXM4-40GB took the 80 GB template (2.039 TB/s, not its 1.555); an H100 PCIe took the SXM one (132 SMs
    and 3.35 TB/s for a 114-SM, 2.0 TB/s board); a 0 MHz clock was accepted. Now: the 40 GB template, a one-line
    refusal of PCIe/NVL boards, and clocks > 0."""
    a40 = template_for(parse_nvidia_smi("NVIDIA A100-SXM4-40GB, 1410, 1215, 40960, 400")[0])
    assert a40.name == "a100-40gb-queried" and a40.dram.bandwidth_bps == dse.hardware("a100-40gb").dram.bandwidth_bps
    for board in ("NVIDIA H100 PCIe, 1755, 1593, 81559, 350", "NVIDIA H100 NVL, 1785, 2619, 95830, 400",
                  "NVIDIA A100-PCIE-40GB, 1410, 1215, 40960, 250"):
        with pytest.raises(DseError, match="no shipped template for GPU .* board: other SMs") as ei:
            template_for(parse_nvidia_smi(board)[0])
        assert "\n" not in str(ei.value)
    with pytest.raises(DseError, match="clocks.max.sm: got 0; accepted: a finite number > 0 MHz"):
        template_for(parse_nvidia_smi("NVIDIA A100-SXM4-80GB, 0, 1593, 81920, 400")[0])
