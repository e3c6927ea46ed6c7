"""Sequence families without attention: recurrent nets (LSTM/GRU) and selective state-space models
(Mamba).

* LSTM (Hochreiter & Schmidhuber 1997) / GRU (Cho et al. 2014): per layer and direction the input
  projection of all timesteps is one GEMM ``[B*S, in] x [in, G*h]`` (G = 4 gates for LSTM, 3 for GRU);
  the recurrent projection is ``S`` dependent GEMMs ``[B, h] x [h, G*h]`` (count S: each step waits
  for the previous one and re-reads the recurrent weights), followed by the gate nonlinearities.
* Mamba (Gu & Dao 2023, Sec. 3 and Appendix): in_proj to 2*d_inner, causal depthwise conv1d (k=4),
  x_proj to dt_rank + 2*d_state, dt_proj, the selective scan over (B, S, d_inner, d_state) as a fused
  kernel (state kept on chip: reads u, delta, B, C, writes y; ~9 FLOPs per state element), gating
  with SiLU(z), out_proj. Decode is one step that reads and writes the recurrent state.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field

from dse.limits import MAX_HEAD_DIM, MAX_KERNEL, MAX_LAYERS, MAX_RATIO, MAX_TOKENS, MAX_VOCAB, MAX_WIDTH
from dse.strict import Strict
from dse.units import DTYPE_BYTES
from dse.workloads import ops
from dse.workloads.scenario import Scenario
from dse.workloads.training import step_kernels, training_step

SCAN_FLOPS_PER_STATE = 9.0


class RNNArch(Strict):
    cell: Literal["lstm", "gru"]
    layers: int = Field(gt=0, le=MAX_LAYERS)
    hidden: int = Field(gt=0, le=MAX_WIDTH)
    input: int = Field(gt=0, le=MAX_WIDTH, description="Input feature width of the first layer (embedding dim)")
    vocab: int = Field(0, ge=0, le=MAX_VOCAB, description="Token vocabulary of an input embedding (0: dense input "
                       "features)")
    bidirectional: bool = False
    head: Literal["none", "lm", "classifier"] = "none"
    num_classes: int = Field(1000, gt=0, le=MAX_VOCAB)
    default_seq: int = Field(128, gt=0, le=MAX_TOKENS)


def build_rnn(arch: RNNArch, sc: Scenario, name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if sc.phase not in (None, "forward", "training"):
        raise ValueError(f"{name} is a recurrent net; accepted phase: forward, training (got {sc.phase})")
    B, S, h, dt = sc.batch, sc.seq or arch.default_seq, arch.hidden, sc.dtype
    G = 4 if arch.cell == "lstm" else 3
    dirs = 2 if arch.bidirectional else 1
    rows: list[dict[str, Any]] = []
    params = 0
    if arch.vocab:
        rows.append(ops.embedding("embed", tokens=B * S, dim=arch.input, dtype=dt))
        params += arch.vocab * arch.input
    width = arch.input
    for layer in range(arch.layers):
        cnt = dirs
        rows.append(ops.gemm(f"l{layer}.input_proj", B * S, G * h, width, dtype=dt, count=cnt))
        rows.append(ops.gemm(f"l{layer}.recurrent", B, G * h, h, dtype=dt, count=cnt * S))
        gate_flops = 4.0 * G + 6.0  # sigmoid/tanh per gate (~4 each) + cell/state update
        rows.append(ops.streaming(f"l{layer}.gates", kind="elementwise", elems=B * G * h, flops_per_elem=gate_flops / G,
                                  dtype=dt, count=cnt * S, inputs=2))
        params += dirs * (G * h * width + G * h * h + 2 * G * h)
        width = h * dirs
    if arch.head == "lm":
        rows.append(ops.gemm("lm_head", B * S, arch.vocab, width, dtype=dt))
        params += arch.vocab * width
    elif arch.head == "classifier":
        rows.append(ops.gemm("classifier", B, arch.num_classes, width, dtype=dt))
        params += arch.num_classes * width
    if sc.phase == "training":
        rows = training_step(rows, params, dt, **step_kernels(sc))
    return rows, {"phase": sc.phase or "forward", "batch": B, "seq": S, "params": params}


class MambaArch(Strict):
    layers: int = Field(gt=0, le=MAX_LAYERS)
    hidden: int = Field(gt=0, le=MAX_WIDTH)
    d_state: int = Field(16, gt=0, le=MAX_HEAD_DIM)
    expand: int = Field(2, gt=0, le=MAX_RATIO)
    d_conv: int = Field(4, gt=0, le=MAX_KERNEL)
    dt_rank: int | None = Field(None, gt=0, le=MAX_WIDTH, description="Default ceil(hidden / 16)")
    vocab: int = Field(gt=0, le=MAX_VOCAB)
    tied_embeddings: bool = True
    default_seq: int = Field(2048, gt=0, le=MAX_TOKENS)


def build_mamba(arch: MambaArch, sc: Scenario, name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    phase = sc.phase or "decode"
    if phase not in ("prefill", "decode", "training"):
        raise ValueError(f"{name} is a language model; accepted phase: prefill, decode, training (got {phase})")
    B, h, L, dt = sc.batch, arch.hidden, arch.layers, sc.dtype
    S = 1 if phase == "decode" else (sc.seq or arch.default_seq)
    T = B * S
    di = arch.expand * h
    r = arch.dt_rank or math.ceil(h / 16)
    N = arch.d_state
    b = DTYPE_BYTES[dt]
    fe = sc.fuse_elementwise
    rows: list[dict[str, Any]] = [ops.embedding("embed.tokens", tokens=T, dim=h, dtype=dt)]
    rows.append(ops.streaming("layer.norm", kind="norm", elems=T * h, flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM["rmsnorm"],
                              dtype=dt, count=L, fused=fe))
    rows.append(ops.gemm("layer.in_proj", T, 2 * di, h, dtype=dt, count=L))
    conv_state = B * di * (arch.d_conv - 1) * b if phase == "decode" else 0.0
    rows.append(ops.streaming("layer.conv1d", kind="elementwise", elems=T * di, flops_per_elem=2.0 * arch.d_conv,
                              dtype=dt, count=L, read_bytes=T * di * b + di * arch.d_conv * b + conv_state,
                              write_bytes=T * di * b + conv_state))
    rows.append(ops.streaming("layer.silu_x", kind="elementwise", elems=T * di,
                              flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM["silu"], dtype=dt, count=L, fused=fe))
    rows.append(ops.gemm("layer.x_proj", T, r + 2 * N, di, dtype=dt, count=L))
    rows.append(ops.gemm("layer.dt_proj", T, di, r, dtype=dt, count=L))
    state = B * di * N * 4 if phase == "decode" else 0.0  # fp32 recurrent state read and written per step
    rows.append(ops.streaming("layer.selective_scan", kind="elementwise", elems=T * di * N,
                              flops_per_elem=SCAN_FLOPS_PER_STATE, dtype="fp32", count=L,
                              read_bytes=T * (2 * di + 2 * N) * b + di * N * 4 + state, write_bytes=T * di * b + state))
    rows.append(ops.streaming("layer.gate", kind="elementwise", elems=T * di, inputs=2,
                              flops_per_elem=ops.VECTOR_FLOPS_PER_ELEM["silu"] + 1, dtype=dt, count=L, fused=fe))
    rows.append(ops.gemm("layer.out_proj", T, h, di, dtype=dt, count=L))
    rows.append(ops.streaming("layer.residual", kind="elementwise", elems=T * h, inputs=2, flops_per_elem=1.0,
                              dtype=dt, count=L, fused=fe))
    rows.append(ops.streaming("final_norm", kind="norm", elems=T * h, flops_per_elem=4.0, dtype=dt, fused=fe))
    m = T if phase != "prefill" else B
    rows.append(ops.gemm("lm_head", m, arch.vocab, h, dtype=dt))
    per_layer = h * 2 * di + di * arch.d_conv + di + di * (r + 2 * N) + r * di + di + di * N + di + di * h + h
    params = L * per_layer + arch.vocab * h * (1 if arch.tied_embeddings else 2) + h
    if phase == "training":
        rows = training_step(rows, params, dt, **step_kernels(sc))
    return rows, {"phase": phase, "batch": B, "seq": S if phase != "decode" else None,
                  "context": sc.context if phase == "decode" else None, "params": params}
