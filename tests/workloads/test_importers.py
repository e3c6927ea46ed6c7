"""Bring-your-own-model importers: Hugging Face configs, ONNX files built here, torch modules on meta."""

import json
from pathlib import Path

import pytest

import dse
from dse.cli import main
from dse.errors import DseError
from dse.workloads.importers import from_hf_config, workload_from_description
from tests.conftest import need

LLAMA3_8B = {"model_type": "llama", "_name_or_path": "meta-llama/Meta-Llama-3-8B", "num_hidden_layers": 32,
             "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
             "hidden_act": "silu", "vocab_size": 128256, "max_position_embeddings": 8192, "tie_word_embeddings": False}


def _need(module: str):
    """:func:`tests.conftest.need` with the module's extra (torch and torchvision come with ``torch``)."""
    return need(module, "torch" if module.startswith("torch") else module)


def test_hf_config_matches_the_library_model() -> None:
    wl = workload_from_description(from_hf_config(LLAMA3_8B), phase="decode", context=2048)
    lib = dse.workload("llama3-8b", phase="decode", context=2048)
    assert wl.scenario["params"] == lib.scenario["params"] == 8_030_261_248
    assert wl.flops == pytest.approx(lib.flops)


def test_hf_config_errors_name_the_field() -> None:
    with pytest.raises(DseError, match="model_type: unsupported model_type 't5'"):
        from_hf_config({"model_type": "t5"})
    with pytest.raises(DseError, match="hidden must be divisible by heads"):
        from_hf_config({**LLAMA3_8B, "hidden_size": 4100})
    with pytest.raises(DseError, match="missing 'vocab_size'"):
        from_hf_config({k: v for k, v in LLAMA3_8B.items() if k != "vocab_size"})


def _onnx_model(path: Path) -> int:
    """An MLP + conv graph with a TopK (no model of it); returns the hand-counted matrix FLOPs."""
    onnx = _need("onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.zeros((64, 128), np.float32), "W1"),
             numpy_helper.from_array(np.zeros((128, 10), np.float32), "W2"),
             numpy_helper.from_array(np.zeros((16, 3, 3, 3), np.float32), "Wc"),
             numpy_helper.from_array(np.array([3], np.int64), "kk")]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h1"], name="fc1"),
             helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
             helper.make_node("MatMul", ["h2", "W2"], ["h3"], name="fc2"),
             helper.make_node("Softmax", ["h3"], ["y"], name="softmax"),
             helper.make_node("Conv", ["img", "Wc"], ["c1"], name="conv", pads=[1, 1, 1, 1], strides=[1, 1]),
             helper.make_node("TopK", ["h3", "kk"], ["tv", "ti"], name="topk")]
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64]),
                                           helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 10]),
                               helper.make_tensor_value_info("c1", TensorProto.FLOAT, [1, 16, 32, 32])], inits)
    onnx.save(helper.make_model(graph), str(path))
    return 2 * 8 * 128 * 64 + 2 * 8 * 10 * 128 + 2 * 32 * 32 * 16 * 3 * 3 * 3


def test_onnx_import_counts_flops_by_hand_and_lists_unknown_ops(tmp_path: Path, capsys) -> None:
    expected = _onnx_model(tmp_path / "m.onnx")
    out = tmp_path / "custom" / "tiny-net.yaml"
    assert main(["workloads", "import", str(tmp_path / "m.onnx"), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "topk (TopK)" in text and out.is_file()
    from dse.yamlio import load_yaml

    wl = workload_from_description(load_yaml(out))
    assert wl.matrix_flops == expected
    assert "topk.TopK" in set(wl.ops["name"])


def test_malformed_onnx_is_one_line(tmp_path: Path, capsys) -> None:
    _need("onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00\x01 not a protobuf" * 10)
    assert main(["workloads", "import", str(bad), "-o", str(tmp_path / "x.yaml")]) == 2
    err = capsys.readouterr().err
    assert "bad.onnx" in err and "not a readable ONNX model" in err and err.count("\n") == 1


TV_MODELS = [("resnet18", "resnet18", 224), ("resnet50", "resnet50", 224), ("resnet152", "resnet152", 224),
             ("mobilenet_v2", "mobilenet-v2", 224), ("mobilenet_v3_large", "mobilenet-v3-large", 224),
             ("efficientnet_b0", "efficientnet-b0", 224), ("efficientnet_b3", "efficientnet-b3", 300),
             ("convnext_tiny", "convnext-tiny", 224), ("vgg16", "vgg16", 224), ("vit_b_16", "vit-b16", 224),
             ("resnext50_32x4d", "resnext50-32x4d", 224), ("wide_resnet50_2", "wide-resnet50-2", 224),
             ("densenet121", "densenet121", 224), ("googlenet", "googlenet", 224), ("swin_t", "swin-t", 224)]


@pytest.fixture(scope="module")
def torchvision():
    _need("torch")
    return _need("torchvision")  # the .[torch] extra pins a matching torch/torchvision pair: a plain import works





@pytest.mark.parametrize(("tv_name", "lib_name", "res"), TV_MODELS)
def test_library_flops_equal_torch_flop_counter_on_real_models(torchvision, tv_name, lib_name, res) -> None:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        kw = {"init_weights": False} if tv_name == "googlenet" else {}  # on the meta device: torchvision's warning
        model = getattr(torchvision.models, tv_name)(weights=None, **kw).eval()  # eval: no auxiliary heads
    x = torch.empty(1, 3, res, res, device="meta")
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model(x)
    ref = counter.get_total_flops()
    wl = dse.workload(lib_name, dtype="fp32")
    mat = wl.ops[wl.ops["kind"].isin(["conv", "gemm", "attention"])]
    assert float((mat["flops"] * mat["count"]).sum()) == pytest.approx(ref, rel=0.02)
    params = sum(p.numel() for n, p in model.named_parameters() if not n.startswith("aux"))  # googlenet's aux heads
    assert wl.scenario["params"] == pytest.approx(params, rel=0.02)


def test_torch_module_import_equals_the_flop_counter(torchvision) -> None:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from dse.workloads.importers import from_torch

    with torch.device("meta"):
        model = torchvision.models.resnet18(weights=None)
    x = torch.empty(2, 3, 224, 224, device="meta")
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model(x)
    wl = workload_from_description(from_torch(model, (x,), "resnet18-imported"))
    assert wl.matrix_flops == counter.get_total_flops()
    assert wl.scenario["params"] == 11_689_512


def test_torch_exported_onnx_imports_with_the_hand_count(tmp_path: Path) -> None:
    torch = _need("torch")
    _need("onnx")
    import warnings

    from dse.workloads.importers import from_onnx

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(8 * 16 * 16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    x = torch.randn(2, 3, 16, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(tmp_path / "m.onnx"), dynamo=False)  # the TorchScript exporter
    wl = workload_from_description(from_onnx(tmp_path / "m.onnx"))
    hand = 2 * (2 * 16 * 16) * 8 * (3 * 9) + 2 * 2 * 64 * (8 * 16 * 16) + 2 * 2 * 10 * 64
    assert wl.matrix_flops == hand
    assert wl.scenario["params"] == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(("content", "needle"), [
    (b"[1, 2]", "got a JSON list; accepted: a JSON object"),
    (b'{"model_type": "llama", "x": "\xe9t\xe9"}', "is not UTF-8"),
    (b'{"model_type": "gpt2", "n_embd": 256, "n_layer": 4, "n_head": 4, "vocab_size": 100, "n_positions": "1024"}',
     "n_positions: got '1024'; accepted: an integer >= 1"),
    (b'{"model_type": "gpt2", "n_embd": NaN, "n_layer": 4}', "got NaN; accepted: finite JSON numbers"),
    (b'{"model_type": "llama", "num_hidden_layers": true}', "num_hidden_layers: got True"),
])
def test_bad_config_json_is_one_line(tmp_path: Path, capsys, content: bytes, needle: str) -> None:
    (tmp_path / "config.json").write_bytes(content)
    assert main(["workloads", "import", str(tmp_path / "config.json"), "-o", str(tmp_path / "o.yaml")]) == 2
    err = capsys.readouterr().err
    assert needle in err and "config.json" in err and err.count("\n") == 1, err
    assert not (tmp_path / "o.yaml").exists()


def test_moe_intermediate_size_zero_is_refused_before_dividing() -> None:
    qwen_moe = {**LLAMA3_8B, "model_type": "qwen2_moe", "num_experts": 8, "num_experts_per_tok": 2,
                "moe_intermediate_size": 0, "shared_expert_intermediate_size": 1024}
    with pytest.raises(DseError, match="moe_intermediate_size: got 0; accepted: an integer >= 1"):
        from_hf_config(qwen_moe)


def test_onnx_conv_on_a_rank_2_input_is_one_line(tmp_path: Path) -> None:
    onnx = _need("onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from dse.workloads.importers import from_onnx

    graph = helper.make_graph([helper.make_node("Conv", ["x", "W"], ["y"], name="conv")], "t",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.zeros((16, 64, 3, 3), np.float32), "W")])
    onnx.save(helper.make_model(graph), str(tmp_path / "m.onnx"))
    with pytest.raises(DseError, match="node conv: Conv on a rank-2 input"):
        from_onnx(tmp_path / "m.onnx")


#: EleutherAI/gpt-j-6b config.json (the keys the importer reads)
GPTJ_6B = {"model_type": "gptj", "_name_or_path": "EleutherAI/gpt-j-6b", "n_layer": 28, "n_embd": 4096, "n_head": 16,
           "n_inner": None, "rotary_dim": 64, "activation_function": "gelu_new", "vocab_size": 50400,
           "n_positions": 2048, "tie_word_embeddings": False}


def test_hf_gptj_and_gpt_neox_configs_import_as_parallel_blocks() -> None:
    wl = workload_from_description(from_hf_config(GPTJ_6B), phase="prefill", seq=512)
    lib = dse.workload("gpt-j-6b", phase="prefill", seq=512)
    assert wl.scenario["params"] == lib.scenario["params"] and wl.flops == pytest.approx(lib.flops)
    assert int(wl.ops.loc[wl.ops["kind"] == "norm", "count"].sum()) == 28 + 1  # one per layer, plus the final one
    neox = {"model_type": "gpt_neox", "_name_or_path": "EleutherAI/pythia-1b", "num_hidden_layers": 16,
            "hidden_size": 2048, "num_attention_heads": 8, "intermediate_size": 8192, "hidden_act": "gelu",
            "vocab_size": 50304, "max_position_embeddings": 2048, "use_parallel_residual": True}
    assert from_hf_config(neox)["arch"]["parallel_block"] is True
    assert from_hf_config({**neox, "use_parallel_residual": False})["arch"]["parallel_block"] is False


@pytest.mark.parametrize(("key", "value", "field", "limit"), [
    ("hidden_size", 2**40, "arch.hidden", 2**17),
    ("num_hidden_layers", 2**12 + 1, "arch.layers", 2**12),
    ("num_attention_heads", 2**13, "arch.heads", 2**12),
    ("num_key_value_heads", 2**13, "arch.kv_heads", 2**12),
    ("intermediate_size", 2**21, "arch.ffn", 2**20),
    ("vocab_size", 2**23, "arch.vocab", 2**22),
    ("max_position_embeddings", 2**25, "arch.max_seq", 2**24),
])
def test_a_dimension_beyond_its_limit_exits_2_naming_the_config_key(tmp_path: Path, capsys, key: str, value: int,
                                                                      field: str, limit: int) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA3_8B, key: value}))
    assert main(["workloads", "import", str(path), "-o", str(tmp_path / "o.yaml")]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {path}: {key}: got {value}; accepted: a number <= {limit} ({field}, docs/limits.md)\n"
    assert not (tmp_path / "o.yaml").exists()


def test_moe_and_mla_dimensions_beyond_their_limits_name_the_config_key() -> None:
    mixtral = {**LLAMA3_8B, "model_type": "mixtral", "num_local_experts": 2**15, "num_experts_per_tok": 2}
    with pytest.raises(DseError) as exc:
        from_hf_config(mixtral)
    assert str(exc.value) == ("mapping: num_local_experts: got 32768; accepted: a number <= 16384 (arch.moe.experts, "
                              "docs/limits.md)")
    deepseek = {**LLAMA3_8B, "model_type": "deepseek_v3", "q_lora_rank": 1536, "kv_lora_rank": 512,
                "qk_nope_head_dim": 128, "qk_rope_head_dim": 2**13, "v_head_dim": 128, "n_routed_experts": 256,
                "num_experts_per_tok": 8, "moe_intermediate_size": 2048}
    with pytest.raises(DseError, match=r"^mapping: qk_rope_head_dim: got 8192; accepted: a number <= 4096 "
                                       r"\(arch.mla.qk_rope_head_dim, docs/limits.md\)$"):
        from_hf_config(deepseek)
    with pytest.raises(DseError, match="num_experts_per_tok: got 9 with 8 experts; accepted: an integer from 1 to "):
        from_hf_config({**mixtral, "num_local_experts": 8, "num_experts_per_tok": 9})


def test_imports_never_overwrite(tmp_path: Path, monkeypatch, capsys) -> None:
    """Two configs of one model_type keep both files (the second takes NAME-2); importing the first again reuses its
    file; an existing --output is one line naming it."""
    import yaml

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.json").write_text(json.dumps(LLAMA3_8B))
    (tmp_path / "b.json").write_text(json.dumps({**LLAMA3_8B, "num_hidden_layers": 16}))
    assert main(["workloads", "import", "a.json"]) == 0
    assert main(["workloads", "import", "b.json"]) == 0
    assert main(["workloads", "import", "a.json"]) == 0
    files = sorted((p.name for p in (tmp_path / "results" / "imports").iterdir()), key=len)
    assert len(files) == 2 and files[1] == files[0].replace(".yaml", "-2.yaml")
    second = yaml.safe_load((tmp_path / "results" / "imports" / files[1]).read_text())
    assert second["name"] == files[1].removesuffix(".yaml") and second["arch"]["layers"] == 16
    capsys.readouterr()
    assert main(["workloads", "import", "b.json", "-o", "a.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --output: got 'a.json', which exists; accepted: a new file (imports never overwrite)"]


def _one_node_model(path: Path, node_kw: dict, x_shape: list, w: "object", elem: int | None = None) -> None:
    """A one-node ONNX graph (``x`` and the weight ``W``) saved at ``path``."""
    onnx = _need("onnx")
    from onnx import TensorProto, helper, numpy_helper

    elem = TensorProto.FLOAT if elem is None else elem
    graph = helper.make_graph([helper.make_node(inputs=["x", "W"], outputs=["y"], name="n", **node_kw)], "t",
                              [helper.make_tensor_value_info("x", elem, x_shape)],
                              [helper.make_tensor_value_info("y", elem, None)], [numpy_helper.from_array(w, "W")])
    onnx.save(helper.make_model(graph), str(path))


def test_onnx_matmul_of_a_3d_input_by_a_weight_is_one_gemm_reading_the_weight_once(tmp_path: Path) -> None:
    """[B, S, H] @ W[H, N] (every transformer export) is one GEMM of B S rows: the weight is read once, not B times
    (it came out 25x slower than the same GEMM on a [B S, H] input), and an fp16 graph imports as fp16."""
    _need("onnx")
    import numpy as np
    from onnx import TensorProto

    from dse.workloads.importers import from_onnx

    w = np.zeros((512, 256), np.float16)
    _one_node_model(tmp_path / "a.onnx", {"op_type": "MatMul"}, [8, 128, 512], w, TensorProto.FLOAT16)
    _one_node_model(tmp_path / "b.onnx", {"op_type": "MatMul"}, [8 * 128, 512], w, TensorProto.FLOAT16)
    a, b = (workload_from_description(from_onnx(tmp_path / f"{n}.onnx")) for n in "ab")
    assert a.scenario["dtype"] == b.scenario["dtype"] == "fp16"
    for wl in (a, b):
        row = wl.ops.iloc[0]
        assert (row["M"], row["N"], row["K"], row["batch"]) == (1024, 256, 512, 1)
        assert row["b_bytes"] == 512 * 256 * 2
    assert a.bytes == b.bytes and a.flops == b.flops == 2 * 1024 * 256 * 512


@pytest.mark.parametrize(("kw", "x", "kernel", "hw_out"), [
    ({}, [1, 64, 56, 56], (1, 7), (56, 50)),  # a 1x7 kernel, no padding
    ({"pads": [3, 0, 3, 0]}, [1, 64, 56, 56], (7, 1), (56, 56)),  # 7x1 with its rows padded
    ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, [1, 64, 57, 57], (3, 3), (29, 29)),
    ({"dilations": [2, 2], "pads": [2, 2, 2, 2]}, [1, 64, 56, 56], (3, 3), (56, 56)),
])
def test_onnx_conv_reads_its_kernel_shape_padding_and_dilation(tmp_path: Path, kw, x, kernel, hw_out) -> None:
    """FLOPs = 2 n ho wo c_out c_in kh kw with ho, wo from the node's own attributes (a 1x7 kernel was counted as
    1x1 and a 7x1 as 7x7; SAME padding and dilation were ignored)."""
    _need("onnx")
    import numpy as np

    from dse.workloads.importers import from_onnx

    w = np.zeros((32, x[1], *kernel), np.float32)
    _one_node_model(tmp_path / "c.onnx", {"op_type": "Conv", **kw}, x, w)
    wl = workload_from_description(from_onnx(tmp_path / "c.onnx"))
    ho, wo = hw_out
    assert wl.matrix_flops == 2 * ho * wo * 32 * x[1] * kernel[0] * kernel[1]


def test_onnx_free_batch_dimension_takes_batch_and_the_import_says_so(tmp_path: Path, capsys) -> None:
    """A dynamic batch (``dim_param``) is bound to ``--batch`` (default 1) before shape inference, and the import
    prints which free dimensions it bound."""
    _need("onnx")
    import numpy as np

    _one_node_model(tmp_path / "d.onnx", {"op_type": "MatMul"}, ["N", 128, 512], np.zeros((512, 256), np.float32))
    for batch in (None, 8):
        out = tmp_path / f"d{batch}.yaml"
        assert main(["workloads", "import", str(tmp_path / "d.onnx"), "-o", str(out),
                     *(["--batch", str(batch)] if batch else [])]) == 0
        text = capsys.readouterr().out
        assert f"x[0] N={batch or 1}" in text
        wl = dse.workload(str(out))
        assert wl.flops == 2 * (batch or 1) * 128 * 256 * 512


def test_a_gemma_config_without_tie_word_embeddings_ties_them_as_transformers_does() -> None:
    """Gemma's config.json leaves ``tie_word_embeddings`` out and transformers' GemmaConfig defaults it to True: the
    import has Gemma-7B's 8.54 B parameters, the library model's (it had 9.32 B, an untied LM head)."""
    gemma = {"model_type": "gemma", "_name_or_path": "google/gemma-7b", "num_hidden_layers": 28, "hidden_size": 3072,
             "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 256, "intermediate_size": 24576,
             "hidden_act": "gelu", "vocab_size": 256000, "max_position_embeddings": 8192}
    wl = workload_from_description(from_hf_config(gemma))
    assert wl.scenario["params"] == dse.workload("gemma-7b").scenario["params"]
    llama = {k: v for k, v in LLAMA3_8B.items() if k != "tie_word_embeddings"}  # LlamaConfig defaults to untied
    assert workload_from_description(from_hf_config(llama)).scenario["params"] == 8_030_261_248


# the models of 2025 and their sliding windows (config.json values as published on the Hugging Face hub)
GPT_OSS_20B = {"model_type": "gpt_oss", "_name_or_path": "openai/gpt-oss-20b", "num_hidden_layers": 24,
               "hidden_size": 2880, "intermediate_size": 2880, "head_dim": 64, "num_attention_heads": 64,
               "num_key_value_heads": 8, "num_local_experts": 32, "num_experts_per_tok": 4, "vocab_size": 201088,
               "max_position_embeddings": 131072, "sliding_window": 128, "tie_word_embeddings": False,
               "hidden_act": "silu", "layer_types": ["sliding_attention", "full_attention"] * 12}
GEMMA3_27B = {"model_type": "gemma3", "_name_or_path": "google/gemma-3-27b-it", "text_config": {
    "model_type": "gemma3_text", "num_hidden_layers": 62, "hidden_size": 5376, "intermediate_size": 21504,
    "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128, "vocab_size": 262208,
    "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 131072, "sliding_window": 1024,
    "sliding_window_pattern": 6}}
QWEN3_30B_A3B = {"model_type": "qwen3_moe", "_name_or_path": "Qwen/Qwen3-30B-A3B", "num_hidden_layers": 48,
                 "hidden_size": 2048, "head_dim": 128, "num_attention_heads": 32, "num_key_value_heads": 4,
                 "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
                 "num_experts_per_tok": 8, "vocab_size": 151936, "max_position_embeddings": 40960,
                 "tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": None,
                 "hidden_act": "silu"}
GEMMA2_9B = {"model_type": "gemma2", "_name_or_path": "google/gemma-2-9b", "num_hidden_layers": 42,
             "hidden_size": 3584, "intermediate_size": 14336, "num_attention_heads": 16, "num_key_value_heads": 8,
             "head_dim": 256, "vocab_size": 256000, "hidden_activation": "gelu_pytorch_tanh",
             "max_position_embeddings": 8192, "sliding_window": 4096}


@pytest.mark.parametrize(("cfg", "lib", "window"), [
    (GPT_OSS_20B, "gpt-oss-20b", {"tokens": 128, "global_every": 2}),
    (GEMMA3_27B, "gemma3-27b", {"tokens": 1024, "global_every": 6}),
    (QWEN3_30B_A3B, "qwen3-30b-a3b", None),
    (GEMMA2_9B, "gemma2-9b", {"tokens": 4096, "global_every": 2}),
])
def test_a_2025_config_imports_as_the_library_model_with_its_window(tmp_path: Path, cfg: dict, lib: str,
                                                                   window: dict | None) -> None:
    import yaml

    desc = from_hf_config(cfg)
    assert desc["arch"].get("window") == window
    path = tmp_path / f"{desc['name']}.yaml"
    path.write_text(yaml.safe_dump(desc))  # as `dse workloads import` writes it
    kw = {"phase": "decode", "batch": 4, "context": 8192}
    wl, ref = dse.workload(str(path), **kw), dse.workload(lib, **kw)
    assert wl.scenario["params"] == ref.scenario["params"]  # the library's gpt-oss keeps its experts in mxfp4
    assert wl.matrix_flops == pytest.approx(ref.matrix_flops) and wl.memory["kv_cache"] == ref.memory["kv_cache"]


def test_a_window_from_a_config_is_checked_in_one_line() -> None:
    with pytest.raises(DseError) as exc:  # global layers that are not every n-th
        from_hf_config({**GPT_OSS_20B, "layer_types": ["sliding_attention"] * 20 + ["full_attention"] * 4})
    assert exc.value.field == "layer_types" and "accepted: every n-th layer global" in str(exc.value)
    with pytest.raises(DseError) as exc:
        from_hf_config({**GPT_OSS_20B, "layer_types": ["sliding_attention"] * 3})
    assert exc.value.field == "layer_types" and "accepted: 24 of" in str(exc.value)
    with pytest.raises(DseError) as exc:
        from_hf_config({**GPT_OSS_20B, "sliding_window": "128"})
    assert exc.value.field == "sliding_window"
    assert "window" not in from_hf_config({**GPT_OSS_20B, "layer_types": ["full_attention"] * 24})["arch"]
    mistral = {**LLAMA3_8B, "model_type": "mistral", "sliding_window": 4096, "vocab_size": 32000}
    assert from_hf_config(mistral)["arch"]["window"] == {"tokens": 4096, "global_every": 0}


LLAMA4_SCOUT = {"model_type": "llama4", "_name_or_path": "meta-llama/Llama-4-Scout-17B-16E", "text_config": {
    "model_type": "llama4_text", "num_hidden_layers": 48, "hidden_size": 5120, "intermediate_size": 8192,
    "intermediate_size_mlp": 16384, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
    "vocab_size": 202048, "num_local_experts": 16, "num_experts_per_tok": 1, "interleave_moe_layer_step": 1,
    "attention_chunk_size": 8192, "max_position_embeddings": 10485760, "hidden_act": "silu",
    "tie_word_embeddings": False}}


@pytest.mark.parametrize(("cfg", "lib"), [
    (LLAMA4_SCOUT, "llama4-scout"),
    ({**LLAMA4_SCOUT, "text_config": {**LLAMA4_SCOUT["text_config"], "num_local_experts": 128,
                                      "interleave_moe_layer_step": 2, "max_position_embeddings": 1048576,
                                      "no_rope_layers": [int((i + 1) % 4 != 0) for i in range(48)]}},
     "llama4-maverick"),
])
def test_a_llama4_config_imports_as_the_library_model(tmp_path: Path, cfg: dict, lib: str) -> None:
    import yaml

    desc = from_hf_config(cfg)
    assert desc["arch"]["window"] == {"tokens": 8192, "global_every": 4, "kind": "chunked"}
    path = tmp_path / f"{desc['name']}.yaml"
    path.write_text(yaml.safe_dump(desc))
    kw = {"phase": "decode", "batch": 4, "context": 10000}
    wl, ref = dse.workload(str(path), **kw), dse.workload(lib, **kw)
    assert wl.scenario["params"] == ref.scenario["params"]
    assert wl.matrix_flops == pytest.approx(ref.matrix_flops) and wl.memory["kv_cache"] == ref.memory["kv_cache"]
    bad = {**cfg["text_config"], "model_type": "llama4_text", "no_rope_layers": [1, 0] * 24, "_name_or_path": "x"}
    bad["no_rope_layers"][4] = 0  # global at 1, 3, 4, 5, ...: not every n-th
    with pytest.raises(DseError) as exc:
        from_hf_config(bad)
    assert exc.value.field == "no_rope_layers"
