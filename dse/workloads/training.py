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

How the framework runs the step (scenario fields, set together by a ``framework`` preset,
``workloads/frameworks/NAME.yaml``; the defaults are the compiled, Megatron-style step above):

* ``weight_cast: kernel``: PyTorch autocast (``torch.autocast``, mixed-precision training without a
  low-precision weight copy) keeps the fp32 weights as the model's parameters and casts each one to the
  compute dtype in a kernel of its own before every forward GEMM or conv that reads it (autocast's op
  list: ``matmul``, ``linear``, ``conv*`` autocast to the lower precision; the cast cache lives for one
  autocast region, i.e. one forward; PyTorch "Automatic Mixed Precision package" docs), and the backward
  casts that weight's gradient back to fp32 (autograd's ``ToCopyBackward``): per weight element a cast
  row reads 4 and writes ``b`` bytes, its gradient cast reads ``b`` and writes 4. Recomputation repeats
  the forward cast (a recomputed forward runs under autocast again). The optimizer then writes no
  low-precision weight copy (the fp32 parameters are the weights). ``none``: the Megatron-style fp16/bf16
  weights with fp32 main copies in the optimizer (above).
* ``optimizer: foreach``: ``torch.optim.AdamW``'s default on CUDA (``foreach=None`` picks the foreach
  path, not ``fused``), eight passes over the parameters (pytorch/pytorch ``torch/optim/adam.py``
  ``_multi_tensor_adam``, decoupled weight decay): ``_foreach_mul_`` of the weights, ``_foreach_lerp_`` of
  the first moment, ``_foreach_mul_`` and ``_foreach_addcmul_`` of the second, ``_foreach_sqrt``,
  ``_foreach_div_`` and ``_foreach_add_`` building the denominator, ``_foreach_addcdiv_`` of the
  weights: 48 bytes read and 32 written per parameter in eight launches, where ``fused`` (``_fused_adamw_``,
  apex ``FusedAdam``) reads 16 and writes 12 in one; the gradient clipping's read stays as above.
* ``zero_grad: none``: the gradients are freed instead of zeroed (``Optimizer.zero_grad(set_to_none=True)``,
  PyTorch's default since 2.0; JAX/XLA steps have no gradient buffer): no memset pass. ``memset``: the fp32
  gradient buffer is zeroed each step (Megatron-LM ``zero_grad_buffer``).
* ``optimizer_dtype: bf16``: pure bf16 training, the parameters, gradients and both AdamW moments held in bf16
  with no fp32 master copy (torchtune's ``dtype: bf16``, 'full bf16 training so that parameters, gradients, and
  optimizer states are in bf16': pytorch/torchtune@bd2a0fc docs/source/tutorials/memory_optimizations.rst; PyTorch's
  AdamW keeps its moments in the parameter's dtype, ``torch.zeros_like(p)`` in ``torch/optim/adam.py``): every optimizer pass
  moves half the bytes of the fp32 case (the update, the clipping read, the zeroing), the optimizer writes no
  separate weight copy (the parameter is the weight), and the state is 4 bytes per parameter (two bf16 moments)
  instead of 12 (``dse.workloads.parallel``). ``fp32`` (default): the mixed-precision step above. Only with a
  16-bit ``dtype`` and ``weight_cast: none`` (autocast keeps fp32 parameters).
* ``grad_dtype``: the dtype of the gradients the step keeps and its data-parallel reduction moves, ``auto`` by
  :func:`gradient_dtype`'s rule (fp32 for a bf16 or fp8 mixed-precision step, Megatron-LM's; the parameters' dtype
  under autocast or pure bf16; fp16 for fp16) or one dtype (a framework preset's, e.g. XLA's bf16).
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from dse.units import DTYPE_BYTES
from dse.workloads import ops

#: how a mixed-precision step gets its low-precision weights (module docstring): ``none`` (a low-precision copy
#: the optimizer writes, Megatron-style) or ``kernel`` (autocast casts the fp32 weights before every use)
WeightCast = Literal["none", "kernel"]
#: the AdamW kernels: ``fused`` (one multi-tensor kernel) or ``foreach`` (PyTorch's default, eight passes)
OptimizerKernel = Literal["fused", "foreach"]
#: the gradient buffer each step: ``memset`` (zeroed) or ``none`` (freed: set_to_none, functional gradients)
ZeroGrad = Literal["memset", "none"]
#: the dtype of the optimizer's state (module docstring): ``fp32`` (master weights and moments, mixed precision) or
#: ``bf16`` (pure bf16 training: the bf16 parameters and bf16 moments, no master copy)
OptimizerDtype = Literal["fp32", "bf16"]
#: the dtype of the gradients a step keeps and its data-parallel reduction moves (:func:`gradient_dtype`): ``auto`` (the
#: rule of the framework's mixed precision) or one dtype
GradDtype = Literal["auto", "fp32", "bf16", "fp16"]
WEIGHT_CASTS: tuple[str, ...] = get_args(WeightCast)
OPTIMIZER_KERNELS: tuple[str, ...] = get_args(OptimizerKernel)
ZERO_GRADS: tuple[str, ...] = get_args(ZeroGrad)
OPTIMIZER_DTYPES: tuple[str, ...] = get_args(OptimizerDtype)
GRAD_DTYPES: tuple[str, ...] = get_args(GradDtype)
#: the scenario fields of this module (their defaults are the compiled Megatron-style step)
STEP_FIELDS: dict[str, str] = {"weight_cast": "none", "optimizer": "fused", "zero_grad": "memset",
                               "optimizer_dtype": "fp32", "grad_dtype": "auto"}

#: AdamW per parameter: FLOPs (moments, bias correction, decay, update) and bytes moved
ADAMW_FLOPS_PER_PARAM = 12.0
#: global gradient norm: a square and an add per parameter
GRAD_NORM_FLOPS_PER_PARAM = 2.0
#: bytes read per parameter: fp32 master, gradient, two moments (the fused update) + the gradient
#: again for the global-norm clipping
OPTIMIZER_READ_BYTES = 4 + 4 + 4 + 4 + 4
#: the foreach AdamW's passes per step and their bytes per parameter (module docstring): reads 4 + 8 + 4 + 8 + 4 + 4
#: + 4 + 12 = 48 (weights, moment 1 + gradient, moment 2, moment 2 + gradient, sqrt, div, add, weights + moment 1 +
#: denominator), writes 8 x 4 = 32; the fused kernel's update reads 16 and writes 12
FOREACH_PASSES = 8
FOREACH_READ_BYTES = 48
FOREACH_WRITE_BYTES = 32
FUSED_UPDATE_READ_BYTES = 16
#: the fp32 gradient (accumulation buffer) per parameter
GRAD_BYTES = 4
#: optimizer state bytes per parameter: fp32 master weight and two fp32 moments (mixed precision), or two bf16
#: moments (pure bf16: the parameter is the weight); ``dse.workloads.parallel``'s footprint reads it
OPTIMIZER_STATE_BYTES = {"fp32": 12.0, "bf16": 4.0}
#: activation dtypes trained with a loss scale, whose gradients are unscaled and checked every step
LOSS_SCALED = ("fp16",)
#: unscale: a multiply and a finiteness test per gradient
UNSCALE_FLOPS_PER_PARAM = 2.0


def gradient_dtype(dtype: str, weight_cast: str = "none", optimizer_dtype: str = "fp32", grad_dtype: str = "auto"
                   ) -> str:
    """The dtype of the gradients a training step keeps (the footprint's ``gradients``) and its data-parallel
    reduction moves (``dse.workloads.parallel.gradient_rows``): ``grad_dtype`` where it names one, else

    * ``optimizer_dtype: bf16`` (pure bf16 training): the parameters' dtype, ``dtype`` (PyTorch keeps a gradient in its
      parameter's dtype);
    * ``weight_cast: kernel`` (autocast): ``fp32``, the parameters' dtype (autograd gives a parameter's gradient its
      dtype, so DDP or FSDP reduce fp32 gradients unless told otherwise);
    * a 16-bit ``fp16`` step: ``fp16`` (Megatron-LM's ``--accumulate-allreduce-grads-in-fp32`` defaults off; its
      fp16 optimizer copies them to fp32 main gradients inside the optimizer);
    * otherwise (bf16, or fp8 GEMMs over bf16 parameters, and fp32/tf32): ``fp32``: Megatron-LM forces fp32 gradient
      accumulation and all-reduce with bf16 ('bfloat16 requires gradient accumulation and all-reduce to be done in
      fp32': NVIDIA/Megatron-LM ``megatron/training/arguments.py`` ``validate_args`` sets
      ``args.accumulate_allreduce_grads_in_fp32``), its distributed-optimizer table counting 18 bytes per parameter
      (2 bf16 weights + 4 fp32 gradients + 12 optimizer state: Megatron-LM
      ``docs/source/api-guide/dist_optimizer.md``)."""
    if grad_dtype != "auto":
        return grad_dtype
    if optimizer_dtype != "fp32":
        return dtype
    if weight_cast == "kernel":
        return "fp32"
    return "fp16" if dtype == "fp16" else "fp32"


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


def training_step(rows: list[dict[str, Any]], params: int, dtype: str, *, weight_cast: str = "none",
                  optimizer: str = "fused", zero_grad: str = "memset", optimizer_dtype: str = "fp32"
                  ) -> list[dict[str, Any]]:
    """Forward rows + their backward rows + an AdamW update over ``params`` parameters, the gradient
    buffer's zeroing and, for fp16, the loss-scale unscale pass; ``weight_cast``, ``optimizer``, ``zero_grad`` and
    ``optimizer_dtype`` as the module docstring says (their defaults: the compiled Megatron-style step). A bf16
    optimizer state moves ``state = DTYPE_BYTES['bf16'] / 4`` of every fp32 optimizer pass's bytes and writes no
    weight copy."""
    cast = weight_cast == "kernel" and DTYPE_BYTES[dtype] < 4
    out = list(rows) + (cast_rows(rows, backward=False) if cast else [])
    for row in rows:
        out.extend(backward_rows(row))
    if cast:  # each cast's backward is the gradient's cast back to fp32 (not the generic streaming backward)
        out.extend(cast_rows(rows, backward=True))
    state = DTYPE_BYTES[optimizer_dtype] / 4.0  # the state's bytes per fp32 byte: 1, or 0.5 in pure bf16
    # autocast keeps no low-precision weight copy for the optimizer, nor does pure bf16 (the parameter is the weight)
    copy = 0.0 if cast or optimizer_dtype != "fp32" else DTYPE_BYTES[dtype]
    clip = OPTIMIZER_READ_BYTES - FUSED_UPDATE_READ_BYTES  # the clipping's gradient read, with either update
    n, rd, wr = ((FOREACH_PASSES, FOREACH_READ_BYTES, FOREACH_WRITE_BYTES) if optimizer == "foreach"
                 else (1, FUSED_UPDATE_READ_BYTES, 4 + 4 + 4))  # fused: master, m, v written
    out.append(ops.kernel_chain("optimizer.adamw", kind="elementwise", elems=params, kernels=n,  # 1/n of it each
                                flops_per_elem=ADAMW_FLOPS_PER_PARAM + GRAD_NORM_FLOPS_PER_PARAM,
                                dtype=optimizer_dtype, read_bytes=params * (rd + clip) * state,
                                write_bytes=params * (wr * state + copy)))
    if zero_grad == "memset":
        out.append(ops.streaming("optimizer.zero_grad", kind="elementwise", elems=params, flops_per_elem=0.0,
                                 dtype=optimizer_dtype, read_bytes=0.0, write_bytes=params * GRAD_BYTES * state))
    if dtype in LOSS_SCALED:
        out.append(ops.streaming("optimizer.unscale", kind="elementwise", elems=params,
                                 flops_per_elem=UNSCALE_FLOPS_PER_PARAM, dtype="fp32",
                                 read_bytes=params * GRAD_BYTES, write_bytes=params * GRAD_BYTES))
    return out


def _weight_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The forward GEMM/conv rows that read a weight matrix (``held`` weights, tiled on the matrix unit)."""
    return [r for r in rows if r.get("held") == "weights" and r.get("reuse") == "tiled" and is_forward(str(r["name"]))]


def cast_rows(rows: list[dict[str, Any]], backward: bool) -> list[dict[str, Any]]:
    """autocast's cast of each forward weight GEMM's fp32 weight to its dtype, ``<row>.cast`` (read 4 and write ``b``
    bytes per weight element), or with ``backward`` the weight gradient's cast back, ``<row>.cast.bwd`` (read ``b``,
    write 4); one conversion per element (:data:`dse.workloads.ops.CONVERT_FLOPS`)."""
    out = []
    for r in _weight_rows(rows):
        dt = r["dtype_b"] or r["dtype_a"]
        elems = float(r["batch"]) * float(r["K"]) * float(r["N"])
        low, full = DTYPE_BYTES[dt] * elems, 4.0 * elems
        out.append(ops.streaming(f"{r['name']}.cast" + (".bwd" if backward else ""), kind="elementwise", elems=elems,
                                 flops_per_elem=ops.CONVERT_FLOPS, dtype="fp32" if backward else dt, count=r["count"],
                                 read_bytes=low if backward else full, write_bytes=full if backward else low))
    return out


def step_kernels(sc: Any) -> dict[str, str]:
    """The :func:`training_step` keywords a scenario sets (``weight_cast``, ``optimizer``, ``zero_grad``,
    ``optimizer_dtype``; ``grad_dtype`` acts on the footprint and the collectives, not on the step's rows)."""
    return {k: getattr(sc, k) for k in STEP_FIELDS if k != "grad_dtype"}


#: autocast's state per parameter: the two fp32 moments (its fp32 parameter is the optimizer's master copy)
AUTOCAST_STATE_BYTES = 8.0


def state_bytes_per_param(sc: Any, recompute: str = "none") -> tuple[float, float]:
    """Bytes per parameter a training step holds as weights and as optimizer state.

    ``weight_cast: none`` (a low-precision weight copy the optimizer writes, Megatron-style): the weights in their
    dtype, and :data:`OPTIMIZER_STATE_BYTES` (12: fp32 master and two moments; 4 in pure bf16).
    ``weight_cast: kernel`` (autocast): the fp32 parameters are the weights (4 bytes) and autograd keeps each
    forward cast's low-precision copy for the backward (the cast's output is the matmul's saved input: ``b`` bytes
    more, except under full recomputation, whose checkpointed forward runs without autograd and saves no cast); the
    optimizer holds the two fp32 moments only (:data:`AUTOCAST_STATE_BYTES`), the parameter being its master
    (PyTorch ``torch.optim.AdamW`` state: ``exp_avg``, ``exp_avg_sq``)."""
    b = DTYPE_BYTES[sc.weight_dtype or sc.dtype]
    if sc.weight_cast == "kernel" and DTYPE_BYTES[sc.dtype] < 4:
        return 4.0 + (0.0 if recompute == "full" else b), AUTOCAST_STATE_BYTES
    return float(b), OPTIMIZER_STATE_BYTES[sc.optimizer_dtype]


def scenario_grad_dtype(sc: Any) -> str:
    """:func:`gradient_dtype` of a scenario."""
    return gradient_dtype(sc.dtype, sc.weight_cast, sc.optimizer_dtype, sc.grad_dtype)
