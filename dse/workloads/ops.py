"""Operator rows and the operator table (a pandas DataFrame, one row per distinct operator).

Conventions (``docs/design.md``):

* FLOPs: a multiply-add is 2 FLOPs. ``flops`` is the work of one instance of the row, all of its
  ``batch`` sub-problems included; ``count`` repeats the row (layers, repeated blocks).
* Bytes: compulsory bytes read and written by one instance (each tensor once), so the arithmetic
  intensity AI = flops / (bytes_read + bytes_written) counts writes too.
* Shapes: a GEMM is ``batch`` independent products ``[M, K] x [K, N] -> [M, N]``. A conv is its
  GEMM-equivalent (``M = N_img*Ho*Wo``, ``N = C_out/groups``, ``K = C_in/groups*kh*kw``,
  ``batch = groups``) with ``a_bytes`` set to the true input tensor (no im2col blow-up). A fused
  attention row is, per (sequence, KV head), ``M`` query rows (query heads of the group stacked),
  ``N = head_dim`` and ``K`` keys.
* ``reuse`` picks the traffic model in :mod:`dse.predict.traffic`: ``tiled`` (GEMM/conv),
  ``attention`` (flash-style fused), ``stream`` (each byte once per level).
* ``fused`` rows run inside their producer's kernel: no launch overhead, and their tensors never
  reach off-chip memory.
* ``eager`` rows are dispatched one at a time by a host framework (scenario ``execution: eager``):
  each takes at least the template's ``eager_overhead_us``.
* ``ctas``: the CTAs (thread blocks) a fused attention kernel launches, on its attention row and the softmax
  row inside it (:func:`attention_ctas`); 0 elsewhere.
* ``head_rows``: on a fused attention row, the query rows one tile may stack, ``M`` when a CTA holds the query
  heads of its KV head together (``attention_gqa: grouped``), one head's ``q_len`` when it holds one query head
  (``per_head``); 0 elsewhere (and in tables from before the column: ``M``).
* ``gemm_kernel``: the GEMM kernel's structure on a matrix-unit GEMM/conv row (:data:`GemmKernel`: ``one_tile``
  or ``persistent``); empty for the template's default (``compute.matrix.gemm_kernel``) and on other rows.
* ``held``: the tensor of the row that outlives the step (:data:`HELD`): ``weights`` (a GEMM's or conv's B, an
  embedding table's rows), ``kv_cache`` (an attention row's K and V, the cache write); ``held_bytes`` the bytes of it
  one instance moves (B for a GEMM or attention row). Every other byte of the row is an activation, alive from its
  producer to its consumer. On-chip residency (``dse.predict.traffic``) keeps each kind where it fits.
* ``full_ratio``: on a causal fused attention row, the (query, key) pairs of the whole score matrix per pair the
  row's FLOPs count (``q_len * kv_len / causal_pairs``): what a kernel that computes the masked blocks instead of
  skipping them executes per useful FLOP (``compute.causal_attention: compute``, :mod:`dse.predict.roofline`);
  1 elsewhere.
* ``taps``: on a convolution row, its kernel's taps (``kh x kw``, ``k`` in 1-D): its ``K`` is ``C_in / groups x
  taps``, what an im2col GEMM contracts over; a MAC array that contracts over the input channels alone, one matmul per
  tap (``compute.matrix.conv_lowering: taps``), fills ``K / taps`` of its rows. 0 elsewhere.
"""

from __future__ import annotations

import math
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd

from dse.units import BLOCK_FORMATS, DTYPE_BYTES, GemmKernel

#: Column order of an operator table. ``workload`` is filled when tables are combined into a mix.
COLUMNS: list[str] = [
    "name", "kind", "unit", "reuse", "dtype", "dtype_a", "dtype_b", "dtype_out",
    "M", "N", "K", "batch", "flops", "bytes_read", "bytes_written",
    "a_bytes", "b_bytes", "c_bytes", "elem_a", "elem_b", "elem_out", "count", "fused",
    "coll", "net_bytes", "group", "stride", "overlap", "scale", "eager", "ctas", "head_rows", "gemm_kernel",
    "held", "held_bytes", "full_ratio", "taps",
]
#: what a row's ``held`` tensor is: parameters read every step, or the KV cache a decode step reads and extends
HELD: tuple[str, ...] = ("weights", "kv_cache")
#: which tensors may stay on chip (scenario ``residency``; ``dse.predict.traffic``): ``auto`` (both kinds),
#: ``none``, ``weights`` (the held tensors: weights and KV cache), ``activations``
Residency = Literal["auto", "none", "weights", "activations"]
RESIDENCY: tuple[str, ...] = get_args(Residency)
#: the policies that let activations stay, and those that let the held tensors (weights, KV cache) stay
KEEPS_ACTIVATIONS: tuple[str, ...] = ("auto", "activations")
KEEPS_HELD: tuple[str, ...] = ("auto", "weights")
#: the columns :func:`with_residency` adds to a workload's table (after :data:`COLUMNS`)
RESIDENCY_COLUMNS: list[str] = ["residency", "footprint_weights", "footprint_kv"]
#: Defaults of the collective columns (``dse.workloads.parallel``): ``coll`` names the collective
#: (all_reduce, all_gather, reduce_scatter, all_to_all, p2p) of ``net_bytes`` over ``group`` ranks
#: ``stride`` chips apart; ``overlap`` hides it behind compute; ``scale`` multiplies the row's time in
#: the step (the pipeline bubble factor).
NET_DEFAULTS: dict[str, Any] = {"coll": "", "net_bytes": 0.0, "group": 1, "stride": 1, "overlap": 0.0, "scale": 1.0}

KINDS = ("gemm", "conv", "attention", "elementwise", "norm", "softmax", "embedding", "reduce", "pool",
         "collective")

#: FP32-FLOP slots of one exp2 on the special-function unit: 16 per clock per SM against 64 FP32 FMA = 128 FLOP
#: (CUDA C++ Programming Guide, arithmetic instruction throughput table, compute capability 7.x-9.0)
EXP_FLOPS = 8.0
#: a softmax's FP32-pipe work per score besides its exp: max, subtract, sum, divide (1 FLOP each)
SOFTMAX_FP32_FLOPS = 4.0

#: FLOPs per output element of vector operators as common kernels compute them (approximate;
#: the published model FLOP counts in docs/reference/model_flops.csv cover matrix work only).
VECTOR_FLOPS_PER_ELEM: dict[str, float] = {
    "add": 1.0,          # residual add
    "mul": 1.0,
    "relu": 1.0,
    "relu6": 2.0,        # max + min
    "silu": 4.0,         # x * sigmoid(x): exp, add, div, mul
    "gelu": 8.0,         # tanh approximation
    "hswish": 4.0,       # x * relu6(x + 3) / 6
    "sigmoid": 4.0,      # exp, add, div
    "swiglu": 5.0,       # silu(gate) * up
    "layernorm": 8.0,    # mean, variance (sub, square, add), normalise (sub, mul), affine (mul, add)
    "rmsnorm": 4.0,      # square, add, scale by rsqrt, mul by gamma
    "batchnorm": 2.0,    # inference: per-channel scale and shift
    "groupnorm": 8.0,    # as layernorm, statistics per group
    "softmax": SOFTMAX_FP32_FLOPS + EXP_FLOPS,  # max, sub, sum, div + one exp at EXP_FLOPS slots (= 12)
    "rope": 3.0,         # x*cos + rot(x)*sin
    "copy": 0.0,
}

#: FP32-FLOP slots of one type conversion: an SM converts 16 values per clock against 64 FP32 FMA = 128 FLOP
#: (CUDA C++ Programming Guide, arithmetic instruction throughput table, row "All other type conversions",
#: compute capability 7.x-9.0), so one conversion costs the time of 8 FP32 FLOPs, as an exp does
CONVERT_FLOPS = 8.0


def softmax_conversions(dtype: str) -> int:
    """Type conversions per score a fused attention kernel makes around its fp32 softmax: a float MMA dtype
    (fp16/bf16/fp8) rounds the probabilities once to the MMA's input type; int8/int4 IMMA also converts the
    int32 scores to fp32 first (2 per score); fp32/tf32 scores need none."""
    if dtype in ("int8", "int4", "uint8"):
        return 2
    if dtype in ("fp32", "tf32", "fp64"):
        return 0
    return 1


def fused_softmax_flops(dtype: str, kv_len: int, kernel: str = "auto") -> float:
    """FP32-FLOP slots per score of the softmax inside a fused attention kernel (the row runs at the vector rate).

    * Up to ``FUSED_MHA_MAX_SEQ`` keys (TensorRT's fused MHA, whole score rows per CTA): the sum of all its
      work, ``VECTOR_FLOPS_PER_ELEM["softmax"]`` (max, sub, sum, div + one exp) plus ``CONVERT_FLOPS`` per type
      conversion (:func:`softmax_conversions`), as chosen with TensorRT's BERT rows.
    * Longer (flash attention's online softmax, FlashAttention-2, Dao 2023, Sec. 3.1): the busiest issue pipe,
      not the sum. Each score takes one ``exp2`` on the special-function unit (``EXP_FLOPS``; the softmax scale is
      folded into the FMA before it) while the FP32 pipe, which issues concurrently, does the max, the
      scale-and-subtract, the row sum and the rescale (``SOFTMAX_FP32_FLOPS``); rounding P to a 16/8-bit MMA type packs two
      scores per instruction with that FP32 work; IMMA's int32 -> fp32 score conversion is a second
      special-function-unit op. An A100 FlashAttention-2 forward (head dim 128, 1024-4096 keys) runs
      1.26 ms without its softmax and 1.53 ms with it, ~0.5 ps per score at its ~1.2 GHz clock, about one
      exp (github.com/liangan1/GPU_travel@bc68a95 performance/flash-attn/README.md, 'No softmax' column).

    ``kernel`` (:data:`ATTENTION_KERNELS`) names the kernel; ``auto`` picks by ``kv_len`` as above."""
    conv = softmax_conversions(dtype)
    whole_row = VECTOR_FLOPS_PER_ELEM["softmax"] + CONVERT_FLOPS * conv
    online = max(EXP_FLOPS + CONVERT_FLOPS * max(conv - 1, 0), SOFTMAX_FP32_FLOPS)
    return whole_row if attention_kernel(kernel, kv_len) == "whole_row" else online


def _row(**kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "M": 0, "N": 0, "K": 0, "batch": 1, "a_bytes": 0.0, "b_bytes": 0.0, "c_bytes": 0.0,
        "elem_a": 0.0, "elem_b": 0.0, "elem_out": 0.0, "count": 1, "fused": False,
        "dtype_b": "", "dtype_out": "", "ctas": 0, "head_rows": 0, "gemm_kernel": "", "held": "", "held_bytes": 0.0,
        "full_ratio": 1.0, "taps": 0, **NET_DEFAULTS,
    }
    row.update(kw)
    row.setdefault("dtype", row.get("dtype_a", "fp32"))
    return row


def gemm(
    name: str, M: int, N: int, K: int, *, dtype: str, weight_dtype: str | None = None,
    out_dtype: str | None = None, batch: int = 1, count: int = 1, kind: str = "gemm", held: str | None = None,
) -> dict[str, Any]:
    """``batch`` products [M,K]x[K,N]; A is the activation (``dtype``), B the weight (``weight_dtype``). ``held``
    says what B is (:data:`HELD`, or ``""``: an activation); default ``kv_cache`` for an attention product (QK^T,
    PV), else ``weights``."""
    wdt = weight_dtype or dtype
    odt = out_dtype or dtype
    ba, bb, bc = DTYPE_BYTES[dtype], DTYPE_BYTES[wdt], DTYPE_BYTES[odt]
    a, b, c = batch * M * K * ba, batch * K * N * bb, batch * M * N * bc
    return _row(
        name=name, kind=kind, unit="matrix", reuse="tiled", dtype=dtype, dtype_a=dtype, dtype_b=wdt,
        dtype_out=odt, M=M, N=N, K=K, batch=batch, flops=2.0 * batch * M * N * K,
        bytes_read=a + b, bytes_written=c, a_bytes=a, b_bytes=b, c_bytes=c,
        elem_a=ba, elem_b=bb, elem_out=bc, count=count,
        held=(h := ("kv_cache" if kind == "attention" else "weights") if held is None else held),
        held_bytes=b if h else 0.0,
    )


def weight_gemm(name: str, M: int, N: int, K: int, *, dtype: str, weight_dtype: str | None = None,
                out_dtype: str | None = None, batch: int = 1, count: int = 1) -> list[dict[str, Any]]:
    """A GEMM against a weight matrix [K, N], writing its output in ``out_dtype`` (default ``dtype``). With
    weight-only quantization (weights narrower than the activations, e.g. int4 weights with bf16 activations)
    the weights stream at their packed size and are dequantized on the vector units inside the kernel: a fused
    vector row of 2 FLOPs per weight element (scale and convert) per call, counted, not hidden (as in gpt-fast's
    int8/int4 kernels)."""
    wdt = weight_dtype or dtype
    rows = [gemm(name, M, N, K, dtype=dtype, weight_dtype=wdt, out_dtype=out_dtype, batch=batch, count=count)]
    if DTYPE_BYTES[wdt] < DTYPE_BYTES[dtype]:
        deq = streaming(f"{name}.dequant", kind="elementwise", elems=batch * K * N, flops_per_elem=2.0,
                        dtype=dtype, count=count, fused=True, read_bytes=0.0, write_bytes=0.0)
        deq["dtype_b"] = wdt  # what it decodes: free where the matrix unit reads the format natively
        rows.append(deq)
    return rows


#: bytes stored per quantization group of weight-only quantized weights: a bf16 scale, plus a bf16 zero
#: point for int4 (gpt-fast quantize.py: per-channel bf16 scales for int8, groupwise 'scales_and_zeros'
#: for int4; GPTQ/AWQ store the same per group)
GROUP_BYTES = {"int8": 2.0, "fp8": 2.0, "int4": 4.0}
#: vector FLOPs per weight element to dequantize: convert and scale (int8, fp8); unpack, convert,
#: subtract the zero point and scale (int4)
DEQUANT_FLOPS = {"int8": 2.0, "fp8": 2.0, "int4": 4.0}  # a block-scaled format: 2 (scale and convert)


def _quantized(rows: list[dict[str, Any]]) -> set[str]:
    """Names of the weight-only quantized GEMMs: the rows with a ``.dequant`` sibling."""
    return {r["name"][: -len(".dequant")] for r in rows if str(r["name"]).endswith(".dequant")}


def _has_group_scales(r: dict[str, Any], quantized: set[str]) -> bool:
    """Whether a row reads per-group scales beside its weights: a quantized weight GEMM (tiled B) whose weight dtype
    is not block-scaled (an MX/NV format carries its scales inside the format)."""
    return r["name"] in quantized and r.get("reuse") == "tiled" and r.get("dtype_b", "") not in BLOCK_FORMATS


def _scale_bytes(K: int, N: int, group: int | None, wdt: str) -> float:
    """Scale bytes of one ``K x N`` weight matrix: ``K/group x N x GROUP_BYTES`` (``group`` None: per channel)."""
    g = K if group is None else group
    return (K // g) * N * GROUP_BYTES.get(wdt, 2.0)


def group_scales(rows: list[dict[str, Any]], group: int | None) -> list[dict[str, Any]]:
    """Weight-only quantized GEMMs (rows with a ``.dequant`` sibling) read their per-group scales:
    ``batch x K/group x N x GROUP_BYTES`` more bytes of B (``group`` None: one group per column, i.e.
    per-channel scales), and their dequantization pays ``DEQUANT_FLOPS`` per weight element.
    Raises ``ValueError`` naming ``weight_group`` when a group does not divide a matrix's K."""
    quantized = _quantized(rows)
    weight_dtype = {r["name"]: r.get("dtype_b", "") for r in rows if r["name"] in quantized}
    if group is not None and not quantized:
        raise ValueError(f"weight_group: got {group}; accepted: only with weight-only quantization "
                         "(weight_dtype narrower than dtype)")
    if group is not None and any(w in BLOCK_FORMATS for w in weight_dtype.values()):
        raise ValueError(f"weight_group: got {group}; accepted: none with a block-scaled weight dtype "
                         f"({', '.join(BLOCK_FORMATS)}: its block and scale are the format's)")
    out = []
    for r in rows:
        r = dict(r)
        wdt = r.get("dtype_b", "")
        if _has_group_scales(r, quantized):
            K, N, batch = int(r["K"]), int(r["N"]), int(r.get("batch", 1))
            g = K if group is None else group
            if K % g:
                raise ValueError(f"weight_group: got {g}; accepted: a divisor of K = {K} of {r['name']} "
                                 "(and of every other quantized matrix)")
            extra = batch * _scale_bytes(K, N, group, wdt)
            r["b_bytes"] = r["b_bytes"] + extra
            r["bytes_read"] = r["bytes_read"] + extra
        elif str(r["name"]).endswith(".dequant"):
            wdt = weight_dtype.get(r["name"][: -len(".dequant")], "")
            r["flops"] = r["flops"] / 2.0 * DEQUANT_FLOPS.get(wdt, 2.0)
        out.append(r)
    return out


def stored_scale_bytes(rows: list[dict[str, Any]], group: int | None, experts: int | None = None) -> float:
    """Bytes of the per-group scales (and int4 zero points) a weight-only quantized model stores beside its weights:
    for each quantized weight GEMM of one forward pass (not a backward row, not a serving pass's decode rows, which
    read the same matrices again), ``matrices x K / group x N x GROUP_BYTES`` with ``count`` matrices of the row
    (every expert's for an MoE expert row, ``experts``), as :func:`group_scales` adds to the bytes each read moves. The
    memory check held the weights alone (LLaMA-2-7B int4 at group 32: 3.37 GB held, 4.13 GB read per step)."""
    quantized = _quantized(rows)
    total = 0.0
    for r in rows:
        name = str(r["name"])
        if not _has_group_scales(r, quantized) or ".bwd" in name or name.startswith("decode."):
            continue
        mats = experts if (experts and "moe.expert_" in name) else int(r.get("batch", 1))
        total += mats * r["count"] * _scale_bytes(int(r["K"]), int(r["N"]), group, r.get("dtype_b", ""))
    return total


def conv_out(size: int, k: int, stride: int, pad: int, dilation: int = 1) -> int:
    """Output size of a convolution: floor((size + 2*pad - dilation*(k-1) - 1) / stride) + 1."""
    return (size + 2 * pad - dilation * (k - 1) - 1) // stride + 1


def conv2d(
    name: str, *, n: int, h: int, w: int, c_in: int, c_out: int, k: int, stride: int = 1,
    pad: int | None = None, groups: int = 1, dtype: str, count: int = 1, bias: bool = False,
    kw: int | None = None, stride_w: int | None = None, pads: tuple[int, int, int, int] | None = None,
    dilation: tuple[int, int] = (1, 1),
) -> tuple[dict[str, Any], tuple[int, int, int]]:
    """A 2-D convolution as its GEMM-equivalent row; returns the row and the output (h, w, c). A ``k x k`` kernel
    with ``pad`` on every side by default; ``kw``, ``stride_w``, ``pads`` (top, left, bottom, right) and ``dilation``
    (rows, columns) give any other (an ONNX Conv's ``kernel_shape``, ``strides``, ``pads``, ``dilations``)::

        out = floor((size + pad_begin + pad_end - dilation (k - 1) - 1) / stride) + 1
        M = n ho wo,  N = c_out / groups,  K = c_in / groups x kh x kw"""
    kh, kw = k, (k if kw is None else kw)
    sh, sw = stride, (stride if stride_w is None else stride_w)
    if pads is None:
        ph = k // 2 if pad is None else pad
        pw = kw // 2 if pad is None else pad
        pads = (ph, pw, ph, pw)
    dh, dw = dilation
    ho = (h + pads[0] + pads[2] - dh * (kh - 1) - 1) // sh + 1
    wo = (w + pads[1] + pads[3] - dw * (kw - 1) - 1) // sw + 1
    if ho <= 0 or wo <= 0:
        raise ValueError(f"{name}: input {h}x{w} too small for kernel {kh}x{kw} stride {sh}x{sw} pads {list(pads)}")
    if c_in % groups or c_out % groups:
        raise ValueError(f"{name}: channels {c_in}->{c_out} not divisible by groups {groups}")
    b = DTYPE_BYTES[dtype]
    M, N, K = n * ho * wo, c_out // groups, (c_in // groups) * kh * kw
    a = n * h * w * c_in * b
    wts = c_out * (c_in // groups) * kh * kw * b + (c_out * b if bias else 0)
    c = n * ho * wo * c_out * b
    depthwise = groups > 1 and groups == c_in
    row = _row(
        name=name, kind="conv", unit="vector" if depthwise else "matrix", reuse="tiled", dtype=dtype,
        dtype_a=dtype, dtype_b=dtype, dtype_out=dtype, M=M, N=N, K=K, batch=groups,
        flops=2.0 * groups * M * N * K, bytes_read=a + wts, bytes_written=c, a_bytes=a, b_bytes=wts,
        c_bytes=c, elem_a=b, elem_b=b, elem_out=b, count=count, held="weights", held_bytes=wts, taps=kh * kw,
    )
    return row, (ho, wo, c_out)


def conv1d(name: str, *, n: int, length: int, c_in: int, c_out: int, k: int, stride: int = 1,
           pad: int | None = None, groups: int = 1, dtype: str, count: int = 1) -> tuple[dict[str, Any], int]:
    """A 1-D convolution (audio, sequences) as its GEMM-equivalent row; returns the row and the
    output length."""
    pad = k // 2 if pad is None else pad
    out = conv_out(length, k, stride, pad)
    b = DTYPE_BYTES[dtype]
    M, N, K = n * out, c_out // groups, (c_in // groups) * k
    a, wts, c = n * length * c_in * b, c_out * (c_in // groups) * k * b, n * out * c_out * b
    row = _row(name=name, kind="conv", unit="matrix", reuse="tiled", dtype=dtype, dtype_a=dtype, dtype_b=dtype,
               dtype_out=dtype, M=M, N=N, K=K, batch=groups, flops=2.0 * groups * M * N * K, bytes_read=a + wts,
               bytes_written=c, a_bytes=a, b_bytes=wts, c_bytes=c, elem_a=b, elem_b=b, elem_out=b, count=count,
               held="weights", held_bytes=wts, taps=k)
    return row, out


def streaming(
    name: str, *, kind: str, elems: float, flops_per_elem: float, inputs: float = 1.0,
    dtype: str, count: int = 1, fused: bool = False, read_bytes: float | None = None,
    write_bytes: float | None = None,
) -> dict[str, Any]:
    """A vector op that touches each byte once: ``inputs`` tensors of ``elems`` in, one out."""
    b = DTYPE_BYTES[dtype]
    rd = inputs * elems * b if read_bytes is None else read_bytes
    wr = elems * b if write_bytes is None else write_bytes
    return _row(
        name=name, kind=kind, unit="vector", reuse="stream", dtype=dtype, dtype_a=dtype,
        dtype_out=dtype, M=int(elems), flops=flops_per_elem * elems, bytes_read=rd, bytes_written=wr,
        elem_a=b, elem_out=b, count=count, fused=fused,
    )


def kernel_chain(name: str, *, kind: str, elems: float, flops_per_elem: float, dtype: str, kernels: int,
                 read_bytes: float, write_bytes: float, count: int = 1) -> dict[str, Any]:
    """A composite op run one kernel at a time (an eager RMSNorm, a foreach optimizer): ``kernels`` launches that
    together read ``read_bytes``, write ``write_bytes`` and do ``flops_per_elem`` per element, as one streaming row
    counted ``count x kernels`` times, each launch 1/``kernels`` of the bytes and FLOPs."""
    return streaming(name, kind=kind, elems=elems, flops_per_elem=flops_per_elem / kernels, dtype=dtype,
                     count=count * kernels, read_bytes=read_bytes / kernels, write_bytes=write_bytes / kernels)


#: how an FP8/INT8 GEMM's input is quantized when the activations between kernels are wider (scenario
#: ``input_quant``): ``producer`` (the kernel that writes it, a norm or an activation function, quantizes on write:
#: TensorRT fuses a quantize layer into its producer, TransformerEngine's fused norms) or ``kernel`` (a quantize kernel
#: of its own before each GEMM: vLLM's ``apply_fp8_linear`` calls ``ops.scaled_fp8_quant`` on every FP8 linear layer's
#: input, vllm-project/vllm@0039d4b vllm/model_executor/layers/quantization/utils/w8a8_utils.py)
InputQuant = Literal["producer", "kernel"]
INPUT_QUANTS: tuple[str, ...] = get_args(InputQuant)
#: vector FLOP slots per element a quantize kernel spends: one scale multiply and one (saturating) conversion
QUANTIZE_FLOPS = 1.0 + CONVERT_FLOPS


def on_matrix_tiles(r: dict[str, Any]) -> bool:
    """Whether row ``r`` is a GEMM or conv the matrix unit runs tile by tile (``reuse`` tiled, ``unit`` matrix)."""
    return r.get("reuse") == "tiled" and r.get("unit") == "matrix"


def quantize_inputs(rows: list[dict[str, Any]], dtype: str, src_dtype: str) -> list[dict[str, Any]]:
    """``rows`` with a quantize kernel before every matrix-unit GEMM whose A operand is ``dtype`` (scenario
    ``input_quant: kernel``): a vector row of its own (not fused) that reads the GEMM's ``batch x M x K`` input in
    ``src_dtype`` and writes it in ``dtype``, ``QUANTIZE_FLOPS`` per element, counted as often as the GEMM."""
    out: list[dict[str, Any]] = []
    wb = DTYPE_BYTES[dtype]
    for r in rows:
        if on_matrix_tiles(r) and r.get("kind") == "gemm" and r.get("dtype_a") == dtype:
            elems = float(r.get("batch", 1)) * float(r["M"]) * float(r["K"])
            out.append(streaming(f"{r['name']}.quantize", kind="elementwise", elems=elems,
                                 flops_per_elem=QUANTIZE_FLOPS, dtype=src_dtype, count=int(r.get("count", 1)),
                                 fused=False, write_bytes=elems * wb))
        out.append(r)
    return out


def embedding(name: str, *, tokens: int, dim: int, dtype: str, table_dtype: str | None = None,
              count: int = 1) -> dict[str, Any]:
    """Gather ``tokens`` rows of a ``dim``-wide table: bytes without FLOPs."""
    tb = DTYPE_BYTES[table_dtype or dtype]
    row = streaming(name, kind="embedding", elems=tokens * dim, flops_per_elem=0.0, dtype=dtype,
                    count=count, read_bytes=tokens * dim * tb)
    return {**row, "held": "weights", "held_bytes": row["bytes_read"]}


def cache_write(name: str, *, elems: float, dtype: str, count: int = 1) -> dict[str, Any]:
    """Append ``elems`` new K/V elements to the KV cache: a copy whose written bytes are the cache's (``held``)."""
    row = streaming(name, kind="elementwise", elems=elems, flops_per_elem=0.0, dtype=dtype, count=count)
    return {**row, "held": "kv_cache", "held_bytes": row["bytes_written"]}


#: longest sequence TensorRT's fused (non-flash) MHA kernels are built for; longer ones tile the queries
FUSED_MHA_MAX_SEQ = 512
#: query rows per CTA of a flash-attention kernel (FlashAttention-2 forward block, Dao 2023, Sec. 3.3;
#: ``kBlockM = 128`` of every sm80 forward kernel, Dao-AILab/flash-attention@c1f0be2
#: csrc/flash_attn/src/flash_fwd_launch_template.h)
FLASH_Q_TILE = 128
#: fused attention kernels: ``whole_row`` (TensorRT's fused MHA: one CTA per (head, sequence) over all its
#: queries, the whole score row at once), ``flash`` (flash attention: a CTA per 128-query tile, online softmax),
#: ``auto`` (``whole_row`` up to ``FUSED_MHA_MAX_SEQ`` keys, else ``flash``: what TensorRT(-LLM) runs); the
#: scenario's ``attention_kernel`` field and ``dse predict --attention-kernel`` take these names
AttentionKernel = Literal["auto", "whole_row", "flash"]
ATTENTION_KERNELS: tuple[str, ...] = get_args(AttentionKernel)
#: how an attention kernel serves the query heads that share a KV head (GQA/MQA; scenario ``attention_gqa``):
#: ``grouped`` stacks them as the rows of one CTA's tile, which reads the KV head once (FlashAttention-2's GQA path,
#: FlashInfer, TensorRT-LLM's XQA generation kernels); ``per_head`` runs a CTA per query head that streams its KV
#: head itself: TensorRT-LLM's generation-phase masked MHA, "a single CUDA thread-block per head" (NVIDIA
#: TensorRT-LLM docs/source/gpt_attention.md, Generation Phase; its XQA kernel, "another optimization for MQA/GQA in
#: the generation phase", was "experimental and not enabled by default" in 0.9.0, performance.md). A decode step has
#: one query row per head, so per-head CTAs fill one row of the MAC array where grouped ones fill ``heads/kv_heads``,
#: and re-read their KV head through the L2 (the group's CTAs launch side by side, so DRAM still sees it once)
AttentionGqa = Literal["grouped", "per_head"]
ATTENTION_GQA: tuple[str, ...] = get_args(AttentionGqa)


def check_choice(field: str, value: str, choices: tuple[str, ...]) -> None:
    """Raise ``ValueError`` naming ``field`` when ``value`` is not one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{field}: got {value!r}; accepted: {', '.join(choices)}")


#: how a GEMM kernel covers its output tiles (scenario ``gemm_kernel``; ``dse.predict.tiles``): ``one_tile`` (one output
#: tile per CTA, launched as a grid: a CTA writes its tile after its mainloop while its tensor cores wait, as CUTLASS's
#: and cuBLAS's sm80 kernels and TileLang's ``T.Kernel`` grids do), ``persistent`` (as many CTAs as cores, each looping
#: over tiles and overlapping one tile's epilogue with the next tile's mainloop: CUTLASS 3's sm90 warp-specialized
#: kernels with their default persistent tile scheduler, which cuBLAS runs on Hopper), ``auto`` (the template's
#: ``compute.matrix.gemm_kernel``)
GEMM_KERNELS: tuple[str, ...] = get_args(GemmKernel)  # GemmKernel (dse.units) holds the names for both layers


def with_gemm_kernel(rows: list[dict[str, Any]], kernel: str) -> list[dict[str, Any]]:
    """``rows`` with ``gemm_kernel`` set on their matrix-unit GEMM and conv rows (``reuse`` tiled, ``unit`` matrix);
    ``auto`` returns them as they are. Raises ``ValueError`` naming ``gemm_kernel`` for an unknown name."""
    check_choice("gemm_kernel", kernel, GEMM_KERNELS)
    if kernel == "auto":
        return rows
    return [{**r, "gemm_kernel": kernel} if on_matrix_tiles(r) else r for r in rows]


def attention_kernel(kernel: str, kv_len: int) -> str:
    """The kernel ``kernel`` resolves to for ``kv_len`` keys: ``"whole_row"`` or ``"flash"``."""
    check_choice("attention_kernel", kernel, ATTENTION_KERNELS)
    if kernel != "auto":
        return kernel
    return "whole_row" if kv_len <= FUSED_MHA_MAX_SEQ else "flash"


def flash_kv_tile(head_dim: int) -> int:
    """Keys per block of a flash kernel's inner loop: ``kBlockN`` of FlashAttention-2's sm80 forward kernels,
    128 up to head dim 64 and 64 beyond (``run_mha_fwd_hdim64``: 128 x 128; ``run_mha_fwd_hdim128``: 128 x 64;
    Dao-AILab/flash-attention@c1f0be2 csrc/flash_attn/src/flash_fwd_launch_template.h)."""
    return 128 if head_dim <= 64 else 64


def causal_pairs(q_len: int, kv_len: int, head_dim: int, kernel: str) -> float:
    """(query, key) pairs a causal fused kernel computes per head, the queries aligned to the end of the keys.

    ``whole_row``: the triangle, ``sum_i (kv_len - q_len + i + 1)``. ``flash``: whole key blocks up to the
    diagonal, as FlashAttention-2 bounds its loop (``n_block_max = ceil(((m + 1) kBlockM + kv_len - q_len) /
    kBlockN)`` for query tile ``m``, flash_fwd_kernel.h; the diagonal blocks are computed and then masked), so
    query tile ``m`` of ``r_m`` rows computes ``r_m * min(kv_len, kBlockN * n_block_max)`` pairs: with
    ``n`` tiles of ``kBlockM = kBlockN`` that is ``(1 + 1/n)`` times the triangle."""
    if kernel != "flash":
        return q_len * (kv_len - (q_len - 1) / 2.0)
    m = np.arange(math.ceil(q_len / FLASH_Q_TILE))
    rows = np.minimum(FLASH_Q_TILE, q_len - m * FLASH_Q_TILE)
    bn = flash_kv_tile(head_dim)
    keys = np.minimum(kv_len, np.ceil(((m + 1) * FLASH_Q_TILE + kv_len - q_len) / bn) * bn)
    return float((rows * np.maximum(keys, 0.0)).sum())


def attention_ctas(batch_heads: Any, q_rows: Any, kv_len: Any, kernel: str = "auto") -> Any:
    """CTAs a fused attention kernel launches: ``whole_row``, one per (head, sequence) looping over all queries
    (NVIDIA TensorRT-LLM ``cpp/kernels/fmha_v2/setup.py`` launcher ``dim3 grid(params.h, params.b)``, sequence
    lengths 64..512 as in TensorRT's BERT plugin); ``flash``, one per (head, sequence, query tile of 128 rows)
    as flash attention splits them; ``auto`` by ``kv_len`` (:func:`attention_kernel`). Works on arrays."""
    check_choice("attention_kernel", kernel, ATTENTION_KERNELS)
    fixed = np.full(np.shape(kv_len), kernel == "whole_row")
    whole = np.asarray(kv_len) <= FUSED_MHA_MAX_SEQ if kernel == "auto" else fixed
    q_tiles = np.where(whole, 1.0, np.ceil(np.asarray(q_rows) / FLASH_Q_TILE))
    return np.asarray(batch_heads) * np.maximum(q_tiles, 1.0)


def attention(
    name: str, *, batch: int, heads: int, kv_heads: int, q_len: int, kv_len: int, head_dim: int,
    causal: bool, dtype: str, kv_dtype: str | None = None, fused: bool = True, count: int = 1,
    fuse_elementwise: bool = False, kernel: str = "auto", gqa: str = "grouped",
) -> list[dict[str, Any]]:
    """Scaled dot-product attention, grouped-query aware.

    Fused (flash-style, Dao et al. 2022): one matrix row whose traffic model streams K and V once
    per query tile, plus the softmax work as a fused vector row, run by ``kernel``
    (:data:`ATTENTION_KERNELS`). Causal masking skips masked blocks: the pairs computed are
    :func:`causal_pairs` (a flash kernel computes the diagonal blocks whole). ``gqa`` (:data:`ATTENTION_GQA`)
    says whether a CTA holds the query heads of a KV head together (``grouped``) or one query head
    (``per_head``): the row's work and compulsory bytes are the same; its ``ctas`` and ``head_rows`` (the query
    rows a tile may stack: a per-head tile re-reads its KV head for each query head inside the cores, and fills
    the MAC array with one head's rows) differ.
    Unfused: QK^T and PV as batched GEMMs with the score matrix written and read back, and the
    softmax as a streaming row; masked scores are computed and discarded (full ``q_len*kv_len``).
    """
    if heads % kv_heads:
        raise ValueError(f"{name}: heads {heads} not divisible by kv_heads {kv_heads}")
    check_choice("attention_gqa", gqa, ATTENTION_GQA)
    kvd = kv_dtype or dtype
    bq, bkv = DTYPE_BYTES[dtype], DTYPE_BYTES[kvd]
    group = heads // kv_heads
    if fused:
        kind = attention_kernel(kernel, kv_len)
        per_head = causal_pairs(q_len, kv_len, head_dim, kind) if causal else float(q_len) * kv_len
        pairs = batch * heads * per_head
        full = float(q_len) * kv_len / per_head if per_head > 0 else 1.0  # a kernel that computes masked blocks
        stacked = group if gqa == "grouped" else 1  # query heads one CTA holds
        ctas = int(attention_ctas(batch * heads // stacked, q_len * stacked, kv_len, kind))
        q = batch * heads * q_len * head_dim * bq
        kv = 2 * batch * kv_heads * kv_len * head_dim * bkv
        o = q
        row = _row(
            name=name, kind="attention", unit="matrix", reuse="attention", dtype=dtype, dtype_a=dtype,
            dtype_b=kvd, dtype_out=dtype, M=q_len * group, N=head_dim, K=kv_len, batch=batch * kv_heads,
            flops=4.0 * pairs * head_dim, bytes_read=q + kv, bytes_written=o, a_bytes=q, b_bytes=kv,
            c_bytes=o, elem_a=bq, elem_b=bkv, elem_out=bq, count=count, ctas=ctas,
            head_rows=q_len * stacked, held="kv_cache", held_bytes=kv, full_ratio=full,
        )
        per = fused_softmax_flops(dtype, kv_len, kind)
        soft = streaming(f"{name}.softmax", kind="softmax", elems=pairs, flops_per_elem=per, dtype="fp32",
                         count=count, fused=True, read_bytes=0.0, write_bytes=0.0)
        # the softmax runs inside the attention kernel's CTAs: their count sets its wave fill (dse.predict)
        soft["batch"] = soft["ctas"] = ctas
        return [row, soft]
    bh = batch * heads
    qk = gemm(f"{name}.qk", q_len, kv_len, head_dim, dtype=dtype, weight_dtype=kvd, batch=bh,
              count=count, kind="attention")
    soft = streaming(f"{name}.softmax", kind="softmax", elems=bh * q_len * kv_len,
                     flops_per_elem=VECTOR_FLOPS_PER_ELEM["softmax"], dtype=dtype, count=count,
                     fused=fuse_elementwise)
    pv = gemm(f"{name}.pv", q_len, head_dim, kv_len, dtype=dtype, weight_dtype=kvd, batch=bh,
              count=count, kind="attention")
    return [qk, soft, pv]


_INT_COLS = ("M", "N", "K", "batch", "count", "group", "stride", "ctas", "head_rows", "taps")
_FLOAT_COLS = ("flops", "bytes_read", "bytes_written", "a_bytes", "b_bytes", "c_bytes", "net_bytes", "scale",
               "held_bytes", "overlap", "full_ratio")
#: float columns whose value where a row (or an older table) has none is not 0
_FLOAT_DEFAULTS = {"full_ratio": 1.0}
_BOOL_COLS = ("fused", "eager")
#: string columns and their value where a row (or an older table) has none
_STR_DEFAULTS = {"gemm_kernel": "", "held": ""}


def _default(col: str) -> Any:
    """A column's value in a row (or an older table) that does not set it."""
    if col in _FLOAT_DEFAULTS:
        return _FLOAT_DEFAULTS[col]
    return _STR_DEFAULTS.get(col, NET_DEFAULTS.get(col, False if col in _BOOL_COLS else 0))


def _key_converter(col: str) -> Any:
    """A row's value of ``col`` as the table's column type holds it (what the merge compares; a missing value,
    ``None`` or NaN (``v != v``), is the column's default), as a one-argument function built once per column."""
    if col in _STR_DEFAULTS:
        d = _STR_DEFAULTS[col]
        return lambda v: d if v is None or v != v else str(v)
    cast: Any = (int if col in _INT_COLS else float if col in _FLOAT_COLS else bool if col in _BOOL_COLS
                 else str if col == "coll" else None)
    miss = "" if col == "coll" else _FLOAT_DEFAULTS.get(col, NET_DEFAULTS.get(col, False if col in _BOOL_COLS else None))
    if miss is not None and cast is not None:
        miss = cast(miss)
    if cast is None:
        return lambda v: miss if v is None or v != v else v
    return lambda v: miss if v is None or v != v else cast(v)


#: the columns that identify an operator (all but name and count), each with its default and key converter
_KEY_SPEC: tuple[tuple[str, Any, Any], ...] = ()


def _key_spec() -> tuple[tuple[str, Any, Any], ...]:
    global _KEY_SPEC
    if not _KEY_SPEC:
        _KEY_SPEC = tuple((c, _default(c), _key_converter(c)) for c in COLUMNS if c not in ("name", "count"))
    return _KEY_SPEC


def _compact(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge identical operators (every column but name and count equal, in the table's types): the first
    row of each group, its count the group's sum, its name the first plus how many other names it stands
    for; groups in order of first appearance. (The same rows pandas' groupby gave, in a Python pass.)"""
    spec = _key_spec()
    groups: dict[tuple, list] = {}
    for r in rows:
        k = tuple([conv(r.get(c, d)) for c, d, conv in spec])
        g = groups.get(k)
        if g is None:
            groups[k] = [r, int(r.get("count", 0)), [r.get("name")]]
        else:
            g[1] += int(r.get("count", 0))
            if r.get("name") not in g[2]:
                g[2].append(r.get("name"))
    out = []
    for first, count, names in groups.values():
        name = str(names[0]) if len(names) == 1 else f"{names[0]} (+{len(names) - 1} same shape)"
        out.append({**first, "name": name, "count": count})
    return out


#: the integer columns of the operator table (int64) and the largest value they hold
INT_COLUMNS: tuple[str, ...] = ("M", "N", "K", "batch", "count", "ctas", "head_rows", "group", "stride", "taps")
INT_COLUMN_MAX = 2**63 - 1


def check_int_columns(rows: list[dict[str, Any]]) -> None:
    """Raise ``ValueError`` naming the first row whose integer column exceeds int64: each dimension within its limit
    (docs/limits.md) can still multiply past it (a streamed row's ``M`` is its elements, batch x tokens x width)."""
    for r in rows:
        for col in INT_COLUMNS:
            v = r.get(col)
            if isinstance(v, int) and not -INT_COLUMN_MAX <= v <= INT_COLUMN_MAX:
                raise ValueError(f"operator {r.get('name')}: {col}: got {float(v):.3g}; accepted: at most 2^63 - 1 "
                                 "(an int64 column of the operator table): a smaller batch, sequence or model")


#: the string columns (their missing value is their default, ""; the other object columns keep what pandas infers)
_STR_COLS = (*_STR_DEFAULTS, "coll")
#: the float columns whose missing value is their default (the other float columns keep NaN)
_FILLED_FLOAT = ("held_bytes", "full_ratio")


def _missing(v: Any) -> bool:
    """Whether a row's value is unset: ``None`` or a NaN (a Python or numpy float)."""
    return v is None or (isinstance(v, float | np.floating) and v != v)


def _column(col: str, vals: list[Any]) -> Any:
    """One column of the operator table from its row values (``None`` where a row lacks it), typed: the string
    columns (:data:`_STR_COLS`) with their default ``""`` for a missing value, the float columns float64 (missing:
    NaN, or for :data:`_FILLED_FLOAT` the default), the integer columns int64 (missing: 0; ``group`` and ``stride``
    must be set), the flags bool (a missing flag reads as set, as pandas' ``astype(bool)`` reads NaN), the rest as
    pandas infers."""
    if col in _STR_COLS:
        fill = _default(col)
        return pd.array([fill if _missing(v) else str(v) for v in vals], dtype=str)
    if col in _FLOAT_COLS:
        fill = _default(col) if col in _FILLED_FLOAT else np.nan
        return np.array([fill if _missing(v) else v for v in vals], dtype=np.float64)
    if col in ("group", "stride"):
        if any(_missing(v) for v in vals):
            raise ValueError(f"operator table: {col}: got a row without it; accepted: every row sets it or none")
        return np.array(vals, dtype=np.int64)
    if col in _INT_COLS:
        return np.array([0 if _missing(v) else v for v in vals], dtype=np.int64)
    if col in _BOOL_COLS:
        return np.array([True if _missing(v) else bool(v) for v in vals], dtype=bool)
    if not vals:  # an empty table: the column's dtype from its default, as a column no row sets
        return np.array([], dtype=np.asarray([_default(col)]).dtype)
    return [np.nan if v is None else v for v in vals]


def table(rows: list[dict[str, Any]], *, compact: bool = True) -> pd.DataFrame:
    """Build the operator table; with ``compact`` identical operators merge into one row (counts add). An integer
    column beyond int64 is a ``ValueError`` naming the row (:func:`check_int_columns`). A column no row sets takes
    its :func:`_default`; each column is built once, typed (:func:`_column`), not converted in place."""
    rows = _compact(rows) if compact and rows else rows
    check_int_columns(rows)
    present = {k for r in rows for k in r}
    data = {}
    for col in COLUMNS:
        if col in present:
            data[col] = _column(col, [r.get(col) for r in rows])
        else:
            data[col] = _column(col, [_default(col)] * len(rows))
    return pd.DataFrame(data, columns=COLUMNS)


def check_positive(name: str, **values: float) -> None:
    """Raise ``ValueError`` naming the first non-positive shape value."""
    for key, val in values.items():
        if not (isinstance(val, int | float) and math.isfinite(val) and val > 0):
            raise ValueError(f"{name}: {key} = {val!r}; accepted: a positive number")


def with_residency(table: pd.DataFrame, memory: dict[str, float], policy: str = "auto") -> pd.DataFrame:
    """The table with its residency columns (``dse.predict.traffic.residency_keep`` reads them): ``residency`` (the
    policy, :data:`RESIDENCY`) and ``footprint_weights`` / ``footprint_kv`` (bytes of the workload's weights and KV
    cache on one chip: ``memory``'s ``weights`` and ``kv_cache``, or, without a ``weights`` entry, the weights its
    rows read once each, count applied). A workload without a KV cache (an encoder, a training step) reads K and V
    as activations of the step: its attention rows hold nothing."""
    check_choice("residency", policy, RESIDENCY)
    kv = float(memory.get("kv_cache", 0.0))
    held = table["held"].to_numpy()
    held_bytes = table["held_bytes"].to_numpy(dtype=np.float64)
    cols: dict[str, Any] = {}
    if kv <= 0:
        cache = held == "kv_cache"
        if cache.any():
            cols["held"] = pd.array(np.where(cache, "", held), dtype=table["held"].dtype)
            cols["held_bytes"] = np.where(cache, 0.0, held_bytes)
    weights = memory.get("weights")
    if weights is None:
        w = held == "weights"
        weights = float((held_bytes[w] * table["count"].to_numpy()[w]).sum())
    n = len(table)
    cols.update(residency=pd.array([policy] * n, dtype=str), footprint_weights=np.full(n, float(weights)),
                footprint_kv=np.full(n, kv))
    return table.assign(**cols)
