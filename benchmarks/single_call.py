"""One ``dse.workload`` + ``dse.predict`` call (LLaMA-2-7B decode on the A100 template), in numpy passes.

Run by hand (not in CI):  python benchmarks/single_call.py [--repeats 200]

A "pass" is ``np.multiply(x, 1.0001, out=y)`` over 1e5 float64 elements, measured interleaved in the same
run. Target (issue 17): <= 30 passes (~1 ms) for the warm call (templates loaded, scenario seen before).
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=200)
    args = ap.parse_args()
    import numpy as np

    import dse

    hw = dse.hardware("a100-80gb")
    x = np.random.default_rng(0).uniform(1, 2, 100_000)
    y = np.empty_like(x)

    def call() -> float:
        wl = dse.workload("llama2-7b", phase="decode", batch=1, context=1024, dtype="bf16")
        return dse.predict(wl, hw).time_s

    t0 = time.perf_counter()
    first = call()
    t_first = time.perf_counter() - t0
    t_pass = t_call = float("inf")
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        np.multiply(x, 1.0001, out=y)
        t_pass = min(t_pass, time.perf_counter() - t0)
        t0 = time.perf_counter()
        call()
        t_call = min(t_call, time.perf_counter() - t0)
    print(f"dse.workload + dse.predict (llama2-7b decode, a100-80gb, {first * 1e3:.3f} ms/step): "
          f"first {t_first * 1e3:.1f} ms, warm {t_call * 1e3:.3f} ms; numpy pass of 1e5 {t_pass * 1e6:.1f} us "
          f"-> {t_call / t_pass:.1f} passes "
          "(target <= 30)")


if __name__ == "__main__":
    main()
