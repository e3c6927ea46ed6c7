"""CNN family: a layer list (conv, depthwise conv, pool, fc, norm, activation, residual add) with
block macros for ResNet bottlenecks (He et al. 2016; v1.5 stride on the 3x3) and MobileNetV2
inverted residuals (Sandler et al. 2018). Activations are NHWC; batch norm is an inference-time
per-channel scale and shift. With ``fuse_elementwise`` at inference, a batch norm right after a
convolution is folded into the convolution's weights and bias (what TensorRT, ONNX Runtime and
torch.fx's ``fuse_conv_bn_eval`` do), so it leaves no operator; pre-activation norms (DenseNet) stay.
The same inference engines run a convolution's activation, and a residual add with its activation, in
the convolution's epilogue on the output tile while it is still in registers (TensorRT's conv + bias +
ReLU and conv + elementwise-sum + ReLU fusions, NVIDIA TensorRT Developer Guide, "Layer Fusion";
cuDNN's ConvBiasAddActivation): no operator is left, and the residual add costs one read of the
shortcut tensor, charged to the convolution's output traffic (see ``_Builder.epilogue_add``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field

from dse.limits import MAX_HEADS, MAX_KERNEL, MAX_LAYERS, MAX_RATIO, MAX_RESOLUTION, MAX_TOKENS, MAX_VOCAB, MAX_WIDTH
from dse.strict import Strict
from dse.workloads import ops
from dse.workloads.scenario import Scenario
from dse.workloads.training import step_kernels, training_step

Act = Literal["relu", "relu6", "silu", "gelu", "hswish", "sigmoid", "none"]


class InputShape(Strict):
    height: int = Field(gt=0, le=MAX_RESOLUTION)
    width: int = Field(gt=0, le=MAX_RESOLUTION)
    channels: int = Field(gt=0, le=MAX_WIDTH)


class Conv(Strict):
    op: Literal["conv"]
    out: int = Field(gt=0, le=MAX_WIDTH)
    k: int = Field(gt=0, le=MAX_KERNEL)
    stride: int = Field(1, gt=0, le=MAX_KERNEL)
    pad: int | None = Field(None, ge=0, le=MAX_KERNEL)
    groups: int = Field(1, gt=0, le=MAX_WIDTH)
    bn: bool = True
    act: Act = "relu"


class DWConv(Strict):
    op: Literal["dwconv"]
    k: int = Field(gt=0, le=MAX_KERNEL)
    stride: int = Field(1, gt=0, le=MAX_KERNEL)
    bn: bool = True
    act: Act = "relu"


class Pool(Strict):
    op: Literal["maxpool", "avgpool"]
    k: int = Field(1, gt=0, le=MAX_KERNEL)
    stride: int = Field(1, gt=0, le=MAX_KERNEL)
    pad: int = Field(0, ge=0, le=MAX_KERNEL)
    global_: bool = Field(False, alias="global")


class FC(Strict):
    op: Literal["fc"]
    out: int = Field(gt=0, le=MAX_VOCAB)
    act: Act = "none"


class Bottleneck(Strict):
    op: Literal["bottleneck"]
    mid: int = Field(gt=0, le=MAX_WIDTH)
    out: int = Field(gt=0, le=MAX_WIDTH)
    stride: int = Field(1, gt=0, le=MAX_KERNEL)
    repeats: int = Field(1, gt=0, le=MAX_LAYERS)
    groups: int = Field(1, gt=0, le=MAX_WIDTH, description="ResNeXt cardinality on the 3x3 (RegNet: mid / group width)")
    se: float = Field(0.0, ge=0, le=1, description="Squeeze-excitation width as a fraction of the block input "
                      "(RegNetY 0.25)")


class BasicBlock(Strict):
    op: Literal["basic"]
    out: int = Field(gt=0, le=MAX_WIDTH)
    stride: int = Field(1, gt=0, le=MAX_KERNEL)
    repeats: int = Field(1, gt=0, le=MAX_LAYERS)


class InvertedResidual(Strict):
    op: Literal["inverted_residual"]
    expand: float = Field(gt=0, le=MAX_RATIO, description="Expansion ratio (ignored when expand_channels is given)")
    expand_channels: int | None = Field(None, gt=0, le=MAX_WIDTH, description="Explicit expanded width (MobileNetV3)")
    out: int = Field(gt=0, le=MAX_WIDTH)
    stride: int = Field(1, gt=0, le=MAX_KERNEL)
    repeats: int = Field(1, gt=0, le=MAX_LAYERS)
    k: int = Field(3, gt=0, le=MAX_KERNEL)
    act: Act = "relu6"
    se: float = Field(0.0, ge=0, le=1, description="Squeeze-excitation width as a fraction of se_on's channels")
    se_on: Literal["input", "expanded"] = "input"
    se_divisor: int = Field(1, gt=0, le=MAX_WIDTH, description="Round the SE width up to a multiple of this "
                            "(MobileNetV3: 8)")


class Norm(Strict):
    op: Literal["norm"]
    kind: Literal["layernorm", "batchnorm", "groupnorm"] = "layernorm"
    act: Act = Field("none", description="Activation after the norm (pre-activation blocks: GN-SiLU-conv)")


class ConvNeXt(Strict):
    """ConvNeXt block (Liu et al., CVPR 2022): dw 7x7, LayerNorm, 1x1 to 4C (GELU), 1x1 to C, layer
    scale, residual."""

    op: Literal["convnext"]
    repeats: int = Field(1, gt=0, le=MAX_LAYERS)
    k: int = Field(7, gt=0, le=MAX_KERNEL)
    mlp_ratio: int = Field(4, gt=0, le=MAX_RATIO)


class DenseBlock(Strict):
    """DenseNet block (Huang et al., CVPR 2017): each layer BN-ReLU-1x1 (bn_size x growth) -BN-ReLU-
    3x3 (growth), its output concatenated to the block input (channels grow by ``growth``)."""

    op: Literal["dense_block"]
    layers: int = Field(gt=0, le=MAX_LAYERS)
    growth: int = Field(gt=0, le=MAX_WIDTH)
    bn_size: int = Field(4, gt=0, le=MAX_RATIO)


class Transition(Strict):
    """DenseNet transition: BN-ReLU-1x1 conv to ``compression`` x channels, 2x2 average pool."""

    op: Literal["transition"]
    compression: float = Field(0.5, gt=0, le=1)


class Inception(Strict):
    """GoogLeNet inception module (Szegedy et al., CVPR 2015; torchvision's variant with a 3x3 in the
    "5x5" branch): 1x1 | 1x1-3x3 | 1x1-3x3 | 3x3 max pool-1x1, concatenated."""

    op: Literal["inception"]
    b1: int = Field(gt=0, le=MAX_WIDTH)
    b3_reduce: int = Field(gt=0, le=MAX_WIDTH)
    b3: int = Field(gt=0, le=MAX_WIDTH)
    b5_reduce: int = Field(gt=0, le=MAX_WIDTH)
    b5: int = Field(gt=0, le=MAX_WIDTH)
    pool_proj: int = Field(gt=0, le=MAX_WIDTH)


class Save(Strict):
    """Keep the current activation for a later skip concatenation (U-Net)."""

    op: Literal["save"]


class Up(Strict):
    """2x up-sampling (transposed 2x2 stride-2 conv to ``out`` channels, or nearest) concatenated with
    the last saved activation (U-Net decoder step)."""

    op: Literal["up"]
    out: int = Field(gt=0, le=MAX_WIDTH)
    mode: Literal["transposed", "nearest"] = "transposed"
    concat: bool = True


class Concat(Strict):
    """Concatenate the last saved activation (same spatial size) to the current one."""

    op: Literal["concat"]


class Restore(Strict):
    """Continue from the last saved activation (a branch point: detection heads, FPN routes)."""

    op: Literal["restore"]


class Residual(Strict):
    """Any layer list with an identity (or 1x1-projected) shortcut around it, ``repeats`` times
    (Darknet-53 residuals, VAE/UNet ResNet blocks)."""

    op: Literal["residual"]
    layers: list[Layer]  # type: ignore[valid-type]
    repeats: int = Field(1, gt=0, le=MAX_LAYERS)
    act: Act = "none"


class SpatialTransformer(Strict):
    """Latent-diffusion transformer block over the h*w positions (Rombach et al. 2022; SD UNet):
    GroupNorm, 1x1 in, [LN, self-attention, LN, cross-attention to ``context_len`` tokens of
    ``context_dim``, LN, GEGLU FFN (4C)] x depth, 1x1 out, residual."""

    op: Literal["transformer"]
    heads: int = Field(8, gt=0, le=MAX_HEADS)
    depth: int = Field(1, gt=0, le=MAX_LAYERS)
    context_len: int = Field(77, gt=0, le=MAX_TOKENS)
    context_dim: int = Field(768, gt=0, le=MAX_WIDTH)


class SelfAttention(Strict):
    """Self-attention over the h*w positions (diffusion UNets, VAE mid block): norm, QKV, attention,
    output projection, residual."""

    op: Literal["attention"]
    heads: int = Field(1, gt=0, le=MAX_HEADS)


Layer = Annotated[Conv | DWConv | Pool | FC | Bottleneck | BasicBlock | InvertedResidual | Norm | ConvNeXt | DenseBlock
                  | Transition | Inception | Save | Up | Concat | Restore | Residual | SelfAttention | SpatialTransformer,
                  Field(discriminator="op")]
Residual.model_rebuild()


class CNNArch(Strict):
    input: InputShape
    layers: list[Layer] = Field(min_length=1)


#: dtypes whose convolutions run on tensor cores (NHWC kernels): fp16/bf16, TF32 on Ampere and later, fp8, int8
TENSOR_CORE_DTYPES = ("fp16", "bf16", "tf32", "fp8", "int8")


class _Builder:
    """Walks the layer list keeping the running activation shape (h, w, c)."""

    def __init__(self, n: int, h: int, w: int, c: int, dtype: str, fuse: bool, fold_bn: bool = False,
                 training: bool = False, nchw: bool = False) -> None:
        self.n, self.h, self.w, self.c = n, h, w, c
        self.dt, self.fuse = dtype, fuse
        self.fold_bn = fold_bn  # inference with fused elementwise work: BN after a conv folds into its weights
        self.training = training  # batch statistics: BN reads its input twice (see ``vector``)
        self.nchw = nchw and dtype in TENSOR_CORE_DTYPES  # layout transposes around each conv (see ``conv``)
        self.rows: list[dict[str, Any]] = []
        self.params = 0
        self.saved: list[tuple[int, int, int]] = []

    def elems(self) -> int:
        return self.n * self.h * self.w * self.c

    def vector(self, name: str, kind: str, fn: str, inputs: float = 1.0) -> None:
        """A streaming row over the running activation. BatchNorm in training normalises with the batch's
        own mean and variance (Ioffe & Szegedy 2015, Alg. 1), a reduction over N x H x W that must finish
        before any output is written, so the activation is read twice: once by the statistics kernel and
        once by the normalising one (charged at every size; a second read that a small activation could
        take from the last-level cache is not modelled) (PyTorch ``batch_norm_stats`` then
        ``batch_norm_elemt``, pytorch/pytorch aten/src/ATen/native/cuda/Normalization.cu; cuDNN's
        ``cudnnBatchNormalizationForwardTraining`` likewise). Its backward, derived by the training step
        from these bytes (3 tensor reads, 2 writes), then moves the same five tensor passes per element as
        the two backward kernels (``batch_norm_backward_reduce`` reads dy and x for dgamma/dbeta,
        ``batch_norm_backward_elemt`` reads them again and writes dx: 4 reads + 1 write)."""
        if fn == "batchnorm" and self.training:
            inputs = 2.0 * inputs
        self.rows.append(ops.streaming(name, kind=kind, elems=self.elems(), inputs=inputs,
                                       flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM[fn], dtype=self.dt,
                                       fused=self.fuse))

    def conv(self, name: str, out: int, k: int, stride: int = 1, pad: int | None = None,
             groups: int = 1, bn: bool = True, act: str = "relu") -> None:
        in_elems = self.elems()
        row, (self.h, self.w, c_out) = ops.conv2d(
            name, n=self.n, h=self.h, w=self.w, c_in=self.c, c_out=out, k=k, stride=stride, pad=pad,
            groups=groups, dtype=self.dt)
        self.params += out * (self.c // groups) * k * k
        self.c = c_out
        if self.nchw and groups == 1:
            self.rows.append(self.transpose(f"{name}.to_nhwc", in_elems))
        self.rows.append(row)
        if self.nchw and groups == 1:
            self.rows.append(self.transpose(f"{name}.to_nchw", self.elems()))
        if bn:
            self.params += 2 * out
            if not self.fold_bn:  # folded: w' = w * gamma / sigma, b' = beta - mu * gamma / sigma, no op left
                self.vector(f"{name}.bn", "norm", "batchnorm")
        if act != "none" and not self.fold_bn:  # folded inference: the activation runs in the conv's epilogue
            self.vector(f"{name}.{act}", "elementwise", act)

    def transpose(self, name: str, elems: int) -> dict[str, Any]:
        """A layout transpose of ``elems`` activations (read once, written once). Tensor-core convolution
        kernels work on channels-last (NHWC) data; with PyTorch's default NCHW tensors cuDNN transposes the
        input to NHWC before each such convolution and the output back to NCHW after it (MosaicML Composer,
        'Channels Last' method card, docs.mosaicml.com/projects/composer/en/stable/method_cards/channels_last.html;
        PyTorch 'Channels Last Memory Format' tutorial). The training step derives their backward (the output
        gradient in, the input gradient out: 2x the bytes), the transposes around the data- and
        weight-gradient convolutions. Grouped/depthwise convolutions run on CUDA cores and need none."""
        return ops.streaming(name, kind="elementwise", elems=elems, flops_per_elem=0.0, dtype=self.dt)

    def epilogue_add(self) -> bool:
        """Fold a residual add into the epilogue of the convolution just emitted (inference with fused
        elementwise work): the epilogue reads the shortcut, one tensor of the conv's output shape, so
        its bytes join the conv's output traffic ``c_bytes`` (read once, like the output is written once).
        Returns False (nothing changed) when the last row is not a conv producing this shape."""
        last = self.rows[-1] if self.rows else None
        if not (self.fold_bn and last is not None and last.get("kind") == "conv"
                and int(last["M"]) * int(last["N"]) * int(last.get("batch", 1)) == self.elems()):
            return False
        extra = self.elems() * ops.DTYPE_BYTES[self.dt]
        last["c_bytes"] += extra
        last["bytes_read"] += extra
        return True

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

    def concat_read(self, name: str, extra_elems: int) -> None:
        """Writing a concatenated tensor copies the new part next to the old (bytes, no FLOPs)."""
        b = ops.DTYPE_BYTES[self.dt]
        self.rows.append(ops.streaming(name, kind="elementwise", elems=extra_elems, flops_per_elem=0.0, dtype=self.dt,
                                       read_bytes=extra_elems * b, fused=self.fuse))

    def squeeze_excite(self, name: str, width: int, act: str = "relu") -> None:
        """SE (Hu et al., CVPR 2018): global pool, FC down (act), FC up, sigmoid, channel-wise scale."""
        n, c = self.n, self.c
        b = ops.DTYPE_BYTES[self.dt]
        full = self.elems()
        self.rows.append(ops.streaming(f"{name}.pool", kind="pool", elems=n * c, flops_per_elem=self.h * self.w,
                                       dtype=self.dt, read_bytes=full * b))
        self.rows.append(ops.gemm(f"{name}.fc1", n, width, c, dtype=self.dt))
        self.rows.append(ops.streaming(f"{name}.{act}", kind="elementwise", elems=n * width,
                                       flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM[act], dtype=self.dt, fused=self.fuse))
        self.rows.append(ops.gemm(f"{name}.fc2", n, c, width, dtype=self.dt))
        self.rows.append(ops.streaming(f"{name}.sigmoid", kind="elementwise", elems=n * c,
                                       flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM["sigmoid"], dtype=self.dt,
                                       fused=self.fuse))
        self.rows.append(ops.streaming(f"{name}.scale", kind="elementwise", elems=full, flops_per_elem=1.0,
                                       dtype=self.dt, fused=self.fuse, read_bytes=(full + n * c) * b))
        self.params += 2 * c * width + width + c

    def residual(self, name: str, shortcut: tuple[int, int, int], stride: int, act: str) -> None:
        """Add the shortcut (projected by a 1x1 conv when the shape changed), then activate."""
        h0, w0, c0 = shortcut
        if (h0, w0, c0) != (self.h, self.w, self.c):
            out_shape = (self.h, self.w, self.c)
            self.h, self.w, self.c = h0, w0, c0
            self.conv(f"{name}.downsample", out_shape[2], 1, stride=stride, pad=0, act="none")
        if self.epilogue_add():  # add and activation run in the conv's epilogue
            return
        self.vector(f"{name}.add", "elementwise", "add", inputs=2)
        if act != "none":
            self.vector(f"{name}.{act}", "elementwise", act)


def _apply(b: _Builder, layer: Any, tag: str, name: str, i: int) -> None:
    """One layer (or block macro) on the running activation: the block builder of its type."""
    for kind, block in _BLOCKS.items():
        if isinstance(layer, kind):
            block(b, layer, tag, name, i)
            return


def _dense_block(b: _Builder, layer: DenseBlock, tag: str, name: str, i: int) -> None:
    """DenseNet dense block: ``layers`` x (BN, ReLU, 1x1 conv to ``bn_size * growth``, 3x3 conv to
    ``growth``), each output concatenated onto the running activation (Huang et al. 2017)."""
    for r in range(layer.layers):
        blk, c0, hw = f"{tag}.dense{r}", b.c, (b.h, b.w)
        b.vector(f"{blk}.bn1", "norm", "batchnorm")
        b.vector(f"{blk}.relu1", "elementwise", "relu")
        b.params += 2 * c0
        b.conv(f"{blk}.conv1x1", layer.bn_size * layer.growth, 1, pad=0, bn=True, act="relu")
        b.conv(f"{blk}.conv3x3", layer.growth, 3, bn=False, act="none")
        b.h, b.w = hw
        b.c = c0 + layer.growth
        b.concat_read(f"{blk}.concat", b.n * b.h * b.w * layer.growth)


def _transition(b: _Builder, layer: Transition, tag: str, name: str, i: int) -> None:
    """DenseNet transition: BN, ReLU, 1x1 conv to ``compression * channels``, 2x2 average pool."""
    b.vector(f"{tag}.bn", "norm", "batchnorm")
    b.vector(f"{tag}.relu", "elementwise", "relu")
    b.params += 2 * b.c
    b.conv(f"{tag}.conv1x1", int(b.c * layer.compression), 1, pad=0, bn=False, act="none")
    b.pool(f"{tag}.avgpool", Pool(op="avgpool", k=2, stride=2))


def _inception(b: _Builder, layer: Inception, tag: str, name: str, i: int) -> None:
    """GoogLeNet inception module: 1x1, 1x1->3x3, 1x1->3x3 (the 5x5 branch as in torchvision) and
    3x3 max pool->1x1 branches on the same input, outputs concatenated on channels."""
    h0, w0, c0 = b.h, b.w, b.c
    outs = 0
    for branch in ([(layer.b1, 1)], [(layer.b3_reduce, 1), (layer.b3, 3)],
                   [(layer.b5_reduce, 1), (layer.b5, 3)], "pool"):
        b.h, b.w, b.c = h0, w0, c0
        if branch == "pool":
            b.pool(f"{tag}.pool", Pool(op="maxpool", k=3, stride=1, pad=1))
            branch = [(layer.pool_proj, 1)]
        for j, (out, k) in enumerate(branch):
            b.conv(f"{tag}.b{outs}_{j}", out, k)
        outs += b.c
    b.h, b.w, b.c = h0, w0, outs


def _save(b: _Builder, layer: Save, tag: str, name: str, i: int) -> None:
    """Push the running activation shape (for a later ``up``/``concat``/``restore``)."""
    b.saved.append((b.h, b.w, b.c))


def _up(b: _Builder, layer: Up, tag: str, name: str, i: int) -> None:
    """2x spatial upsampling (a 2x2 transposed conv or nearest-neighbour copy), optionally concatenating
    the last saved activation (U-Net skip)."""
    if layer.mode == "transposed":
        row = ops.gemm(f"{tag}.upconv2x2", b.n * b.h * b.w, 4 * layer.out, b.c, dtype=b.dt)
        b.params += 4 * layer.out * b.c + layer.out
        b.rows.append(row)
        b.c = layer.out
    else:
        src = b.elems() * ops.DTYPE_BYTES[b.dt]
        b.rows.append(ops.streaming(f"{tag}.upsample", kind="elementwise", elems=4 * b.elems(),
                                    flops_per_elem=0.0, dtype=b.dt, read_bytes=src))
    b.h, b.w = 2 * b.h, 2 * b.w
    if layer.concat:
        if not b.saved:
            raise ValueError(f"{name}: layer {i} (up) has no saved activation to concatenate")
        hs, ws, cs = b.saved.pop()
        b.h, b.w = hs, ws
        b.concat_read(f"{tag}.concat", b.n * hs * ws * cs)
        b.c += cs


def _norm(b: _Builder, layer: Norm, tag: str, name: str, i: int) -> None:
    """A standalone norm layer (affine: 2 parameters per channel) and its activation."""
    b.vector(f"{tag}.{layer.kind}", "norm", layer.kind)
    b.params += 2 * b.c
    if layer.act != "none":
        b.vector(f"{tag}.{layer.act}", "elementwise", layer.act)


def _convnext(b: _Builder, layer: ConvNeXt, tag: str, name: str, i: int) -> None:
    """ConvNeXt blocks: depthwise kxk conv, LayerNorm, 1x1 up (GELU), 1x1 down, layer scale, residual
    (Liu et al. 2022)."""
    for r in range(layer.repeats):
        blk, short = f"{tag}.convnext{r}", (b.h, b.w, b.c)
        c = b.c
        b.conv(f"{blk}.dw{layer.k}x{layer.k}", c, layer.k, groups=c, bn=False, act="none")
        b.vector(f"{blk}.layernorm", "norm", "layernorm")
        b.conv(f"{blk}.pw1", layer.mlp_ratio * c, 1, pad=0, bn=False, act="gelu")
        b.conv(f"{blk}.pw2", c, 1, pad=0, bn=False, act="none")
        b.vector(f"{blk}.layer_scale", "elementwise", "mul")
        b.params += 3 * c  # LayerNorm affine + layer scale
        b.residual(blk, short, 1, "none")


def _conv(b: _Builder, layer: Conv, tag: str, name: str, i: int) -> None:
    """A plain convolution (with optional batchnorm and activation)."""
    b.conv(f"{tag}.conv{layer.k}x{layer.k}", layer.out, layer.k, layer.stride, layer.pad,
           layer.groups, layer.bn, layer.act)


def _dwconv(b: _Builder, layer: DWConv, tag: str, name: str, i: int) -> None:
    """A depthwise convolution (groups = channels)."""
    b.conv(f"{tag}.dwconv{layer.k}x{layer.k}", b.c, layer.k, layer.stride, None, b.c,
           layer.bn, layer.act)


def _pool(b: _Builder, layer: Pool, tag: str, name: str, i: int) -> None:
    """A pooling layer."""
    b.pool(f"{tag}.{layer.op}", layer)


def _fc(b: _Builder, layer: FC, tag: str, name: str, i: int) -> None:
    """A fully connected layer on the flattened activation."""
    b.fc(f"{tag}.fc", layer.out, layer.act)


def _bottleneck(b: _Builder, layer: Bottleneck, tag: str, name: str, i: int) -> None:
    """ResNet/ResNeXt bottleneck blocks: 1x1, 3x3 (grouped, strided in the first), optional
    squeeze-excite, 1x1, residual with ReLU (He et al. 2016)."""
    for r in range(layer.repeats):
        s = layer.stride if r == 0 else 1
        blk, short = f"{tag}.bottleneck{r}", (b.h, b.w, b.c)
        b.conv(f"{blk}.conv1x1a", layer.mid, 1, pad=0)
        b.conv(f"{blk}.conv3x3", layer.mid, 3, stride=s, groups=layer.groups)
        if layer.se:
            b.squeeze_excite(f"{blk}.se", max(1, int(short[2] * layer.se)))
        b.conv(f"{blk}.conv1x1b", layer.out, 1, pad=0, act="none")
        b.residual(blk, short, s, "relu")


def _basic_block(b: _Builder, layer: BasicBlock, tag: str, name: str, i: int) -> None:
    """ResNet basic blocks: two 3x3 convs (the first strided), residual with ReLU."""
    for r in range(layer.repeats):
        s = layer.stride if r == 0 else 1
        blk, short = f"{tag}.basic{r}", (b.h, b.w, b.c)
        b.conv(f"{blk}.conv3x3a", layer.out, 3, stride=s)
        b.conv(f"{blk}.conv3x3b", layer.out, 3, act="none")
        b.residual(blk, short, s, "relu")


def _inverted_residual(b: _Builder, layer: InvertedResidual, tag: str, name: str, i: int) -> None:
    """MobileNetV2/V3 / EfficientNet inverted residual blocks: 1x1 expand, depthwise kxk,
    optional squeeze-excite, 1x1 project; residual add when stride 1 and channels match."""
    for r in range(layer.repeats):
        s = layer.stride if r == 0 else 1
        blk, c_in = f"{tag}.invres{r}", b.c
        exp = layer.expand_channels or int(round(c_in * layer.expand))
        if exp != c_in:
            b.conv(f"{blk}.expand", exp, 1, pad=0, act=layer.act)
        b.conv(f"{blk}.dw{layer.k}x{layer.k}", b.c, layer.k, stride=s, groups=b.c,
               act=layer.act)
        if layer.se:
            base = c_in if layer.se_on == "input" else exp
            width = max(1, int(base * layer.se))
            width = -(-width // layer.se_divisor) * layer.se_divisor
            b.squeeze_excite(f"{blk}.se", width, "relu" if layer.act in ("relu", "relu6", "hswish")
                             else layer.act)
        b.conv(f"{blk}.project", layer.out, 1, pad=0, act="none")
        if s == 1 and c_in == layer.out:
            b.vector(f"{blk}.add", "elementwise", "add", inputs=2)


def _concat(b: _Builder, layer: Concat, tag: str, name: str, i: int) -> None:
    """Concatenate the last saved activation on channels (same spatial size)."""
    if not b.saved:
        raise ValueError(f"{name}: layer {tag} (concat) has no saved activation")
    hs, ws, cs = b.saved.pop()
    if (hs, ws) != (b.h, b.w):
        raise ValueError(f"{name}: layer {tag} concatenates {hs}x{ws} onto {b.h}x{b.w}")
    b.concat_read(f"{tag}.concat", b.n * hs * ws * cs)
    b.c += cs


def _restore(b: _Builder, layer: Restore, tag: str, name: str, i: int) -> None:
    """Go back to the last saved activation shape."""
    if not b.saved:
        raise ValueError(f"{name}: layer {tag} (restore) has no saved activation")
    b.h, b.w, b.c = b.saved.pop()


def _residual(b: _Builder, layer: Residual, tag: str, name: str, i: int) -> None:
    """A residual wrapper: ``repeats`` x (its layer list, then the shortcut add and activation)."""
    for r in range(layer.repeats):
        short = (b.h, b.w, b.c)
        run_layers(b, layer.layers, name, f"{tag}.r{r}.")
        b.residual(f"{tag}.r{r}", short, short[0] // max(b.h, 1) or 1, layer.act)


def _spatial_transformer(b: _Builder, layer: SpatialTransformer, tag: str, name: str, i: int) -> None:
    """Stable Diffusion U-Net spatial transformer: GroupNorm, proj in, ``depth`` x (self-attention,
    cross-attention on the text context, GEGLU feed-forward), proj out, residual."""
    T, c, L, n = b.n * b.h * b.w, b.c, layer.depth, b.n
    hw = b.h * b.w
    b.vector(f"{tag}.groupnorm", "norm", "groupnorm")
    b.rows.append(ops.gemm(f"{tag}.proj_in", T, c, c, dtype=b.dt))
    rows = [ops.streaming(f"{tag}.ln1", kind="norm", elems=T * c, flops_per_elem=8, dtype=b.dt, count=L),
            ops.gemm(f"{tag}.self_qkv", T, 3 * c, c, dtype=b.dt, count=L)]
    rows += ops.attention(f"{tag}.self_attn", batch=n, heads=layer.heads, kv_heads=layer.heads, q_len=hw,
                          kv_len=hw, head_dim=c // layer.heads, causal=False, dtype=b.dt, count=L)
    rows += [ops.gemm(f"{tag}.self_out", T, c, c, dtype=b.dt, count=L),
             ops.streaming(f"{tag}.ln2", kind="norm", elems=T * c, flops_per_elem=8, dtype=b.dt, count=L),
             ops.gemm(f"{tag}.cross_q", T, c, c, dtype=b.dt, count=L),
             ops.gemm(f"{tag}.cross_kv", n * layer.context_len, 2 * c, layer.context_dim, dtype=b.dt, count=L)]
    rows += ops.attention(f"{tag}.cross_attn", batch=n, heads=layer.heads, kv_heads=layer.heads, q_len=hw,
                          kv_len=layer.context_len, head_dim=c // layer.heads, causal=False, dtype=b.dt, count=L)
    rows += [ops.gemm(f"{tag}.cross_out", T, c, c, dtype=b.dt, count=L),
             ops.streaming(f"{tag}.ln3", kind="norm", elems=T * c, flops_per_elem=8, dtype=b.dt, count=L),
             ops.gemm(f"{tag}.ff_up", T, 8 * c, c, dtype=b.dt, count=L),
             ops.streaming(f"{tag}.geglu", kind="elementwise", elems=T * 4 * c, inputs=2, flops_per_elem=9,
                           dtype=b.dt, count=L),
             ops.gemm(f"{tag}.ff_down", T, c, 4 * c, dtype=b.dt, count=L)]
    b.rows += rows
    b.rows.append(ops.gemm(f"{tag}.proj_out", T, c, c, dtype=b.dt))
    b.vector(f"{tag}.residual", "elementwise", "add", inputs=2)
    b.params += 2 * c + 2 * (c * c + c) + L * (4 * c * c + c * c + 2 * c * layer.context_dim + c * c
                                               + 8 * c * c + 8 * c + 4 * c * c + c + 6 * c)


def _self_attention(b: _Builder, layer: SelfAttention, tag: str, name: str, i: int) -> None:
    """Self-attention over the spatial positions: LayerNorm, QKV, fused attention, projection, residual add."""
    T, c = b.n * b.h * b.w, b.c
    b.vector(f"{tag}.norm", "norm", "layernorm")
    b.rows.append(ops.gemm(f"{tag}.qkv", T, 3 * c, c, dtype=b.dt))
    b.rows += ops.attention(f"{tag}.attn", batch=b.n, heads=layer.heads, kv_heads=layer.heads,
                            q_len=b.h * b.w, kv_len=b.h * b.w, head_dim=c // layer.heads, causal=False,
                            dtype=b.dt, fused=True)
    b.rows.append(ops.gemm(f"{tag}.proj", T, c, c, dtype=b.dt))
    b.vector(f"{tag}.add", "elementwise", "add", inputs=2)
    b.params += 4 * c * c + 4 * c + 2 * c


#: layer type -> its block builder, in the order ``_apply`` tries them (first isinstance match)
_BLOCKS: dict[type, Callable[[_Builder, Any, str, str, int], None]] = {
    DenseBlock: _dense_block,
    Transition: _transition,
    Inception: _inception,
    Save: _save,
    Up: _up,
    Norm: _norm,
    ConvNeXt: _convnext,
    Conv: _conv,
    DWConv: _dwconv,
    Pool: _pool,
    FC: _fc,
    Bottleneck: _bottleneck,
    BasicBlock: _basic_block,
    InvertedResidual: _inverted_residual,
    Concat: _concat,
    Restore: _restore,
    Residual: _residual,
    SpatialTransformer: _spatial_transformer,
    SelfAttention: _self_attention,
}


def run_layers(b: _Builder, layers: list, name: str, prefix: str = "l") -> None:
    """Apply a layer list to the builder's running activation."""
    for i, layer in enumerate(layers):
        _apply(b, layer, f"{prefix}{i}", name, i)


def build(arch: CNNArch, sc: Scenario, name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Operator rows and resolved facts for one CNN scenario (forward or training)."""
    if sc.phase not in (None, "forward", "training"):
        raise ValueError(f"{name} is a CNN; accepted phase: forward, training (got {sc.phase})")
    res_h = sc.resolution or arch.input.height
    res_w = sc.resolution or arch.input.width
    b = _Builder(sc.batch, res_h, res_w, arch.input.channels, sc.dtype, sc.fuse_elementwise,
                 fold_bn=sc.fuse_elementwise and sc.phase != "training", training=sc.phase == "training",
                 nchw=sc.memory_format == "nchw")
    run_layers(b, arch.layers, name)
    rows = b.rows
    if sc.phase == "training":
        rows.append(ops.streaming("loss.softmax_xent", kind="softmax", elems=sc.batch * b.c,
                                  flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM["softmax"], dtype="fp32"))
        rows = training_step(rows, b.params, sc.dtype, **step_kernels(sc))
    facts = {"phase": sc.phase or "forward", "batch": sc.batch, "resolution": res_h, "params": b.params}
    return rows, facts
