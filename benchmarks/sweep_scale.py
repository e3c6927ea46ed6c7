"""A streamed sweep of the default mix through dask: designs/s, peak memory of all processes, Parquet output.

Run by hand (not in CI):  python benchmarks/sweep_scale.py [--designs 1e8] [--workers 2] [--chunk 16384]
Target (issue 17): 1e8 designs x the default 7-workload mix on 2 cores, peak memory <= 2 GB, results in Parquet.
Peak memory is the largest sum of resident memory over this process and its children (the dask scheduler
and workers), sampled every 0.5 s.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import threading
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/npu.yaml")
    ap.add_argument("--designs", type=float, default=1e8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=16384)
    ap.add_argument("--block", type=int, default=1 << 22)
    ap.add_argument("--out", help="folder for sweep.parquet/ (default: a temporary folder, removed)")
    args = ap.parse_args()
    import numpy as np
    import psutil
    import pyarrow.parquet as pq

    from dse.grid import contexts, grid_size, stream_sweep

    cfg, ctxs = contexts(args.config)
    points = int(round(np.sqrt(args.designs)))
    ctx = next(iter(ctxs.values()))
    space = cfg.search.space
    axes = {"peak_tflops": np.geomspace(space.peak_tflops.low, space.peak_tflops.high, points),
            "dram_bandwidth_tbps": np.geomspace(space.dram_bandwidth_tbps.low, space.dram_bandwidth_tbps.high, points),
            "sram_mib": np.array([float(ctx.base.capacity[0, ctx.base.sram_level] / 2**20)])}
    n = grid_size(axes)
    peak = [0]
    stop = threading.Event()
    me = psutil.Process()

    def sample() -> None:
        while not stop.is_set():
            procs = [me, *me.children(recursive=True)]
            total = 0
            for p in procs:
                with contextlib.suppress(psutil.Error):
                    total += p.memory_info().rss
            peak[0] = max(peak[0], total)
            time.sleep(0.5)

    threading.Thread(target=sample, daemon=True).start()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.out or tmp) / "sweep.parquet"
        t0 = time.perf_counter()
        s = stream_sweep(ctxs, axes, folder, chunk=args.chunk, engine="dask", workers=args.workers, block=args.block,
                         progress=True)
        dt = time.perf_counter() - t0
        stop.set()
        files = sorted(folder.glob("part-*.parquet"))
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        size = sum(f.stat().st_size for f in files)
    best = s["mixes"]["workloads"]["best"]
    print(f"{n:,} designs x {len(ctx.mix.workloads)} workloads on {args.workers} dask workers: {dt:.0f} s "
          f"({n / dt:,.0f} designs/s), peak memory {peak[0] / 2**30:.2f} GiB (all processes), {rows:,} rows in "
          f"{len(files)} Parquet files ({size / 2**30:.2f} GiB); best feasible score {best['score']:.4f}x at "
          f"{best['peak_tflops']:.1f} TFLOP/s, {best['dram_bandwidth_tbps']:.3f} TB/s")


if __name__ == "__main__":
    main()
