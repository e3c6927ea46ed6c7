"""Across-mix report: the best design and ratio per mix, and the ratio-sensitivity curves."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dse.document import Document, Figure, Table
from dse.report.plots import sensitivity_chart
from dse.report.render import render
from dse.report.summary import _md_table, ratio_label
from dse.search.space import base_knobs
from dse.sensitivity import ratio_curve
from dse.study import StudyResult

__all__ = ["binding", "mix_table", "mixes_document", "sensitivity_chart", "write_mix_report"]


def binding(result: StudyResult) -> str:
    """Time-weighted share of each binding ceiling over the mix on the best design (as the study evaluated
    it: ``result.best_eval``)."""
    shares = result.evaluations()["best"].binding_shares(result.ctx.mix.weights)
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


def mixes_document(results: list[StudyResult], mixes: list[str], name: str) -> Document:
    """The across-mix report (no report.html): mixes.csv, ratio_sensitivity.csv/png and summary.md."""
    table = mix_table(results, mixes)
    curves = {}
    for mix, r in zip(mixes, results, strict=True):
        curves[mix] = ratio_curve(r.ctx, r.best)
    all_curves = pd.concat([c.assign(mix=m) for m, c in curves.items()], ignore_index=True)
    best = {m: (float(r.best.ridge[0]), float(r.best_scored.score[0])) for m, r in zip(mixes, results, strict=True)}
    base_ridge = float(results[0].ctx.base.ridge[0])
    fig = Figure("ratio_sensitivity.png", "sensitivity_chart", (curves, best, base_ridge),
                 f"{name}: best score per compute:bandwidth ratio (rest as each mix's best), within the budgets")
    lines = [f"# Study `{name}`: best compute:bandwidth ratio per mix", "",
             f"Base design `{results[0].ctx.base_hw.name}`, ridge {base_ridge:.1f} FLOP/byte ('1:2' = twice the base's "
             "bandwidth per FLOP). One search per mix; each mix's full results are in its subfolder.", "",
             _md_table(table), "", "`ratio_sensitivity.png` / `.csv`: the best feasible score at each ratio "
             "(compute swept over the searched range, bandwidth = compute / ratio), per mix.", ""]
    return Document(f"dse study {name}", ("\n".join(lines),),
                    (Table("mixes.csv", table), Table("ratio_sensitivity.csv", all_curves)), (fig,), html=False)


def write_mix_report(top: Path, results: list[StudyResult], mixes: list[str], name: str) -> str:
    """mixes.csv, ratio_sensitivity.csv/png and summary.md in the top folder (:func:`mixes_document`,
    rendered); returns a terminal summary."""
    doc = mixes_document(results, mixes, name)
    render(doc, top)
    table = doc.tables[0].frame
    base_ridge = float(results[0].ctx.base.ridge[0])
    out = [f"study {name}: best ratio per mix (base ridge {base_ridge:.1f} FLOP/byte)"]
    for _, r in table.iterrows():
        out.append(f"  {r['mix']:<16s} ridge {r['ridge_flop_per_byte']:7.1f} FLOP/byte ({r['ratio_vs_base']}) "
                   f"score {r['score']:.3f}x  area {r['area_mm2']:.0f} mm2  [{r['binding (mix time share)']}]")
    out.append(f"  results: {top}")
    return "\n".join(out)
