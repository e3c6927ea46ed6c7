"""CNN family: a layer list (conv, depthwise conv, pool, fc, norm, activation, residual add) with
block macros for ResNet bottlenecks (He et al. 2016; v1.5 stride on the 3x3) and MobileNetV2
inverted residuals (Sandler et al. 2018). Activations are NHWC; batch norm is an inference-time
per-channel scale and shift.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from dse.hardware.schema import Strict
from dse.workloads import ops
from dse.workloads.scenario import Scenario
from dse.workloads.training import training_step

Act = Literal["relu", "relu6", "silu", "gelu", "none"]


class InputShape(Strict):
    height: int = Field(gt=0)
    width: int = Field(gt=0)
    channels: int = Field(gt=0)


class Conv(Strict):
    op: Literal["conv"]
    out: int = Field(gt=0)
    k: int = Field(gt=0)
    stride: int = Field(1, gt=0)
    pad: int | None = Field(None, ge=0)
    groups: int = Field(1, gt=0)
    bn: bool = True
    act: Act = "relu"


class DWConv(Strict):
    op: Literal["dwconv"]
    k: int = Field(gt=0)
    stride: int = Field(1, gt=0)
    bn: bool = True
    act: Act = "relu"


class Pool(Strict):
    op: Literal["maxpool", "avgpool"]
    k: int = Field(1, gt=0)
    stride: int = Field(1, gt=0)
    pad: int = Field(0, ge=0)
    global_: bool = Field(False, alias="global")


class FC(Strict):
    op: Literal["fc"]
    out: int = Field(gt=0)
    act: Act = "none"


class Bottleneck(Strict):
    op: Literal["bottleneck"]
    mid: int = Field(gt=0)
    out: int = Field(gt=0)
    stride: int = Field(1, gt=0)
    repeats: int = Field(1, gt=0)
    groups: int = Field(1, gt=0, description="ResNeXt cardinality on the 3x3")


class BasicBlock(Strict):
    op: Literal["basic"]
    out: int = Field(gt=0)
    stride: int = Field(1, gt=0)
    repeats: int = Field(1, gt=0)


class InvertedResidual(Strict):
    op: Literal["inverted_residual"]
    expand: int = Field(gt=0)
    out: int = Field(gt=0)
    stride: int = Field(1, gt=0)
    repeats: int = Field(1, gt=0)
    k: int = Field(3, gt=0)
    act: Act = "relu6"


Layer = Annotated[Conv | DWConv | Pool | FC | Bottleneck | BasicBlock | InvertedResidual,
                  Field(discriminator="op")]


class CNNArch(Strict):
    input: InputShape
    layers: list[Layer] = Field(min_length=1)


class _Builder:
    """Walks the layer list keeping the running activation shape (h, w, c)."""

    def __init__(self, n: int, h: int, w: int, c: int, dtype: str, fuse: bool) -> None:
        self.n, self.h, self.w, self.c = n, h, w, c
        self.dt, self.fuse = dtype, fuse
        self.rows: list[dict[str, Any]] = []
        self.params = 0

    def elems(self) -> int:
        return self.n * self.h * self.w * self.c

    def vector(self, name: str, kind: str, fn: str, inputs: float = 1.0) -> None:
        self.rows.append(ops.streaming(name, kind=kind, elems=self.elems(), inputs=inputs,
                                       flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM[fn], dtype=self.dt,
                                       fused=self.fuse))

    def conv(self, name: str, out: int, k: int, stride: int = 1, pad: int | None = None,
             groups: int = 1, bn: bool = True, act: str = "relu") -> None:
        row, (self.h, self.w, c_out) = ops.conv2d(
            name, n=self.n, h=self.h, w=self.w, c_in=self.c, c_out=out, k=k, stride=stride, pad=pad,
            groups=groups, dtype=self.dt)
        self.params += out * (self.c // groups) * k * k
        self.c = c_out
        self.rows.append(row)
        if bn:
            self.params += 2 * out
            self.vector(f"{name}.bn", "norm", "batchnorm")
        if act != "none":
            self.vector(f"{name}.{act}", "elementwise", act)

    def pool(self, name: str, p: Pool) -> None:
        in_elems = self.elems()
        if p.global_:
            k_elems, self.h, self.w = self.h * self.w, 1, 1
        else:
            k_elems = p.k * p.k
            self.h = ops.conv_out(self.h, p.k, p.stride, p.pad)
            self.w = ops.conv_out(self.w, p.k, p.stride, p.pad)
        b = ops.DTYPE_BYTES[self.dt]
        self.rows.append(ops.streaming(name, kind="pool", elems=self.elems(), flops_per_elem=k_elems,
                                       dtype=self.dt, read_bytes=in_elems * b))

    def fc(self, name: str, out: int, act: str) -> None:
        k = self.h * self.w * self.c
        self.rows.append(ops.gemm(name, self.n, out, k, dtype=self.dt))
        self.params += k * out + out
        self.h = self.w = 1
        self.c = out
        if act != "none":
            self.vector(f"{name}.{act}", "elementwise", act)

    def residual(self, name: str, shortcut: tuple[int, int, int], stride: int, act: str) -> None:
        """Add the shortcut (projected by a 1x1 conv when the shape changed), then activate."""
        h0, w0, c0 = shortcut
        if (h0, w0, c0) != (self.h, self.w, self.c):
            out_shape = (self.h, self.w, self.c)
            self.h, self.w, self.c = h0, w0, c0
            self.conv(f"{name}.downsample", out_shape[2], 1, stride=stride, pad=0, act="none")
        self.vector(f"{name}.add", "elementwise", "add", inputs=2)
        if act != "none":
            self.vector(f"{name}.{act}", "elementwise", act)


def build(arch: CNNArch, sc: Scenario, name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Operator rows and resolved facts for one CNN scenario (forward or training)."""
    if sc.phase not in (None, "forward", "training"):
        raise ValueError(f"{name} is a CNN; accepted phase: forward, training (got {sc.phase})")
    res_h = sc.resolution or arch.input.height
    res_w = sc.resolution or arch.input.width
    b = _Builder(sc.batch, res_h, res_w, arch.input.channels, sc.dtype, sc.fuse_elementwise)
    for i, layer in enumerate(arch.layers):
        tag = f"l{i}"
        match layer:
            case Conv():
                b.conv(f"{tag}.conv{layer.k}x{layer.k}", layer.out, layer.k, layer.stride, layer.pad,
                       layer.groups, layer.bn, layer.act)
            case DWConv():
                b.conv(f"{tag}.dwconv{layer.k}x{layer.k}", b.c, layer.k, layer.stride, None, b.c,
                       layer.bn, layer.act)
            case Pool():
                b.pool(f"{tag}.{layer.op}", layer)
            case FC():
                b.fc(f"{tag}.fc", layer.out, layer.act)
            case Bottleneck():
                for r in range(layer.repeats):
                    s = layer.stride if r == 0 else 1
                    blk, short = f"{tag}.bottleneck{r}", (b.h, b.w, b.c)
                    b.conv(f"{blk}.conv1x1a", layer.mid, 1, pad=0)
                    b.conv(f"{blk}.conv3x3", layer.mid, 3, stride=s, groups=layer.groups)
                    b.conv(f"{blk}.conv1x1b", layer.out, 1, pad=0, act="none")
                    b.residual(blk, short, s, "relu")
            case BasicBlock():
                for r in range(layer.repeats):
                    s = layer.stride if r == 0 else 1
                    blk, short = f"{tag}.basic{r}", (b.h, b.w, b.c)
                    b.conv(f"{blk}.conv3x3a", layer.out, 3, stride=s)
                    b.conv(f"{blk}.conv3x3b", layer.out, 3, act="none")
                    b.residual(blk, short, s, "relu")
            case InvertedResidual():
                for r in range(layer.repeats):
                    s = layer.stride if r == 0 else 1
                    blk, c_in = f"{tag}.invres{r}", b.c
                    short = (b.h, b.w, b.c)
                    if layer.expand != 1:
                        b.conv(f"{blk}.expand", c_in * layer.expand, 1, pad=0, act=layer.act)
                    b.conv(f"{blk}.dw{layer.k}x{layer.k}", b.c, layer.k, stride=s, groups=b.c,
                           act=layer.act)
                    b.conv(f"{blk}.project", layer.out, 1, pad=0, act="none")
                    if s == 1 and c_in == layer.out:
                        b.vector(f"{blk}.add", "elementwise", "add", inputs=2)
    rows = b.rows
    if sc.phase == "training":
        rows.append(ops.streaming("loss.softmax_xent", kind="softmax", elems=sc.batch * b.c,
                                  flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM["softmax"], dtype="fp32"))
        rows = training_step(rows, b.params, sc.dtype)
    facts = {"phase": sc.phase or "forward", "batch": sc.batch, "resolution": res_h, "params": b.params}
    return rows, facts
