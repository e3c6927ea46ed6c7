"""Across-mix report: the best design and ratio per mix, and the ratio-sensitivity curves."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from dse.predict import predict  # noqa: E402
from dse.report.plots import _save, finish  # noqa: E402
from dse.report.summary import _md_table, ratio_label  # noqa: E402
from dse.search.space import base_knobs  # noqa: E402
from dse.sensitivity import ratio_curve  # noqa: E402
from dse.study import StudyResult  # noqa: E402
from dse.yamlio import atomic_write, write_text  # noqa: E402


def binding(result: StudyResult) -> str:
    """Time-weighted share of each binding ceiling over the mix on the best design."""
    ctx = result.ctx
    shares: dict[str, float] = {}
    for wl, w in zip(ctx.mix.workloads, ctx.mix.weights, strict=True):
        for k, v in predict(wl, result.best).time_by_bound().items():
            shares[k] = shares.get(k, 0.0) + w * v
    return ", ".join(f"{k} {v:.0%}" for k, v in sorted(shares.items(), key=lambda kv: -kv[1]) if v >= 0.01)


def mix_table(results: list[StudyResult], mixes: list[str]) -> pd.DataFrame:
    rows = []
    for mix, r in zip(mixes, results, strict=True):
        base_ridge = float(r.ctx.base.ridge[0])
        ridge = float(r.best.ridge[0])
        k = base_knobs(r.best)
        s = r.best_scored
        rows.append({"mix": mix, "peak_tflops": k["peak_tflops"], "dram_bandwidth_tbps": k["dram_bandwidth_tbps"],
                     "sram_mib": k["sram_mib"], "ridge_flop_per_byte": ridge,
                     "ratio_vs_base": ratio_label(base_ridge, ridge), "score": float(s.score[0]),
                     "area_mm2": float(s.area_mm2[0]), "cost_usd": float(s.cost_usd[0]),
                     "power_w": float(s.power_w[0]), "binding (mix time share)": binding(r)})
    return pd.DataFrame(rows)


def sensitivity_chart(curves: dict[str, pd.DataFrame], best: dict[str, tuple[float, float]], base_ridge: float,
                      path: Path, title: str) -> Path:
    fig, ax = plt.subplots(figsize=(8, 5))
    for k, (mix, df) in enumerate(curves.items()):
        pts = df.dropna(subset=["ridge_flop_per_byte", "best_score"]).sort_values("ridge_flop_per_byte")
        ax.plot(pts["ridge_flop_per_byte"], pts["best_score"], "-o", ms=3, color=f"C{k}", lw=1.8, label=mix)
        ax.plot(*best[mix], marker="*", ms=14, color=f"C{k}", mec="k", ls="none")
    ax.axvline(base_ridge, color="k", ls=":", lw=1)
    ax.text(base_ridge, ax.get_ylim()[1], " base ridge", fontsize=8, va="top")
    finish(ax, "compute:bandwidth ratio = ridge point (FLOP/byte)", "best feasible mix score at this ratio (x vs base)",
           title, logy=False, fontsize=8, title="mix (star = search optimum)")
    return _save(fig, path)


def write_mix_report(top: Path, results: list[StudyResult], mixes: list[str], name: str) -> str:
    """mixes.csv, ratio_sensitivity.csv/png and summary.md in the top folder; returns a terminal summary."""
    table = mix_table(results, mixes)
    atomic_write(top / "mixes.csv", lambda p: table.to_csv(p, index=False))
    curves = {}
    for mix, r in zip(mixes, results, strict=True):
        curves[mix] = ratio_curve(r.ctx, r.best)
    all_curves = pd.concat([c.assign(mix=m) for m, c in curves.items()], ignore_index=True)
    atomic_write(top / "ratio_sensitivity.csv", lambda p: all_curves.to_csv(p, index=False))
    best = {m: (float(r.best.ridge[0]), float(r.best_scored.score[0])) for m, r in zip(mixes, results, strict=True)}
    base_ridge = float(results[0].ctx.base.ridge[0])
    sensitivity_chart(curves, best, base_ridge, top / "ratio_sensitivity.png",
                      f"{name}: best score per compute:bandwidth ratio (rest as each mix's best), within the budgets")
    lines = [f"# Study `{name}`: best compute:bandwidth ratio per mix", "",
             f"Base design `{results[0].ctx.base_hw.name}`, ridge {base_ridge:.1f} FLOP/byte ('1:2' = twice the base's "
             "bandwidth per FLOP). One search per mix; each mix's full results are in its subfolder.", "",
             _md_table(table), "", "`ratio_sensitivity.png` / `.csv`: the best feasible score at each ratio "
             "(compute swept over the searched range, bandwidth = compute / ratio), per mix.", ""]
    write_text(top / "summary.md", "\n".join(lines))
    out = [f"study {name}: best ratio per mix (base ridge {base_ridge:.1f} FLOP/byte)"]
    for _, r in table.iterrows():
        out.append(f"  {r['mix']:<16s} ridge {r['ridge_flop_per_byte']:7.1f} FLOP/byte ({r['ratio_vs_base']}) "
                   f"score {r['score']:.3f}x  area {r['area_mm2']:.0f} mm2  [{r['binding (mix time share)']}]")
    out.append(f"  results: {top}")
    return "\n".join(out)
