"""The ``optable`` family: a model given as explicit operator rows (what the ONNX and torch importers
write, and a way to describe any kernel sequence by hand).

Row kinds: ``gemm`` (M, N, K, batch), ``conv`` (n, h, w, c_in, c_out, k, stride, pad, groups) and
``stream`` (elems, flops_per_elem, read/write bytes per element, kind). Each row has a ``count``.
The scenario sets the dtype; shapes are fixed by the source graph.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from dse.strict import Strict
from dse.units import DTYPE_BYTES
from dse.workloads import ops
from dse.workloads.scenario import Scenario


class GemmRow(Strict):
    op: Literal["gemm"]
    name: str
    M: int = Field(gt=0)
    N: int = Field(gt=0)
    K: int = Field(gt=0)
    batch: int = Field(1, gt=0)
    weights: bool = Field(True, description="B is a weight (False: both operands are activations)")
    count: int = Field(1, gt=0)


class ConvRow(Strict):
    op: Literal["conv"]
    name: str
    n: int = Field(gt=0)
    h: int = Field(gt=0)
    w: int = Field(gt=0)
    c_in: int = Field(gt=0)
    c_out: int = Field(gt=0)
    k: int = Field(gt=0)
    stride: int = Field(1, gt=0)
    pad: int = Field(0, ge=0)
    groups: int = Field(1, gt=0)
    count: int = Field(1, gt=0)


class StreamRow(Strict):
    op: Literal["stream"]
    name: str
    kind: Literal["elementwise", "norm", "softmax", "reduce", "pool", "embedding"] = "elementwise"
    elems: float = Field(ge=0)
    flops_per_elem: float = Field(0.0, ge=0)
    read_per_elem: float = Field(1.0, ge=0, description="Elements read per output element")
    write_per_elem: float = Field(1.0, ge=0)
    count: int = Field(1, gt=0)


Row = Annotated[GemmRow | ConvRow | StreamRow, Field(discriminator="op")]


class OpTableArch(Strict):
    ops: list[Row] = Field(min_length=1)
    params: int = Field(0, ge=0)
    unknown_ops: list[str] = Field(default_factory=list, description="Source operators counted as bytes only")


def build(arch: OpTableArch, sc: Scenario, name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    dt = sc.dtype
    rows: list[dict[str, Any]] = []
    for r in arch.ops:
        match r:
            case GemmRow():
                rows.append(ops.gemm(r.name, r.M, r.N, r.K, dtype=dt, batch=r.batch, count=r.count))
            case ConvRow():
                row, _ = ops.conv2d(r.name, n=r.n, h=r.h, w=r.w, c_in=r.c_in, c_out=r.c_out, k=r.k, stride=r.stride,
                                    pad=r.pad, groups=r.groups, dtype=dt, count=r.count)
                rows.append(row)
            case StreamRow():
                b = DTYPE_BYTES[dt]
                rows.append(ops.streaming(r.name, kind=r.kind, elems=r.elems, flops_per_elem=r.flops_per_elem, dtype=dt,
                                          count=r.count, read_bytes=r.elems * r.read_per_elem * b,
                                          write_bytes=r.elems * r.write_per_elem * b))
    return rows, {"phase": "forward", "batch": None, "params": arch.params, "unknown_ops": arch.unknown_ops}
