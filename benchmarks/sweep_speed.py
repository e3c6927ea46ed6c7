"""Sweep speed: a grid of ~10,000 designs over the `all` suite (every library workload).

Run by hand:  python benchmarks/sweep_speed.py   (scores every design and its binding ceiling)
Target (issue #8): <= 30 s and <= 2 GB peak memory on this 2-core machine (measured: 11.4 s, 0.7 GB).
"""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path

import yaml

from dse.config import load_study
from dse.grid import axes_for, run_sweep
from dse.study import prepare


def main() -> None:
    cfg = {"name": "sweep-all", "base": "npu-7nm", "workloads": [{"suite": "all"}],
           "search": {"area_budget_mm2": 750, "space": {"peak_tflops": {"low": 64, "high": 1024},
                                                         "dram_bandwidth_tbps": {"low": 0.4, "high": 4.0},
                                                         "sram_mib": {"low": 8, "high": 256}}}}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.yaml"
        path.write_text(yaml.safe_dump(cfg))
        c, d = load_study(path)
        t0 = time.perf_counter()
        ctx = prepare(c, d)
        t1 = time.perf_counter()
        res = run_sweep(ctx, axes_for(c, ctx, 58, 3))
        t2 = time.perf_counter()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{len(res.grid):,} designs x {len(ctx.mix.workloads)} workloads ({len(ctx.mix.ops)} operator rows): "
          f"prepare {t1 - t0:.1f} s, sweep {t2 - t1:.1f} s, peak RSS {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
