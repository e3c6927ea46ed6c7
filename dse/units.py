"""Units, data types and the few constants the whole tool shares.

Everything inside the code is in SI base units: FLOP, byte, second, FLOP/s, byte/s, mm^2.
Config fields carry their unit in the name (``peak_tflops``, ``bandwidth_tbps``, ``capacity_mib``);
the helpers here convert those to SI once, at load time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

TERA = 1e12
GIGA = 1e9
MEGA = 1e6
KIB = 1024
MIB = 1024**2
GIB = 1024**3

@dataclass(frozen=True)
class BlockFormat:
    """A block-scaled storage format: ``block`` elements of ``element_bits`` each share one ``scale_bits`` scale
    (an exponent), so an element costs ``element_bits + scale_bits / block`` bits in memory (the bytes
    :data:`DTYPE_BYTES` charges). A matrix unit whose template lists the format in ``compute.matrix.unpacks`` decodes
    it in its operand path (no dequantization kernel: ``dse.predict.roofline.unpacked``); one without a mode for it
    runs it in the first of ``fallback`` it has (:data:`FALLBACK`). A MAC of a block format costs the
    energy of its element type (``element``): within a block a BFP dot product is a fixed-point one on the
    mantissas, the shared exponents added once per block (Darvish Rouhani et al., "Pushing the Limits of Narrow
    Precision Inferencing at Cloud Scale with Microsoft Floating Point", NeurIPS 2020, Sec. 3)."""

    element_bits: int
    scale_bits: int
    block: int
    element: str  # the plain dtype of one element: its MAC energy and PE area (``dse.hardware.energy``, ``dse.cost.area``)
    fallback: tuple[str, ...]  # the modes a unit without this one runs it in, in order (:data:`FALLBACK`)
    source: str

    @property
    def bytes_per_element(self) -> float:
        """``(element_bits + scale_bits / block) / 8``."""
        return (self.element_bits + self.scale_bits / self.block) / 8.0


_TT_BFP = ("Tenstorrent block floating point, the Tensix unpacker/packer formats BFP8-B (sign + 7-bit mantissa) and "
           "BFP4-B (sign + 3-bit mantissa): 'the exponent is always shared across all elements in a block of 16 "
           "elements', an 8-bit exponent (docs.tenstorrent.com/pybuda/latest/dataformats.html, Data Formats and Math "
           "Fidelity); a 32x32 bfloat8_b tile is 1024 + 64 = 1088 bytes in tt-metal")
_OCP_MX = ("OCP Microscaling Formats (MX) Specification v1.0 (Open Compute Project, 2023): blocks of k = 32 elements "
           "share one 8-bit E8M0 scale; MXFP8 elements are FP8 (E4M3 or E5M2), MXFP4 elements FP4 (E2M1)")
_NVFP4 = ("NVIDIA NVFP4 (NVIDIA technical blog 'Introducing NVFP4 for Efficient and Accurate Low-Precision Inference', "
          "2025; CUDA PTX ISA, tcgen05.mma .kind::mxf4nvf4 with scale_vec::4X): FP4 E2M1 elements, one FP8 E4M3 scale per "
          "16 (and an FP32 scale per tensor, negligible per element)")
#: the block-scaled dtypes (:class:`BlockFormat`), by name: adding one is one record here. A format falls back to the
#: plain formats that hold its elements once the scale is applied: bfp8 (7-bit mantissas) to 16-bit floats, bfp4 to
#: bfp8 then 16 bits; an MX or NVFP4 format to its element type, FP8 (the scale applied per K-block of partial sums, as
#: DeepSeek-V3's fine-grained FP8 GEMMs do on Hopper, arXiv:2412.19437 Sec. 3.3.2), then wider
BLOCK_FORMATS: dict[str, BlockFormat] = {
    "bfp8": BlockFormat(8, 8, 16, "int8", ("bf16", "fp16", "fp32"), _TT_BFP),
    "bfp4": BlockFormat(4, 8, 16, "int4", ("bfp8", "bf16", "fp16", "fp32"), _TT_BFP),
    "mxfp8": BlockFormat(8, 8, 32, "fp8", ("fp8", "fp16", "bf16", "fp32"), _OCP_MX),
    "mxfp4": BlockFormat(4, 8, 32, "int4", ("mxfp8", "fp8", "fp16", "bf16", "fp32"), _OCP_MX),
    "nvfp4": BlockFormat(4, 8, 16, "int4", ("fp8", "fp16", "bf16", "fp32"), _NVFP4),
}

def element_of(dtype: str) -> str:
    """The plain dtype a MAC of ``dtype`` computes in: a block-scaled format's element type, else ``dtype``."""
    return BLOCK_FORMATS[dtype].element if dtype in BLOCK_FORMATS else dtype


#: Bytes per element. tf32 is stored in 32-bit containers; int4 is packed two per byte; a block-scaled format
#: carries its shared scale (:data:`BLOCK_FORMATS`: bfp8 1.0625, bfp4 0.5625, mxfp8 1.03125, mxfp4 0.53125,
#: nvfp4 0.5625).
DTYPE_BYTES: dict[str, float] = {
    "fp64": 8.0,
    "fp32": 4.0,
    "tf32": 4.0,
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    **{name: f.bytes_per_element for name, f in BLOCK_FORMATS.items()},
}

#: How a chip's GEMM library covers a GEMM's output tiles (the template's ``compute.matrix.gemm_kernel``; a workload's
#: ``gemm_kernel`` adds ``auto``, :data:`dse.workloads.ops.GemmKernel`): ``one_tile`` (a CTA per output tile, its
#: epilogue after its mainloop) or ``persistent`` (CTAs loop over tiles and overlap one tile's epilogue with the next
#: one's mainloop); here, below both layers that name them
GemmKernelStructure = Literal["one_tile", "persistent"]
#: a workload's choice among them, ``auto`` taking the template's (nested Literals flatten: 'auto', then the structures)
GemmKernel = Literal["auto", GemmKernelStructure]

#: The unit a config field's name carries, by suffix (the longest suffix wins): the field reference's unit
#: column (dse.report.reference) and the labels of tables and plots read it from here
UNIT_SUFFIXES: dict[str, str] = {
    "_tflops": "TFLOP/s", "_tbps": "TB/s", "_gbps": "GB/s", "_mib": "MiB", "_gib": "GiB", "_kib": "KiB",
    "_kib_per_core": "KiB per core", "_gb": "GB (1e9 B)", "_mb": "MB (1e6 B)", "_ghz": "GHz", "_mhz": "MHz",
    "_us": "µs", "_ms": "ms", "_ns": "ns", "_s": "s", "_mm2": "mm²", "_mm": "mm", "_um2": "µm²", "_um": "µm",
    "_w": "W", "_mw": "mW", "_usd": "USD", "_pj": "pJ", "_pct": "%", "_v": "V", "_c": "°C",
    "_pj_per_byte": "pJ/byte", "_pj_per_flop": "pJ/FLOP", "_pj_per_bit": "pJ/bit", "_mm2_per_mib": "mm²/MiB",
    "_mm2_per_tflops": "mm² per TFLOP/s", "_usd_per_mm2": "USD/mm²", "_per_cm2": "per cm²",
    "_mtr_per_mm2": "Mtransistors/mm²", "_usd_per_gb": "USD/GB", "_w_per_mm2": "W/mm²", "_gt_s": "GT/s",
}


def unit_of(name: str) -> str:
    """The unit a field's name carries (:data:`UNIT_SUFFIXES`, longest suffix first); "" when it carries none."""
    for suffix in sorted(UNIT_SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix):
            return UNIT_SUFFIXES[suffix]
    return ""


#: Order used to index per-dtype arrays: the plain formats, then the block-scaled ones (:data:`BLOCK_FORMATS`).
DTYPES: tuple[str, ...] = ("int4", "int8", "fp8", "fp16", "bf16", "tf32", "fp32", "fp64", *BLOCK_FORMATS)
#: a dtype name, as configs and scenarios spell it (widest plain format first, then :data:`BLOCK_FORMATS`: a new
#: block format needs no edit here)
Dtype = Literal[("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", *BLOCK_FORMATS)]  # type: ignore[valid-type]
#: operator kinds a workload places on the matrix unit (``dse.workloads.ops``); a template's ``runs`` says which of
#: them each unit can execute (the vector units run every other kind)
MATRIX_OP_KINDS: tuple[str, ...] = ("gemm", "conv", "attention")
DTYPE_INDEX: dict[str, int] = {d: i for i, d in enumerate(DTYPES)}

#: Modes a unit may use for a dtype it has no native mode for, in order of preference: the same
#: width first (V100 runs bf16 GEMMs on its fp16 tensor cores), then wider floats (A100 runs fp8
#: in bf16). A float never falls back to an integer mode. A block-scaled format: itself, then its ``fallback``.
FALLBACK: dict[str, tuple[str, ...]] = {
    **{name: (name, *f.fallback) for name, f in BLOCK_FORMATS.items()},
    "int4": ("int4", "int8", "fp8", "fp16", "bf16", "fp32"),
    "int8": ("int8", "fp8", "fp16", "bf16", "fp32"),
    "fp8": ("fp8", "fp16", "bf16", "fp32"),
    "fp16": ("fp16", "bf16", "tf32", "fp32", "fp64"),
    "bf16": ("bf16", "fp16", "tf32", "fp32", "fp64"),
    "tf32": ("tf32", "fp32", "fp64"),
    "fp32": ("fp32", "fp64"),
    "fp64": ("fp64",),
}


def fallback_dtype(dtype: str, available: set[str] | dict[str, float]) -> str | None:
    """Return the mode a unit uses for ``dtype``: the first of ``FALLBACK[dtype]`` it has, else None."""
    return next((d for d in FALLBACK[dtype] if d in available), None)


def repo_root() -> Path:
    """Folder that holds ``workloads/``, ``hw_templates/``, ``validation/`` and ``configs/``:
    ``$DSE_HOME`` if set; else the source checkout this package runs from (``pip install -e .`` or a
    clone on ``sys.path``); else the copy the wheel ships inside the package (``dse/_data/``, see
    setup.py), so a plain ``pip install`` works from any folder."""
    home = os.environ.get("DSE_HOME")
    if home:
        return Path(home)
    here = Path(__file__).resolve().parent
    checkout = here.parent
    if (checkout / "hw_templates").is_dir() and (checkout / "workloads").is_dir():
        return checkout
    return here / "_data"


def watts(w: float) -> str:
    """A power for a line of text: whole watts from 100 W up, three significant digits below (an edge design's 2.85 W
    and 3.34 W both printed '3 W' while the memo said +17 %)."""
    return f"{w:.0f}" if abs(w) >= 100 else f"{w:.3g}"
