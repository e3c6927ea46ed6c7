"""Transformer family: encoders (BERT, ViT) and decoder LLMs (GPT-2, LLaMA) with GQA and KV cache.

Per layer (Vaswani et al. 2017; pre-norm as in GPT-2/LLaMA): norm, QKV projection, (RoPE),
attention, output projection, residual add, norm, FFN (gated for SwiGLU/GeGLU, Shazeer 2020),
residual add. Matrix FLOPs per layer for ``T`` tokens reduce to the Megatron count
``24*T*h^2 + 4*T*S*h`` for a standard encoder with ffn = 4h (Narayanan et al. 2021, appendix).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from dse.hardware.schema import Strict
from dse.workloads import ops
from dse.workloads.scenario import Scenario
from dse.workloads.training import training_step


class PatchEmbed(Strict):
    """ViT input: a ``patch x patch`` stride-``patch`` conv over the image, plus a class token."""

    image: int = Field(gt=0, description="Default image side, pixels")
    patch: int = Field(gt=0)
    channels: int = Field(3, gt=0)
    cls_token: bool = True


class TransformerArch(Strict):
    kind: Literal["encoder", "decoder"]
    layers: int = Field(gt=0)
    hidden: int = Field(gt=0)
    heads: int = Field(gt=0)
    kv_heads: int | None = Field(None, gt=0, description="GQA/MQA key-value heads (default: heads)")
    head_dim: int | None = Field(None, gt=0, description="Default: hidden / heads")
    ffn: int = Field(gt=0, description="FFN inner width")
    activation: Literal["gelu", "relu", "swiglu", "geglu"]
    norm: Literal["layernorm", "rmsnorm"]
    position: Literal["learned", "rope", "none"] = "learned"
    vocab: int = Field(0, ge=0, description="Token vocabulary (0 for image models)")
    head: Literal["lm", "classifier", "none"] = "none"
    tied_embeddings: bool = Field(False, description="LM head shares the token-embedding matrix")
    num_classes: int = Field(1000, gt=0)
    patch: PatchEmbed | None = None
    default_seq: int = Field(128, gt=0, description="Sequence length when a scenario gives none")
    max_seq: int | None = Field(None, gt=0, description="Longest supported sequence/context")

    @model_validator(mode="after")
    def _check(self) -> TransformerArch:
        kv = self.kv_heads or self.heads
        if self.heads % kv:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({kv})")
        if self.head_dim is None and self.hidden % self.heads:
            raise ValueError("hidden must be divisible by heads, or give head_dim")
        if self.head == "lm" and self.vocab == 0:
            raise ValueError("an lm head needs vocab > 0")
        return self


def default_phase(arch: TransformerArch) -> str:
    return "decode" if arch.kind == "decoder" else "forward"


def build(arch: TransformerArch, sc: Scenario, name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Operator rows and resolved scenario facts for one transformer scenario."""
    phase = sc.phase or default_phase(arch)
    if arch.kind == "encoder" and phase not in ("forward", "training"):
        raise ValueError(f"{name} is an encoder; accepted phase: forward, training (got {phase})")
    if arch.kind == "decoder" and phase not in ("prefill", "decode", "training"):
        raise ValueError(f"{name} is a decoder; accepted phase: prefill, decode, training (got {phase})")
    training = phase == "training"
    dt = sc.dtype
    kvdt = sc.kv_dtype or dt
    B, h, L = sc.batch, arch.hidden, arch.layers
    H = arch.heads
    Hkv = arch.kv_heads or H
    d = arch.head_dim or h // H
    fe = sc.fuse_elementwise
    rows: list[dict[str, Any]] = []

    # Sequence geometry -----------------------------------------------------------------------
    if arch.patch is not None:
        res = sc.resolution or arch.patch.image
        if res % arch.patch.patch:
            raise ValueError(f"{name}: resolution {res} not a multiple of patch {arch.patch.patch}")
        seq = (res // arch.patch.patch) ** 2 + (1 if arch.patch.cls_token else 0)
    else:
        seq = sc.seq or arch.default_seq
    if phase == "decode":
        q_len = 1
        kv_len = sc.context or arch.default_seq
    else:
        q_len = kv_len = seq
    if arch.max_seq and kv_len > arch.max_seq:
        raise ValueError(f"{name}: sequence/context {kv_len} exceeds max_seq {arch.max_seq}")
    T = B * q_len

    # Input -----------------------------------------------------------------------------------
    if arch.patch is not None:
        p = arch.patch
        row, _ = ops.conv2d("patch_embed", n=B, h=res, w=res, c_in=p.channels, c_out=h, k=p.patch,
                            stride=p.patch, pad=0, dtype=dt, bias=True)
        rows.append(row)
    else:
        rows.append(ops.embedding("embed.tokens", tokens=T, dim=h, dtype=dt))
    if arch.position == "learned":
        rows.append(ops.streaming("embed.position", kind="elementwise", elems=T * h, inputs=2,
                                  flops_per_elem=1.0, dtype=dt, fused=fe))

    # Layers ----------------------------------------------------------------------------------
    def vec(nm: str, kind: str, elems: float, fn: str, inputs: float = 1.0) -> dict[str, Any]:
        return ops.streaming(f"layer.{nm}", kind=kind, elems=elems, inputs=inputs,
                             flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM[fn], dtype=dt, count=L, fused=fe)

    rows.append(vec("norm1", "norm", T * h, arch.norm))
    rows.append(ops.gemm("layer.qkv_proj", T, (H + 2 * Hkv) * d, h, dtype=dt, count=L))
    if arch.position == "rope":
        rows.append(vec("rope", "elementwise", T * (H + Hkv) * d, "rope"))
    if arch.kind == "decoder" and not training:
        rows.append(ops.streaming("layer.kv_cache_write", kind="elementwise", elems=T * 2 * Hkv * d,
                                  flops_per_elem=0.0, dtype=kvdt, count=L))
    rows.extend(ops.attention("layer.attention", batch=B, heads=H, kv_heads=Hkv, q_len=q_len,
                              kv_len=kv_len, head_dim=d, causal=arch.kind == "decoder", dtype=dt,
                              kv_dtype=kvdt, fused=sc.fused_attention, count=L, fuse_elementwise=fe))
    rows.append(ops.gemm("layer.out_proj", T, h, H * d, dtype=dt, count=L))
    rows.append(vec("residual1", "elementwise", T * h, "add", inputs=2))
    rows.append(vec("norm2", "norm", T * h, arch.norm))
    gated = arch.activation in ("swiglu", "geglu")
    rows.append(ops.gemm("layer.ffn_up", T, (2 if gated else 1) * arch.ffn, h, dtype=dt, count=L))
    act = "swiglu" if gated else arch.activation
    rows.append(vec("ffn_act", "elementwise", T * arch.ffn, act, inputs=2 if gated else 1))
    rows.append(ops.gemm("layer.ffn_down", T, h, arch.ffn, dtype=dt, count=L))
    rows.append(vec("residual2", "elementwise", T * h, "add", inputs=2))

    # Output ----------------------------------------------------------------------------------
    rows.append(ops.streaming("final_norm", kind="norm", elems=T * h,
                              flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM[arch.norm], dtype=dt, fused=fe))
    if arch.head == "lm":
        m = T if (phase in ("decode", "training") or sc.logits == "all") else B
        rows.append(ops.gemm("lm_head", m, arch.vocab, h, dtype=dt))
    elif arch.head == "classifier":
        rows.append(ops.gemm("classifier", B, arch.num_classes, h, dtype=dt))

    params = _params(arch, H, Hkv, d)
    if arch.patch is not None:
        params += h * arch.patch.channels * arch.patch.patch**2
    if arch.head == "classifier":
        params += h * arch.num_classes
    if training:
        rows.append(ops.streaming("loss.softmax_xent", kind="softmax", elems=T * max(arch.vocab, arch.num_classes),
                                  flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM["softmax"], dtype="fp32"))
        rows = training_step(rows, params, dt)
    facts = {"phase": phase, "batch": B, "seq": q_len if phase != "decode" else None,
             "context": kv_len if phase == "decode" else None, "tokens": T, "params": params}
    return rows, facts


def _params(arch: TransformerArch, H: int, Hkv: int, d: int) -> int:
    """Weight count (matrices, embeddings, norms; biases ignored)."""
    h = arch.hidden
    gated = arch.activation in ("swiglu", "geglu")
    per_layer = h * (H + 2 * Hkv) * d + H * d * h + (3 if gated else 2) * h * arch.ffn + 2 * h
    total = arch.layers * per_layer + h
    if arch.vocab:
        total += arch.vocab * h * (2 if arch.head == "lm" and not arch.tied_embeddings else 1)
    return int(total)
