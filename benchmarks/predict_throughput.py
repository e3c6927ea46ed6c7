"""Predictor throughput: (design x operator) evaluations per second on the default mix.

Run by hand (not in CI):  python benchmarks/predict_throughput.py [--threads 1]
Target (issue #2): >= 1e7 evaluations per second per core.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/npu.yaml")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (1 = per-core figure)")
    args = ap.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)

    import numpy as np

    from dse.config import load_study
    from dse.predict import OpArrays, evaluate_times, mix_times
    from dse.search.space import designs_from_params
    from dse.study import prepare

    cfg, cfg_dir = load_study(args.config)
    ctx = prepare(cfg, cfg_dir)
    o = OpArrays.from_table(ctx.mix.ops)
    rng = np.random.default_rng(0)
    print(f"mix: {len(ctx.mix.workloads)} workloads, {o.n} operator rows, {ctx.base.capacity.shape[1]} memory levels")
    for n in (1_000, 10_000):
        params = {
            "peak_tflops": rng.uniform(64, 1024, n),
            "dram_bandwidth_tbps": rng.uniform(0.4, 4, n),
            "sram_mib": rng.uniform(8, 256, n),
        }
        d = designs_from_params(ctx.base, params)
        # worst case: every level's capacity and the registers differ per design (no level is shared)
        d_all = replace(d, capacity=d.capacity * rng.uniform(0.5, 2, d.capacity.shape),
                        reg_bytes=d.reg_bytes * rng.uniform(0.5, 2, n))
        for label, fn in (("evaluate_times", lambda d=d: evaluate_times(d, o)),
                          ("mix_times (chunked + per-workload sums)", lambda d=d: mix_times(d, ctx.mix)),
                          ("mix_times, every level sized per design", lambda d=d_all: mix_times(d, ctx.mix))):
            fn()
            best = min(_timed(fn) for _ in range(args.repeats))
            rate = n * o.n / best
            print(f"{n:>6} designs  {label:<42s} {best * 1e3:8.1f} ms  {rate:.3g} evals/s"
                  f"  ({rate / args.threads:.3g} per core)")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
