"""Plotly figures of the explorer, as plain dicts (no figure validation on the hot path): pure functions of a
:class:`dse.explore.state.View`. Every axis label carries its unit; every roofline states its AI definition.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from dse.explore.state import Heatmap, View
from dse.hardware.fields import KNOB_TABLE

#: qualitative colours (matplotlib's tab10), one per workload
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf")
HOVER = ("<b>%{customdata[0]}</b><br>%{customdata[1]}<br>FLOPs: %{customdata[2]:.3s}<br>bytes (compulsory): "
         "%{customdata[3]:.3s}B<br>AI at %{customdata[8]}: %{x:.3g} FLOP/B<br>time: %{customdata[4]:.3g} us"
         "<br>achieved: %{y:.3g} TFLOP/s<br>bound: %{customdata[5]}<br>unit: %{customdata[6]}"
         "<br>time share: %{customdata[7]:.1%}<extra></extra>")


def _layout(title: str, xlabel: str, ylabel: str, **extra: Any) -> dict:
    return {"title": {"text": title, "font": {"size": 13}}, "xaxis": {"title": {"text": xlabel}},
            "yaxis": {"title": {"text": ylabel}}, "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
            "legend": {"font": {"size": 10}}, **extra}


def roofline(view: View, level: str | None = None) -> dict:
    """Operators as dots at their achieved TFLOP/s against their arithmetic intensity at ``level`` (FLOP per byte
    of that level's traffic; default the main memory), under that level's roof ``min(AI x B, P)``, the matrix
    and vector peaks, and the launch-overhead roof of the median operator (``F_median / t_launch``)."""
    r = view.roofs
    level = level or r["main"]
    df = view.ops
    ai = df[f"ai_{level}"]
    sel = np.isfinite(ai) & (ai > 0) & (df["achieved_tflops"] > 0)
    d = df[sel]
    total = float(df["time_s"].sum()) or 1.0
    traces: list[dict] = []
    for k, (wl, g) in enumerate(d.groupby("workload", sort=False)):
        share = g["time_s"] / total
        traces.append({
            "type": "scatter", "mode": "markers", "name": wl, "x": g[f"ai_{level}"].tolist(),
            "y": g["achieved_tflops"].tolist(),
            "marker": {"size": (6 + 40 * np.sqrt(share)).round(1).tolist(), "color": COLORS[k % len(COLORS)],
                       "line": {"width": 0.5, "color": "black"}, "opacity": 0.75},
            "customdata": np.column_stack([g["name"], np.full(len(g), wl), g["flops"], g["bytes"],
                                           g["time_s"] * 1e6, g["bound"], g["unit"], share,
                                           np.full(len(g), level)]).tolist(),
            "hovertemplate": HOVER})
    lo = max(min(float(d[f"ai_{level}"].min()) if len(d) else 1.0, 1.0) / 2, 1e-2)
    hi = max(float(d[f"ai_{level}"].max()) if len(d) else 1e3, 1e3) * 2
    xs = np.geomspace(lo, hi, 60)
    peak, bw = r["peak_tflops"], r["levels"][level]
    traces.append({"type": "scatter", "mode": "lines", "name": f"{level} roof {bw:.3g} TB/s",
                   "x": xs.tolist(), "y": np.minimum(xs * bw, peak).tolist(), "line": {"dash": "dash", "color": "black"},
                   "hoverinfo": "skip"})
    roofs = [("matrix peak", peak, "black", "solid")]
    if math.isfinite(r["vector_tflops"]):
        roofs.append(("vector peak", r["vector_tflops"], "grey", "solid"))
    if r["launch_us"] > 0 and math.isfinite(r["median_op_flops"]):
        roofs.append((f"launch overhead roof, median operator ({r['median_op_flops']:.3g} FLOP / {r['launch_us']:.3g} us)",
                      r["median_op_flops"] / (r["launch_us"] * 1e-6) / 1e12, "purple", "dot"))
    for name, y, color, dash in roofs:
        traces.append({"type": "scatter", "mode": "lines", "name": f"{name} {y:.3g} TFLOP/s", "x": [lo, hi],
                       "y": [y, y], "line": {"color": color, "dash": dash, "width": 1.5}, "hoverinfo": "skip"})
    left = int((~sel).sum())
    title = f"Roofline at {level}: {len(d)} operators ({left} with no {level} traffic or no FLOPs not shown)"
    return {"data": traces, "layout": _layout(
        title, f"arithmetic intensity at {level} (FLOP per byte of {level} traffic)",
        "achieved throughput (TFLOP/s)", xaxis={"type": "log", "title": {"text": f"arithmetic intensity at {level} "
                                                                              f"(FLOP per byte of {level} traffic)"}},
        yaxis={"type": "log", "title": {"text": "achieved throughput (TFLOP/s)"}}, hovermode="closest")}


def ai_histogram(view: View, bins: int = 36) -> dict:
    """The mix's operator intensity (compulsory bytes: FLOPs / bytes read and written, as ``dse workloads ai``),
    each workload's FLOPs spread over its share of the mix weight, stacked by workload; the current and base
    ridges (peak / main-memory bandwidth) as vertical lines. x is log10 of FLOP/byte."""
    df = view.ops[np.isfinite(view.ops["ai_compulsory"]) & (view.ops["flops"] > 0)]
    share = df["flops"] / df.groupby("workload")["flops"].transform("sum") * df["mix_weight"]
    share = share / share.sum()
    x = np.log10(df["ai_compulsory"])
    ridges = {k: math.log10(v) for k, v in view.ridges.items()}
    edges = np.linspace(min(x.min(), *ridges.values()) - 0.1, max(x.max(), *ridges.values()) + 0.1, bins + 1)
    mid = 0.5 * (edges[1:] + edges[:-1])
    traces = []
    for k, (wl, g) in enumerate(df.groupby("workload", sort=False)):
        h, _ = np.histogram(np.log10(g["ai_compulsory"]), edges, weights=share[g.index])
        traces.append({"type": "bar", "name": wl, "x": mid.tolist(), "y": h.tolist(), "width": float(edges[1] - edges[0]),
                       "marker": {"color": COLORS[k % len(COLORS)]},
                       "hovertemplate": f"{wl}<br>AI 10^%{{x:.2f}} FLOP/B<br>%{{y:.1%}} of FLOPs<extra></extra>"})
    shapes, notes = [], []
    for k, (name, xv) in enumerate(ridges.items()):
        color = ("crimson", "black")[k % 2]
        shapes.append({"type": "line", "x0": xv, "x1": xv, "yref": "paper", "y0": 0, "y1": 1,
                       "line": {"color": color, "dash": "dash"}})
        notes.append({"x": xv, "y": 1 - 0.08 * k, "yref": "paper", "text": f"{name} ridge {10**xv:.0f} FLOP/B",
                      "showarrow": False, "xanchor": "left", "font": {"color": color, "size": 10}})
    ticks = list(range(int(math.floor(edges[0])), int(math.ceil(edges[-1])) + 1))
    return {"data": traces, "layout": _layout(
        "Operator intensity of the mix (FLOP-weighted, workloads at mix weight)",
        "arithmetic intensity (FLOP/byte of compulsory bytes, log scale)", "share of FLOPs (fraction)",
        barmode="stack", shapes=shapes, annotations=notes,
        xaxis={"tickvals": ticks, "ticktext": [f"{10.0**t:g}" for t in ticks],
               "title": {"text": "arithmetic intensity (FLOP/byte of compulsory bytes, log scale)"}})}


def heatmap(h: Heatmap, view: View, base: tuple[float, float]) -> dict:
    """Score over compute x bandwidth at the other knobs' current values; infeasible cells hatched (an x over
    each), the current design (star) and the base (circle) marked."""
    P, B = np.meshgrid(h.peak_tflops, h.bw_tbps)
    bad = ~h.feasible
    traces = [
        {"type": "heatmap", "x": h.peak_tflops.tolist(), "y": h.bw_tbps.tolist(), "z": h.score.tolist(),
         "colorscale": "Viridis", "colorbar": {"title": {"text": "mix score (x vs base)"}},
         "hovertemplate": "%{x:.3g} TFLOP/s, %{y:.3g} TB/s<br>score %{z:.3f}<extra></extra>"},
        {"type": "scatter", "mode": "markers", "name": "infeasible (limits not met)", "x": P[bad].tolist(),
         "y": B[bad].tolist(), "marker": {"symbol": "x-thin", "size": 9, "line": {"width": 1, "color": "white"}},
         "hoverinfo": "skip"},
        {"type": "scatter", "mode": "markers", "name": "current", "x": [view.values["peak_tflops"]],
         "y": [view.values["dram_bandwidth_tbps"]], "marker": {"symbol": "star", "size": 16, "color": "red",
                                                               "line": {"width": 1, "color": "black"}}},
        {"type": "scatter", "mode": "markers", "name": "base", "x": [base[0]], "y": [base[1]],
         "marker": {"symbol": "circle", "size": 10, "color": "white", "line": {"width": 1, "color": "black"}}},
    ]
    xl, yl = KNOB_TABLE[0].label, KNOB_TABLE[1].label
    return {"data": traces, "layout": _layout(
        "Mix score over compute x bandwidth (other knobs as set)", xl, yl, xaxis={"type": "log", "title": {"text": xl}},
        yaxis={"type": "log", "title": {"text": yl}}, legend={"orientation": "h", "y": -0.2})}


def bars(parts: dict[str, float], title: str, unit: str, horizontal: bool = False) -> dict:
    """One bar per component (or ceiling) with its value in ``unit``."""
    names, vals = list(parts), [float(v) for v in parts.values()]
    trace = {"type": "bar", "x": vals if horizontal else names, "y": names if horizontal else vals,
             "orientation": "h" if horizontal else "v", "marker": {"color": "#4c72b0"},
             "hovertemplate": f"%{{{'y' if horizontal else 'x'}}}: %{{{'x' if horizontal else 'y'}:.4g}} {unit}"
                              "<extra></extra>"}
    return {"data": [trace], "layout": _layout(title, unit if horizontal else "component",
                                               "" if horizontal else unit, height=260)}


def speedups(wl: pd.DataFrame) -> dict:
    """Speedup of each workload vs the base (x)."""
    return {"data": [{"type": "bar", "x": wl["speedup_x"].tolist(), "y": wl["workload"].tolist(), "orientation": "h",
                      "marker": {"color": ["#2ca02c" if s >= 1 else "#d62728" for s in wl["speedup_x"]]},
                      "hovertemplate": "%{y}: %{x:.3f}x<extra></extra>"}],
            "layout": _layout("Speedup vs base per workload", "speedup (x vs base)", "", height=300,
                              margin={"l": 260, "r": 20, "t": 40, "b": 50})}
