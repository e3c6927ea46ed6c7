"""Bring your own model: Hugging Face ``config.json``, ONNX files and torch modules.

* :func:`from_hf_config` maps a transformers config (llama, mistral, qwen2/3, gemma 1-3, gpt2, bert,
  mixtral, qwen2_moe, qwen3_moe, gpt_oss, llama4, deepseek_v2/v3) to a transformer description without downloading
  weights, sliding-window layers included (``sliding_window`` with ``layer_types`` or a pattern).
* :func:`from_onnx` runs ONNX shape inference and turns MatMul/Gemm/Conv into GEMM rows and
  elementwise, normalisation, softmax and reduction nodes into streaming rows; any other operator is
  counted as bytes only and listed, never dropped.
* :func:`from_torch` runs a module on the meta device under a dispatch mode that records every aten
  matmul/convolution with its shapes (the same ops torch's FlopCounterMode counts) and every other
  op's tensor bytes.
The ONNX and torch results are ``optable`` descriptions (explicit operator rows), written by
``dse workloads import`` as reusable YAML.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dse.errors import DseError

HF_TYPES = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "gemma3_text", "gpt2", "gptj", "gpt_neox",
            "bert", "roberta", "mixtral", "qwen2_moe", "qwen3_moe", "gpt_oss", "llama4", "llama4_text", "deepseek_v2",
            "deepseek_v3", "phi3")


#: model types whose transformers config class ties the input and output embeddings when config.json leaves
#: ``tie_word_embeddings`` out (GemmaConfig, Gemma2Config, Gemma3TextConfig: ``tie_word_embeddings=True``; LlamaConfig,
#: MistralConfig, MixtralConfig, Qwen2Config, Qwen3Config, the MoE configs, GptOssConfig, Phi3Config and the DeepSeek
#: configs default to False)
TIED_BY_DEFAULT = {"gemma": True, "gemma2": True, "gemma3_text": True}


def _load_json(src: str | Path | dict) -> tuple[dict, str]:
    if isinstance(src, dict):
        return src, "mapping"
    path = Path(src)
    if not path.is_file():
        raise DseError("file not found; accepted: a Hugging Face config.json", file=str(path))
    if path.stat().st_size > MAX_JSON_BYTES:
        raise DseError(f"got {path.stat().st_size:,} bytes; accepted: a config.json of at most {MAX_JSON_BYTES:,} "
                       "bytes", file=str(path))
    try:
        data = json.loads(path.read_bytes().decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError as exc:
        raise DseError(f"byte {exc.start} is not UTF-8; accepted: a UTF-8 JSON file", file=str(path)) from None
    except json.JSONDecodeError as exc:
        raise DseError(f"not valid JSON ({exc.msg}, line {exc.lineno})", file=str(path)) from None
    except RecursionError:
        raise DseError("nested too deeply to read; accepted: a Hugging Face config.json", file=str(path)) from None
    except DseError as exc:
        raise DseError(exc.message, file=str(path)) from None
    if not isinstance(data, dict):
        raise DseError(f"got a JSON {type(data).__name__}; accepted: a JSON object (a Hugging Face config.json)",
                       file=str(path))
    return data, str(path)


MAX_JSON_BYTES = 16 * 1024 * 1024


def _no_constant(name: str) -> None:
    """JSON has no NaN/Infinity (Python's json reads them by default): refuse them."""
    raise DseError(f"got {name}; accepted: finite JSON numbers")


def from_hf_config(src: str | Path | dict, name: str | None = None) -> dict[str, Any]:
    """A library description (mapping) from a Hugging Face config."""
    cfg, where = _load_json(src)
    mt = cfg.get("model_type")
    if mt in ("gemma3", "llama4") and isinstance(cfg.get("text_config"), dict):  # multimodal: its language model
        cfg = {**cfg["text_config"], "_name_or_path": cfg.get("_name_or_path")}
        mt = f"{mt}_text"
    if not isinstance(mt, str) or mt not in HF_TYPES:
        raise DseError(f"unsupported model_type {mt!r:.60}; accepted: {', '.join(HF_TYPES)}", file=where,
                       field="model_type")

    def count(key: str, value: Any, minimum: int) -> int:
        # every size the mapping reads is a whole number (a string, a float or true is refused here,
        # before any arithmetic on it); the description's schema bounds it above
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise DseError(f"got {value!r:.60}; accepted: an integer >= {minimum}", file=where, field=key)
        return value

    def need(*keys: str) -> Any:
        for k in keys:
            if k in cfg:
                return count(k, cfg[k], 1)
        raise DseError(f"missing {keys[0]!r} for model_type {mt}", file=where, field=keys[0])

    def opt(key: str, default: int | None, minimum: int = 1) -> int | None:
        value = cfg.get(key)
        return default if value is None else count(key, value, minimum)

    name = name or str(cfg.get("_name_or_path") or mt).split("/")[-1].lower()
    if not isinstance(cfg.get("_name_or_path") or "", str):
        raise DseError(f"got {cfg['_name_or_path']!r:.60}; accepted: a model id string", file=where,
                       field="_name_or_path")
    if mt in ("gpt2",):
        h = need("n_embd")
        arch = {"kind": "decoder", "layers": need("n_layer"), "hidden": h, "heads": need("n_head"),
                "ffn": opt("n_inner", None) or 4 * h, "activation": "gelu", "norm": "layernorm", "position": "learned",
                "vocab": need("vocab_size"), "head": "lm", "tied_embeddings": True,
                "max_seq": need("n_positions"), "default_seq": min(1024, need("n_positions"))}
    elif mt == "gptj":  # transformers GPTJConfig: parallel attention/MLP block, one LayerNorm, rotary on rotary_dim
        h = need("n_embd")
        arch = {"kind": "decoder", "layers": need("n_layer"), "hidden": h, "heads": need("n_head"),
                "ffn": opt("n_inner", None) or 4 * h, "activation": "gelu", "norm": "layernorm", "position": "rope",
                "vocab": need("vocab_size"), "head": "lm", "tied_embeddings": bool(cfg.get("tie_word_embeddings", False)),
                "parallel_block": True, "max_seq": need("n_positions"), "default_seq": min(2048, need("n_positions"))}
    elif mt == "gpt_neox":  # transformers GPTNeoXConfig: use_parallel_residual (default true) is the parallel block
        arch = {"kind": "decoder", "layers": need("num_hidden_layers"), "hidden": need("hidden_size"),
                "heads": need("num_attention_heads"), "ffn": need("intermediate_size"), "activation": "gelu",
                "norm": "layernorm", "position": "rope", "vocab": need("vocab_size"), "head": "lm",
                "tied_embeddings": bool(cfg.get("tie_word_embeddings", False)),
                "parallel_block": bool(cfg.get("use_parallel_residual", True)),
                "max_seq": need("max_position_embeddings"), "default_seq": min(2048, need("max_position_embeddings"))}
    elif mt in ("bert", "roberta"):
        arch = {"kind": "encoder", "layers": need("num_hidden_layers"), "hidden": need("hidden_size"),
                "heads": need("num_attention_heads"), "ffn": need("intermediate_size"), "activation": "gelu",
                "norm": "layernorm", "position": "learned", "vocab": need("vocab_size"), "head": "none",
                "max_seq": min(512, need("max_position_embeddings")), "default_seq": 128}
    else:
        act = str(cfg.get("hidden_act") or cfg.get("hidden_activation") or "silu")
        gated_act = "geglu" if "gelu" in act else "swiglu"
        arch = {"kind": "decoder", "layers": need("num_hidden_layers"), "hidden": need("hidden_size"),
                "heads": need("num_attention_heads"),
                "kv_heads": opt("num_key_value_heads", None) or need("num_attention_heads"),
                "ffn": need("intermediate_size"), "activation": gated_act, "norm": "rmsnorm", "position": "rope",
                "vocab": need("vocab_size"), "head": "lm",
                "tied_embeddings": bool(cfg.get("tie_word_embeddings", TIED_BY_DEFAULT.get(mt, False))),
                "max_seq": need("max_position_embeddings"),
                "default_seq": min(2048, need("max_position_embeddings"))}
        if cfg.get("head_dim") is not None:
            arch["head_dim"] = opt("head_dim", None)
        if mt in ("mixtral", "gpt_oss"):
            arch["moe"] = {"experts": need("num_local_experts"), "active": need("num_experts_per_tok"),
                           "expert_ffn": need("intermediate_size")}
        elif mt in ("qwen2_moe", "qwen3_moe"):
            shared = opt("shared_expert_intermediate_size", 0, 0)
            f = need("moe_intermediate_size")
            arch["moe"] = {"experts": need("num_experts"), "active": need("num_experts_per_tok"), "expert_ffn": f,
                           "shared_experts": math.ceil(shared / f) if shared else 0}
        elif mt == "llama4_text":
            arch.update(_llama4(cfg, need, opt, arch["layers"], where))
        elif mt in ("deepseek_v2", "deepseek_v3"):
            arch["mla"] = {"q_lora_rank": need("q_lora_rank"), "kv_lora_rank": need("kv_lora_rank"),
                           "qk_nope_head_dim": need("qk_nope_head_dim"), "qk_rope_head_dim": need("qk_rope_head_dim"),
                           "v_head_dim": need("v_head_dim")}
            arch["moe"] = {"experts": need("n_routed_experts"), "active": need("num_experts_per_tok"),
                           "expert_ffn": need("moe_intermediate_size"), "shared_experts": opt("n_shared_experts", 0, 0),
                           "dense_layers": opt("first_k_dense_replace", 0, 0)}
            arch.pop("kv_heads", None)
        window = _window(cfg, mt, arch["layers"], where)
        if window is not None:
            arch["window"] = window
    phase = "forward" if arch["kind"] == "encoder" else "decode"
    defaults = {"phase": phase, "batch": 1, "dtype": "bf16"}
    if phase == "decode":
        defaults["context"] = arch["default_seq"]
    desc = {"name": name, "family": "transformer", "domain": "imported",
            "source": f"imported from Hugging Face config ({where}, model_type {mt}) by dse workloads import",
            "arch": arch, "defaults": defaults}
    _validate(desc, where, cfg)
    return desc


def _llama4(cfg: dict, need: Callable[..., Any], opt: Callable[..., Any], layers: int, where: str) -> dict[str, Any]:
    """Llama 4's text model (transformers ``Llama4TextConfig``): ``intermediate_size_mlp`` wide dense FFNs, MoE of
    ``num_local_experts`` experts of ``intermediate_size`` with one shared expert in every
    ``interleave_moe_layer_step``-th layer (``moe_layers``), and chunked attention of ``attention_chunk_size`` on the
    RoPE layers, the NoPE ones (``no_rope_layers`` entries 0, default every fourth) global."""
    out: dict[str, Any] = {"ffn": need("intermediate_size_mlp"),
                           "moe": {"experts": need("num_local_experts"), "active": need("num_experts_per_tok"),
                                   "expert_ffn": need("intermediate_size"), "shared_experts": 1,
                                   "every": opt("interleave_moe_layer_step", 1)}}
    chunk = opt("attention_chunk_size", None)
    if chunk:
        nope = cfg.get("no_rope_layers")
        if isinstance(nope, list) and nope:
            if len(nope) != layers:
                raise DseError(f"got {len(nope)} entries; accepted: {layers} entries, every n-th 0 (a window's "
                               "global_every)", file=where, field="no_rope_layers")
            every = _global_every([v == 0 for v in nope], where, "no_rope_layers")
        else:
            every = opt("no_rope_layer_interval", 4)
        out["window"] = {"tokens": chunk, "global_every": every, "kind": "chunked"}
    return out


def _window(cfg: dict, mt: str, layers: int, where: str) -> dict[str, int] | None:
    """``arch.window`` from a config's ``sliding_window`` (None where it is null, or where ``use_sliding_window`` is
    false: Qwen2/Qwen3 carry a window they do not use): which layers are local comes from ``layer_types``
    (transformers >= 4.53: ``sliding_attention`` / ``full_attention`` per layer), else Gemma 3's
    ``sliding_window_pattern`` (every n-th layer global), else Gemma 2's alternation (even layers local), else every
    layer (Mistral v0.1, Phi-3). A pattern whose global layers are not every n-th is refused in one line."""
    w = cfg.get("sliding_window")
    if w is None or cfg.get("use_sliding_window") is False:
        return None
    if isinstance(w, bool) or not isinstance(w, int) or w < 1:
        raise DseError(f"got {w!r:.60}; accepted: an integer >= 1 or null", file=where, field="sliding_window")
    types = cfg.get("layer_types")
    if isinstance(types, list) and types:
        if len(types) != layers or not all(t in ("sliding_attention", "full_attention") for t in types):
            raise DseError(f"got {len(types)} entries; accepted: {layers} of 'sliding_attention' or 'full_attention'",
                           file=where, field="layer_types")
        if "sliding_attention" not in types:
            return None
        every = _global_every([t == "full_attention" for t in types], where, "layer_types")
    elif "sliding_window_pattern" in cfg:
        every = cfg["sliding_window_pattern"]
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise DseError(f"got {every!r:.60}; accepted: an integer >= 1", file=where, field="sliding_window_pattern")
    else:
        every = 2 if mt == "gemma2" else 0
    return {"tokens": w, "global_every": every}


def _global_every(is_global: list[bool], where: str, key: str) -> int:
    """The ``global_every`` of a per-layer pattern (``layer_types``, ``no_rope_layers``): ``n`` where exactly every
    ``n``-th layer is global (layers ``n - 1, 2n - 1, ...``), 0 where none is; any other pattern is one line naming
    ``key``."""
    glob = [i for i, g in enumerate(is_global) if g]
    every = glob[0] + 1 if glob else 0
    if every and glob != list(range(every - 1, len(is_global), every)):
        raise DseError(f"global layers at {glob[:6]}; accepted: every n-th layer global (a window's global_every)",
                       file=where, field=key)
    return every


#: the Hugging Face config keys an ``arch`` field is read from (any model_type), for naming the key in an error; a
#: field not listed is read from the key of its own name (the MLA ranks)
HF_KEYS: dict[str, tuple[str, ...]] = {
    "layers": ("num_hidden_layers", "n_layer"), "hidden": ("hidden_size", "n_embd"),
    "heads": ("num_attention_heads", "n_head"), "kv_heads": ("num_key_value_heads", "num_attention_heads"),
    "ffn": ("intermediate_size", "n_inner"), "vocab": ("vocab_size",),
    "max_seq": ("max_position_embeddings", "n_positions"), "default_seq": ("max_position_embeddings", "n_positions"),
    "moe.experts": ("num_local_experts", "num_experts", "n_routed_experts"), "moe.active": ("num_experts_per_tok",),
    "moe.expert_ffn": ("moe_intermediate_size", "intermediate_size"), "moe.shared_experts": ("n_shared_experts",),
    "moe.dense_layers": ("first_k_dense_replace",),
}


def _validate(desc: dict, where: str, cfg: dict | None = None) -> None:
    """Check ``desc``'s arch against its family's schema: a one-line :class:`DseError` naming the field. With
    ``cfg`` (the Hugging Face config it came from), a value out of range names the config key it was read from
    (:data:`HF_KEYS`), the arch field and docs/limits.md (where each limit and its reason are stated)."""
    from pydantic import ValidationError

    from dse.errors import from_validation_error
    from dse.workloads.families import FAMILIES

    model = FAMILIES[desc["family"]].arch
    try:
        model.model_validate(desc["arch"])
    except ValidationError as exc:
        err = from_validation_error(exc, file=where, model=model, prefix="arch")
        first = exc.errors()[0]
        path = str(err.field or "").removeprefix("arch.")
        got: Any = desc["arch"]  # the value at the field (a block's own check names the field, its input is the block)
        for part in path.split("."):
            got = got.get(part) if isinstance(got, dict) else None
        keys = HF_KEYS.get(path, (path.rsplit(".", 1)[-1],))
        key = next((k for k in keys if cfg is not None and type(got) is int and cfg.get(k) == got), None)
        if key is None:
            raise err from None
        note = ", docs/limits.md" if first["type"] in ("less_than_equal", "less_than") else ""
        raise DseError(f"{err.message} ({err.field}{note})", file=where, field=key) from None


# ------------------------------------------------------------------------------------------ ONNX
ELEMENTWISE = {"Add": 1, "Sub": 1, "Mul": 1, "Div": 1, "Relu": 1, "Sigmoid": 4, "Tanh": 4, "Gelu": 8, "Erf": 4,
               "Exp": 4, "Sqrt": 1, "Pow": 1, "Clip": 2, "HardSwish": 4, "HardSigmoid": 3, "Neg": 1, "Where": 1,
               "Cast": 0, "Identity": 0}
NORMS = {"LayerNormalization": 8, "BatchNormalization": 2, "InstanceNormalization": 8, "GroupNormalization": 8,
         "SimplifiedLayerNormalization": 4}
REDUCE = {"ReduceMean": 1, "ReduceSum": 1, "ReduceMax": 1, "GlobalAveragePool": 1, "AveragePool": 1, "MaxPool": 1}
NO_DATA = {"Shape", "Constant", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Gather", "Slice",
           "Concat", "Split", "ConstantOfShape", "Range", "Expand"}


#: ONNX TensorProto element types -> dse dtypes (onnx.TensorProto.FLOAT = 1, FLOAT16 = 10, BFLOAT16 = 16, INT8 = 3,
#: UINT8 = 2, FLOAT8E4M3FN = 17, FLOAT8E4M3FNUZ = 18, FLOAT8E5M2 = 19, FLOAT8E5M2FNUZ = 20; onnx/onnx.proto3)
ONNX_DTYPES = {1: "fp32", 10: "fp16", 16: "bf16", 3: "int8", 2: "int8", 17: "fp8", 18: "fp8", 19: "fp8", 20: "fp8"}


def onnx_dtype(graph: Any) -> str:
    """The dtype of an ONNX graph's compute: the element type holding most of its initializers' elements (the
    weights), else its first input's; fp32 for a type dse has no dtype for."""
    by: dict[int, int] = {}
    for t in graph.initializer:
        by[t.data_type] = by.get(t.data_type, 0) + math.prod(t.dims)
    if by:
        return ONNX_DTYPES.get(max(by, key=by.__getitem__), "fp32")
    first = graph.input[0].type.tensor_type.elem_type if len(graph.input) else 1
    return ONNX_DTYPES.get(first, "fp32")


def symbolic_dims(graph: Any) -> list[tuple[str, int, str]]:
    """(input, axis, name) of every graph-input dimension without a fixed size (``dim_param`` or none), initializers
    excepted: what an importer must bind to sizes."""
    inits = {t.name for t in graph.initializer}
    return [(vi.name, ax, d.dim_param or "?") for vi in graph.input if vi.name not in inits
            for ax, d in enumerate(vi.type.tensor_type.shape.dim) if not d.HasField("dim_value")]


def onnx_free_dims(path: str | Path) -> list[tuple[str, int, str]]:
    """:func:`symbolic_dims` of an ONNX file ([] when it cannot be read: :func:`from_onnx` says why)."""
    try:
        import onnx

        return symbolic_dims(onnx.load(str(path), load_external_data=False).graph)
    except Exception:  # noqa: BLE001 - from_onnx reports an unreadable file
        return []


def _bind_dims(graph: Any, batch: int | None) -> None:
    """Fix the graph inputs' free dimensions before shape inference: the leading one (the batch) to ``batch``
    (default 1), any other to 1 (``dse workloads import`` says which)."""
    inits = {t.name for t in graph.initializer}
    for vi in graph.input:
        if vi.name in inits:
            continue
        for ax, d in enumerate(vi.type.tensor_type.shape.dim):
            if not d.HasField("dim_value"):
                d.dim_value = int(batch or 1) if ax == 0 else 1


def _pads(at: dict[str, Any], x: list[int], kh: int, kw: int, sh: int, sw: int, dh: int, dw: int) -> list[int]:
    """An ONNX Conv's padding as (top, left, bottom, right): ``pads`` (x1_begin, x2_begin, x1_end, x2_end), or
    ``auto_pad`` SAME_UPPER / SAME_LOWER (output = ceil(input / stride), the total pad split with the odd pixel at
    the end / the beginning), VALID (none) (onnx Operators.md, Conv)."""
    mode = at.get("auto_pad", b"NOTSET")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode in ("SAME_UPPER", "SAME_LOWER"):
        out = []
        for size, k, st, d in ((x[2], kh, sh, dh), (x[3], kw, sw, dw)):
            total = max(0, (math.ceil(size / st) - 1) * st + d * (k - 1) + 1 - size)
            small, big = total // 2, total - total // 2
            out.append((small, big) if mode == "SAME_UPPER" else (big, small))
        return [out[0][0], out[1][0], out[0][1], out[1][1]]
    if mode == "VALID":
        return [0, 0, 0, 0]
    p = list(at.get("pads", [0, 0, 0, 0]))
    return p if len(p) == 4 else [0, 0, 0, 0]


def _onnx_gemm_row(node: Any, nm: str, shapes: dict[str, list[int]], inits: dict[str, list[int]],
                   path: Path) -> dict[str, Any]:
    """An ONNX MatMul/Gemm as an ``optable`` gemm row: ``[.., M, K] x [K, N]``; a 2-D B shared by every leading index
    of A (``[B, S, H] @ W``) is one GEMM of ``B S`` rows, batched operands on both sides one GEMM per leading index."""
    a, b = shapes.get(node.input[0]), shapes.get(node.input[1])
    if not a or not b:
        raise DseError(f"node {nm}: input shapes unknown after shape inference", file=str(path), field="graph")
    trans_a = any(at.name == "transA" and at.i for at in node.attribute)
    trans_b = any(at.name == "transB" and at.i for at in node.attribute)
    if (trans_a and len(a) < 2) or (trans_b and len(b) < 2):
        raise DseError(f"node {nm}: a transposed rank-1 operand; accepted: rank >= 2 with transA/transB",
                       file=str(path), field="graph")
    M, K = (a[-1], a[-2]) if trans_a else (a[-2] if len(a) > 1 else 1, a[-1])
    N = b[-2] if trans_b else b[-1]
    if len(b) <= 2:  # one matrix B for every leading index of A: one GEMM of all the rows
        M, batch = M * (math.prod(a[:-2]) if len(a) > 2 else 1), 1
    else:  # batched operands on both sides (attention's Q K^T): one GEMM per leading index
        batch = math.prod(a[:-2]) if len(a) > 2 else math.prod(b[:-2])
    return {"op": "gemm", "name": nm, "M": int(M), "N": int(N), "K": int(K), "batch": int(batch),
            "weights": node.input[1] in inits}


def _onnx_conv_row(node: Any, nm: str, shapes: dict[str, list[int]], path: Path) -> dict[str, Any]:
    """An ONNX Conv as an ``optable`` conv row, with its ``kernel_shape`` (from the weight), ``strides``, ``pads`` or
    ``auto_pad`` (:func:`_pads`), ``dilations`` and ``group``."""
    x, w = shapes.get(node.input[0]), shapes.get(node.input[1])
    if not x or not w:
        raise DseError(f"node {nm}: input shapes unknown after shape inference", file=str(path), field="graph")
    if len(x) != 4 or len(w) != 4:
        raise DseError(f"node {nm}: Conv on a rank-{len(x)} input with a rank-{len(w)} kernel; accepted: "
                       "2-D convolutions (rank-4 NCHW input and kernel)", file=str(path), field="graph")
    at = {a.name: (list(a.ints) if a.ints else (a.s if a.s else a.i)) for a in node.attribute}
    kh, kw = w[2], w[3]
    sh, sw = (list(at.get("strides") or [1, 1]) + [1, 1])[:2]
    dh, dw = (list(at.get("dilations") or [1, 1]) + [1, 1])[:2]
    pads = _pads(at, x, kh, kw, sh, sw, dh, dw)
    row = {"op": "conv", "name": nm, "n": x[0], "c_in": x[1], "h": x[2], "w": x[3], "c_out": w[0],
           "k": kh, "stride": sh, "pad": 0, "groups": at.get("group", 1) or 1}
    if kw != kh:
        row["kw"] = kw
    if sw != sh:
        row["stride_w"] = sw
    if any(pads):
        row["pads"] = [int(v) for v in pads]
    if (dh, dw) != (1, 1):
        row["dilation"] = [int(dh), int(dw)]
    return row


def from_onnx(path: str | Path, name: str | None = None, batch: int | None = None) -> dict[str, Any]:
    """An ``optable`` description of an ONNX model (shape inference required to size every node). The graph inputs'
    free dimensions are bound first: the leading one to ``batch`` (default 1), any other to 1 (:func:`symbolic_dims`
    lists them). The dtype is the weights' (:func:`onnx_dtype`)."""
    try:
        import onnx
        from onnx import shape_inference
    except ModuleNotFoundError:
        raise DseError("the onnx package is not installed; accepted: pip install 'dse[onnx]' (in a checkout: "
                       "pip install -e '.[onnx]')") from None
    path = Path(path)
    if not path.is_file():
        raise DseError("file not found; accepted: an .onnx model", file=str(path))
    try:
        raw = onnx.load(str(path))
        _bind_dims(raw.graph, batch)
        model = shape_inference.infer_shapes(raw)
    except Exception as exc:  # onnx raises DecodeError / ValidationError / InferenceError
        raise DseError(f"not a readable ONNX model ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
                       file=str(path)) from None
    g = model.graph
    shapes: dict[str, list[int]] = {}
    for vi in [*g.input, *g.output, *g.value_info]:
        dims = [d.dim_value if d.HasField("dim_value") else 1 for d in vi.type.tensor_type.shape.dim]
        shapes[vi.name] = dims
    inits = {t.name: list(t.dims) for t in g.initializer}
    shapes.update(inits)
    params = sum(math.prod(d) for d in inits.values())
    rows: list[dict[str, Any]] = []
    unknown: list[str] = []

    def numel(n: str) -> int:
        return math.prod(shapes.get(n, [0])) if n in shapes else 0

    for i, node in enumerate(g.node):
        nm = node.name or f"{node.op_type}_{i}"
        t = node.op_type
        if t in ("MatMul", "Gemm"):
            rows.append(_onnx_gemm_row(node, nm, shapes, inits, path))
        elif t == "Conv":
            rows.append(_onnx_conv_row(node, nm, shapes, path))
        elif t in ELEMENTWISE or t in NORMS or t in REDUCE or t == "Softmax":
            out = numel(node.output[0])
            inp = sum(numel(x) for x in node.input if x and x not in inits)
            kind = ("norm" if t in NORMS else "reduce" if t in REDUCE else "softmax" if t == "Softmax" else "elementwise")
            flops = NORMS.get(t) or REDUCE.get(t) or (5 if t == "Softmax" else ELEMENTWISE.get(t, 1))
            elems = max(out, 1)
            rows.append({"op": "stream", "name": nm, "kind": kind, "elems": float(elems),
                         "flops_per_elem": float(flops * (inp / elems if t in REDUCE else 1)),
                         "read_per_elem": inp / elems, "write_per_elem": 1.0})
        elif t in NO_DATA:
            continue
        else:
            out = sum(numel(x) for x in node.output)
            inp = sum(numel(x) for x in node.input if x)
            unknown.append(f"{nm} ({t})")
            rows.append({"op": "stream", "name": f"{nm}.{t}", "kind": "elementwise", "elems": float(max(out, 1)),
                         "flops_per_elem": 0.0, "read_per_elem": inp / max(out, 1), "write_per_elem": 1.0})
    if not rows:
        raise DseError("no operators found; accepted: an ONNX model with MatMul/Gemm/Conv/elementwise nodes",
                       file=str(path))
    name = name or path.stem.lower()
    desc = {"name": name, "family": "optable", "domain": "imported",
            "source": f"imported from {path.name} by dse workloads import (ONNX shape inference)",
            "arch": {"ops": rows, "params": int(params), "unknown_ops": unknown},
            "defaults": {"phase": "forward", "dtype": onnx_dtype(g)}}
    _validate(desc, str(path))
    return desc


# ----------------------------------------------------------------------------------------- torch
VIEW_OPS = {"view", "_unsafe_view", "t", "transpose", "permute", "expand", "reshape", "detach", "alias", "slice",
            "select", "unsqueeze", "squeeze", "as_strided", "clone", "contiguous", "split", "split_with_sizes",
            "chunk", "unbind", "flatten", "lift_fresh", "empty", "zeros", "ones", "full", "arange", "new_empty",
            "_to_copy", "to", "lift_fresh_copy"}


def _numel(x: Any) -> int:
    return int(x.numel()) if hasattr(x, "numel") else 0


def from_torch(module: Any, example_inputs: tuple, name: str = "torch-model") -> dict[str, Any]:
    """An ``optable`` description of ``module(*example_inputs)``: run on the meta device (no weights
    are materialised), recording each aten matmul/convolution with its shapes (the ops torch's
    FlopCounterMode counts) and every other op's elements in and out."""
    try:
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_flatten
    except ModuleNotFoundError:
        raise DseError("torch is not installed; accepted: pip install torch==2.13.0 (the CPU build on disk)") from None

    rows: list[dict[str, Any]] = []

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            op = func.overloadpacket.__name__
            n = len(rows)
            if op in ("mm", "addmm", "bmm", "baddbmm"):
                a, b = (args[1], args[2]) if op in ("addmm", "baddbmm") else (args[0], args[1])
                batch = a.shape[0] if a.dim() == 3 else 1
                rows.append({"op": "gemm", "name": f"{op}_{n}", "M": int(a.shape[-2]), "N": int(b.shape[-1]),
                             "K": int(a.shape[-1]), "batch": int(batch)})
            elif op == "convolution":
                x, w = args[0], args[1]
                stride, pad, groups = args[3], args[4], args[8]
                if x.dim() == 4:
                    rows.append({"op": "conv", "name": f"conv_{n}", "n": int(x.shape[0]), "c_in": int(x.shape[1]),
                                 "h": int(x.shape[2]), "w": int(x.shape[3]), "c_out": int(w.shape[0]),
                                 "k": int(w.shape[2]), "stride": int(stride[0]), "pad": int(pad[0]), "groups": int(groups)})
            elif op not in VIEW_OPS:
                ins = sum(_numel(t) for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor))
                outs = sum(_numel(t) for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor))
                if outs:
                    rows.append({"op": "stream", "name": f"{op}_{n}", "kind": "elementwise", "elems": float(outs),
                                 "flops_per_elem": 1.0, "read_per_elem": ins / outs, "write_per_elem": 1.0})
            return out

    with torch.device("meta"):
        inputs = tuple(t.to("meta") if isinstance(t, torch.Tensor) else t for t in example_inputs)
        module = module.to("meta")
        with torch.no_grad(), Recorder():
            module(*inputs)
    params = int(sum(p.numel() for p in module.parameters()))
    desc = {"name": name, "family": "optable", "domain": "imported",
            "source": f"imported from a torch module ({type(module).__name__}) on the meta device by dse",
            "arch": {"ops": rows, "params": params, "unknown_ops": []}, "defaults": {"phase": "forward", "dtype": "fp32"}}
    _validate(desc, type(module).__name__)
    return desc


def workload_from_description(desc: dict[str, Any], **scenario: Any):  # noqa: ANN201
    """Build a Workload straight from a description mapping (no file needed)."""
    from dse.workloads import ops
    from dse.workloads.families import FAMILIES
    from dse.workloads.library import ModelDescription, Workload
    from dse.workloads.scenario import Scenario

    d = ModelDescription.model_validate(desc)
    fam = FAMILIES[d.family]
    arch = fam.arch.model_validate(d.arch)
    sc = Scenario.model_validate({**d.defaults, **scenario})
    try:
        rows, facts = fam.build(arch, sc, d.name)
        table = ops.table(rows)
    except ValueError as exc:  # a scenario the model refuses, a row beyond the table's int64 columns
        raise DseError(f"{exc}", field=f"workload {d.name}") from None
    return Workload(name=d.name, ops=table, scenario={**facts, "dtype": sc.dtype}, source=d.source)
