"""Measure validation rows on a CUDA GPU: one short prepared script (issue 12, "A larger validation set").

Run it where the GPU is (PyTorch with CUDA; torchvision for the CNN/ViT rows), from the repository root::

    python benchmarks/gpu_rows.py --out gpu_rows --budget-s 420

Sections, in order (each stops when the budget is spent; a section that fails is reported and skipped):

1. GEMMs: bf16 squares 512..16384, skinny M = 1..512 against 8192 x 8192 weights, Llama-2-7B's prefill
   GEMMs; FP8 (``torch._scaled_mm``) where the GPU has it.
2. Attention: ``torch.nn.functional.scaled_dot_product_attention`` on the flash backend over FlashAttention-2's own grid
   (16k tokens per batch, hidden 2048, head dim 64/128, sequence 512..16k, causal and not).
3. Copies: ``dst.copy_(src)`` from 256 KiB to 1 GiB.
4. A Llama-2-7B-shaped model (random bf16 weights): decode steps (batch 1/8/32, 1024 cached tokens) and
   prefill (batch 1, 128/512/2048 tokens), each captured in a CUDA graph and replayed.
5. torchvision inference (ResNet-50, MobileNet-V2, ViT-B/16; bf16, channels-last) in a CUDA graph.
6. A GPT-2-medium training step (batch 8 x 1024, bf16 autocast, AdamW) with and without activation
   checkpointing of every block.

Every row goes to ``OUT/rows.csv`` in ``validation/measurements.csv``'s columns as soon as it is measured
(one flushed line each), so a run cut short keeps what it measured; ``OUT/device.txt`` records the device,
the clocks and the power limit before and after (``nvidia-smi -q -d CLOCK,POWER``). Times are CUDA events
around back-to-back launches or graph replays after a warm-up (timing ``steady``), the median of 5 repeats.
Check the rows, then append the ones to keep to ``validation/measurements.csv``.

``--tiny --device cpu`` runs every section at toy sizes on the CPU: the check that the script itself works
before device time is spent on it (``tests`` do not import torch; run it by hand).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

COLUMNS = ["id", "workload", "scenario", "hardware", "n_chips", "metric", "value", "unit", "source", "note",
           "timing", "fitted_into"]


class Rows:
    """Appends measurement rows to ``OUT/rows.csv`` and flushes each one."""

    def __init__(self, out: Path, source: str, hardware: str, tiny: bool = False) -> None:
        self.path = out / "rows.csv"
        new = not self.path.exists()
        self.file = self.path.open("a", newline="")
        self.writer = csv.writer(self.file, lineterminator="\n")
        if new:
            self.writer.writerow(COLUMNS)
        self.source, self.hardware, self.count, self.tiny = source, hardware, 0, tiny

    def add(self, rid: str, workload: str, scenario: str, seconds: float, note: str) -> None:
        if self.tiny:  # toy sizes: not the named workload; kept apart from real rows by id and note
            rid, note = f"tiny-{rid}", f"TOY SIZES (--tiny), not the named workload: {note}"
        self.writer.writerow([f"{self.hardware}-{rid}", workload, scenario, self.hardware, 1, "time_s",
                              f"{seconds:.6g}", "s", self.source, note, "steady", ""])
        self.file.flush()
        self.count += 1
        print(f"  {rid}: {seconds * 1e3:.4f} ms", flush=True)


def hardware_name(torch: Any, device: str) -> str:
    """The dse template a device is (h200, h100-sxm, a100-80gb, ...), else its name in lower case."""
    if device == "cpu":
        return "cpu"
    p = torch.cuda.get_device_properties(0)
    name = p.name.upper()
    if "H200" in name:
        return "h200"
    if "H100" in name:
        return "h100-sxm" if ("SXM" in name or "HBM3" in name) else name.lower().replace(" ", "-")
    if "A100" in name:
        return "a100-80gb" if p.total_memory > 60e9 else "a100-40gb"
    if "MI300X" in name:
        return "mi300x"
    return name.lower().replace(" ", "-")


def make_timer(torch: Any, device: str) -> Callable[[Callable[[], Any], int], float]:
    """``timer(fn, iters)``: seconds per call of ``fn``, median of 5 repeats of ``iters`` back-to-back calls."""

    def timer(fn: Callable[[], Any], iters: int) -> float:
        fn()  # warm-up (and autotuning)
        reps = []
        for _ in range(5):
            if device == "cuda":
                torch.cuda.synchronize()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(iters):
                    fn()
                end.record()
                end.synchronize()
                reps.append(start.elapsed_time(end) / 1e3 / iters)
            else:
                t0 = time.perf_counter()
                for _ in range(iters):
                    fn()
                reps.append((time.perf_counter() - t0) / iters)
        return statistics.median(reps)

    return timer


def graphed(torch: Any, device: str, fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` captured in a CUDA graph (after warm-up on a side stream), or ``fn`` itself on the CPU."""
    if device != "cuda":
        return fn
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


# ----------------------------------------------------------------------------------------------- sections
def gemms(torch: Any, ctx: dict[str, Any]) -> None:
    dev, timer, rows, tiny = ctx["device"], ctx["timer"], ctx["rows"], ctx["tiny"]
    squares = [64, 128] if tiny else [512, 1024, 2048, 4096, 8192, 16384]
    skinny = [(m, 256, 256) for m in (1, 16)] if tiny else [(m, 8192, 8192) for m in (1, 16, 64, 128, 256, 512)]
    llama = [(64, 384, 128)] if tiny else [(2048, 12288, 4096), (2048, 4096, 4096), (2048, 22016, 4096),
                                          (2048, 4096, 11008)]
    shapes = [(s, s, s) for s in squares] + skinny + llama
    for M, N, K in shapes:
        if ctx["spent"]():
            return
        a = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
        b = torch.randn(K, N, device=dev, dtype=torch.bfloat16)
        t = timer(lambda a=a, b=b: a @ b, 3 if tiny else max(3, min(200, int(2e11 / (2 * M * N * K + 1)))))
        rows.add(f"gemm-bf16-{M}x{N}x{K}", f"gemm:{M}x{N}x{K}", "dtype=bf16", t,
                 "torch.matmul (cuBLAS), A [M,K] x B [K,N] row-major, bf16 in and out")
    if dev != "cuda" or not hasattr(torch, "float8_e4m3fn") or torch.cuda.get_device_capability(0) < (8, 9):
        return
    for M, N, K in [(4096, 4096, 4096), (8192, 8192, 8192), *llama]:
        if ctx["spent"]():
            return
        a = torch.randn(M, K, device=dev).to(torch.float8_e4m3fn)
        b = torch.randn(N, K, device=dev).to(torch.float8_e4m3fn).t()  # column-major B, as _scaled_mm wants
        one = torch.ones((), device=dev)
        try:
            t = timer(lambda a=a, b=b, one=one: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                                                out_dtype=torch.bfloat16),
                      max(3, min(200, int(4e11 / (2 * M * N * K)))))
        except (RuntimeError, TypeError) as exc:
            print(f"  fp8 GEMM unavailable: {exc}", flush=True)
            return
        rows.add(f"gemm-fp8-{M}x{N}x{K}", f"gemm:{M}x{N}x{K}", "dtype=fp8", t,
                 "torch._scaled_mm (cuBLASLt), e4m3 A and B, per-tensor scales, bf16 out")


def attention(torch: Any, ctx: dict[str, Any]) -> None:
    import torch.nn.functional as functional

    dev, timer, rows, tiny = ctx["device"], ctx["timer"], ctx["rows"], ctx["tiny"]
    tokens, hidden = (256, 128) if tiny else (16384, 2048)  # FlashAttention-2's benchmark grid (Dao 2023, Sec. 4.1)
    seqs = [64, 128] if tiny else [512, 1024, 2048, 4096, 8192, 16384]
    flash = dev == "cuda"  # the flash backend (FlashAttention-2) runs on CUDA only; the CPU check uses the default
    for d in (64, 128):
        for s in seqs:
            for causal in (False, True):
                if ctx["spent"]():
                    return
                b, h = max(1, tokens // s), hidden // d
                q, k, v = (torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16) for _ in range(3))

                def run(q=q, k=k, v=v, causal=causal) -> Any:
                    if not flash:
                        return functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    with sdpa_kernel_flash():
                        return functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

                t = timer(run, 3 if tiny else max(3, min(100, int(5e11 / (4 * b * h * s * s * d)))))
                kind = "causal" if causal else "full"
                rows.add(f"sdpa-flash-{kind}-b{b}-h{h}-s{s}-d{d}", f"attention:{b}x{h}x{s}x{s}x{d}",
                         f"dtype=bf16;causal={str(causal).lower()};attention_kernel=flash", t,
                         "torch.nn.functional.scaled_dot_product_attention forward on the flash backend (FlashAttention-2), "
                         "q, k, v [B, H, S, D] bf16")


def sdpa_kernel_flash() -> Any:
    """A fresh ``sdpa_kernel(FLASH_ATTENTION)`` context (they are single-use)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel(SDPBackend.FLASH_ATTENTION)


def copies(torch: Any, ctx: dict[str, Any]) -> None:
    dev, timer, rows, tiny = ctx["device"], ctx["timer"], ctx["rows"], ctx["tiny"]
    sizes = [2**12, 2**16] if tiny else [2**18 * 4**i for i in range(7)]  # bytes per tensor: 256 KiB .. 1 GiB
    for nbytes in sizes:
        if ctx["spent"]():
            return
        n = nbytes // 2
        src = torch.randn(n, device=dev, dtype=torch.bfloat16)
        dst = torch.empty_like(src)
        t = timer(lambda s=src, d=dst: d.copy_(s), 5 if tiny else max(5, min(1000, int(2e10 / nbytes))))
        rows.add(f"copy-bf16-{nbytes}", f"copy:{n}", "dtype=bf16", t,
                 f"dst.copy_(src), {nbytes} bytes read and {nbytes} written per call, back to back")


LLAMA = {"layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 32, "ffn": 11008, "vocab": 32000}
LLAMA_TINY = {"layers": 2, "hidden": 128, "heads": 4, "kv_heads": 4, "ffn": 256, "vocab": 512}


def build_llama(torch: Any, cfg: dict[str, int], dev: str, max_batch: int, max_seq: int) -> dict[str, Any]:
    """Random bf16 weights of a Llama-2-shaped decoder and a static KV cache (GQA-ready)."""
    bf = dict(device=dev, dtype=torch.bfloat16)
    h, d = cfg["hidden"], cfg["hidden"] // cfg["heads"]
    kvh = cfg["kv_heads"]

    def w(*shape: int) -> Any:
        return torch.randn(*shape, **bf) * (1.0 / math.sqrt(shape[-1]))

    layers = [{"qkv": w((cfg["heads"] + 2 * kvh) * d, h), "o": w(h, h), "up": w(2 * cfg["ffn"], h),
               "down": w(h, cfg["ffn"]), "n1": torch.ones(h, **bf), "n2": torch.ones(h, **bf)}
              for _ in range(cfg["layers"])]
    cache = torch.zeros(cfg["layers"], 2, max_batch, kvh, max_seq, d, **bf)
    return {"cfg": cfg, "layers": layers, "embed": w(cfg["vocab"], h), "head": w(cfg["vocab"], h),
            "norm": torch.ones(h, **bf), "cache": cache}


def llama_forward(torch: Any, m: dict[str, Any], tokens: Any, start: int) -> Any:
    """Logits of the last position; writes K/V of ``tokens`` [B, T] at cache positions ``start..start+T``."""
    import torch.nn.functional as functional

    cfg = m["cfg"]
    B, T = tokens.shape
    H, kvh = cfg["heads"], cfg["kv_heads"]
    d = cfg["hidden"] // H
    x = functional.embedding(tokens, m["embed"])
    pos = torch.arange(start, start + T, device=tokens.device)
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2, device=tokens.device, dtype=torch.float32) / d))
    ang = torch.outer(pos.float(), inv)
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)

    def rope(t: Any) -> Any:
        a, b = t[..., ::2], t[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)

    for i, L in enumerate(m["layers"]):
        y = functional.rms_norm(x, (x.shape[-1],), L["n1"])
        q, k, v = (y @ L["qkv"].t()).split([H * d, kvh * d, kvh * d], dim=-1)
        q = rope(q.view(B, T, H, d).transpose(1, 2))
        k = rope(k.view(B, T, kvh, d).transpose(1, 2))
        m["cache"][i, 0, :B, :, start:start + T] = k
        m["cache"][i, 1, :B, :, start:start + T] = v.view(B, T, kvh, d).transpose(1, 2)
        keys, vals = m["cache"][i, 0, :B, :, :start + T], m["cache"][i, 1, :B, :, :start + T]
        a = functional.scaled_dot_product_attention(q, keys, vals, is_causal=T > 1, enable_gqa=kvh != H)
        x = x + a.transpose(1, 2).reshape(B, T, H * d) @ L["o"].t()
        y = functional.rms_norm(x, (x.shape[-1],), L["n2"])
        gate, up = (y @ L["up"].t()).chunk(2, dim=-1)
        x = x + (functional.silu(gate) * up) @ L["down"].t()
    x = functional.rms_norm(x[:, -1], (x.shape[-1],), m["norm"])
    return x @ m["head"].t()


def llama(torch: Any, ctx: dict[str, Any]) -> None:
    dev, timer, rows, tiny = ctx["device"], ctx["timer"], ctx["rows"], ctx["tiny"]
    cfg = LLAMA_TINY if tiny else LLAMA
    context, prompts, batches = (32, [16], [1, 2]) if tiny else (1024, [128, 512, 2048], [1, 8, 32])
    m = build_llama(torch, cfg, dev, max(batches), max(context + 1, max(prompts)))
    with torch.inference_mode():
        for b in batches:
            if ctx["spent"]():
                return
            tok = torch.zeros(b, 1, dtype=torch.long, device=dev)
            step = graphed(torch, dev, lambda tok=tok, m=m: llama_forward(torch, m, tok, context))
            t = timer(step, 3 if tiny else 20)
            rows.add(f"llama2-7b-shape-decode-b{b}-c{context}", "llama2-7b",
                     f"phase=decode;batch={b};context={context};dtype=bf16;attention_kernel=flash", t,
                     f"one decode step of a Llama-2-7B-shaped decoder (random bf16 weights, {context} cached "
                     "tokens, SDPA attention, unfused RMSNorm/RoPE/SwiGLU) captured in a CUDA graph and replayed")
        for s in prompts:
            if ctx["spent"]():
                return
            tok = torch.zeros(1, s, dtype=torch.long, device=dev)
            step = graphed(torch, dev, lambda tok=tok, m=m: llama_forward(torch, m, tok, 0))
            t = timer(step, 3 if tiny else 10)
            rows.add(f"llama2-7b-shape-prefill-s{s}", "llama2-7b",
                     f"phase=prefill;batch=1;seq={s};dtype=bf16;attention_kernel=flash", t,
                     "one prefill pass of a Llama-2-7B-shaped decoder (random bf16 weights; causal SDPA on the "
                     "flash backend; logits of the last token) captured in a CUDA graph and replayed")


def vision(torch: Any, ctx: dict[str, Any]) -> None:
    import torchvision

    dev, timer, rows, tiny = ctx["device"], ctx["timer"], ctx["rows"], ctx["tiny"]
    res = 32 if tiny else 224
    nets = {"resnet50": lambda: torchvision.models.resnet50(),
            "mobilenet-v2": lambda: torchvision.models.mobilenet_v2(),
            "vit-b16": lambda: torchvision.models.vit_b_16(image_size=res)}
    for name, make in nets.items():
        net = make().to(dev, torch.bfloat16).eval()
        cnn = name != "vit-b16"
        if cnn:
            net = net.to(memory_format=torch.channels_last)
        for b in ([1] if tiny else [1, 32, 256]):
            if ctx["spent"]():
                return
            x = torch.randn(b, 3, res, res, device=dev, dtype=torch.bfloat16)
            if cnn:
                x = x.contiguous(memory_format=torch.channels_last)
            with torch.inference_mode():
                step = graphed(torch, dev, lambda net=net, x=x: net(x))
                t = timer(step, 3 if tiny else 20)
            scen = f"batch={b};dtype=bf16" + (";memory_format=nhwc" if cnn else "")
            rows.add(f"torchvision-{name}-b{b}", name, scen + ("" if res == 224 else f";resolution={res}"), t,
                     f"torchvision {name} inference (random weights), bf16, "
                     + ("channels-last, " if cnn else "") + "PyTorch modules (BatchNorm not folded, no fusion) "
                     "captured in a CUDA graph and replayed")


def gpt_training(torch: Any, ctx: dict[str, Any]) -> None:
    import torch.nn as nn
    import torch.nn.functional as functional
    from torch.utils.checkpoint import checkpoint

    dev, timer, rows, tiny = ctx["device"], ctx["timer"], ctx["rows"], ctx["tiny"]
    layers, hidden, heads, vocab = (2, 64, 4, 256) if tiny else (24, 1024, 16, 50257)  # gpt2-medium
    batch, seq = (2, 32) if tiny else (8, 1024)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.n1, self.n2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
            self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
            self.up, self.down = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)

        def forward(self, x: Any) -> Any:
            B, T, C = x.shape
            q, k, v = self.qkv(self.n1(x)).view(B, T, 3, heads, C // heads).permute(2, 0, 3, 1, 4)
            a = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(B, T, C))
            return x + self.down(functional.gelu(self.up(self.n2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.norm = nn.LayerNorm(hidden)
            self.recompute = False

        def forward(self, idx: Any) -> Any:
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            for blk in self.blocks:
                x = checkpoint(blk, x, use_reentrant=False) if self.recompute else blk(x)
            return functional.linear(self.norm(x), self.wte.weight)  # tied LM head

    model = GPT().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=dev == "cuda")
    idx = torch.randint(0, vocab, (batch, seq), device=dev)

    def step() -> None:
        with torch.autocast(dev, dtype=torch.bfloat16):
            loss = functional.cross_entropy(model(idx).flatten(0, 1).float(), idx.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for recompute in (False, True):
        if ctx["spent"]():
            return
        model.recompute = recompute
        t = timer(step, 2 if tiny else 5)
        mode = "full" if recompute else "none"
        rows.add(f"gpt2-medium-train-b{batch}-s{seq}-recompute-{mode}", "gpt2-medium",
                 f"phase=training;batch={batch};seq={seq};dtype=bf16;execution=eager;recompute={mode}", t,
                 "one GPT-2-medium training step (bf16 autocast, fp32 weights, fused AdamW, tied LM head, "
                 "flash SDPA), eager PyTorch" + (", every block under torch.utils.checkpoint" if recompute else ""))


SECTIONS = {"gemm": gemms, "attention": attention, "copy": copies, "llama": llama, "vision": vision,
            "training": gpt_training}


def device_report(torch: Any, dev: str) -> str:
    """The device, torch and CUDA versions, and nvidia-smi's clocks and power (where it exists)."""
    lines = [f"date {dt.datetime.now(dt.UTC).isoformat()}", f"torch {torch.__version__}"]
    if dev == "cuda":
        p = torch.cuda.get_device_properties(0)
        lines += [f"device {p.name}, {p.multi_processor_count} SMs, {p.total_memory / 2**30:.1f} GiB",
                  f"cuda {torch.version.cuda}"]
        try:
            smi = subprocess.run(["nvidia-smi", "-q", "-d", "CLOCK,POWER"], capture_output=True, text=True,
                                 timeout=20)
            lines.append(smi.stdout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            lines.append(f"nvidia-smi: {exc}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for rows.csv and device.txt")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--tiny", action="store_true", help="toy sizes (the CPU check of the script)")
    ap.add_argument("--budget-s", type=float, default=420.0, help="stop starting measurements after this")
    ap.add_argument("--sections", default=",".join(SECTIONS), help=f"comma list of {', '.join(SECTIONS)}")
    args = ap.parse_args(argv)
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device: got cuda; accepted: cpu on a machine without a CUDA GPU", file=sys.stderr)
        return 2
    unknown = [s for s in args.sections.split(",") if s not in SECTIONS]
    if unknown:
        print(f"error: --sections: got {','.join(unknown)}; accepted: {', '.join(SECTIONS)}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    t0 = time.monotonic()
    hw = hardware_name(torch, args.device)
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             timeout=10).stdout.strip() or "unknown"
    except OSError:
        rev = "unknown"
    name = torch.cuda.get_device_name(0) if args.device == "cuda" else "CPU"
    source = (f"benchmarks/gpu_rows.py@{rev} on {name} ({dt.date.today().isoformat()}, torch {torch.__version__}"
              f"{', CUDA ' + str(torch.version.cuda) if args.device == 'cuda' else ''})")
    (args.out / "device.txt").write_text(device_report(torch, args.device))
    rows = Rows(args.out, source, hw, args.tiny)
    ctx = {"device": args.device, "tiny": args.tiny, "rows": rows, "timer": make_timer(torch, args.device),
           "spent": lambda: time.monotonic() - t0 > args.budget_s}
    failed = []
    for sec in args.sections.split(","):
        if ctx["spent"]():
            print(f"budget of {args.budget_s:.0f} s spent: {sec} and later sections skipped", flush=True)
            break
        print(f"[{time.monotonic() - t0:6.1f} s] {sec}", flush=True)
        try:
            SECTIONS[sec](torch, ctx)
        except Exception as exc:  # noqa: BLE001 - one broken section must not lose the others' rows
            failed.append(sec)
            print(f"  {sec} failed: {type(exc).__name__}: {exc}", flush=True)
        if args.device == "cuda":
            torch.cuda.empty_cache()
    with (args.out / "device.txt").open("a") as f:
        f.write("\n--- after the run ---\n" + device_report(torch, args.device))
    print(f"{rows.count} rows in {rows.path} ({time.monotonic() - t0:.0f} s)"
          + (f"; failed: {', '.join(failed)}" if failed else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
