"""Training step = forward + backward + optimizer update, derived from the forward operator table.

Backward (the standard 2x rule, Kaplan et al. 2020; Narayanan et al. 2021): every GEMM/conv
``C = A.B`` has two backward GEMMs of the same FLOPs, ``dA = dC.B^T`` and ``dB = A^T.dC``; flash
attention's backward recomputes the scores and costs 2.5x its forward FLOPs (five matmuls instead of
two; Dao, FlashAttention-2, 2023) reading Q, K, V, O, dO and writing dQ, dK, dV; a streaming op's
backward reads the output gradient and its saved input(s) and writes the input gradient(s)
(2x the bytes). The optimizer is AdamW with fp32 master weights and moments (Loshchilov & Hutter
2019; mixed precision per Micikevicius et al. 2018) in one fused multi-tensor kernel (apex
``FusedAdam`` / ``torch.optim.AdamW(fused=True)``): per parameter it reads the fp32 master weight,
the fp32 gradient (PyTorch AMP keeps fp32 parameters and so fp32 gradients; Megatron-LM accumulates
into an fp32 ``main_grad`` buffer) and the two moments, and writes master, moments and the
low-precision weight copy; before it, global-norm gradient clipping reads every gradient once more
(``clip_grad_norm_``; Megatron-LM ``clip_grad_norm_fp32``, clip 1.0 in its GPT recipes): 20 bytes
read and ``12 + b`` written per parameter. Two more passes over the gradients run every step:
the gradient buffer is zeroed before the first micro-batch accumulates into it (a 4-byte fp32 memset
per parameter; Megatron-LM ``zero_grad_buffer``, PyTorch ``optimizer.zero_grad()`` without
``set_to_none``, the default before PyTorch 2.0), and with fp16 (loss scaling, Micikevicius et al.
2018) the gradients are unscaled and checked for inf/NaN in place before clipping (read and write 4
bytes per parameter: ``torch._amp_foreach_non_finite_check_and_unscale_``, called by PyTorch's
``GradScaler.unscale_`` and by Megatron-LM ``MixedPrecisionOptimizer._unscale_main_grads_and_check_for_nan``,
NVIDIA/Megatron-LM megatron/optimizer/optimizer.py); bf16 and fp32 need no loss scale.

Activation recomputation (Chen et al. 2016; Korthikanti et al. 2022, Sec. 5) costs time as extra
forward rows run during the backward pass (:func:`recompute_rows`):

* ``full``: every layer's forward runs once more (Megatron-LM keeps only each layer's input and
  recomputes the layer before its backward); the input embedding, output head, loss and optimizer
  are not recomputed. A training step then does ~4 forward-equivalents of layer work instead of 3.
* ``selective``: only the attention core (``QK^T``, softmax, ``softmax.V``) runs again. With flash
  attention (``fused_attention``) the backward already recomputes the scores (its 2.5x FLOPs), so
  selective recomputation adds nothing more (Dao et al. 2022, Sec. 3.1).
* ``minimal``: MaxText's ``remat_policy: minimal`` saves the outputs of the matmuls against weights
  (``jax.checkpoint_policies.checkpoint_dots_with_no_batch_dims``; later MaxText names them: the q/k/v, output
  and MLP projections, all but the attention ``context``) and recomputes the rest of each layer: the attention
  core (a dot with batch dimensions) and every norm, activation, rotary and residual op
  (github.com/AI-Hypercomputer/maxtext, ``MaxText/layers/decoders.py`` ``get_remat_policy``).
"""

from __future__ import annotations

from typing import Any

from dse.units import DTYPE_BYTES
from dse.workloads import ops

#: AdamW per parameter: FLOPs (moments, bias correction, decay, update) and bytes moved
ADAMW_FLOPS_PER_PARAM = 12.0
#: global gradient norm: a square and an add per parameter
GRAD_NORM_FLOPS_PER_PARAM = 2.0
#: bytes read per parameter: fp32 master, gradient, two moments (the fused update) + the gradient
#: again for the global-norm clipping
OPTIMIZER_READ_BYTES = 4 + 4 + 4 + 4 + 4
#: the fp32 gradient (accumulation buffer) per parameter
GRAD_BYTES = 4
#: activation dtypes trained with a loss scale, whose gradients are unscaled and checked every step
LOSS_SCALED = ("fp16",)
#: unscale: a multiply and a finiteness test per gradient
UNSCALE_FLOPS_PER_PARAM = 2.0


def backward_rows(row: dict[str, Any]) -> list[dict[str, Any]]:
    """Backward rows for one forward row."""
    name, count = f"{row['name']}.bwd", row["count"]
    if row["reuse"] == "tiled":
        M, N, K, bt = row["M"], row["N"], row["K"], row["batch"]
        dt, wdt = row["dtype_a"], row["dtype_b"] or row["dtype_a"]
        kind = row["kind"]
        d_a = ops.gemm(f"{name}.dinput", M, K, N, dtype=dt, weight_dtype=wdt, batch=bt, count=count, kind=kind)
        d_b = ops.gemm(f"{name}.dweight", K, N, M, dtype=dt, weight_dtype=dt, batch=bt, count=count, kind=kind,
                       held="")  # X^T dY: both operands activations
        d_a["unit"] = d_b["unit"] = row["unit"]
        return [d_a, d_b]
    if row["reuse"] == "attention":
        r = dict(row)
        r.update(name=name, flops=2.5 * row["flops"], a_bytes=3 * row["a_bytes"],
                 c_bytes=row["a_bytes"] + row["b_bytes"], bytes_read=3 * row["a_bytes"] + row["b_bytes"],
                 bytes_written=row["a_bytes"] + row["b_bytes"])
        return [r]
    r = dict(row)
    r.update(name=name, flops=2.0 * row["flops"], bytes_read=row["bytes_read"] + row["bytes_written"],
             bytes_written=row["bytes_read"])
    return [r]


#: forward rows that are never recomputed (input embedding, output head, loss; the optimizer is no forward row)
NOT_RECOMPUTED = ("embed.", "lm_head", "classifier", "final_norm", "loss.", "optimizer.", "patch_embed", "head.")
RECOMPUTE_SUFFIX = ".recompute"


def is_forward(name: str) -> bool:
    """A forward row of a training step (not a backward, recompute or optimizer row)."""
    return not (name.endswith(".bwd") or ".bwd." in name or name.endswith(RECOMPUTE_SUFFIX)
                or name.startswith("optimizer."))


def recompute_rows(rows: list[dict[str, Any]], mode: str, fused_attention: bool = True) -> list[dict[str, Any]]:
    """The extra forward rows activation recomputation ``mode`` (none | minimal | selective | full) runs per step.

    full: a copy of every forward row except :data:`NOT_RECOMPUTED`; selective: a copy of the
    unfused attention core rows (``layer.attention*``: ``qk``, ``softmax``, ``pv``), none with flash
    attention (its backward already recomputes them); minimal: a copy of every such row but the matmuls
    against weights (``gemm`` rows outside ``layer.attention*``). Copies are named ``<row>.recompute``."""
    if mode == "none":
        return []
    out = []
    for r in rows:
        name = str(r["name"])
        if not is_forward(name) or name.startswith(NOT_RECOMPUTED):
            continue
        if mode == "selective" and (fused_attention or not name.startswith("layer.attention")):
            continue
        if mode == "minimal" and r.get("kind") == "gemm" and not name.startswith("layer.attention"):
            continue
        c = dict(r)
        c["name"] = name + RECOMPUTE_SUFFIX
        out.append(c)
    return out


def training_step(rows: list[dict[str, Any]], params: int, dtype: str) -> list[dict[str, Any]]:
    """Forward rows + their backward rows + an AdamW update over ``params`` parameters, the gradient
    buffer's zeroing and, for fp16, the loss-scale unscale pass."""
    out = list(rows)
    for row in rows:
        out.extend(backward_rows(row))
    b = DTYPE_BYTES[dtype]
    out.append(ops.streaming("optimizer.adamw", kind="elementwise", elems=params,
                             flops_per_elem=ADAMW_FLOPS_PER_PARAM + GRAD_NORM_FLOPS_PER_PARAM, dtype="fp32",
                             read_bytes=params * OPTIMIZER_READ_BYTES,
                             write_bytes=params * (4 + 4 + 4 + b)))  # master, m, v, weight copy
    out.append(ops.streaming("optimizer.zero_grad", kind="elementwise", elems=params, flops_per_elem=0.0,
                             dtype="fp32", read_bytes=0.0, write_bytes=params * GRAD_BYTES))
    if dtype in LOSS_SCALED:
        out.append(ops.streaming("optimizer.unscale", kind="elementwise", elems=params,
                                 flops_per_elem=UNSCALE_FLOPS_PER_PARAM, dtype="fp32",
                                 read_bytes=params * GRAD_BYTES, write_bytes=params * GRAD_BYTES))
    return out
