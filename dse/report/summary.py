"""summary.md and the terminal summary of a study."""

from __future__ import annotations

import pandas as pd

from dse.predict import Prediction
from dse.search.space import base_knobs
from dse.units import TERA


def ratio_label(base_ridge: float, ridge: float) -> str:
    """Compute:bandwidth ratio normalised to the base: '1:2' = twice the bandwidth per FLOP of the base."""
    return f"1:{base_ridge / ridge:.2f}"


def workload_table(labels: list[str], weights, base_times, best_times, best_preds: list[Prediction]) -> pd.DataFrame:
    rows = []
    for label, w, tb, t, p in zip(labels, weights, base_times, best_times, best_preds, strict=True):
        share = p.time_by_bound()
        rows.append({
            "workload": label, "weight": round(float(w), 4), "base_ms": tb * 1e3, "best_ms": t * 1e3,
            "speedup_x": tb / t, "best_achieved_tflops": p.achieved_flops / TERA,
            "binding (time share)": ", ".join(f"{k} {v:.0%}" for k, v in share.sort_values(ascending=False).items()
                                              if v >= 0.01),
        })
    return pd.DataFrame(rows)


def _md_table(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        cells = [format(v, floatfmt) if isinstance(v, float) else str(v) for v in r]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def design_table(base, best, base_area, best_area) -> pd.DataFrame:
    kb, kx = base_knobs(base), base_knobs(best)
    rows = [
        ("peak compute (TFLOP/s, " + base.base.reference_dtype + ")", kb["peak_tflops"], kx["peak_tflops"]),
        ("DRAM bandwidth (TB/s)", kb["dram_bandwidth_tbps"], kx["dram_bandwidth_tbps"]),
        (f"on-chip SRAM '{base.level_names[base.sram_level]}' (MiB)", kb["sram_mib"], kx["sram_mib"]),
        ("ridge point (FLOP/byte)", float(base.ridge[0]), float(best.ridge[0])),
        ("DRAM stacks", float(base_area.dram_stacks[0]), float(best_area.dram_stacks[0])),
    ]
    rows += [(f"area: {c} (mm²)", float(base_area.parts[c][0]), float(best_area.parts[c][0]))
             for c in base_area.parts]
    rows.append(("area: total (mm²)", float(base_area.total[0]), float(best_area.total[0])))
    df = pd.DataFrame(rows, columns=["quantity", "base", "best"])
    df["change_%"] = (df["best"] / df["base"] - 1) * 100
    return df


def summary_markdown(result, design_df: pd.DataFrame, wl_df: pd.DataFrame, figures: list[str]) -> str:
    ctx = result.ctx
    cfg = ctx.cfg
    base_ridge = float(ctx.base.ridge[0])
    ridge = float(result.best.ridge[0])
    s = result.best_scored
    budget = f"{cfg.search.area_budget_mm2:.0f} mm²" if cfg.search.area_budget_mm2 else "none (reticle limit only)"
    lines = [
        f"# Study `{cfg.name}`",
        "",
        cfg.description.strip(),
        "",
        f"- Base design: `{ctx.base_hw.name}` ({ctx.base_hw.process_node}); objective: `{cfg.search.objective}`;"
        f" area budget: {budget}",
        f"- Trials: {result.n_trials} in the study ({result.new_trials} new this run"
        + (f", {result.recovered} interrupted trials marked failed" if result.recovered else "")
        + f"); sampler `{cfg.search.sampler}`, seed {cfg.search.seed}; storage `{result.storage}`",
        "",
        "## Best design",
        "",
        f"- **Mix score {float(s.score[0]):.4f}x** the base (weighted geometric mean of per-workload speedups)",
        f"- **Compute:bandwidth ratio: ridge {ridge:.1f} FLOP/byte, {ratio_label(base_ridge, ridge)} relative"
        f" to the base** (base ridge {base_ridge:.1f} FLOP/byte; '1:2' = twice the bandwidth per FLOP)",
        f"- Area {float(s.area_mm2[0]):.1f} mm² ({(float(s.area_mm2[0]) / ctx.base_area_mm2 - 1) * 100:+.1f} % vs base),"
        f" objective value {float(s.objective[0]):.4f}",
        "",
        _md_table(design_df),
        "",
        "## Per-workload results on the best design",
        "",
        _md_table(wl_df),
        "",
        "## Files",
        "",
        "- `trials.csv`: every trial (parameters in config units, score, area, ridge, feasibility)",
        "- `best_design.yaml`: the best design as a hardware template (`dse.hardware('.../best_design.yaml')`)",
        "- `config.yaml`: the config this study ran; `study.db`: the optuna study (resume with `--resume`)",
        *[f"- `{f}`" for f in figures],
        "",
        "Area coefficients are per process node in `hw_templates/nodes/`, each with its source.",
    ]
    return "\n".join(lines) + "\n"


def terminal_summary(result, wl_df: pd.DataFrame) -> str:
    ctx = result.ctx
    base_ridge = float(ctx.base.ridge[0])
    ridge = float(result.best.ridge[0])
    kx = base_knobs(result.best)
    s = result.best_scored
    out = [
        f"study {ctx.cfg.name}: {result.n_trials} trials, best score {float(s.score[0]):.4f}x vs {ctx.base_hw.name}",
        f"  best: {kx['peak_tflops']:.1f} TFLOP/s, {kx['dram_bandwidth_tbps']:.3f} TB/s, {kx['sram_mib']:.1f} MiB SRAM,"
        f" area {float(s.area_mm2[0]):.0f} mm2",
        f"  ratio: ridge {ridge:.1f} FLOP/byte = {ratio_label(base_ridge, ridge)} vs base ({base_ridge:.1f} FLOP/byte)",
    ]
    for _, r in wl_df.iterrows():
        out.append(f"  {r['workload']:<45s} {r['base_ms']:9.3f} ms -> {r['best_ms']:9.3f} ms  x{r['speedup_x']:.3f}")
    out.append(f"  results: {result.folder}")
    return "\n".join(out)
