"""Transformer family: encoders (BERT, ViT) and decoder LLMs (GPT-2, LLaMA) with GQA and KV cache.

Per layer (Vaswani et al. 2017; pre-norm as in GPT-2/LLaMA): norm, QKV projection, (RoPE),
attention, output projection, residual add, norm, FFN (gated for SwiGLU/GeGLU, Shazeer 2020),
residual add. Matrix FLOPs per layer for ``T`` tokens reduce to the Megatron count
``24*T*h^2 + 4*T*S*h`` for a standard encoder with ffn = 4h (Narayanan et al. 2021, appendix).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, model_validator

from dse.limits import (
    MAX_EXPERTS,
    MAX_FFN,
    MAX_HEAD_DIM,
    MAX_HEADS,
    MAX_KERNEL,
    MAX_LAYERS,
    MAX_RATIO,
    MAX_RESOLUTION,
    MAX_TOKENS,
    MAX_VOCAB,
    MAX_WIDTH,
)
from dse.strict import Strict
from dse.units import DTYPE_BYTES
from dse.workloads import ops
from dse.workloads.scenario import Scenario
from dse.workloads.serving import read_context
from dse.workloads.training import step_kernels, training_step

#: row-reduction norms: a kernel of their own even with fused elementwise work (see ``norm_row``)
ROW_NORMS = ("layernorm", "rmsnorm")
#: RMSNorm run eagerly by PyTorch is its reference implementation's kernels, one each (torchtune
#: ``torchtune/modules/rms_norm.py`` and transformers' ``LlamaRMSNorm``: ``x.float()``, ``pow(2)``,
#: ``mean(-1, keepdim=True)``, ``+ eps``, ``rsqrt``, ``x * rstd``, ``.type_as(x)``, ``* weight``); LayerNorm is one
#: native kernel (``torch.nn.functional.layer_norm``), so it stays one row
RMSNORM_EAGER_KERNELS = 8
#: their bytes per element at activation width ``b`` (fp32 intermediates, 4 bytes; the mean, eps and rsqrt act on
#: one value a row): reads b + 4 (pow) + 4 (mean) + 4 (x * rstd, the fp32 x) + 4 (type_as) + b (* weight) = 16 + 2b,
#: writes 4 (float) + 4 (pow) + 4 (x * rstd) + b (type_as) + the output = 12 + b + out
RMSNORM_EAGER_FP32_READS = 16.0
RMSNORM_EAGER_FP32_WRITES = 12.0
#: a gated activation run eagerly: ``act(gate)`` and ``* up`` are two kernels (torchtune ``FeedForward``:
#: ``w2(activation(w1(x)) * w3(x))``; transformers' ``LlamaMLP``: ``down_proj(act_fn(gate_proj(x)) * up_proj(x))``):
#: reads b, then 2b; writes b, then the output
GATED_EAGER_KERNELS = 2


def norm_row(name: str, elems: float, fn: str, dt: str, count: int, fe: bool,
             out_dt: str | None = None, eager: bool = False) -> dict[str, Any]:
    """A LayerNorm/RMSNorm over ``elems`` activations. It reduces over a whole row (the hidden size), which no
    GEMM output tile holds, so inference engines keep it a kernel of its own; with ``fe`` (fused elementwise
    work) the residual add before it merges into it (TensorRT's skip-layernorm plugin, vLLM's
    fused_add_rms_norm, Inductor's add + norm kernel): one kernel reading the stream and the residual and
    writing once, while the add row itself is fused away. Other norms (batchnorm) stay foldable.
    ``out_dt`` (default ``dt``): the dtype it writes, the next GEMM's input quantized on write
    (:func:`quantized_write`). An RMSNorm of an ``eager`` step without fused elementwise work is PyTorch's composite:
    :data:`RMSNORM_EAGER_KERNELS` launches (``count`` x that many, each 1/8 of the bytes) reading
    ``elems * (16 + 2 b)`` and writing ``elems * (12 + b) + out`` bytes, where one kernel reads and writes ``b`` each.
    """
    write = quantized_write(elems, out_dt)
    if eager and not fe and fn == "rmsnorm":
        b = DTYPE_BYTES[dt]
        out = elems * b if write is None else write
        return ops.kernel_chain(name, kind="norm", elems=elems, flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM[fn], dtype=dt,
                                kernels=RMSNORM_EAGER_KERNELS, count=count,
                                read_bytes=elems * (RMSNORM_EAGER_FP32_READS + 2 * b),
                                write_bytes=elems * (RMSNORM_EAGER_FP32_WRITES + b) + out)
    if fn not in ROW_NORMS:
        return ops.streaming(name, kind="norm", elems=elems, flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM[fn],
                             dtype=dt, count=count, fused=fe, write_bytes=write)
    return ops.streaming(name, kind="norm", elems=elems, inputs=2.0 if fe else 1.0,
                         flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM[fn], dtype=dt, count=count, fused=False,
                         write_bytes=write)


def ffn_act_row(elems: float, act: str, gated: bool, dt: str, count: int, fe: bool, eager: bool,
                out_dt: str | None = None, name: str = "layer.ffn_act") -> dict[str, Any]:
    """The FFN's activation over ``elems`` outputs: one kernel reading the gate and up halves (``gated``) or the
    up projection and writing once; a gated one of an ``eager`` step without fused elementwise work is
    :data:`GATED_EAGER_KERNELS` launches (``act(gate)``, then ``* up``) reading ``3 b`` and writing ``b`` + the output
    per element."""
    write = quantized_write(elems, out_dt)
    if eager and gated and not fe:
        b = DTYPE_BYTES[dt]
        out = elems * b if write is None else write
        return ops.kernel_chain(name, kind="elementwise", elems=elems, flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM[act],
                                dtype=dt, kernels=GATED_EAGER_KERNELS, count=count, read_bytes=elems * 3 * b,
                                write_bytes=elems * b + out)
    return ops.streaming(name, kind="elementwise", elems=elems, inputs=2 if gated else 1,
                         flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM[act], dtype=dt, count=count, fused=fe,
                         write_bytes=write)


def quantized_write(elems: float, out_dt: str | None) -> float | None:
    """Bytes a vector kernel writes when it quantizes its output for the GEMM that reads it: ``elems x
    bytes(out_dt)`` (None: its own dtype).

    FP8 engines keep the activations between kernels in 16 bits (scenario ``activation_dtype``): an FP8 GEMM
    reads 8-bit operands and writes a 16-bit output (TransformerEngine's ``fp8_gemm(..., out_dtype)``; vLLM's
    ``Fp8LinearMethod`` returns the input's dtype; TensorRT-LLM's FP8 checkpoints keep ``dtype: float16``). The
    GEMM's input is quantized by the kernel that writes it, the norm or the gated activation (TensorRT fuses a
    quantize layer into its producer, Developer Guide, "Explicit Quantization: Q/DQ layer placement")."""
    return None if out_dt is None else elems * DTYPE_BYTES[out_dt]


def gemm_input_dtype(sc: Scenario) -> str:
    """The dtype a GEMM input's producer (norm, activation function) writes: the GEMM's ``dtype`` when it quantizes
    on write (``input_quant: producer``), else the activations' own (``kernel``: :func:`dse.workloads.ops.quantize_inputs`
    adds the quantize kernels)."""
    return sc.dtype if sc.input_quant == "producer" else (sc.activation_dtype or sc.dtype)


def check_input_quant(sc: Scenario) -> None:
    """``input_quant: kernel`` needs activations wider than the GEMMs' ``dtype``; raises ``ValueError`` naming it."""
    adt = sc.activation_dtype or sc.dtype
    if sc.input_quant == "kernel" and not DTYPE_BYTES[adt] > DTYPE_BYTES[sc.dtype]:
        raise ValueError(f"input_quant: got 'kernel' with activation_dtype {adt} and dtype {sc.dtype}; accepted: "
                         "'producer', or 'kernel' with an activation_dtype wider than dtype (e.g. bf16 beside fp8)")


class PatchEmbed(Strict):
    """ViT input: a ``patch x patch`` stride-``patch`` conv over the image, plus a class token."""

    image: int = Field(gt=0, le=MAX_RESOLUTION, description="Default image side, pixels")
    patch: int = Field(gt=0, le=MAX_KERNEL)
    channels: int = Field(3, gt=0, le=MAX_WIDTH)
    cls_token: bool = True


class MoE(Strict):
    """Mixture-of-experts FFN (Shazeer et al. 2017; Mixtral, Jiang et al. 2024; DeepSeekMoE)."""

    experts: int = Field(gt=0, le=MAX_EXPERTS, description="Routed experts per layer")
    active: int = Field(gt=0, le=MAX_EXPERTS, description="Experts each token is routed to (top-k), at most experts")
    expert_ffn: int = Field(gt=0, le=MAX_FFN, description="Inner width of one routed expert")
    shared_experts: int = Field(0, ge=0, le=MAX_EXPERTS, description="Always-active experts (DeepSeek), same width")
    dense_layers: int = Field(0, ge=0, le=MAX_LAYERS, description="Leading layers with a dense FFN of width `ffn` "
                              "(DeepSeek-V3: 3), fewer than the model's layers")
    every: int = Field(1, ge=1, le=MAX_LAYERS, description="After the dense_layers, every n-th layer is MoE and the "
                       "others have a dense FFN of width `ffn` (Llama 4 Maverick: 2, interleave_moe_layer_step)")

    def moe_layers(self, layers: int) -> int:
        """MoE layers among ``layers``: ``floor((layers - dense_layers) / every)``; the rest have a dense FFN."""
        return max(layers - self.dense_layers, 0) // self.every

    @model_validator(mode="after")
    def _routable(self) -> MoE:
        if self.active > self.experts:
            raise ValueError(f"@active@got {self.active} with {self.experts} experts; accepted: an integer from 1 to "
                             "experts (top-k of the routed experts)")
        return self


class MLA(Strict):
    """Multi-head latent attention (DeepSeek-V2, Sec. 2.1): low-rank query and joint KV compression."""

    q_lora_rank: int = Field(gt=0, le=MAX_WIDTH)
    kv_lora_rank: int = Field(gt=0, le=MAX_WIDTH)
    qk_nope_head_dim: int = Field(gt=0, le=MAX_HEAD_DIM)
    qk_rope_head_dim: int = Field(gt=0, le=MAX_HEAD_DIM)
    v_head_dim: int = Field(gt=0, le=MAX_HEAD_DIM)


#: a kernel or stride side in a list (each entry bounded like a single one)
Side = Annotated[int, Field(gt=0, le=MAX_KERNEL)]


class AttentionWindow(Strict):
    """Local attention in all layers or in all but every ``global_every``-th, which attends to all keys.

    ``sliding``: a query attends to itself and the ``tokens - 1`` keys before it. Mistral 7B: 4096 in every layer
    (Jiang et al. 2023, Sec. 2); Gemma 2: 4096, alternating with global layers (Gemma Team 2024, Sec. 2); Gemma 3:
    1024, five local layers to one global (Gemma Team 2025, Sec. 2.2, ``sliding_window_pattern: 6``); gpt-oss: 128,
    alternating (OpenAI 2025, model card Sec. 2.1; ``layer_types``). ``chunked``: a query attends to the keys of its
    own aligned chunk of ``tokens`` up to itself (Llama 4: 8192 on the RoPE layers, every fourth layer global;
    transformers ``attention_chunk_size``, AI-Hypercomputer/maxtext ``chunk_attn_window_size``). A local layer's KV
    cache holds at most ``tokens`` entries (a rolling buffer, Mistral 7B Sec. 2; the current chunk), so its decode
    reads and its cache are bounded by the window."""

    tokens: int = Field(gt=0, le=MAX_TOKENS, description="Keys a query of a local layer may attend to, itself included")
    global_every: int = Field(0, ge=0, le=MAX_LAYERS, description="Every n-th layer attends to all keys (Gemma 3: "
                              "6, Llama 4: 4, gpt-oss and Gemma 2: 2); 0: every layer is local")
    kind: Literal["sliding", "chunked"] = Field("sliding", description="sliding: the last `tokens` keys; chunked: "
                                                "the keys of the query's own aligned chunk of `tokens` (Llama 4)")

    def local_layers(self, layers: int) -> int:
        """Local layers among ``layers``: ``layers - floor(layers / global_every)`` (all with ``global_every: 0``)."""
        return layers - (layers // self.global_every if self.global_every else 0)

    def keys(self, context: Any) -> Any:
        """Keys a decode query at KV length ``context`` reads in a local layer: ``min(context, tokens)`` sliding,
        ``(context - 1) mod tokens + 1`` chunked (its chunk so far). Works on arrays."""
        if self.kind == "chunked":
            return (np.asarray(context) - 1) % self.tokens + 1
        return np.minimum(context, self.tokens)

    def blocks(self, q_len: int, kv_len: int) -> list[tuple[int, int, bool, int]]:
        """The attention blocks of a local layer: :func:`window_blocks` or :func:`chunk_blocks`."""
        return (chunk_blocks if self.kind == "chunked" else window_blocks)(q_len, kv_len, self.tokens)


def window_blocks(q_len: int, kv_len: int, window: int) -> list[tuple[int, int, bool, int]]:
    """The attention blocks ``(queries, keys, causal, times)`` of a sliding-window layer whose ``q_len`` queries are
    the last of ``kv_len`` positions: query ``i`` sits at ``p = kv_len - q_len + i`` and attends ``min(p + 1,
    window)`` keys. The first ``q1 = min(q_len, max(0, window - (kv_len - q_len)))`` queries still see every key
    before them, a causal block of ``q1`` queries over ``kv_len - q_len + q1`` keys; each of the other ``q_len - q1``
    attends exactly ``window`` keys, a non-causal block of them over ``window`` keys. Their pairs sum to ``sum_i
    min(p_i + 1, window)`` (the causal block's by :func:`dse.workloads.ops.causal_pairs`); the second block reads
    ``window`` keys once per query tile, as FlashAttention's local kernels bound their key loop by the window (Dao,
    flash-attention ``window_size``, ``n_block_min``), but counts only one window of K and V as its compulsory read
    where the real kernel reads each key once (``kv_len`` of them)."""
    q1 = min(q_len, max(0, window - (kv_len - q_len)))
    blocks = []
    if q1:
        blocks.append((q1, kv_len - q_len + q1, True, 1))
    if q_len > q1:
        blocks.append((q_len - q1, window, False, 1))
    return blocks


def chunk_blocks(q_len: int, kv_len: int, chunk: int) -> list[tuple[int, int, bool, int]]:
    """The attention blocks ``(queries, keys, causal, times)`` of a chunked layer whose ``q_len`` queries are the
    last of ``kv_len`` positions: the query at ``p`` attends the keys from ``chunk x floor(p / chunk)`` to ``p``, so
    the queries of each chunk form a causal block over that chunk's keys up to its last query: the first chunk's
    (perhaps entered mid-way: its queries aligned to the end of its keys), ``times`` whole chunks of ``chunk`` x
    ``chunk``, and the last one's. Their pairs sum to ``sum_i (p_i mod chunk + 1)``."""
    first, last = kv_len - q_len, kv_len - 1
    c0, c1 = first // chunk, last // chunk
    if c0 == c1:
        return [(q_len, last - c0 * chunk + 1, True, 1)]
    blocks = [((c0 + 1) * chunk - first, chunk, True, 1)]
    if c1 - c0 > 1:
        blocks.append((chunk, chunk, True, c1 - c0 - 1))
    tail = last - c1 * chunk + 1
    blocks.append((tail, tail, True, 1))
    return blocks


class ConvFrontEnd(Strict):
    """wav2vec 2.0's raw-waveform feature encoder (Baevski et al., NeurIPS 2020, Sec. 2 and App. B):
    1-D convolutions over the samples, a projection to the model width and a grouped positional conv."""

    channels: int = Field(512, gt=0, le=MAX_WIDTH)
    kernels: list[Side] = Field(default_factory=lambda: [10, 3, 3, 3, 3, 2, 2])
    strides: list[Side] = Field(default_factory=lambda: [5, 2, 2, 2, 2, 2, 2])
    samples: int = Field(16000, gt=0, le=MAX_TOKENS, description="Default input length (1 s at 16 kHz)")
    pos_conv_kernel: int = Field(128, gt=0, le=MAX_KERNEL)
    pos_conv_groups: int = Field(16, gt=0, le=MAX_WIDTH)


class Conformer(Strict):
    """Conformer block extras (Gulati et al., Interspeech 2020, Fig. 1): a convolution module (LN,
    pointwise conv to 2C + GLU, depthwise conv, BN, Swish, pointwise conv) and a second half-step FFN
    (macaron); the stem subsamples log-mel frames 4x with two 3x3 stride-2 convolutions."""

    conv_kernel: int = Field(32, gt=0, le=MAX_KERNEL)
    mel_bins: int = Field(80, gt=0, le=MAX_WIDTH)
    frames: int = Field(1000, gt=0, le=MAX_TOKENS, description="Default input frames (10 s at 10 ms hops)")


class TransformerArch(Strict):
    kind: Literal["encoder", "decoder"]
    layers: int = Field(gt=0, le=MAX_LAYERS)
    hidden: int = Field(gt=0, le=MAX_WIDTH)
    heads: int = Field(gt=0, le=MAX_HEADS)
    kv_heads: int | None = Field(None, gt=0, le=MAX_HEADS, description="GQA/MQA key-value heads (default: heads)")
    head_dim: int | None = Field(None, gt=0, le=MAX_HEAD_DIM, description="Default: hidden / heads")
    ffn: int = Field(gt=0, le=MAX_FFN, description="FFN inner width")
    activation: Literal["gelu", "relu", "silu", "swiglu", "geglu"]
    norm: Literal["layernorm", "rmsnorm"]
    position: Literal["learned", "rope", "none"] = "learned"
    vocab: int = Field(0, ge=0, le=MAX_VOCAB, description="Token vocabulary (0 for image models)")
    head: Literal["lm", "classifier", "none"] = "none"
    tied_embeddings: bool = Field(False, description="LM head shares the token-embedding matrix")
    num_classes: int = Field(1000, gt=0, le=MAX_VOCAB)
    patch: PatchEmbed | None = None
    moe: MoE | None = None
    mla: MLA | None = None
    conv_frontend: ConvFrontEnd | None = None
    conformer: Conformer | None = None
    window: AttentionWindow | None = Field(None, description="Local (sliding or chunked) attention in all or most "
                                           "layers")
    parallel_block: bool = Field(
        False, description="Attention and MLP read the same normed input and one residual add sums both (GPT-J, "
        "GPT-NeoX, PaLM, Falcon, Phi-2): one norm and one add per layer instead of two each (Wang & Komatsuzaki "
        "2021, GPT-J; Chowdhery et al. 2022, PaLM, Sec. 2 'Parallel Layers'), and under tensor parallelism one "
        "all-reduce per layer instead of two: the two row-parallel outputs are summed before one reduction "
        "(EleutherAI/gpt-neox megatron/model/transformer.py, gpt_j_residual: attention and MLP built with "
        "parallel_output, then reduce_from_model_parallel_region once)")
    default_seq: int = Field(128, gt=0, le=MAX_TOKENS, description="Sequence length when a scenario gives none")
    max_seq: int | None = Field(None, gt=0, le=MAX_TOKENS, description="Longest supported sequence/context")
    causal: bool | None = Field(
        None, description="Attention mask: true, each token attends to the ones before it (a causal LM: half the "
        "score matrix computed by a masked kernel); false, every token to every token (BERT-style encoders, a "
        "decoder run bidirectionally, e.g. a diffusion LM or an embedding model built on a decoder). Default: "
        "true for kind decoder, false for encoder")

    @property
    def is_causal(self) -> bool:
        """The attention mask in use (:attr:`causal`, else ``kind == "decoder"``)."""
        return self.kind == "decoder" if self.causal is None else self.causal

    @model_validator(mode="after")
    def _check(self) -> TransformerArch:
        # heads against hidden first: a heads that splits no hidden is the news, before the kv_heads it then misfits
        if self.head_dim is None and self.hidden % self.heads:
            raise ValueError(f"@heads@got {self.heads} with hidden {self.hidden}; accepted: a divisor of hidden, or "
                             "head_dim given (hidden must be divisible by heads, or give head_dim)")
        kv = self.kv_heads or self.heads
        if self.heads % kv:
            divisors = ", ".join(str(k) for k in range(1, self.heads + 1) if self.heads % k == 0)
            raise ValueError(f"@kv_heads@got {kv} with heads {self.heads}; accepted: a divisor of heads ({divisors}): "
                             f"heads ({self.heads}) must be a multiple of kv_heads")
        if self.head == "lm" and self.vocab == 0:
            raise ValueError("@vocab@got 0 with head lm; accepted: vocab > 0 (an lm head needs vocab > 0)")
        if self.moe is not None and self.moe.dense_layers >= self.layers:
            raise ValueError(f"@moe.dense_layers@got {self.moe.dense_layers} with {self.layers} layers; accepted: an "
                             "integer from 0 to layers - 1 (at least one MoE layer)")
        if self.moe is not None and self.moe.moe_layers(self.layers) < 1:
            raise ValueError(f"@moe.every@got {self.moe.every} with {self.layers - self.moe.dense_layers} layers after "
                             f"the dense ones; accepted: 1 to {self.layers - self.moe.dense_layers} (at least one MoE "
                             "layer)")
        if self.window is not None:
            self._check_window(self.window)
        if self.parallel_block and self.conformer is not None:
            raise ValueError("parallel_block: got true with a conformer block; accepted: false (a Conformer block "
                             "is sequential)")
        return self

    def _check_window(self, w: AttentionWindow) -> None:
        """A window needs causal attention without MLA and a ``global_every`` of at most ``layers``."""
        if not self.is_causal:
            raise ValueError(f"@window@got a window of {w.tokens} tokens for a non-causal model; accepted: a causal "
                             "decoder (a query attends to the tokens before it)")
        if self.mla is not None:
            raise ValueError("@window@got a window with mla; accepted: no window (no published MLA model has one)")
        if w.global_every > self.layers:
            raise ValueError(f"@window.global_every@got {w.global_every} with {self.layers} layers; accepted: 0 (every "
                             f"layer local) or 1 to {self.layers}")

    def layer_split(self) -> tuple[int, int]:
        """(global layers, local layers): every layer global without a window (:class:`AttentionWindow`)."""
        local = self.window.local_layers(self.layers) if self.window is not None else 0
        return self.layers - local, local


def moe_rows(arch: TransformerArch, T: int, dt: str, w_up: str, w_down: str, gated: bool, act: str, fe: bool,
             adt: str | None = None, qdt: str | None = None) -> list[dict[str, Any]]:
    """Router, routed experts and shared experts of the MoE layers (plus any leading dense layers).

    Tokens spread evenly over experts: T*k assignments over E experts, so min(E, T*k) experts are
    touched (their weights are read) with T*k/touched tokens each, as one batched GEMM per matrix.
    ``adt`` (default ``dt``): the activations outside the matrix products (scenario ``activation_dtype``);
    ``qdt`` (default ``dt``): what an activation function feeding a GEMM writes (:func:`gemm_input_dtype`).
    ``w_up`` / ``w_down``: the up and the down projections' weight dtypes (``weight_dtypes`` roles ffn_up, ffn_down).
    """
    adt = adt or dt
    qdt = qdt or dt
    m = arch.moe
    h = arch.hidden
    L_moe = m.moe_layers(arch.layers)
    L_dense = arch.layers - L_moe  # the leading dense layers and, with every > 1, those between MoE layers
    up = 2 if gated else 1
    rows: list[dict[str, Any]] = []
    if L_dense:
        rows.extend(ops.weight_gemm("dense.ffn_up", T, up * arch.ffn, h, dtype=dt, weight_dtype=w_up, out_dtype=adt,
                                    count=L_dense))
        rows.append(ops.streaming("dense.ffn_act", kind="elementwise", elems=T * arch.ffn, inputs=up,
                                  flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM[act], dtype=adt, count=L_dense,
                                  fused=fe,
                                  write_bytes=quantized_write(T * arch.ffn, qdt)))
        rows.extend(ops.weight_gemm("dense.ffn_down", T, h, arch.ffn, dtype=dt, weight_dtype=w_down, out_dtype=adt,
                                    count=L_dense))
    rows.append(ops.gemm("moe.router", T, m.experts, h, dtype=dt, out_dtype=adt, count=L_moe))
    rows.append(ops.streaming("moe.router_softmax_topk", kind="softmax", elems=T * m.experts,
                              flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM["softmax"], dtype="fp32", count=L_moe))
    assignments = T * m.active
    touched = min(m.experts, assignments)
    tok = max(1, round(assignments / touched))
    f = m.expert_ffn
    rows.extend(ops.weight_gemm("moe.expert_up", tok, up * f, h, dtype=dt, weight_dtype=w_up, out_dtype=adt,
                                batch=touched, count=L_moe))
    rows.append(ops.streaming("moe.expert_act", kind="elementwise", elems=tok * touched * f, inputs=up,
                              flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM[act], dtype=adt, count=L_moe, fused=fe,
                              write_bytes=quantized_write(tok * touched * f, qdt)))
    rows.extend(ops.weight_gemm("moe.expert_down", tok, h, f, dtype=dt, weight_dtype=w_down, out_dtype=adt,
                                batch=touched, count=L_moe))
    rows.append(ops.streaming("moe.combine", kind="elementwise", elems=assignments * h, flops_per_elem=2.0,
                              dtype=adt, count=L_moe, fused=fe))
    if m.shared_experts:
        fs = f * m.shared_experts
        rows.extend(ops.weight_gemm("moe.shared_up", T, up * fs, h, dtype=dt, weight_dtype=w_up, out_dtype=adt,
                                    count=L_moe))
        rows.append(ops.streaming("moe.shared_act", kind="elementwise", elems=T * fs, inputs=up,
                                  flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM[act], dtype=adt, count=L_moe, fused=fe,
                                  write_bytes=quantized_write(T * fs, qdt)))
        rows.extend(ops.weight_gemm("moe.shared_down", T, h, fs, dtype=dt, weight_dtype=w_down, out_dtype=adt,
                                    count=L_moe))
    return rows


def mla_rows(arch: TransformerArch, sc: Scenario, B: int, T: int, q_len: int, kv_len: int, dt: str, wdt: str,
             kvdt: str, training: bool, wdt_out: str | None = None) -> list[dict[str, Any]]:
    """MLA in its inference form with the up-projections absorbed (DeepSeek-V2 Sec. 2.1.3): the KV
    cache holds only the latent (kv_lora_rank) and the shared RoPE key (qk_rope_head_dim) per token;
    attention runs as multi-query attention in the latent space (keys of width latent + rope, values of
    width latent), then each head's output is mapped back with its V up-projection. ``wdt``: the projections'
    weights (role qkv_proj), ``wdt_out`` (default ``wdt``): the output projection's (role out_proj)."""
    m, h, H, L = arch.mla, arch.hidden, arch.heads, arch.layers
    adt = sc.activation_dtype or dt
    dq = m.qk_nope_head_dim + m.qk_rope_head_dim
    lat = m.kv_lora_rank + m.qk_rope_head_dim
    rows: list[dict[str, Any]] = []
    rows.extend(ops.weight_gemm("layer.q_down", T, m.q_lora_rank, h, dtype=dt, weight_dtype=wdt, out_dtype=adt, count=L))
    rows.extend(ops.weight_gemm("layer.q_up", T, H * dq, m.q_lora_rank, dtype=dt, weight_dtype=wdt, out_dtype=adt, count=L))
    rows.extend(ops.weight_gemm("layer.kv_down", T, lat, h, dtype=dt, weight_dtype=wdt, out_dtype=adt, count=L))
    rows.extend(ops.weight_gemm("layer.q_absorb_uk", T, m.kv_lora_rank, m.qk_nope_head_dim, dtype=dt,
                                weight_dtype=wdt, out_dtype=adt, batch=H, count=L))
    rows.append(ops.streaming("layer.rope", kind="elementwise", elems=T * (H + 1) * m.qk_rope_head_dim,
                              flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM["rope"], dtype=adt, count=L,
                              fused=sc.fuse_elementwise))
    if not training:
        rows.append(ops.cache_write("layer.kv_cache_write", elems=T * lat, dtype=kvdt, count=L))
    rows.extend(ops.attention("layer.attention", batch=B, heads=H, kv_heads=1, q_len=q_len, kv_len=kv_len,
                              head_dim=lat, causal=arch.is_causal, dtype=sc.attention_dtype or dt, kv_dtype=kvdt,
                              fused=sc.fused_attention, count=L, fuse_elementwise=sc.fuse_elementwise,
                              kernel=sc.attention_kernel, gqa=sc.attention_gqa))
    rows.extend(ops.weight_gemm("layer.v_up", T, m.v_head_dim, m.kv_lora_rank, dtype=dt, weight_dtype=wdt,
                                out_dtype=adt, batch=H, count=L))
    rows.extend(ops.weight_gemm("layer.out_proj", T, h, H * m.v_head_dim, dtype=dt, weight_dtype=wdt_out or wdt,
                                out_dtype=adt, count=L))
    return rows


def attention_rows(arch: TransformerArch, sc: Scenario, B: int, q_len: int, kv_len: int,
                   local_kv: int | None = None) -> list[dict[str, Any]]:
    """The attention kernels of a layer stack: ``layer.attention`` over ``kv_len`` keys in the global layers and, in
    the local ones (``arch.window``, :meth:`TransformerArch.layer_split`), the blocks of :meth:`AttentionWindow.blocks`
    (``layer.attention_local``, causal blocks, and ``layer.attention_band``, the queries that see a whole sliding
    window). A decode step's local layers read :meth:`AttentionWindow.keys` of ``kv_len``, or ``local_kv`` where the
    caller gives the mean over a sequence's steps (serving, :func:`dse.workloads.serving.mean_read_context`).
    An unfused prefill computes every score and masks it, so its local layers cost what global ones do."""
    dt = sc.dtype
    H = arch.heads
    kw = {"batch": B, "heads": H, "kv_heads": arch.kv_heads or H, "head_dim": arch.head_dim or arch.hidden // H,
          "dtype": sc.attention_dtype or dt, "kv_dtype": sc.kv_dtype or dt, "fused": sc.fused_attention,
          "fuse_elementwise": sc.fuse_elementwise, "kernel": sc.attention_kernel, "gqa": sc.attention_gqa}
    n_global, n_local = arch.layer_split()
    if n_local and q_len > 1 and not sc.fused_attention:
        n_global, n_local = arch.layers, 0
    rows: list[dict[str, Any]] = []
    if n_global:
        rows += ops.attention("layer.attention", q_len=q_len, kv_len=kv_len, causal=arch.is_causal, count=n_global,
                              **kw)
    if n_local:
        win = arch.window
        if q_len == 1:
            blocks = [(1, int(win.keys(kv_len)) if local_kv is None else local_kv, True, 1)]
        else:
            blocks = win.blocks(q_len, kv_len)
        for q, k, causal, times in blocks:
            name = "layer.attention_local" if causal else "layer.attention_band"
            rows += ops.attention(name, q_len=q, kv_len=k, causal=causal, count=n_local, **{**kw, "batch": B * times})
    return rows


def dropout_row(name: str, elems: float, dt: str, count: int, fused: bool, into_add: bool = False) -> dict[str, Any]:
    """Training dropout over ``elems`` activations with a one-byte keep-mask (PyTorch's dropout mask
    is bool; the ``s*b*h`` / ``a*s^2*b`` mask terms of Korthikanti et al. 2022, Sec. 4.1). Megatron-LM
    applies it to the attention probabilities (its own kernel: read, write and the mask) and before
    each residual add, fused with the bias and the add (``bias_dropout_add_fused_train``: only the mask
    is extra traffic, ``into_add``) (Shoeybi et al. 2019, Sec. 3). The backward (``dse.workloads.training``)
    reads the gradient and the mask and writes the input gradient."""
    b = DTYPE_BYTES[dt]
    return ops.streaming(name, kind="elementwise", elems=elems, flops_per_elem=1.0, dtype=dt, count=count,
                         fused=fused, read_bytes=0.0 if into_add else elems * b,
                         write_bytes=elems * (1 if into_add else b + 1))


def weight_dtype_of(sc: Scenario, role: str) -> str:
    """The dtype the weights of ``role`` (:data:`dse.workloads.scenario.WeightRole`) are stored in: the scenario's
    ``weight_dtypes[role]``, else its ``weight_dtype``, else its ``dtype``."""
    return (sc.weight_dtypes or {}).get(role) or sc.weight_dtype or sc.dtype


def default_phase(arch: TransformerArch) -> str:
    return "decode" if arch.kind == "decoder" else "forward"


def build(arch: TransformerArch, sc: Scenario, name: str, local_kv: int | None = None
          ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Operator rows and resolved scenario facts for one transformer scenario: the input rows
    (:func:`_input_rows`), one layer's rows counted ``layers`` times (:func:`_layer_rows`), the output
    rows (:func:`_output_rows`) and, in training, the loss and the training step. ``local_kv``: the keys a decode
    step's local layers read (:func:`attention_rows`), where not their window's keys at ``context``."""
    phase, training = _phase(arch, sc, name)
    check_input_quant(sc)
    dt = sc.dtype
    B, h = sc.batch, arch.hidden
    H = arch.heads
    Hkv = arch.kv_heads or H
    d = arch.head_dim or h // H
    res, q_len, kv_len = _geometry(arch, sc, name, phase)
    if sc.kv_block and phase != "decode":
        raise ValueError(f"kv_block: got {sc.kv_block} for phase {phase}; accepted: only with phase decode or serving "
                         "(the decode attention's reads)")
    T = B * q_len
    rows: list[dict[str, Any]] = []
    rows += _input_rows(arch, sc, B, T, res)
    rows += _layer_rows(arch, sc, B, T, q_len, read_context(kv_len, sc.kv_block), training, local_kv)
    rows += _output_rows(arch, sc, phase, B, T)
    if sc.input_quant == "kernel":
        rows = ops.quantize_inputs(rows, dt, sc.activation_dtype or dt)
    params = _params(arch, H, Hkv, d) + _frontend_params(arch)
    if training:
        rows.append(ops.streaming("loss.softmax_xent", kind="softmax", elems=T * max(arch.vocab, arch.num_classes),
                                  flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM["softmax"], dtype="fp32"))
        rows = training_step(rows, params, dt, **step_kernels(sc))
    facts = {"phase": phase, "batch": B, "seq": q_len if phase != "decode" else None,
             "context": kv_len if phase == "decode" else None, "tokens": T, "params": params}
    if arch.moe is not None:
        facts["expert_params"] = _expert_params(arch)
    if sc.weight_dtypes:
        facts["weight_bytes"] = role_weight_bytes(rows, params, sc, arch)
    return rows, facts


def role_weight_bytes(rows: list[dict[str, Any]], params: float, sc: Scenario, arch: TransformerArch) -> float:
    """Bytes of the weights when roles keep dtypes of their own (``weight_dtypes``): ``params x b_w`` (``b_w`` the
    bytes of ``weight_dtype``) plus, for each forward weight GEMM stored in another dtype, its ``K N`` weights per
    matrix (every expert's, not only the touched ones) x its count x (its dtype's bytes - ``b_w``)."""
    base = sc.weight_dtype or sc.dtype
    wb = DTYPE_BYTES[base]
    total = params * wb
    for r in rows:
        name = str(r["name"])
        if r.get("held") != "weights" or r.get("reuse") != "tiled" or ".bwd" in name or r["dtype_b"] in ("", base):
            continue
        mats = arch.moe.experts if (arch.moe is not None and name.startswith("moe.expert_")) else r.get("batch", 1)
        total += float(r["K"]) * float(r["N"]) * mats * r["count"] * (DTYPE_BYTES[r["dtype_b"]] - wb)
    return total


def _phase(arch: TransformerArch, sc: Scenario, name: str) -> tuple[str, bool]:
    """The scenario's phase (default :func:`default_phase`) checked against the architecture kind, and
    whether it is training (dropout only there)."""
    phase = sc.phase or default_phase(arch)
    if arch.kind == "encoder" and phase not in ("forward", "training"):
        raise ValueError(f"{name} is an encoder; accepted phase: forward, training (got {phase})")
    if arch.kind == "decoder" and phase not in ("prefill", "decode", "training"):
        raise ValueError(f"{name} is a decoder; accepted phase: prefill, decode, training (got {phase})")
    training = phase == "training"
    if sc.dropout > 0 and not training:
        raise ValueError(f"dropout: got {sc.dropout} for phase {phase}; accepted: 0 (dropout runs in training only)")
    return phase, training


def _geometry(arch: TransformerArch, sc: Scenario, name: str, phase: str) -> tuple[int | None, int, int]:
    """Sequence geometry: the image resolution (patch models, else None), the query length (1 in
    decode) and the key/value length. Patch models: (resolution / patch)^2 tokens (+1 class token);
    audio front ends: the conv stack's output length (``conv_out`` per layer)."""
    res = None
    if arch.patch is not None:
        res = sc.resolution or arch.patch.image
        if res % arch.patch.patch:
            raise ValueError(f"{name}: resolution {res} not a multiple of patch {arch.patch.patch}")
        seq = (res // arch.patch.patch) ** 2 + (1 if arch.patch.cls_token else 0)
    elif arch.conv_frontend is not None:
        cf = arch.conv_frontend
        seq = sc.seq or cf.samples
        for k, st in zip(cf.kernels, cf.strides, strict=True):
            seq = ops.conv_out(seq, k, st, 0)
    elif arch.conformer is not None:
        frames = sc.seq or arch.conformer.frames
        seq = ops.conv_out(ops.conv_out(frames, 3, 2, 0), 3, 2, 0)
    else:
        seq = sc.seq or arch.default_seq
    if phase == "decode":
        q_len = 1
        kv_len = sc.context or arch.default_seq
    else:
        q_len = kv_len = seq
    if arch.max_seq and kv_len > arch.max_seq:
        raise ValueError(f"{'context' if phase == 'decode' else 'seq'}: got {kv_len} tokens; accepted: at most "
                         f"{name}'s max_seq {arch.max_seq}")
    return res, q_len, kv_len


def _input_rows(arch: TransformerArch, sc: Scenario, B: int, T: int, res: int | None) -> list[dict[str, Any]]:
    """The input block: patch embedding (a conv with stride = patch), Conformer subsampling (two
    stride-2 convs and a linear), a wav2vec-style conv feature encoder with its positional conv, or a
    token embedding lookup; then a learned position embedding added when the architecture has one."""
    dt, h, fe = sc.dtype, arch.hidden, sc.fuse_elementwise
    rows: list[dict[str, Any]] = []
    if arch.patch is not None:
        p = arch.patch
        row, _ = ops.conv2d("patch_embed", n=B, h=res, w=res, c_in=p.channels, c_out=h, k=p.patch,
                            stride=p.patch, pad=0, dtype=dt, bias=True)
        rows.append(row)
    elif arch.conformer is not None:
        cm = arch.conformer
        row, (h1, w1, _) = ops.conv2d("subsample.conv1", n=B, h=sc.seq or cm.frames, w=cm.mel_bins, c_in=1, c_out=h,
                                      k=3, stride=2, pad=0, dtype=dt, bias=True)
        row2, (h2, w2, _) = ops.conv2d("subsample.conv2", n=B, h=h1, w=w1, c_in=h, c_out=h, k=3, stride=2, pad=0,
                                       dtype=dt, bias=True)
        rows += [row, row2, ops.gemm("subsample.linear", B * h2, h, h * w2, dtype=dt)]
    elif arch.conv_frontend is not None:
        cf = arch.conv_frontend
        length, c_in = sc.seq or cf.samples, 1
        for j, (k, st) in enumerate(zip(cf.kernels, cf.strides, strict=True)):
            row, length = ops.conv1d(f"feature.conv{j}", n=B, length=length, c_in=c_in, c_out=cf.channels, k=k,
                                     stride=st, pad=0, dtype=dt)
            rows += [row, ops.streaming(f"feature.gelu{j}", kind="elementwise", elems=B * length * cf.channels,
                                        flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM["gelu"], dtype=dt, fused=fe)]
            c_in = cf.channels
        rows.append(ops.gemm("feature.projection", B * length, h, cf.channels, dtype=dt))
        row, _ = ops.conv1d("pos_conv", n=B, length=length, c_in=h, c_out=h, k=cf.pos_conv_kernel,
                            groups=cf.pos_conv_groups, dtype=dt)
        rows.append(row)
    else:
        rows.append(ops.embedding("embed.tokens", tokens=T, dim=h, dtype=sc.activation_dtype or dt))
    if arch.position == "learned":
        rows.append(ops.streaming("embed.position", kind="elementwise", elems=T * h, inputs=2,
                                  flops_per_elem=1.0, dtype=sc.activation_dtype or dt, fused=fe))
    return rows


def _layer_rows(arch: TransformerArch, sc: Scenario, B: int, T: int, q_len: int, kv_len: int, training: bool,
                local_kv: int | None = None) -> list[dict[str, Any]]:
    """One layer's rows with ``count = layers``: norm, attention (QKV, RoPE, KV-cache write, attention,
    output projection; or MLA, :func:`mla_rows`), residual, norm, the Conformer conv module, the FFN
    (or MoE, :func:`moe_rows`), residual; dropout rows in training when ``dropout > 0``. A ``parallel_block``
    layer feeds the FFN from the same norm as the attention and adds both to the residual in one add of three
    inputs: no ``residual1`` and ``norm2``."""
    dt = sc.dtype
    adt = sc.activation_dtype or dt  # between kernels
    qdt = gemm_input_dtype(sc)  # what a GEMM input's producer writes: dt (quantized on write) or adt (input_quant)
    kvdt = sc.kv_dtype or dt
    h, L = arch.hidden, arch.layers
    H = arch.heads
    Hkv = arch.kv_heads or H
    d = arch.head_dim or h // H
    fe = sc.fuse_elementwise
    eager = sc.execution == "eager"
    rows: list[dict[str, Any]] = []

    def vec(nm: str, kind: str, elems: float, fn: str, inputs: float = 1.0) -> dict[str, Any]:
        if kind == "norm":
            return norm_row(f"layer.{nm}", elems, fn, adt, L, fe, out_dt=qdt, eager=eager)
        return ops.streaming(f"layer.{nm}", kind=kind, elems=elems, inputs=inputs,
                             flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM[fn], dtype=adt, count=L, fused=fe)

    rows.append(vec("norm1", "norm", T * h, arch.norm))
    if arch.mla is not None:
        rows.extend(mla_rows(arch, sc, B, T, q_len, kv_len, dt, weight_dtype_of(sc, "qkv_proj"), kvdt, training,
                             wdt_out=weight_dtype_of(sc, "out_proj")))
    else:
        rows.extend(ops.weight_gemm("layer.qkv_proj", T, (H + 2 * Hkv) * d, h, dtype=dt,
                                    weight_dtype=weight_dtype_of(sc, "qkv_proj"),
                                    out_dtype=adt, count=L))
        if arch.position == "rope":
            rows.append(vec("rope", "elementwise", T * (H + Hkv) * d, "rope"))
        if arch.kind == "decoder" and not training:
            rows.append(ops.cache_write("layer.kv_cache_write", elems=T * 2 * Hkv * d, dtype=kvdt, count=L))
        rows.extend(attention_rows(arch, sc, B, q_len, kv_len, local_kv))
        if training and sc.dropout > 0 and not sc.fused_attention:
            rows.append(dropout_row("layer.attention.dropout", B * H * q_len * kv_len, dt, L, fe))
        rows.extend(ops.weight_gemm("layer.out_proj", T, h, H * d, dtype=dt, weight_dtype=weight_dtype_of(sc, "out_proj"),
                                    out_dtype=adt, count=L))
    if training and sc.dropout > 0:
        rows.append(dropout_row("layer.dropout1", T * h, adt, L, fe, into_add=True))
    if not arch.parallel_block:
        rows.append(vec("residual1", "elementwise", T * h, "add", inputs=2))
        rows.append(vec("norm2", "norm", T * h, arch.norm))
    gated = arch.activation in ("swiglu", "geglu")
    act = "swiglu" if gated else arch.activation
    if arch.conformer is not None:
        k = arch.conformer.conv_kernel
        rows += [vec("conv_norm", "norm", T * h, "layernorm"),
                 ops.gemm("layer.conv_pw1", T, 2 * h, h, dtype=dt, count=L),
                 vec("conv_glu", "elementwise", T * h, "sigmoid", inputs=2),
                 ops.streaming("layer.conv_depthwise", kind="conv", elems=T * h, flops_per_elem=2.0 * k, dtype=dt, count=L),
                 vec("conv_bn", "norm", T * h, "batchnorm"), vec("conv_swish", "elementwise", T * h, "silu"),
                 ops.gemm("layer.conv_pw2", T, h, h, dtype=dt, count=L),
                 vec("conv_residual", "elementwise", T * h, "add", 2)]
    ffn_count = 2 * L if arch.conformer is not None else L  # macaron: two half-step FFNs per Conformer block
    if arch.moe is None:
        rows.extend(ops.weight_gemm("layer.ffn_up", T, (2 if gated else 1) * arch.ffn, h, dtype=dt,
                                    weight_dtype=weight_dtype_of(sc, "ffn_up"),
                                    out_dtype=adt, count=ffn_count))
        rows.append(ffn_act_row(T * arch.ffn, act, gated, adt, ffn_count, fe, eager, qdt))
        rows.extend(ops.weight_gemm("layer.ffn_down", T, h, arch.ffn, dtype=dt,
                                    weight_dtype=weight_dtype_of(sc, "ffn_down"), out_dtype=adt, count=ffn_count))
    else:
        rows.extend(moe_rows(arch, T, dt, weight_dtype_of(sc, "ffn_up"), weight_dtype_of(sc, "ffn_down"), gated,
                             act, fe, adt, qdt))
    if training and sc.dropout > 0:
        rows.append(dropout_row("layer.dropout2", T * h, adt, L, fe, into_add=True))
    rows.append(vec("residual2", "elementwise", T * h, "add", inputs=3 if arch.parallel_block else 2))
    return rows


def _output_rows(arch: TransformerArch, sc: Scenario, phase: str, B: int, T: int) -> list[dict[str, Any]]:
    """The output block: final norm, then the LM head (every token in decode/training or with
    ``logits: all``, else the last token of each sequence) or the classifier (one row per sequence)."""
    dt, h, fe = sc.dtype, arch.hidden, sc.fuse_elementwise
    adt = sc.activation_dtype or dt
    wdt = weight_dtype_of(sc, "lm_head")
    rows = [norm_row("final_norm", T * h, arch.norm, adt, 1, fe, out_dt=gemm_input_dtype(sc),
                     eager=sc.execution == "eager")]
    if arch.head == "lm":
        m = T if (phase in ("decode", "training") or sc.logits == "all") else B
        rows.extend(ops.weight_gemm("lm_head", m, arch.vocab, h, dtype=dt, weight_dtype=wdt, out_dtype=adt))
    elif arch.head == "classifier":
        rows.append(ops.gemm("classifier", B, arch.num_classes, h, dtype=dt, out_dtype=adt))
    return rows


def _frontend_params(arch: TransformerArch) -> int:
    """Weights outside :func:`_params`: the patch embedding, the Conformer subsampling and conv modules,
    the conv feature encoder with its positional conv, and the classifier."""
    h = arch.hidden
    gated = arch.activation in ("swiglu", "geglu")
    params = 0
    if arch.patch is not None:
        params += h * arch.patch.channels * arch.patch.patch**2
    if arch.conformer is not None:
        cm = arch.conformer
        w2 = ops.conv_out(ops.conv_out(cm.mel_bins, 3, 2, 0), 3, 2, 0)
        params += 9 * h + 9 * h * h + 2 * h + h * w2 * h
        params += arch.layers * (2 * h * h + h * cm.conv_kernel + h * h + 6 * h + (3 if gated else 2) * h * arch.ffn)
    if arch.conv_frontend is not None:
        cf = arch.conv_frontend
        c_prev = 1
        for k in cf.kernels:
            params += cf.channels * c_prev * k
            c_prev = cf.channels
        params += cf.channels * h + h * (h // cf.pos_conv_groups) * cf.pos_conv_kernel
    if arch.head == "classifier":
        params += h * arch.num_classes
    return params


def _params(arch: TransformerArch, H: int, Hkv: int, d: int) -> int:
    """Weight count (matrices, embeddings, norms; biases ignored)."""
    h = arch.hidden
    gated = arch.activation in ("swiglu", "geglu")
    mats = 3 if gated else 2
    norms = h if arch.parallel_block else 2 * h  # the layer's norm weights
    attn = h * (H + 2 * Hkv) * d + H * d * h + norms
    if arch.mla is not None:
        m = arch.mla
        attn = (h * m.q_lora_rank + m.q_lora_rank * H * (m.qk_nope_head_dim + m.qk_rope_head_dim)
                + h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank * H * (m.qk_nope_head_dim + m.v_head_dim)
                + H * m.v_head_dim * h + norms + m.q_lora_rank + m.kv_lora_rank)
    if arch.moe is None:
        total = arch.layers * (attn + mats * h * arch.ffn) + h
    else:
        m = arch.moe
        shared_and_router = m.shared_experts * mats * h * m.expert_ffn + h * m.experts  # per MoE layer
        L_moe = m.moe_layers(arch.layers)
        total = (arch.layers * attn + (arch.layers - L_moe) * mats * h * arch.ffn
                 + L_moe * shared_and_router + _expert_params(arch) + h)
    return int(total + vocab_params(arch))


def _expert_params(arch: TransformerArch) -> int:
    """The routed experts' weight matrices among :func:`_params` (0 without experts; the router and the shared
    experts are replicated like the dense layers): the part expert parallelism shards, so its data-parallel replicas
    are fewer than the dense part's."""
    if arch.moe is None:
        return 0
    m = arch.moe
    mats = 3 if arch.activation in ("swiglu", "geglu") else 2
    return int(m.moe_layers(arch.layers) * m.experts * mats * arch.hidden * m.expert_ffn)


def vocab_params(arch: TransformerArch) -> int:
    """The vocabulary matrices' weights, ``vocab x hidden`` for the embedding and as much again for an untied LM
    head (a tied one, or a classifier model, holds the embedding only)."""
    return arch.vocab * arch.hidden * (2 if arch.head == "lm" and not arch.tied_embeddings else 1) if arch.vocab else 0


class AudioFrontEnd(Strict):
    """Whisper's encoder stem (Radford et al. 2022, Sec. 2.2): two 1-D convolutions (k=3) over the
    log-mel frames, the second with stride 2 (3000 frames -> 1500 tokens)."""

    mel_bins: int = Field(80, gt=0, le=MAX_WIDTH)
    frames: int = Field(3000, gt=0, le=MAX_TOKENS)


class EncDecArch(Strict):
    """Encoder-decoder transformer (T5, Whisper): the encoder runs once per input (``prefill``), the
    decoder runs one token per step (``decode``) with self-attention over its KV cache and
    cross-attention over the cached encoder keys and values."""

    encoder_layers: int = Field(gt=0, le=MAX_LAYERS)
    decoder_layers: int = Field(gt=0, le=MAX_LAYERS)
    hidden: int = Field(gt=0, le=MAX_WIDTH)
    heads: int = Field(gt=0, le=MAX_HEADS)
    head_dim: int | None = Field(None, gt=0, le=MAX_HEAD_DIM)
    ffn: int = Field(gt=0, le=MAX_FFN)
    activation: Literal["gelu", "relu", "swiglu", "geglu"]
    norm: Literal["layernorm", "rmsnorm"]
    vocab: int = Field(gt=0, le=MAX_VOCAB)
    tied_embeddings: bool = True
    audio: AudioFrontEnd | None = None
    default_seq: int = Field(512, gt=0, le=MAX_TOKENS, description="Encoder input tokens (text models)")
    max_decoder_seq: int = Field(512, gt=0, le=MAX_TOKENS)


def _block(prefix: str, T: int, B: int, q: int, kv: int, h: int, H: int, d: int, ffn: int, act: str, norm: str,
           dt: str, count: int, causal: bool, fused: bool, fe: bool, cross_len: int = 0, eager: bool = False
           ) -> list[dict[str, Any]]:
    """One pre-norm block: self-attention, optional cross-attention over ``cross_len`` cached encoder
    tokens, FFN; residuals and norms as streaming rows (an ``eager`` step's RMSNorm and gated activation as their
    PyTorch kernels, :func:`norm_row`, :func:`ffn_act_row`)."""
    def vec(nm: str, kind: str, elems: float, fn: str, inputs: float = 1.0) -> dict[str, Any]:
        if kind == "norm":
            return norm_row(f"{prefix}.{nm}", elems, fn, dt, count, fe, eager=eager)
        return ops.streaming(f"{prefix}.{nm}", kind=kind, elems=elems, inputs=inputs,
                             flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM[fn], dtype=dt, count=count, fused=fe)

    gated = act in ("swiglu", "geglu")
    rows = [vec("norm1", "norm", T * h, norm), ops.gemm(f"{prefix}.qkv_proj", T, 3 * H * d, h, dtype=dt, count=count)]
    rows += ops.attention(f"{prefix}.self_attn", batch=B, heads=H, kv_heads=H, q_len=q, kv_len=kv, head_dim=d,
                          causal=causal, dtype=dt, fused=fused, count=count, fuse_elementwise=fe)
    rows += [ops.gemm(f"{prefix}.out_proj", T, h, H * d, dtype=dt, count=count),
             vec("residual1", "elementwise", T * h, "add", 2)]
    if cross_len:
        rows += [vec("norm_x", "norm", T * h, norm), ops.gemm(f"{prefix}.cross_q", T, H * d, h, dtype=dt, count=count)]
        rows += ops.attention(f"{prefix}.cross_attn", batch=B, heads=H, kv_heads=H, q_len=q, kv_len=cross_len,
                              head_dim=d, causal=False, dtype=dt, fused=fused, count=count, fuse_elementwise=fe)
        rows += [ops.gemm(f"{prefix}.cross_out", T, h, H * d, dtype=dt, count=count),
                 vec("residual_x", "elementwise", T * h, "add", 2)]
    rows += [vec("norm2", "norm", T * h, norm),
             ops.gemm(f"{prefix}.ffn_up", T, (2 if gated else 1) * ffn, h, dtype=dt, count=count),
             ffn_act_row(T * ffn, "swiglu" if gated else act, gated, dt, count, fe, eager, name=f"{prefix}.ffn_act"),
             ops.gemm(f"{prefix}.ffn_down", T, h, ffn, dtype=dt, count=count),
             vec("residual2", "elementwise", T * h, "add", 2)]
    return rows


def build_encdec(arch: EncDecArch, sc: Scenario, name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``prefill``: the encoder over the input plus the cross-attention K/V of every decoder layer;
    ``decode``: one decoder step over ``context`` generated tokens and the cached encoder output."""
    phase = sc.phase or "decode"
    if phase not in ("prefill", "decode", "training"):
        raise ValueError(f"{name} is an encoder-decoder; accepted phase: prefill, decode, training (got {phase})")
    B, h, H, dt = sc.batch, arch.hidden, arch.heads, sc.dtype
    d = arch.head_dim or h // H
    fe, fused, eager = sc.fuse_elementwise, sc.fused_attention, sc.execution == "eager"
    S = arch.audio.frames // 2 if arch.audio else (sc.seq or arch.default_seq)
    rows: list[dict[str, Any]] = []
    if phase in ("prefill", "training"):
        if arch.audio:
            a = arch.audio
            r1, n1 = ops.conv1d("audio.conv1", n=B, length=a.frames, c_in=a.mel_bins, c_out=h, k=3, dtype=dt)
            r2, _ = ops.conv1d("audio.conv2", n=B, length=n1, c_in=h, c_out=h, k=3, stride=2, dtype=dt)
            rows += [r1, ops.streaming("audio.gelu1", kind="elementwise", elems=B * n1 * h, flops_per_elem=8, dtype=dt,
                                       fused=fe), r2]
        else:
            rows.append(ops.embedding("encoder.embed", tokens=B * S, dim=h, dtype=dt))
        rows += _block("encoder", B * S, B, S, S, h, H, d, arch.ffn, arch.activation, arch.norm, dt,
                       arch.encoder_layers, False, fused, fe, eager=eager)
        rows.append(ops.gemm("decoder.cross_kv_proj", B * S, 2 * H * d, h, dtype=dt, count=arch.decoder_layers))
    if phase in ("decode", "training"):
        ctx = sc.context or 1 if phase == "decode" else min(arch.max_decoder_seq, sc.seq or arch.max_decoder_seq)
        q = 1 if phase == "decode" else ctx
        T = B * q
        rows.append(ops.embedding("decoder.embed", tokens=T, dim=h, dtype=dt))
        if phase == "decode":
            rows.append(ops.cache_write("decoder.kv_cache_write", elems=T * 2 * H * d, dtype=dt,
                                        count=arch.decoder_layers))
        rows += _block("decoder", T, B, q, ctx, h, H, d, arch.ffn, arch.activation, arch.norm, dt,
                       arch.decoder_layers, True, fused, fe, cross_len=S, eager=eager)
        rows.append(ops.gemm("lm_head", T, arch.vocab, h, dtype=dt))
    gated = arch.activation in ("swiglu", "geglu")
    ffn_w = (3 if gated else 2) * h * arch.ffn
    enc = arch.encoder_layers * (4 * h * H * d + ffn_w + 2 * h)
    dec = arch.decoder_layers * (8 * h * H * d + ffn_w + 3 * h)
    params = enc + dec + arch.vocab * h * (1 if arch.tied_embeddings else 2)
    if arch.audio:
        params += 3 * arch.audio.mel_bins * h + 3 * h * h
    if phase == "training":
        rows = training_step(rows, params, dt, **step_kernels(sc))
    return rows, {"phase": phase, "batch": B, "seq": S, "context": sc.context if phase == "decode" else None,
                  "params": int(params)}


class SwinArch(Strict):
    """Swin Transformer (Liu et al., ICCV 2021): a 4x4 patch embedding, four stages of blocks with
    (shifted) window attention over ``window`` x ``window`` tokens, patch merging between stages
    (2x2 neighbours concatenated, LayerNorm, linear 4C -> 2C), global pool and a classifier."""

    embed_dim: int = Field(gt=0, le=MAX_WIDTH)
    depths: list[Annotated[int, Field(gt=0, le=MAX_LAYERS)]] = Field(min_length=1, description="Blocks per stage")
    heads: list[Annotated[int, Field(gt=0, le=MAX_HEADS)]] = Field(min_length=1, description="Heads per stage")
    window: int = Field(7, gt=0, le=MAX_KERNEL)
    patch: int = Field(4, gt=0, le=MAX_KERNEL)
    image: int = Field(224, gt=0, le=MAX_RESOLUTION)
    mlp_ratio: int = Field(4, gt=0, le=MAX_RATIO)
    num_classes: int = Field(1000, gt=0, le=MAX_VOCAB)


def build_swin(arch: SwinArch, sc: Scenario, name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if sc.phase not in (None, "forward", "training"):
        raise ValueError(f"{name} is an image model; accepted phase: forward, training (got {sc.phase})")
    if len(arch.depths) != len(arch.heads):
        raise ValueError(f"{name}: depths and heads must have the same length")
    B, dt, fe = sc.batch, sc.dtype, sc.fuse_elementwise
    res = sc.resolution or arch.image
    rows: list[dict[str, Any]] = []
    row, (hh, ww, c) = ops.conv2d("patch_embed", n=B, h=res, w=res, c_in=3, c_out=arch.embed_dim, k=arch.patch,
                                  stride=arch.patch, pad=0, dtype=dt, bias=True)
    rows.append(row)
    params = 3 * arch.embed_dim * arch.patch**2 + 3 * arch.embed_dim
    for s, (depth, H) in enumerate(zip(arch.depths, arch.heads, strict=True)):
        if s:
            T4 = B * (hh // 2) * (ww // 2)
            rows.append(ops.streaming(f"s{s}.merge_norm", kind="norm", elems=T4 * 4 * c, dtype=dt, fused=fe,
                                      flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM["layernorm"]))
            rows.append(ops.gemm(f"s{s}.merge_reduce", T4, 2 * c, 4 * c, dtype=dt))
            params += 8 * c * c + 8 * c
            hh, ww, c = hh // 2, ww // 2, 2 * c
        T = B * hh * ww
        win = min(arch.window, hh) ** 2
        n_win = B * (hh * ww) // win
        d = c // H

        def vec(nm: str, kind: str, fn: str, inputs: float = 1.0, s: int = s, T: int = T, c: int = c,
                depth: int = depth) -> dict[str, Any]:
            return ops.streaming(f"s{s}.{nm}", kind=kind, elems=T * c, inputs=inputs, count=depth, dtype=dt, fused=fe,
                                 flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM[fn])

        rows += [vec("norm1", "norm", "layernorm"), ops.gemm(f"s{s}.qkv", T, 3 * c, c, dtype=dt, count=depth)]
        rows += ops.attention(f"s{s}.window_attn", batch=n_win, heads=H, kv_heads=H, q_len=win, kv_len=win, head_dim=d,
                              causal=False, dtype=dt, fused=sc.fused_attention, count=depth, fuse_elementwise=fe,
                              kernel=sc.attention_kernel)
        rows += [ops.gemm(f"s{s}.proj", T, c, c, dtype=dt, count=depth), vec("residual1", "elementwise", "add", 2),
                 vec("norm2", "norm", "layernorm"),
                 ops.gemm(f"s{s}.mlp_up", T, arch.mlp_ratio * c, c, dtype=dt, count=depth),
                 ops.streaming(f"s{s}.gelu", kind="elementwise", elems=T * arch.mlp_ratio * c, count=depth, dtype=dt,
                               fused=fe, flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM["gelu"]),
                 ops.gemm(f"s{s}.mlp_down", T, c, arch.mlp_ratio * c, dtype=dt, count=depth),
                 vec("residual2", "elementwise", "add", 2)]
        params += depth * (4 * c * c + 4 * c + 2 * arch.mlp_ratio * c * c + arch.mlp_ratio * c + c + 4 * c
                           + (2 * arch.window - 1) ** 2 * H)
    rows.append(ops.streaming("norm", kind="norm", elems=B * hh * ww * c, dtype=dt, fused=fe,
                              flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM["layernorm"]))
    rows.append(ops.streaming("avgpool", kind="pool", elems=B * c, flops_per_elem=hh * ww, dtype=dt,
                              read_bytes=B * hh * ww * c * ops.DTYPE_BYTES[dt]))
    rows.append(ops.gemm("head", B, arch.num_classes, c, dtype=dt))
    params += 2 * c + c * arch.num_classes + arch.num_classes
    if sc.phase == "training":
        rows = training_step(rows, params, dt, **step_kernels(sc))
    return rows, {"phase": sc.phase or "forward", "batch": B, "resolution": res, "params": int(params)}
