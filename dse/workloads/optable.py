"""The ``optable`` family: a model given as explicit operator rows (what the ONNX and torch importers
write, and a way to describe any kernel sequence by hand).

Row kinds: ``gemm`` (M, N, K, batch), ``conv`` (n, h, w, c_in, c_out, k, stride, pad, groups; kw, stride_w, pads and
dilation for non-square, asymmetric or dilated kernels) and
``stream`` (elems, flops_per_elem, read/write bytes per element, kind). Each row has a ``count``.
The scenario sets the dtype; shapes are fixed by the source graph.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from dse.limits import MAX_BATCH, MAX_COUNT, MAX_ELEMS, MAX_GEMM_DIM, MAX_KERNEL, MAX_PARAMS, MAX_RESOLUTION, MAX_WIDTH
from dse.strict import Strict
from dse.units import DTYPE_BYTES
from dse.workloads import ops
from dse.workloads.scenario import Scenario


class GemmRow(Strict):
    op: Literal["gemm"]
    name: str
    M: int = Field(gt=0, le=MAX_GEMM_DIM)
    N: int = Field(gt=0, le=MAX_GEMM_DIM)
    K: int = Field(gt=0, le=MAX_GEMM_DIM)
    batch: int = Field(1, gt=0, le=MAX_GEMM_DIM)
    weights: bool = Field(True, description="B is a weight (False: both operands are activations)")
    count: int = Field(1, gt=0, le=MAX_COUNT)


class ConvRow(Strict):
    op: Literal["conv"]
    name: str
    n: int = Field(gt=0, le=MAX_BATCH)
    h: int = Field(gt=0, le=MAX_RESOLUTION)
    w: int = Field(gt=0, le=MAX_RESOLUTION)
    c_in: int = Field(gt=0, le=MAX_WIDTH)
    c_out: int = Field(gt=0, le=MAX_WIDTH)
    k: int = Field(gt=0, le=MAX_KERNEL, description="Kernel height (and width, without kw)")
    kw: int | None = Field(None, gt=0, le=MAX_KERNEL, description="Kernel width where it differs from k (1x7, 7x1)")
    stride: int = Field(1, gt=0, le=MAX_KERNEL, description="Stride (rows, and columns without stride_w)")
    stride_w: int | None = Field(None, gt=0, le=MAX_KERNEL, description="Column stride where it differs")
    pad: int = Field(0, ge=0, le=MAX_KERNEL, description="Zero padding on every side (without pads)")
    pads: list[Annotated[int, Field(ge=0, le=MAX_KERNEL)]] | None = Field(
        None, min_length=4, max_length=4, description="Zero padding top, left, bottom, right (ONNX order "
        "x1_begin, x2_begin, x1_end, x2_end), where the sides differ")
    dilation: list[Annotated[int, Field(gt=0, le=MAX_KERNEL)]] = Field(
        default_factory=lambda: [1, 1], min_length=2, max_length=2, description="Kernel dilation, rows and columns")
    groups: int = Field(1, gt=0, le=MAX_WIDTH)
    count: int = Field(1, gt=0, le=MAX_COUNT)


class StreamRow(Strict):
    op: Literal["stream"]
    name: str
    kind: Literal["elementwise", "norm", "softmax", "reduce", "pool", "embedding"] = "elementwise"
    elems: float = Field(ge=0, le=MAX_ELEMS)
    flops_per_elem: float = Field(0.0, ge=0, le=MAX_ELEMS)
    read_per_elem: float = Field(1.0, ge=0, le=MAX_ELEMS, description="Elements read per output element")
    write_per_elem: float = Field(1.0, ge=0, le=MAX_ELEMS)
    count: int = Field(1, gt=0, le=MAX_COUNT)


Row = Annotated[GemmRow | ConvRow | StreamRow, Field(discriminator="op")]


class OpTableArch(Strict):
    ops: list[Row] = Field(min_length=1)
    params: int = Field(0, ge=0, le=MAX_PARAMS)
    unknown_ops: list[str] = Field(default_factory=list, description="Source operators counted as bytes only")


def build(arch: OpTableArch, sc: Scenario, name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    dt = sc.dtype
    rows: list[dict[str, Any]] = []
    for r in arch.ops:
        match r:
            case GemmRow():
                rows.append(ops.gemm(r.name, r.M, r.N, r.K, dtype=dt, batch=r.batch, count=r.count,
                                     held=None if r.weights else ""))  # B of two activations outlives nothing
            case ConvRow():
                row, _ = ops.conv2d(r.name, n=r.n, h=r.h, w=r.w, c_in=r.c_in, c_out=r.c_out, k=r.k, stride=r.stride,
                                    pad=r.pad, groups=r.groups, dtype=dt, count=r.count, kw=r.kw, stride_w=r.stride_w,
                                    pads=tuple(r.pads) if r.pads is not None else None,
                                    dilation=(r.dilation[0], r.dilation[1]))
                rows.append(row)
            case StreamRow():
                b = DTYPE_BYTES[dt]
                rows.append(ops.streaming(r.name, kind=r.kind, elems=r.elems, flops_per_elem=r.flops_per_elem, dtype=dt,
                                          count=r.count, read_bytes=r.elems * r.read_per_elem * b,
                                          write_bytes=r.elems * r.write_per_elem * b))
    return rows, {"phase": "forward", "batch": None, "params": arch.params, "unknown_ops": arch.unknown_ops}
