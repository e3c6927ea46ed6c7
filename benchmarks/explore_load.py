"""``dse explore`` under concurrent clients (issue 35 item 5): N clients post knob changes for S seconds.

Run by hand:  python benchmarks/explore_load.py [--clients 20] [--seconds 60] [--config configs/npu.yaml]

Starts ``python -m dse explore CONFIG --no-browser`` on a free port, then N threads each post one update after the
other to Dash's callback endpoint over HTTP (the request a knob change makes: new peak, bandwidth and SRAM, drawn
log-uniform in the config's ranges, every tenth one out of range to exercise the error path). Reports updates
served, errors (a non-200 answer, or an error line for an in-range request), and the latency percentiles a client
saw (server queueing included). tests/explore/test_load.py runs the same at 20 clients for a shorter time.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(config: str, port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "dse", "explore", config, "--port", str(port), "--no-browser"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 60
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_dash-layout", timeout=2):
                return proc
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(proc.stderr.read()) from None
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the explorer did not serve within 60 s")


def callback_key(port: int) -> str:
    """The update callback's output key, read from the running app's dependency list."""
    from dse.explore.app import UPDATE_OUTPUT

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_dash-dependencies", timeout=10) as r:
        deps = json.load(r)
    return next(d["output"] for d in deps if UPDATE_OUTPUT in d["output"])


def load(port: int, clients: int, seconds: float, ranges: dict[str, tuple[float, float]], level: str) -> dict:
    """Run ``clients`` threads for ``seconds``; returns counts and latency percentiles (s)."""
    import numpy as np

    from dse.explore.app import update_request

    key = callback_key(port)
    url = f"http://127.0.0.1:{port}/_dash-update-component"
    lat: list[float] = []
    errors: list[str] = []
    served = [0]
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(k: int) -> None:
        rng = np.random.default_rng(k)
        i = 0
        while time.monotonic() < stop:
            i += 1
            bad = i % 10 == 0
            vals = {n: float(np.exp(rng.uniform(np.log(lo), np.log(hi)))) for n, (lo, hi) in ranges.items()}
            if bad:
                vals["peak_tflops"] = ranges["peak_tflops"][1] * 10
            req = urllib.request.Request(url, data=json.dumps(update_request(key, vals, level)).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
            t = time.perf_counter()
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    ans = json.load(r)["response"]
                dt = time.perf_counter() - t
                err = ans["error"]["children"]
                with lock:
                    served[0] += 1
                    lat.append(dt)
                    if bool(err) != bad:
                        errors.append(f"client {k} request {i}: error line {err!r} for {'bad' if bad else 'good'} input")
            except Exception as exc:  # noqa: BLE001 - every failure is counted
                with lock:
                    errors.append(f"client {k} request {i}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    a = np.array(lat) if lat else np.array([np.nan])
    return {"served": served[0], "errors": errors, "p50_s": float(np.percentile(a, 50)),
            "p95_s": float(np.percentile(a, 95)), "max_s": float(a.max()), "seconds": seconds, "clients": clients}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/npu.yaml")
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=60)
    args = ap.parse_args()
    from dse.explore.state import knob_specs
    from dse.study import load_context

    _, ctx = load_context(ROOT / args.config)
    ranges = {s.name: (s.low, s.high) for s in knob_specs(ctx) if s.name in ("peak_tflops", "dram_bandwidth_tbps",
                                                                             "sram_mib")}
    port = free_port()
    proc = start(args.config, port)
    try:
        r = load(port, args.clients, args.seconds, ranges, ctx.base.offchip_name)
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"{r['clients']} clients for {r['seconds']:.0f} s: {r['served']} updates served "
          f"({r['served'] / r['seconds']:.1f}/s), {len(r['errors'])} errors; latency per update p50 "
          f"{r['p50_s'] * 1e3:.0f} ms, p95 {r['p95_s'] * 1e3:.0f} ms, max {r['max_s'] * 1e3:.0f} ms")
    for e in r["errors"][:5]:
        print("  " + e)


if __name__ == "__main__":
    main()
