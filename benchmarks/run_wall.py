"""The default study end to end, and its search on the default storage vs optuna's in-memory storage.

Run by hand (not in CI):  python benchmarks/run_wall.py [--config configs/npu.yaml]
Target (issue 17): ``python -m dse.run configs/npu.yaml --no-plots`` (400 trials) <= 8 s wall; the search on
the default SQLite storage within a small factor of the same search on in-memory storage (same run).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/npu.yaml")
    args = ap.parse_args()
    import optuna

    from dse.search import optimize
    from dse.search.storage import make_storage
    from dse.study import load_context, make_evaluator

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "dse.run", args.config, "--no-plots", "--quiet", "--out", tmp],
                       check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        cfg, ctx = load_context(args.config)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        times = {}
        for label, storage in (("in-memory", None), ("SQLite (default)", make_storage(f"sqlite:///{Path(tmp) / 's.db'}"))):
            study = optuna.create_study(storage=storage, directions=["maximize"], sampler=optimize.make_sampler(cfg.search),
                                        study_name="bench")
            t0 = time.perf_counter()
            optimize.run(study, cfg.search, make_evaluator(ctx), progress=False, exclusive=True)
            times[label] = time.perf_counter() - t0
    print(f"python -m dse.run {args.config} --no-plots: {wall:.2f} s wall (target <= 8 s)")
    print(f"search of {cfg.search.n_trials} trials: in-memory {times['in-memory']:.2f} s, default SQLite "
          f"{times['SQLite (default)']:.2f} s = {times['SQLite (default)'] / times['in-memory']:.2f}x in-memory")


if __name__ == "__main__":
    main()
