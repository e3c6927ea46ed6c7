"""dse.units: bytes per dtype, the dtype fallback order, and where the data folder is found."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dse import units
from dse.units import BLOCK_FORMATS, DTYPE_BYTES, DTYPE_INDEX, DTYPES, FALLBACK, element_of, fallback_dtype, repo_root

INTS = {"int4", "int8"}


def test_sizes_and_index_order() -> None:
    assert DTYPE_BYTES["int4"] == 0.5 and DTYPE_BYTES["tf32"] == 4.0 and DTYPE_BYTES["fp8"] == 1.0
    assert set(DTYPES) == set(DTYPE_BYTES) == set(FALLBACK)
    assert [DTYPE_INDEX[d] for d in DTYPES] == list(range(len(DTYPES)))
    assert (units.KIB, units.MIB, units.GIB, units.TERA) == (1024, 1024**2, 1024**3, 1e12)


def test_block_scaled_formats_carry_their_shared_scale() -> None:
    """Bytes per element = (element bits + scale bits / block) / 8: a 32x32 bfloat8_b tile is 1088 bytes in tt-metal,
    a bfloat4_b tile 576; an MX block of 32 FP8 (FP4) elements with its E8M0 scale 33 (17) bytes."""
    assert DTYPE_BYTES["bfp8"] * 1024 == 1088 and DTYPE_BYTES["bfp4"] * 1024 == 576
    assert DTYPE_BYTES["mxfp8"] * 32 == 33 and DTYPE_BYTES["mxfp4"] * 32 == 17
    assert DTYPE_BYTES["nvfp4"] * 16 == 9  # 16 FP4 values and their E4M3 scale
    assert set(BLOCK_FORMATS) <= set(DTYPES) and all(element_of(b) in DTYPES for b in BLOCK_FORMATS)
    for name, f in BLOCK_FORMATS.items():  # one record makes the dtype: its bytes, its fallbacks, the accepted name
        assert DTYPE_BYTES[name] == f.bytes_per_element and FALLBACK[name] == (name, *f.fallback)
        assert set(f.fallback) <= set(DTYPES) and name in get_args(units.Dtype)
    assert fallback_dtype("bfp4", {"bfp8": 148, "bf16": 74}) == "bfp8"  # a Wormhole with its BLOCKFP8 mode
    assert fallback_dtype("mxfp8", {"fp8": 1979, "bf16": 989}) == "fp8"  # Hopper: FP8 MMA, scales per K-block


def test_fallback_examples_from_real_chips() -> None:
    assert fallback_dtype("bf16", {"fp16": 125}) == "fp16"  # V100 runs bf16 on its fp16 tensor cores
    assert fallback_dtype("fp8", {"bf16": 312, "fp16": 312, "tf32": 156}) == "fp16"  # A100: fp8 in 16-bit mode
    assert fallback_dtype("fp8", {"int8": 624}) is None  # a float never runs on an integer mode
    assert fallback_dtype("int8", {"fp16": 100}) == "fp16"
    assert fallback_dtype("fp32", {"bf16": 1}) is None


@given(dt=st.sampled_from(DTYPES), avail=st.sets(st.sampled_from(DTYPES)))
def test_fallback_picks_an_available_mode_never_narrower_and_never_int_for_a_float(dt: str, avail: set[str]) -> None:
    mode = fallback_dtype(dt, avail)
    if mode is None:
        assert not (set(FALLBACK[dt]) & avail)
        return
    assert mode in avail and mode == next(m for m in FALLBACK[dt] if m in avail)
    # never narrower than the dtype's elements (a block-scaled format's shared scale is not an element bit)
    element = BLOCK_FORMATS[dt].element_bits / 8 if dt in BLOCK_FORMATS else DTYPE_BYTES[dt]
    assert DTYPE_BYTES[mode] >= element
    if dt not in INTS:
        assert mode not in INTS
    if dt in avail:
        assert mode == dt


def test_repo_root_prefers_dse_home_then_the_checkout(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DSE_HOME", str(tmp_path))
    assert repo_root() == tmp_path
    monkeypatch.delenv("DSE_HOME")
    root = repo_root()
    assert (root / "hw_templates").is_dir() and (root / "workloads").is_dir()
    assert root == Path(units.__file__).resolve().parent.parent


@pytest.mark.parametrize("dt", DTYPES)
def test_every_dtype_falls_back_to_itself_first(dt: str) -> None:
    assert FALLBACK[dt][0] == dt


def test_the_gemm_kernel_names_of_templates_and_workloads_agree() -> None:
    """A template's compute.matrix.gemm_kernel takes the structures, a workload's gemm_kernel those plus auto."""
    from typing import get_args

    from dse.units import GemmKernel, GemmKernelStructure

    assert get_args(GemmKernel) == ("auto", *get_args(GemmKernelStructure))


def test_watts_keeps_three_digits_below_100_w() -> None:
    """An edge design's 2.853 W and 3.341 W printed as '3 W' both, while the memo said +17 %."""
    from dse.units import watts

    assert (watts(2.853), watts(3.341), watts(12.34), watts(265.4), watts(1250.4)) == ("2.85", "3.34", "12.3", "265",
                                                                                         "1250")
