"""Across-mix report: the best design and ratio per mix, and the ratio-sensitivity curves; a mix without a feasible
design (``dse.study.MixesRun.infeasible``) is a row with its reason and a line in the summary."""

from __future__ import annotations

from collections.abc import Mapping
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


def _reason(err: object) -> str:
    """The one-line reason of an infeasible mix without the config file and field (the mix names it already)."""
    return str(getattr(err, "message", err))


def mix_table(results: list[StudyResult], mixes: list[str], infeasible: Mapping[str, object] | None = None,
              ) -> pd.DataFrame:
    """One row per mix: the best design's knobs, ridge, ratio to the base, score, area, cost, power and binding
    ceilings, ``infeasible_reason`` empty; then one row per mix of ``infeasible`` (mix -> its
    ``InfeasibleError`` or reason) with only ``mix`` and ``infeasible_reason``."""
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
                     "power_w": float(s.power_w[0]), "binding (mix time share)": binding(r),
                     **{p: v for p, v in r.best_params.items() if p not in k},  # every other searched field
                     "infeasible_reason": ""})
    rows += [{"mix": m, "infeasible_reason": _reason(e)} for m, e in (infeasible or {}).items()]
    return pd.DataFrame(rows)


def mixes_document(results: list[StudyResult], mixes: list[str], name: str,
                   infeasible: Mapping[str, object] | None = None) -> Document:
    """The across-mix report (no report.html): mixes.csv, ratio_sensitivity.csv/png and summary.md; the mixes of
    ``infeasible`` (mix -> reason) are rows of mixes.csv and a section of the summary, and have no curve."""
    infeasible = dict(infeasible or {})
    table = mix_table(results, mixes, infeasible)
    shown = table[table["infeasible_reason"] == ""].drop(columns="infeasible_reason")
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
             _md_table(shown), ""]
    if infeasible:
        lines += ["**No feasible design** (not in the table or the curves; the other mixes ran):", "",
                  *(f"- `{m}`: {_reason(e)}" for m, e in infeasible.items()), ""]
    lines += ["`ratio_sensitivity.png` / `.csv`: the best feasible score at each ratio "
              "(compute swept over the searched range, bandwidth = compute / ratio), per mix.", ""]
    beaten = curve_beats_search(curves, best)
    if beaten:
        lines += ["**The curve found better feasible designs than the search** (the search's trials did not reach "
                  "them; more trials, or read the curve):", "",
                  *(f"- `{m}`: score {c['best_score']:.4g}x at ridge {c['ridge_flop_per_byte']:.1f} FLOP/byte "
                    f"({c['peak_tflops']:.1f} TFLOP/s, {c['dram_bandwidth_tbps']:.3g} TB/s), against the search's "
                    f"{best[m][1]:.4g}x at {best[m][0]:.1f}" for m, c in beaten.items()), ""]
    return Document(f"dse study {name}", ("\n".join(lines),),
                    (Table("mixes.csv", table), Table("ratio_sensitivity.csv", all_curves)), (fig,), html=False)


def curve_beats_search(curves: Mapping[str, pd.DataFrame], best: Mapping[str, tuple[float, float]],
                       tie: float = 1e-3) -> dict[str, pd.Series]:
    """{mix: the curve's best row} where a feasible design of the ratio curve scores more than ``tie`` above the
    search's best (a helper found the train mix's 'best ratio' 2.117x under its own curve's 2.178x)."""
    out = {}
    for m, c in curves.items():
        if m in best and c["best_score"].notna().any():
            top = c.loc[c["best_score"].idxmax()]
            if top["best_score"] > best[m][1] * (1 + tie):
                out[m] = top
    return out


def write_mix_report(top: Path, results: list[StudyResult], mixes: list[str], name: str,
                     infeasible: Mapping[str, object] | None = None) -> str:
    """mixes.csv, ratio_sensitivity.csv/png and summary.md in the top folder (:func:`mixes_document`,
    rendered); returns a terminal summary: a line per mix, an infeasible mix's line giving its reason."""
    doc = mixes_document(results, mixes, name, infeasible)
    render(doc, top)
    table = doc.tables[0].frame
    base_ridge = float(results[0].ctx.base.ridge[0])
    out = [f"study {name}: best ratio per mix (base ridge {base_ridge:.1f} FLOP/byte)"]
    for _, r in table.iterrows():
        if r["infeasible_reason"]:
            out.append(f"  {r['mix']:<16s} no feasible design: {r['infeasible_reason']}")
            continue
        out.append(f"  {r['mix']:<16s} ridge {r['ridge_flop_per_byte']:7.1f} FLOP/byte ({r['ratio_vs_base']}) "
                   f"score {r['score']:.3f}x  area {r['area_mm2']:.0f} mm2  [{r['binding (mix time share)']}]")
    out.append(f"  results: {top}")
    return "\n".join(out)
