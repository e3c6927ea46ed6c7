"""A corpus of mutated inputs for every command, and a runner that holds each case to the contract:
exit 0, or exit 2 with a last stderr line ``error: ...``; never a traceback, never past ``TIMEOUT_S``
(wall) or ``CPU_LIMIT_S`` (CPU) or ``MEMORY_BYTES``, nothing written outside the case's folder.

The inputs are the shipped files (``configs/``, ``experiments/``, ``hw_templates/``, ``workloads/``,
``validation/measurements.csv``) plus a what-if file, Hugging Face ``config.json`` files and a kernels
CSV built here; a case mutates one of them (a value at a random place made negative, zero, huge,
inf, nan, bool, a string, a list, null or 100 levels deep; a non-UTF-8 byte; the wrong top-level
type; for CSVs a cell, a column, the header only or nothing) and runs one command on it.

Each case runs in a forked child of a process that has already imported the heavy modules (a fork
costs milliseconds, an interpreter start a second or two), with ``RLIMIT_AS`` set and its own
working directory; the parent kills it at the timeout. CI runs a few cases (``tests/test_fuzz.py``);
the held-out corpus runs by hand::

    python -m tests.fuzz_corpus --n 300 --seed 1 --jobs 2     # counts by command and outcome
"""

from __future__ import annotations

import argparse
import copy
import csv
import importlib.util
import io
import json
import os
import random
import resource
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 30.0  # wall clock, the hang detector (raise it with --timeout on a machine shared with other jobs)
CPU_LIMIT_S = 30.0  # the case's own compute
NEST = Path("w1/w2/w3")  # cases run four levels below the corpus root, so "../../.." stays visible
MEMORY_BYTES = 3 * 1024**3  # what a case may map beyond what the forked harness already maps (_mapped_bytes)

STUDIES = ["configs/npu.yaml", "configs/npu-perf-per-watt.yaml", "experiments/llm70b_serving_links.yaml",
           "experiments/best_ratio_three_mixes.yaml", "experiments/npu_ratio_study.yaml"]
TEMPLATES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "hw_templates").glob("*.yaml"))
SYSTEMS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "hw_templates" / "systems").glob("*.yaml"))
WORKLOADS = ["workloads/resnet50.yaml", "workloads/llama2-7b.yaml", "workloads/mixtral-8x7b.yaml",
             "workloads/bert-base.yaml", "workloads/mamba-130m.yaml", "workloads/deepseek-v3.yaml",
             "workloads/dlrm-mlperf.yaml", "workloads/conformer-s.yaml", "workloads/vit-b16.yaml",
             "workloads/lstm-lm-medium.yaml", "workloads/unet.yaml", "workloads/whisper-tiny.yaml"]
WHATIF = {"name": "llama-prefill", "hardware": "npu-7nm",
          "workload": {"name": "llama2-7b", "phase": "prefill", "seq": 128},
          "stages": ["fuse_elementwise", "flash_attention", {"weight_dtype": "int8"}, {"sram_mib": 128},
                     {"keeps": "step"}]}
WHATIF_OP = {"name": "conv-winograd", "hardware": "npu-7nm",
             "operator": {"kind": "conv", "n": 1, "c_in": 64, "c_out": 64, "h": 56, "w": 56, "k": 3},
             "stages": ["winograd"]}
HF = [  # minimal Hugging Face config.json files (field names as transformers writes them)
    {"model_type": "llama", "hidden_size": 512, "intermediate_size": 1376, "num_hidden_layers": 4,
     "num_attention_heads": 8, "num_key_value_heads": 4, "vocab_size": 32000, "max_position_embeddings": 2048,
     "hidden_act": "silu", "tie_word_embeddings": False},
    {"model_type": "gpt2", "n_embd": 256, "n_layer": 4, "n_head": 4, "vocab_size": 50257, "n_positions": 1024},
    {"model_type": "bert", "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
     "intermediate_size": 1024, "vocab_size": 30522, "max_position_embeddings": 512},
    {"model_type": "qwen2_moe", "hidden_size": 512, "intermediate_size": 1408, "num_hidden_layers": 4,
     "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 4096,
     "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 256,
     "shared_expert_intermediate_size": 1024},
]
KERNELS = "name,flops,bytes,seconds\ngemm_4096,1.37e11,1.0e8,0.0012\nsoftmax,2.0e8,8.0e8,0.0004\n"

BAD_VALUES = [-1, -1e9, 0, -0.0, 1e308, 10**30, 2**62, float("inf"), float("-inf"), float("nan"), True, False,
              "x", "", "1:inf", "..", "/", "a" * 300, [], [1, 2], {}, {"a": 1}, None]
BAD_CELLS = ["", "-1", "0", "inf", "nan", "1e308", "x", "True", "a100-80gb", "gemm:0x0x0", "dtype=fp99", "\x00"]
BAD_ARGS = ["-1", "0", str(2**62), "x", "", "nan", "inf", "1e9"]


@dataclass
class Case:
    """One command on (possibly mutated) files; ``argv`` paths are relative to the case folder."""

    command: str
    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    mutation: str = ""
    out: str | None = "out"  # the only folder the case may write in; None: anywhere in its own folder


@dataclass
class Outcome:
    case: Case
    rc: int | None
    seconds: float
    last: str
    problem: str  # "" when the contract holds
    cpu_s: float = 0.0  # the child's user + system time (wall time grows with other load on the machine)


# ------------------------------------------------------------------------------------- mutations
def _paths(node: object, prefix: tuple = ()) -> list[tuple]:
    """Every node's path (mappings and lists included, so a whole block can be replaced)."""
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _deep(depth: int, leaf: object) -> object:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def mutate_data(data: object, rng: random.Random) -> tuple[object, str]:
    """One change to a loaded document: a value at a random node, or the top-level type."""
    if rng.random() < 0.06:
        new = rng.choice([[], "text", 42, None, [data]])
        return new, f"top-level -> {new!r:.40}"
    data = copy.deepcopy(data)
    paths = [p for p in _paths(data) if p]
    if not paths:
        return rng.choice(BAD_VALUES), "root"
    path = rng.choice(paths)
    r = rng.random()
    if r < 0.08:
        value: object = _deep(100, 1)
        label = "100-deep list"
    elif r < 0.2:  # scale a number the way a typo would
        node = data
        for k in path:
            node = node[k]
        if isinstance(node, (int, float)) and not isinstance(node, bool):
            value = rng.choice([-node, node * 1e6, node / 1e6, node * 1000, -1 * abs(node) - 1])
            label = f"{node!r} -> {value!r}"
        else:
            value = rng.choice(BAD_VALUES)
            label = repr(value)[:40]
    elif r < 0.27:  # drop a key
        parent = data
        for k in path[:-1]:
            parent = parent[k]
        parent.pop(path[-1])
        return data, f"drop {'.'.join(map(str, path))}"
    else:
        value = rng.choice(BAD_VALUES)
        label = repr(value)[:40]
    parent = data
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = value
    return data, f"{'.'.join(map(str, path))} = {label}"


def mutate_bytes(raw: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Byte-level damage: a non-UTF-8 byte, a NUL, a cut, or an alias bomb."""
    kind = rng.choice(["latin1", "nul", "cut", "empty", "bomb"])
    at = rng.randrange(max(len(raw), 1))
    if kind == "latin1":
        return raw[:at] + b"\xe9\xff" + raw[at:], f"non-UTF-8 byte at {at}"
    if kind == "nul":
        return raw[:at] + b"\x00" + raw[at:], f"NUL at {at}"
    if kind == "cut":
        return raw[:at], f"cut at byte {at}"
    if kind == "empty":
        return b"", "empty file"
    bomb = b"a: &a [x, x, x, x, x, x, x, x, x]\n" + b"".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n".encode() for p, c in zip("abcdefgh", "bcdefghi", strict=True))
    return bomb, "alias bomb"


HAVE_ONNX = importlib.util.find_spec("onnx") is not None  # the onnx extra: ONNX imports are fuzzed too
ONNX_INPUTS = {"x": [8, 64], "img": [1, 3, 32, 32]}
BAD_DIMS = [[], [0, 64], [-1, 64], [2**31, 64], [8], [8, 64, 2, 2, 2], [64, 8], [1, 3], [1, 3, 32], [0, 0, 0, 0],
            [1, 3, 1, 1], [10**12, 3, 32, 32]]


def mutated_onnx(rng: random.Random) -> tuple[bytes, str]:
    """A small MLP + conv ONNX graph with one input's shape changed (rank, zero, negative, huge) or its
    bytes damaged; initializers stay small (a mutated weight would be allocated here)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    dims = dict(ONNX_INPUTS)
    label = "bytes"
    if rng.random() < 0.75:
        key = rng.choice(list(dims))
        dims[key] = rng.choice(BAD_DIMS)
        label = f"input {key} dims {dims[key]}"
    inits = [numpy_helper.from_array(np.zeros((64, 128), np.float32), "W1"),
             numpy_helper.from_array(np.zeros((128, 10), np.float32), "W2"),
             numpy_helper.from_array(np.zeros((16, 3, 3, 3), np.float32), "Wc")]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h1"], name="fc1"),
             helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
             helper.make_node(rng.choice(["MatMul", "Gemm"]), ["h2", "W2"], ["h3"], name="fc2"),
             helper.make_node("Softmax", ["h3"], ["y"], name="softmax"),
             helper.make_node("Conv", ["img", "Wc"], ["c1"], name="conv", pads=[1, 1, 1, 1], strides=[1, 1]),
             helper.make_node("ReduceMean", ["c1"], ["c2"], name="pool")]
    graph = helper.make_graph(nodes, "fuzz", [helper.make_tensor_value_info(k, TensorProto.FLOAT, v)
                                              for k, v in dims.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("c2", TensorProto.FLOAT, None)], inits)
    raw = helper.make_model(graph).SerializeToString()
    if label == "bytes":
        return mutate_bytes(raw, rng)
    return raw, label


def _yaml_doc(data: object) -> bytes:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).encode()


def mutated_yaml(text: bytes, rng: random.Random) -> tuple[bytes, str]:
    if rng.random() < 0.15:
        return mutate_bytes(text, rng)
    data, label = mutate_data(yaml.safe_load(text), rng)
    return _yaml_doc(data), label


def mutated_json(data: object, rng: random.Random) -> tuple[bytes, str]:
    if rng.random() < 0.15:
        return mutate_bytes(json.dumps(data).encode(), rng)
    new, label = mutate_data(data, rng)
    return json.dumps(new, allow_nan=True).encode(), label


def mutated_csv(text: str, rng: random.Random) -> tuple[bytes, str]:
    rows = list(csv.reader(io.StringIO(text)))
    kind = rng.choice(["cell", "cell", "cell", "drop_col", "header_only", "empty", "bytes", "ragged"])
    if kind == "header_only":
        rows = rows[:1]
    elif kind == "empty":
        return b"", "empty file"
    elif kind == "bytes":
        return mutate_bytes(text.encode(), rng)
    elif kind == "drop_col":
        j = rng.randrange(len(rows[0]))
        rows = [r[:j] + r[j + 1:] for r in rows]
        kind = f"drop column {j}"
    elif kind == "ragged":
        i = rng.randrange(1, len(rows))
        rows[i] = rows[i][: rng.randrange(len(rows[i]))]
    else:
        i, j = rng.randrange(1, len(rows)), rng.randrange(len(rows[0]))
        cell = rng.choice(BAD_CELLS)
        if j < len(rows[i]):
            rows[i][j] = cell
        kind = f"row {i} col {rows[0][j]} = {cell!r}"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue().encode(), kind


# ----------------------------------------------------------------------------------------- cases
def make_case(rng: random.Random) -> Case:
    """One random case over every command."""
    command = rng.choices(["run", "sweep", "compare", "whatif", "predict", "import", "validate", "kernels", "area"],
                          weights=[4, 3, 3, 2, 6, 2, 1, 1, 2])[0]
    if command == "area":  # a mutated template through the area, cost and power models
        src = rng.choice(TEMPLATES)
        raw, label = mutated_yaml((ROOT / src).read_bytes(), rng)
        return Case(command, ["area", "hw.yaml", "--format", rng.choice(["table", "json"])], {"hw.yaml": raw},
                    f"{src}: {label}")
    if command in ("run", "sweep", "compare", "whatif") and rng.random() < 0.2:
        return _flag_case(command, rng)
    if command in ("run", "sweep", "compare"):
        src = rng.choice(STUDIES if command != "compare" else STUDIES[:3] + STUDIES[4:])
        extra = {"run": ["--trials", "4", "--no-plots"], "sweep": ["--points", "3"], "compare": []}[command]
        if rng.random() < 0.25:  # no --out: the config's output.dir (set to "out", then maybe mutated) decides
            data = yaml.safe_load((ROOT / src).read_text())
            data["output"] = {**(data.get("output") or {}), "dir": "out"}
            if rng.random() < 0.5:
                # (a valid relative dir such as ".." is the user's choice of folder, not an escape: not tried)
                data["output"]["dir"] = rng.choice(["/", ".", "", "a" * 300, "out/" + "b" * 256, None, 1, []])
            elif rng.random() < 0.5:
                data["name"] = rng.choice(["..", ".", "../x", "/", "a/b", "a" * 300, "", "é"])
            return Case(command, [command, "in.yaml", "--quiet", *extra], {"in.yaml": _yaml_doc(data)},
                        f"{src}: output.dir {data['output']['dir']!r:.20}, name {data.get('name')!r:.20}",
                        out=None)
        raw, label = mutated_yaml((ROOT / src).read_bytes(), rng)
        return Case(command, [command, "in.yaml", "--out", "out", "--quiet", *extra], {"in.yaml": raw},
                    f"{src}: {label}")
    if command == "whatif":
        base = rng.choice([WHATIF, WHATIF_OP])
        raw, label = mutated_yaml(_yaml_doc(base), rng)
        return Case(command, ["whatif", "in.yaml", "--out", "out", "--quiet"], {"in.yaml": raw}, f"whatif: {label}")
    if command == "predict":
        r = rng.random()
        if r < 0.45:
            src = rng.choice(TEMPLATES)
            raw, label = mutated_yaml((ROOT / src).read_bytes(), rng)
            wl = rng.choice(["resnet50", "llama2-7b"])
            argv = ["predict", wl, "hw.yaml", *(["--phase", "decode", "--context", "512"] if wl != "resnet50" else [])]
            if rng.random() < 0.3:  # several chips, the mutated one among them: one row each
                argv.insert(rng.choice([2, 3]), "h100-sxm")
            return Case(command, argv, {"hw.yaml": raw}, f"{src}: {label}")
        if r < 0.8:
            src = rng.choice(WORKLOADS)
            raw, label = mutated_yaml((ROOT / src).read_bytes(), rng)
            return Case(command, ["predict", "./wl.yaml", "npu-7nm"], {"wl.yaml": raw}, f"{src}: {label}")
        if r < 0.9:
            src = rng.choice(SYSTEMS)
            raw, label = mutated_yaml((ROOT / src).read_bytes(), rng)
            chip = yaml.safe_load((ROOT / src).read_text())["chip"]
            return Case(command, ["predict", "llama2-7b", chip, "--phase", "decode", "--system", "sys.yaml",
                                  "--tp", "4"], {"sys.yaml": raw}, f"{src}: {label}")
        flag = rng.choice(["--batch", "--seq", "--context", "--chips", "--tp", "--pp", "--microbatches",
                           "--weight-group", "--resolution"])
        value = rng.choice(BAD_ARGS)
        return Case(command, ["predict", "llama2-7b", "h100-sxm", "--phase", "prefill", flag, value], {},
                    f"{flag} {value}")
    if command == "import":
        if HAVE_ONNX and rng.random() < 0.4:
            raw, label = mutated_onnx(rng)
            return Case(command, ["workloads", "import", "m.onnx", "-o", "out/model.yaml"], {"m.onnx": raw},
                        f"m.onnx: {label}")
        raw, label = mutated_json(rng.choice(HF), rng)
        return Case(command, ["workloads", "import", "config.json", "-o", "out/model.yaml"],
                    {"config.json": raw}, f"config.json: {label}")
    if command == "validate":
        raw, label = mutated_csv((ROOT / "validation" / "measurements.csv").read_text(), rng)
        return Case(command, ["validate", "--measurements", "m.csv", "--out", "out", "--quiet"], {"m.csv": raw},
                    f"measurements.csv: {label}")
    raw, label = mutated_csv(KERNELS, rng)
    return Case(command, ["kernels", "k.csv", "--hardware", "h100-sxm", "--out", "out"], {"k.csv": raw},
                f"kernels.csv: {label}")


RATIOS = ["1:inf,1:1", "1:0,1:1", "1:-2,1:1", "1:nan,1:2", "a:b", "1:2", "", ",,,", "1:1e-300,1:1", "1:1e300,1:1",
          "0:0,1:1", "1:2:3,1:1", "1:2," * 40]
#: --hardware lists of dse compare: empty, unknown, a system or a study config where a chip goes, a path up and out
CHIP_LISTS = ["", ",", "nope", "h100-sxm,nope", "h100-sxm,,gaudi3", "../x.yaml", "h100-sxm", "dgx-h100", "in.yaml",
              "tt-n150,groq-tsp", "/", "h100-sxm," * 30]
STAGES = ["fuse_elementwise,nope", "sram_mib=-1", "sram_mib=inf", "weight_dtype=int3", "dtype=", "=", ",",
          "sram_mib=1e30", "winograd,winograd", "kv_dtype=nan", "flash_attention", "keeps=all", "keeps=",
          "keeps=steps,keeps=tiles"]


def _flag_case(command: str, rng: random.Random) -> Case:
    """A shipped config (or a library model) with one bad command-line value."""
    files = {"in.yaml": (ROOT / "configs" / "npu.yaml").read_bytes()}
    if command == "run":
        flag, value = rng.choice(["--trials", "--workers"]), rng.choice(BAD_ARGS)
        argv = ["run", "in.yaml", "--out", "out", "--quiet", "--no-plots", *(["--trials", "4"] if flag != "--trials"
                                                                             else []), flag, value]
    elif command == "sweep":
        flag, value = rng.choice(["--points", "--sram-points", "--chunk"]), rng.choice(BAD_ARGS)
        argv = ["sweep", "in.yaml", "--out", "out", "--quiet", *(["--points", "3"] if flag != "--points" else []),
                flag, value]
    elif command == "compare":
        flag, value = ("--ratios", rng.choice(RATIOS)) if rng.random() < 0.6 else ("--hardware", rng.choice(CHIP_LISTS))
        argv = ["compare", "in.yaml", "--out", "out", "--quiet", flag, value]
    else:
        flag, value = rng.choice([("--stages", rng.choice(STAGES)), ("--batch", rng.choice(BAD_ARGS)),
                                  ("--seq", rng.choice(BAD_ARGS)), ("--hardware", rng.choice(["nope", "..", "/"]))])
        argv = ["whatif", "--workload", "llama2-7b", "--phase", "prefill", "--out", "out", "--quiet",
                *(["--stages", "fuse_elementwise"] if flag != "--stages" else []), flag, value]
        files = {}
    return Case(command, argv, files, f"{flag} {value!r:.40}")


#: a small study (seconds per run) for the batch cases
SMALL = {"name": "small", "base": "npu-7nm", "workloads": [{"name": "resnet50", "batch": 8}],
         "search": {"n_trials": 4, "batch_size": 4, "sampler": "random", "seed": 1,
                    "space": {"peak_tflops": {"low": 64, "high": 512}, "dram_bandwidth_tbps": {"low": 0.4, "high": 2}}},
         "output": {"plots": False}}
#: nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total,power.limit output (dse gpu --from-file)
SMI = "NVIDIA A100-SXM4-80GB, 1410, 1593, 81920, 400.00\nNVIDIA H100 80GB HBM3, 1980, 2619, 81559, 700.00\n"


def more_case(rng: random.Random) -> Case:
    """One random case of the commands :func:`make_case` leaves out: plan, calibrate, gpu, workloads ai, explore
    (``--check``) and batch (drawn from a stream of their own, so :func:`make_case`'s cases stay what they were)."""
    command = rng.choice(["plan", "calibrate", "gpu", "ai", "explore", "batch"])
    if command == "explore":  # --check: the page built, no server
        src = rng.choice(STUDIES[:2])
        raw, label = mutated_yaml((ROOT / src).read_bytes(), rng)
        return Case(command, ["explore", "in.yaml", "--check"], {"in.yaml": raw}, f"{src}: {label}", out=None)
    if command == "batch":  # a mutated small study next to a valid one
        raw, label = mutated_yaml(_yaml_doc(SMALL), rng)
        return Case(command, ["batch", "a.yaml", "b.yaml", "--out", "out", "--quiet"],
                    {"a.yaml": _yaml_doc({**SMALL, "name": "ok"}), "b.yaml": raw}, f"small study: {label}")
    if command == "plan":
        if rng.random() < 0.5:
            flag = rng.choice(["--chips", "--batch", "--seq", "--tp", "--microbatches", "--zero", "--top"])
            value = rng.choice(BAD_ARGS)
            argv = ["plan", "llama2-7b", "dgx-h100", "--phase", "training", "--batch", "8", "--seq", "512",
                    *(["--chips", "8"] if flag != "--chips" else []), flag, value]
            return Case(command, argv, {}, f"{flag} {value}")
        src = rng.choice(SYSTEMS)
        raw, label = mutated_yaml((ROOT / src).read_bytes(), rng)
        argv = ["plan", "llama2-7b", "sys.yaml", "--chips", "8", "--phase", "training", "--batch", "8", "--seq", "512"]
        return Case(command, argv, {"sys.yaml": raw}, f"{src}: {label}")
    if command == "calibrate":
        src = rng.choice([t for t in TEMPLATES if any(k in t for k in ("gaudi", "tpu-v5e", "mi300x"))] or TEMPLATES)
        raw, label = mutated_yaml((ROOT / src).read_bytes(), rng)
        return Case(command, ["calibrate", "hw.yaml", "--no-loo", "--out", "out"], {"hw.yaml": raw},
                    f"{src}: {label}")
    if command == "gpu":
        raw, label = mutated_csv(SMI, rng)
        return Case(command, ["gpu", "--from-file", "smi.txt", "--out", "out"], {"smi.txt": raw}, f"smi: {label}")
    src = rng.choice(STUDIES[:2])  # a study config: its mix's intensities on its base design
    raw, label = mutated_yaml((ROOT / src).read_bytes(), rng)
    return Case("ai", ["workloads", "ai", "in.yaml", "--out", "out", "--quiet"], {"in.yaml": raw}, f"{src}: {label}")


def corpus(n: int, seed: int) -> list[Case]:
    """``n`` cases of :func:`make_case` and ``n // 4`` of :func:`more_case` (its own stream of the same seed)."""
    rng, more = random.Random(seed), random.Random(seed + 7919)
    return [make_case(rng) for _ in range(n)] + [more_case(more) for _ in range(n // 4)]


# ---------------------------------------------------------------------------------------- runner
def preimport() -> None:
    """Import what the commands import so a forked case starts warm."""
    import matplotlib

    matplotlib.use("Agg")
    # matplotlib's font cache lives in the user's cache folder (~/.cache/matplotlib), not in the tool's
    # output: build/load it here, before a case points HOME at its own folder
    import matplotlib.font_manager  # noqa: F401
    import matplotlib.pyplot  # noqa: F401

    import dse.cli  # noqa: F401
    import dse.comparison  # noqa: F401
    import dse.grid  # noqa: F401
    from dse.validate.bands import shipped_bands

    shipped_bands()  # the error bands a study report quotes, once, before any case points HOME at its folder
    import dse.report.write  # noqa: F401
    import dse.study  # noqa: F401
    import dse.validate.suite  # noqa: F401
    import dse.whatif_stages  # noqa: F401
    import dse.workloads.importers  # noqa: F401


def _mapped_bytes() -> int:
    """The address space this process maps now (Linux ``VmSize``; 0 elsewhere). A forked case inherits the harness's
    mappings (under pytest: every module the suite loaded, numba's compiler among them), which a command run from a
    shell does not have: the cap counts from here."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def _child(case: Case, folder: Path) -> None:
    """In the forked child: cap memory, run the command in ``folder``, exit with its code."""
    try:
        os.chdir(folder)
        os.environ["HOME"] = str(folder)  # a "~" in a mutated path expands into the case folder
        cap = _mapped_bytes() + MEMORY_BYTES
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        out = os.open("stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        err = os.open("stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        from dse.cli import main

        rc = main(case.argv)
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        rc = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(rc if isinstance(rc, int) else 1)


def _listing(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file() or p.is_symlink()}


def run_case(case: Case, folder: Path, timeout_s: float = TIMEOUT_S) -> Outcome:
    """Run one case in ``folder`` (created, must be empty) and check the contract."""
    folder.mkdir(parents=True)
    for name, raw in case.files.items():
        (folder / name).write_bytes(raw)
    inputs = {folder / n for n in case.files}
    t0 = time.perf_counter()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(case, folder)
    rc: int | None = None
    cpu = 0.0
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            rc = os.waitstatus_to_exitcode(status)
            cpu = usage.ru_utime + usage.ru_stime
            break
        if time.perf_counter() - t0 > timeout_s:
            os.kill(pid, signal.SIGKILL)
            cpu = os.wait4(pid, 0)[2].ru_utime
            break
        time.sleep(0.02)
    seconds = time.perf_counter() - t0
    err = (folder / "stderr").read_text(errors="replace") if (folder / "stderr").exists() else ""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    problem = ""
    if rc is None:
        problem = f"timeout after {timeout_s:.0f} s"
    elif "Traceback" in err:
        problem = "traceback: " + last
    elif rc == 2 and not last.startswith("error: "):
        problem = f"exit 2 without an error line: {last!r}"
    elif rc not in (0, 2):
        problem = f"exit {rc}: {last!r}"
    stray = _listing(folder) - inputs - {folder / "stdout", folder / "stderr"}
    cache = folder / ".cache" / "dse"  # the documented cache of error bands (HOME is the case folder)
    stray = {p for p in stray if cache not in p.parents and p not in (cache, cache.parent)}
    if case.out is not None:
        stray = {p for p in stray if folder / case.out not in p.parents}
    else:  # the config's output.dir decides: a valid relative one lies in the case folder
        stray = {p for p in stray if folder not in p.parents}
    if stray and not problem:
        problem = "wrote outside out/: " + ", ".join(sorted(str(p.relative_to(folder)) for p in stray)[:3])
    if not problem and cpu > CPU_LIMIT_S:
        problem = f"{cpu:.0f} s of CPU time (limit {CPU_LIMIT_S:.0f} s)"
    return Outcome(case, rc, seconds, last, problem, cpu)


def run_corpus(cases: list[Case], root: Path, jobs: int = 1, progress: bool = False,
               timeout_s: float = TIMEOUT_S) -> list[Outcome]:
    """Run ``cases`` under ``root`` (``jobs`` at a time, each forked); also checks that nothing appeared in
    ``root`` besides the case folders and nothing new in the checkout."""
    from concurrent.futures import ThreadPoolExecutor

    preimport()
    root.mkdir(parents=True, exist_ok=True)
    before = _checkout_files()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(run_case, c, root / NEST / f"case{i:04d}", timeout_s) for i, c in enumerate(cases)]
        outcomes = []
        for i, f in enumerate(futures):
            outcomes.append(f.result())
            if progress and outcomes[-1].problem:
                o = outcomes[-1]
                print(f"case{i:04d} {o.case.command} [{o.case.mutation}]: {o.problem}", flush=True)
    # a case escaping up to four levels lands in root/..., outside root/NEST/caseNNNN
    cases_dir = root / NEST
    extra = {str(p.relative_to(root)) for p in root.rglob("*") if p != cases_dir and p not in cases_dir.parents
             and cases_dir not in p.parents}
    new = _checkout_files() - before
    if extra or new:
        outcomes.append(Outcome(Case("corpus", []), None, 0.0, "",
                                f"files outside the case folders: {sorted(extra)[:3]} {sorted(new)[:3]}"))
    return outcomes


def _checkout_files() -> set[str]:
    """Files in the checkout that git does not track (a case that escapes its folder shows up here)."""
    import subprocess

    out = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=all", "--ignored"],
                         capture_output=True, text=True, check=False).stdout
    return {ln[3:] for ln in out.splitlines() if ln[:2] in ("??", "!!")
            and not any(x in ln for x in ("__pycache__", ".hypothesis", ".ruff_cache", ".pytest_cache"))}


def summary(outcomes: list[Outcome], timeout_s: float = TIMEOUT_S) -> str:
    by = Counter((o.case.command, "ok" if o.rc == 0 and not o.problem else "error-line" if o.rc == 2
                  and not o.problem else "FAIL") for o in outcomes)
    commands = sorted({c for c, _ in by})
    lines = [f"{'command':<10} {'cases':>6} {'exit 0':>7} {'exit 2':>7} {'other':>6}"]
    for c in commands:
        n = sum(v for (cc, _), v in by.items() if cc == c)
        lines.append(f"{c:<10} {n:>6} {by[(c, 'ok')]:>7} {by[(c, 'error-line')]:>7} {by[(c, 'FAIL')]:>6}")
    tot = Counter(k for (_, k), v in by.items() for _ in range(v))
    lines.append(f"{'all':<10} {len(outcomes):>6} {tot['ok']:>7} {tot['error-line']:>7} {tot['FAIL']:>6}")
    slow = max(outcomes, key=lambda o: o.seconds)
    busy = max(outcomes, key=lambda o: o.cpu_s)
    walls = sorted(o.seconds for o in outcomes)
    lines.append(f"wall s per case: median {walls[len(walls) // 2]:.1f}, max {slow.seconds:.1f} ({slow.case.command} "
                 f"[{slow.case.mutation}]); CPU s max {busy.cpu_s:.1f} ({busy.case.command} [{busy.case.mutation}]); "
                 f"wall limit {timeout_s:.0f} s, CPU limit {CPU_LIMIT_S:.0f} s, memory cap "
                 f"{MEMORY_BYTES / 1024**3:.0f} GiB; {sum(o.seconds > 30 for o in outcomes)} over 30 s wall")
    lines += [f"FAIL {o.case.command} [{o.case.mutation}]: {o.problem}" for o in outcomes if o.problem]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--root", default="/tmp/dse-fuzz")
    ap.add_argument("--only", help="run only this command's cases")
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S, help="wall-clock seconds per case")
    args = ap.parse_args(argv)
    import shutil

    root = Path(args.root)
    shutil.rmtree(root, ignore_errors=True)
    cases = corpus(args.n, args.seed)
    if args.only:
        cases = [c for c in cases if c.command == args.only]
    t0 = time.perf_counter()
    outcomes = run_corpus(cases, root, jobs=args.jobs, progress=True, timeout_s=args.timeout)
    print(summary(outcomes, args.timeout))
    print(f"{len(cases)} cases in {time.perf_counter() - t0:.0f} s (seed {args.seed})")
    return 1 if any(o.problem for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
