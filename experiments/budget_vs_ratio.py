"""Best compute:bandwidth ratio as the die-area budget grows, through the Study API.

    python experiments/budget_vs_ratio.py     (writes results/budget_vs_ratio.png)
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from dse import Study  # noqa: E402


def main() -> None:
    base = Study.from_yaml(Path(__file__).resolve().parents[1] / "configs" / "npu.yaml")
    rows = []
    for budget in (500, 600, 700, 800):
        res = base.with_overrides({"search.area_budget_mm2": budget, "search.n_trials": 150,
                                   "name": f"budget-{budget}"}).run(out="results/budget_vs_ratio")
        rows.append((budget, res.best["ridge_flop_per_byte"], res.best["score"]))
        print(f"budget {budget} mm2: ridge {res.best['ridge_flop_per_byte']:.1f} FLOP/byte, score {res.best['score']:.3f}x")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([r[0] for r in rows], [r[1] for r in rows], "o-")
    ax.set_xlabel("die-area budget (mm²)")
    ax.set_ylabel("best ridge point (FLOP/byte)")
    ax.set_title("best compute:bandwidth ratio vs area budget (npu.yaml mix)", fontsize=10)
    ax.grid(True, alpha=0.3)
    fig.savefig("results/budget_vs_ratio.png", dpi=130, bbox_inches="tight")


if __name__ == "__main__":
    main()
