"""Scenario: how a model is run (phase, batch, sequence or resolution, dtypes, fusion)."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, field_validator

from dse.limits import MAX_BATCH, MAX_FFN, MAX_RESOLUTION, MAX_TOKENS
from dse.strict import Strict
from dse.units import Dtype, GemmKernel
from dse.workloads.ops import AttentionGqa, AttentionKernel, InputQuant, Residency
from dse.workloads.training import GradDtype, OptimizerDtype, OptimizerKernel, WeightCast, ZeroGrad

Phase = Literal["forward", "prefill", "decode", "training", "serving"]
#: the weight matrices of a transformer a scenario may store in a dtype of their own (``weight_dtypes``): the
#: attention's input and output projections, the MLP's up (and gate) and down projections (dense or expert) and
#: the LM head; tt-metal's TensorGroups FF1_FF3, FF2, WQKV and WO are such roles
WeightRole = Literal["qkv_proj", "out_proj", "ffn_up", "ffn_down", "lm_head"]

#: physical ranges of a scenario (beyond them counts overflow and no real deployment runs): MAX_BATCH sequences or
#: images per pass, MAX_TOKENS tokens of sequence or KV cache, MAX_RESOLUTION pixels per image side (dse.limits,
#: docs/limits.md), imported from here by dse.config


class Scenario(Strict):
    """One way to run a model. The same model at another scenario is another workload entry.

    * ``forward``: one inference pass (CNNs, encoders, ViTs); ``prefill``: a decoder LLM ingests a
      prompt of ``seq`` tokens; ``decode``: one new token per sequence against a KV cache of
      ``context`` tokens; ``training``: one training step (forward over ``seq`` tokens or the image,
      backward, AdamW update; ``dse.workloads.training``); ``serving``: continuous batching of
      ``batch`` sequences with ``input_len`` prompt and ``output_len`` generated tokens, optionally
      chunked prefill of ``chunk`` tokens (``dse.workloads.serving``).
    """

    phase: Phase | None = Field(None, description="forward | prefill | decode | training | serving (default: the model's)")
    batch: int = Field(1, gt=0, le=MAX_BATCH, description="Sequences or images per pass")
    seq: int | None = Field(None, gt=0, le=MAX_TOKENS,
                            description="Tokens per sequence (forward, prefill, training; an encoder-decoder's "
                            "decode: its encoder input). Given for another phase: an error")
    context: int | None = Field(None, gt=0, le=MAX_TOKENS,
                                description="KV-cache length in tokens (decode only: given for another phase, an error)")
    input_len: int | None = Field(None, gt=0, le=MAX_TOKENS, description="Serving: prompt tokens per request "
                                  "(serving only: given for another phase, an error)")
    output_len: int | None = Field(None, gt=0, le=MAX_TOKENS, description="Serving: generated tokens per request "
                                   "(serving only: given for another phase, an error)")
    chunk: int | None = Field(None, gt=0, le=MAX_TOKENS, description="Serving: chunked prefill, prompt tokens per "
                              "iteration (default: whole prompts)")
    serving_engine: str | None = Field(None, min_length=1, description="Serving, prefill or decode: engine whose "
                                       "host time per step is charged (workloads/engines/NAME.yaml; default none)")
    resolution: int | None = Field(None, gt=0, le=MAX_RESOLUTION, description="Image side in pixels (CNN/ViT)")
    dtype: Dtype = Field("bf16", description="Activations and weights")
    weight_dtype: Dtype | None = Field(None, description="Weights (default: dtype); narrower = weight-only quantization")
    weight_dtypes: dict[WeightRole, Dtype] | None = Field(
        None, description="Per weight role, the dtype that role's weights are stored in, overriding weight_dtype: "
        "a mapping or 'role=dtype,role=dtype' (roles qkv_proj, out_proj, ffn_up, ffn_down, lm_head), e.g. "
        "tt-metal's performance precision: ffn_up=bfp4 beside weight_dtype=bfp8")
    weight_group: int | None = Field(None, gt=0, le=MAX_FFN, description="Weight-only quantization: weights per scale group "
                                     "along K (e.g. 128; default one group per column, per-channel scales)")
    kv_dtype: Dtype | None = Field(None, description="KV cache (default: dtype)")
    kv_block: int | None = Field(
        None, gt=0, le=MAX_TOKENS, description="Decode: the attention reads the KV cache in whole blocks of this many "
        "tokens, up to the first multiple at or above the context (optimum-habana's --bucket_internal reads up to the "
        "next multiple of --bucket_size; a paged cache reads whole pages). Default: exactly the context")
    attention_dtype: Dtype | None = Field(None, description="The attention kernel's matrix products (default: "
                                          "dtype), e.g. fp16 where FP8 GEMMs keep an fp16 attention")
    activation_dtype: Dtype | None = Field(
        None, description="Activations between kernels: the residual stream, norms, activation functions and the "
        "GEMMs' outputs (default: dtype). FP8 inference engines keep them in 16 bits (e.g. fp16 beside fp8 GEMMs) and "
        "quantize each GEMM's input inside the kernel that writes it or in a kernel of its own (input_quant)")
    input_quant: InputQuant = Field(
        "producer", description="With activation_dtype wider than dtype, who quantizes each GEMM's input: producer "
        "(the norm or activation function that writes it: TensorRT, TransformerEngine) or kernel (a quantize kernel "
        "of its own before each GEMM: vLLM's apply_fp8_linear)")
    fused_attention: bool = Field(True, description="Flash-style attention (no score matrix in DRAM)")
    attention_kernel: AttentionKernel = Field(
        "auto", description="Fused attention kernel: whole_row (TensorRT's fused MHA, one CTA per head and "
        "sequence, whole score rows), flash (a CTA per 128-query tile, online softmax), auto (whole_row up to 512 "
        "keys, else flash)")
    attention_gqa: AttentionGqa = Field(
        "grouped", description="How the attention kernels serve the query heads that share a KV head (GQA/MQA): "
        "grouped (one CTA holds them together and reads the KV head once: FlashAttention-2, FlashInfer, TensorRT-LLM's "
        "XQA), per_head (a CTA per query head: TensorRT-LLM's masked MHA generation kernel without XQA)")
    gemm_kernel: GemmKernel = Field(
        "auto", description="How the GEMM kernels cover their output tiles: one_tile (a CTA per tile, its epilogue "
        "after its mainloop with the matrix unit idle), persistent (the epilogue overlaps the next tile's mainloop), "
        "auto (the template's compute.matrix.gemm_kernel)")
    fuse_elementwise: bool = Field(False, description="Norms/activations/adds fused into producers")
    residency: Residency = Field(
        "auto", description="Which tensors may stay in a shared on-chip level between operators and across steps "
        "(dse.predict.traffic): auto (activations and the weights and KV cache that fit), none (every operator's "
        "tensors to and from main memory), weights (the weights and KV cache only), activations (activations only)")
    logits: Literal["last", "all"] = Field("last", description="Prefill: LM head on last token or all (prefill "
                                           "only: given for another phase, an error)")
    dropout: float = Field(0.0, ge=0.0, lt=1.0, description="Training: dropout probability (Megatron GPT: 0.1) on "
                           "the attention probabilities and after the attention and MLP blocks; 0 = no dropout ops")
    memory_format: Literal["nhwc", "nchw"] = Field(
        "nhwc", description="CNN activation layout: nhwc (channels last, the tensor-core layout) or nchw (PyTorch's "
        "default): tensor-core convolutions transpose an nchw input to nhwc and the output back")
    execution: Literal["graph", "eager"] = Field(
        "graph", description="graph: operators launched from a captured graph (CUDA graph, XLA), the template's "
        "launch overhead only; eager: every unfused operator is dispatched by the host framework one at a time, "
        "so it takes at least the template's eager_overhead_us")
    framework: str | None = Field(
        None, min_length=1, description="Training: the framework whose way of running the step sets the defaults of "
        "execution, fuse_elementwise, weight_cast, optimizer, zero_grad, optimizer_dtype and grad_dtype "
        "(workloads/frameworks/NAME.yaml: "
        "pytorch-eager, pytorch-compile, megatron, xla); a field given beside it wins (default none: the fields' "
        "own defaults)")
    weight_cast: WeightCast = Field(
        "none", description="Training: none (the optimizer writes a low-precision weight copy, Megatron-style) or "
        "kernel (PyTorch autocast: each fp32 weight cast to dtype before every forward GEMM, its gradient cast back)")
    optimizer: OptimizerKernel = Field(
        "fused", description="Training: the AdamW kernels, fused (one multi-tensor kernel: apex FusedAdam, "
        "torch fused=True) or foreach (torch.optim.AdamW's default: eight passes over the parameters)")
    zero_grad: ZeroGrad = Field(
        "memset", description="Training: the gradient buffer each step, memset (zeroed: Megatron-LM) or none (freed: "
        "PyTorch set_to_none, JAX)")
    optimizer_dtype: OptimizerDtype = Field(
        "fp32", description="Training: the optimizer state, fp32 (mixed precision: fp32 master weights and moments, "
        "12 bytes per parameter) or bf16 (pure bf16 training, torchtune's: bf16 parameters and moments, no master "
        "copy, 4 bytes per parameter; needs dtype bf16 and weight_cast none)")
    grad_dtype: GradDtype = Field(
        "auto", description="Training: the gradients the step keeps and its data-parallel reduction moves, auto "
        "(fp32 for a bf16 or fp8 mixed-precision step, Megatron-LM's rule; the parameters' dtype under autocast or pure "
        "bf16; fp16 for fp16: dse.workloads.training.gradient_dtype) or fp32, bf16, fp16")

    @field_validator("weight_dtypes", mode="before")
    @classmethod
    def _roles_text(cls, v: Any) -> Any:
        return weight_roles(v)


def weight_roles(v: Any) -> Any:
    """``"ffn_up=bfp4,lm_head=bfp8"`` (the CLI's and a validation row's form) -> the ``weight_dtypes`` mapping; an
    empty one: None; a mapping as it is (its keys and values checked by the field's type)."""
    if isinstance(v, str):
        out: dict[str, str] = {}
        for item in filter(None, (x.strip() for x in v.split(","))):
            role, sep, dt = (x.strip() for x in item.partition("="))
            if not sep or role not in get_args(WeightRole) or dt not in get_args(Dtype) or role in out:
                raise ValueError(f"accepted: role=dtype items, each role once (roles {', '.join(get_args(WeightRole))}; "
                                 f"dtypes {', '.join(get_args(Dtype))}), not {item!r}")
            out[role] = dt
        return out or None
    return v or None
