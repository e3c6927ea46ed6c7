"""The sourced NPU templates (TPU v6e, Trainium 1/2, Inferentia2, Tenstorrent n150/p150): each loads by name, its
matrix peak and main memory match the vendor figures its sources cite, and a decode runs memory-bound."""

import pytest

import dse

GB, GIB = 1e9, 2**30

# name: (reference dtype, published peak TFLOP/s at it, main-memory GB/s, main-memory bytes)
NPUS = {
    "tpu-v6e": ("bf16", 918, 1638, 32 * GIB),  # Google Cloud TPU v6e docs
    "trainium2": ("bf16", 8 * 79, 2900, 96 * GIB),  # NKI Trainium2 guide (79 per NeuronCore-v3), Trainium2 page
    "trainium1": ("bf16", 2 * 92, 820, 32 * GIB),  # NKI Trainium/Inferentia2 guide (92 per NeuronCore-v2)
    "inferentia2": ("bf16", 2 * 92, 820, 32 * GIB),
    "tt-n150": ("fp16", 74, 288, 12 * GB),  # docs.tenstorrent.com Wormhole specifications
    "tt-p150": ("fp8", 774, 512, 32 * GB),  # 140-core p150 BLOCKFP8 774, Blackhole specifications
}


@pytest.mark.parametrize(("name", "figures"), list(NPUS.items()))
def test_npu_template_matches_its_published_figures(name: str, figures: tuple) -> None:
    dtype, tflops, gbps, capacity = figures
    hw = dse.hardware(name)
    assert hw.name == name and hw.reference_dtype == dtype
    assert hw.compute.matrix.style == "systolic"
    assert hw.peak_flops / 1e12 == pytest.approx(tflops, rel=0.02)
    assert hw.dram.kind == ("ddr" if name.startswith("tt-") else "dram")  # Tenstorrent cards: GDDR6 channels
    assert hw.dram.bandwidth_bps / GB == pytest.approx(gbps, rel=0.02)
    assert hw.dram.capacity_bytes == pytest.approx(capacity, rel=0.02)
    for block in (hw, hw.compute, hw.compute.matrix, hw.compute.vector, *hw.memory):
        assert len(block.source) > 20


@pytest.mark.parametrize("name", list(NPUS))
def test_npu_decode_is_main_memory_bound_and_area_is_positive(name: str) -> None:
    hw = dse.hardware(name)
    dtype = "fp8" if name == "tt-n150" else "bf16"  # 7B bf16 weights (13.5 GB) exceed the n150's 12 GB
    pred = dse.predict(dse.workload("llama2-7b", phase="decode", batch=8, context=1024, dtype=dtype), hw)
    assert pred.fits and pred.time_s > 0
    share = pred.time_by_bound()
    assert share.idxmax() == hw.dram.name and share[hw.dram.name] > 0.9
    assert dse.area(hw).total_mm2 > 0


def test_npu_templates_are_listed() -> None:
    from dse.hardware.templates import list_templates

    assert set(NPUS) <= set(list_templates())


def test_groq_tsp_is_an_all_sram_chip_built_from_its_mac_planes() -> None:
    """groq-tsp (Abts et al., ISCA 2020): four 320x320 int8 planes at 900 MHz give its int8 peak, fp16 a quarter of
    it; its only memory is 220 MiB of SRAM (no DRAM level), which holds ResNet-50 whole, so a batch-1 inference reads
    nothing off chip and its convolutions are set by the arrays' fill, not by a memory ceiling."""
    hw = dse.hardware("groq-tsp")
    m = hw.compute.matrix
    assert m.style == "systolic" and m.dataflow == "weight_stationary"
    peak = hw.compute.cores * m.array_rows * m.array_cols * 2 * hw.compute.clock_ghz * 1e9
    assert m.peak_tflops["int8"] * 1e12 == pytest.approx(peak, rel=1e-6)
    assert m.peak_tflops["fp16"] == pytest.approx(m.peak_tflops["int8"] / 4)
    assert not any(lv.kind == "dram" for lv in hw.memory) and hw.dram.capacity_bytes == 220 * 2**20
    pred = dse.predict(dse.workload("resnet50", batch=1, dtype="int8", fuse_elementwise=True), hw)
    assert pred.fits
    share = pred.time_by_bound()
    assert share.get(hw.dram.name, 0.0) < 0.05 and share.get("array", 0.0) + share.get("compute", 0.0) > 0.8
    # 20.4K images/s measured (the validation row groq-isca20-tsp-resnet50-b1, fitted to nothing)
    assert 0.7 < (1 / 20_400) / pred.time_s < 1.3
