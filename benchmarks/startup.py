"""Start-up cost: wall time of fresh interpreters that import dse (and some of its heavier parts).

Run by hand (not in CI):  python benchmarks/startup.py [--repeats 5]
Target (issue 17): ``import dse`` <= 0.3 s; reported next to a bare interpreter measured in the same run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

CASES = {
    "python (bare interpreter)": "pass",
    "import dse": "import dse",
    "import dse; dse.workload + dse.predict": "import dse; dse.predict(dse.workload('llama2-7b', phase='decode', "
                                               "batch=1, context=1024), 'a100-80gb')",
    "import dse.report.write (report writer)": "import dse.report.write",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    best = dict.fromkeys(CASES, float("inf"))
    for _ in range(args.repeats):  # interleaved: every case sees the same machine load
        for label, code in CASES.items():
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            best[label] = min(best[label], time.perf_counter() - t0)
    bare = best["python (bare interpreter)"]
    for label, t in best.items():
        print(f"{label:<45s} {t:6.3f} s  ({t - bare:+.3f} s over a bare interpreter)")


if __name__ == "__main__":
    main()
