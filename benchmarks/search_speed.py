"""Search speed: 1,000 trials on a 20-workload mix with TPE and NSGA-II, default SQLite storage.

Run by hand (not in CI):  python benchmarks/search_speed.py [--trials 1000] [--storage URL]
Target (issue #7): <= 60 s per 1,000 trials with TPE on this machine.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import yaml

from dse.study import run_study


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--storage", help="optuna storage URL (default: SQLite file in a temp folder)")
    ap.add_argument("--samplers", default="tpe,nsga2")
    args = ap.parse_args()
    base = yaml.safe_load((Path(__file__).parent / "mix20.yaml").read_text())
    print(f"mix: {len(base['workloads'])} workloads, {args.trials} trials, batch {base['search']['batch_size']}")
    for sampler in args.samplers.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = {**base, "name": f"bench-{sampler}", "search": {**base["search"], "sampler": sampler,
                                                                 "n_trials": args.trials}}
            path = Path(tmp) / "cfg.yaml"
            path.write_text(yaml.safe_dump(cfg))
            storage = args.storage.replace("{tmp}", tmp) if args.storage else None
            t0 = time.perf_counter()
            r = run_study(path, out=Path(tmp) / "r", progress=False, storage=storage)
            dt = time.perf_counter() - t0
            print(f"{sampler:6s} {dt:6.1f} s for {r.new_trials} trials = {r.new_trials / dt:6.1f} trials/s "
                  f"(best score {float(r.best_scored.score[0]):.3f}x)")


if __name__ == "__main__":
    main()
