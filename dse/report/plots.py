"""Figures for a study, each a pure function from data to a PNG (units on every axis)."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.colors
import matplotlib.patches
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dse.hardware.designs import DesignBatch  # noqa: E402
from dse.hardware.fields import KNOB_TABLE  # noqa: E402
from dse.units import TERA  # noqa: E402
from dse.yamlio import atomic_write  # noqa: E402

#: x and y labels of the compute x bandwidth heatmaps: the first two knobs in grid order (peak, bandwidth)
KNOB_LABELS = (KNOB_TABLE[0].label, KNOB_TABLE[1].label)


def palette(name: str, n: int) -> list[tuple[float, float, float, float]]:
    """``n`` colours of a matplotlib colormap: a qualitative one (tab10, tab20) cycles its colours, a
    continuous one (viridis) is sampled evenly. (matplotlib only: seaborn pulls scipy.stats, ~1 s.)"""
    cmap = matplotlib.colormaps[name]
    if isinstance(cmap, matplotlib.colors.ListedColormap) and cmap.N <= 20:
        return [tuple(cmap(i % cmap.N)) for i in range(n)]
    return [tuple(c) for c in cmap(np.linspace(0.0, 1.0, max(n, 1)))][:n]


def finish(ax: plt.Axes, xlabel: str, ylabel: str, heading: str, logy: bool = True, **legend: object) -> None:
    """Log-x (and log-y) axes with labels (units in them), heading, grid and legend (``legend`` kwargs)."""
    ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(heading, fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(**{"fontsize": 7, **legend})


#: artists with more elements than this are drawn as a raster image inside the SVG (axes, text and legends
#: stay vector): a heatmap of 10^4 cells or a scatter of 10^4 points made 10-80 MB SVGs
RASTER_ABOVE = 500


def rasterize_heavy(fig: plt.Figure, limit: int = RASTER_ABOVE) -> None:
    """Mark heatmaps (QuadMesh, images) and collections or lines with more than ``limit`` elements rasterized."""
    import matplotlib.collections

    for ax in fig.axes:
        for c in ax.collections:
            n = len(c.get_paths()) if not isinstance(c, matplotlib.collections.QuadMesh) else limit + 1
            if n > limit or len(getattr(c, "get_offsets", lambda: [])()) > limit:
                c.set_rasterized(True)
        for line in ax.lines:
            if len(line.get_xdata()) > limit:
                line.set_rasterized(True)


def _save(fig: plt.Figure, path: Path) -> Path:
    """The figure as PNG at ``path`` and as SVG next to it (both atomic; heavy artists rasterized in the SVG)."""
    atomic_write(path, lambda p: fig.savefig(p, dpi=130, bbox_inches="tight", format="png"))
    rasterize_heavy(fig)
    atomic_write(path.with_suffix(".svg"), lambda p: fig.savefig(p, dpi=130, bbox_inches="tight", format="svg"))
    plt.close(fig)
    return path


def roofline_levels(ops: pd.DataFrame, design: DesignBatch) -> list[str]:
    """The memory levels a roofline panel is drawn for: those that carry traffic of some operator with FLOPs,
    inner to outer (an all-SRAM chip has no DRAM panel)."""
    busy = ops["flops"] > 0
    return [lv for lv in design.level_names if f"traffic_{lv}_bytes" in ops
            and (ops.loc[busy, f"traffic_{lv}_bytes"] > 0).any()]


def matrix_dtype_peaks(ops: pd.DataFrame, design: DesignBatch) -> dict[str, float]:
    """{dtype: design 0's matrix peak FLOP/s} for every dtype the mix's matrix-unit operators run in, the
    FLOP-heaviest first (the reference dtype's peak when no operator says): an int8 mix's operators sit under the
    int8 roof, twice the bf16 one, so a chart drawing only the reference dtype's roof showed them above it."""
    from dse.units import DTYPE_INDEX

    ref = {design.base.reference_dtype: float(design.peak_flops[0])}
    if "dtype" not in ops or "flops" not in ops:
        return ref
    on = ops["ran_on"] == "matrix" if "ran_on" in ops else ops.get("unit", pd.Series("", index=ops.index)) == "matrix"
    m = ops[on & (ops["flops"] > 0)]
    if m.empty:
        return ref
    w = (m["flops"] * m["count"] if "count" in m else m["flops"]).groupby(m["dtype"]).sum().sort_values(ascending=False)
    out = {dt: float(design.matrix_peak[0, DTYPE_INDEX[dt]]) for dt in w.index if dt in DTYPE_INDEX}
    out = {dt: p for dt, p in out.items() if np.isfinite(p)}
    return out or ref


def roofline_chart(ops: pd.DataFrame, design: DesignBatch, path: Path, title: str) -> Path:
    """Hierarchical roofline of design 0: one panel per memory level (:func:`roofline_levels`), each with one
    definition of arithmetic intensity, FLOP per byte of *that level's* traffic, stated on its axis.

    ``ops`` is a concatenation of per-op prediction tables (``dse.predict``) with a ``workload`` label column.
    In every panel each operator sits at its achieved TFLOP/s (its predicted time, not its roof), dot area ~ its
    share of the time; the roofs are ``min(AI_l x BW_l, peak)`` of that level, the matrix peak, the vector peak
    (an operator on the vector units is capped there) and the launch-overhead roof ``F / t_launch`` of an
    operator of the mix's median FLOPs (time-weighted): an operator of F FLOPs cannot beat ``F / t_launch``
    whatever its intensity (Williams et al., CACM 2009, on adding ceilings to a roofline). A system's network
    roof is drawn in the outermost panel with each workload at FLOP per byte it sends."""
    levels = roofline_levels(ops, design) or [design.offchip_name]
    fig, axes = plt.subplots(1, len(levels), figsize=(5.2 * len(levels), 5.2), squeeze=False, sharey=True)
    peaks = matrix_dtype_peaks(ops, design)  # the mix's dtypes, FLOP-heaviest first: its roof is drawn solid
    peak_dtype, peak = next(iter(peaks.items()))
    vec = float(np.nanmax(design.vector_peak[0])) if np.isfinite(design.vector_peak[0]).any() else float("nan")
    df = ops[ops["flops"] > 0]
    total = float(df["total_time_s"].sum()) or 1.0
    wl_names = list(dict.fromkeys(df["workload"]))
    pal = palette("tab10", max(len(wl_names), 1))
    launch = float(design.overhead_s[0])
    order = np.argsort(df["flops"].to_numpy(dtype=float))
    cum = np.cumsum(df["total_time_s"].to_numpy(dtype=float)[order]) / total
    median_flops = float(df["flops"].to_numpy(dtype=float)[order][np.searchsorted(cum, 0.5)]) if len(df) else 0.0
    for ax, lv in zip(axes[0], levels, strict=True):
        j = design.level_names.index(lv)
        col = f"traffic_{lv}_bytes"
        sub = df[df[col] > 0] if col in df else df.iloc[:0]
        x = sub["flops"] / sub[col] if len(sub) else pd.Series(dtype=float)
        bw = float(design.bandwidth[0, j])
        lo = max(min(float(x.min()) if len(x) else 1.0, 1.0) / 2, 1e-2)
        hi = max(float(x.max()) if len(x) else 1e3, 2 * peak / bw) * 2
        xs = np.logspace(np.log10(lo), np.log10(hi), 200)
        ax.plot(xs, np.minimum(xs * bw, peak) / TERA, "-", color="k", lw=2,
                label=f"{lv} {bw / TERA:.3g} TB/s; matrix peak {peak / TERA:.0f} TFLOP/s ({peak_dtype})")
        for k, (dt, p_dt) in enumerate(list(peaks.items())[1:]):  # the mix's other dtypes' roofs
            ax.plot(xs, np.minimum(xs * bw, p_dt) / TERA, ls=("--", "-.", ":")[k % 3], color="0.4", lw=1.2,
                    label=f"matrix peak {p_dt / TERA:.0f} TFLOP/s ({dt})")
        if np.isfinite(vec) and vec < peak:
            ax.plot(xs, np.minimum(xs * bw, vec) / TERA, "--", color="tab:green", lw=1.2,
                    label=f"vector peak {vec / TERA:.3g} TFLOP/s")
        # the overhead ceiling of the median op, drawn where it could bind (under the peak): far above it, it only
        # stretched the axis decades past every operator (1 us at a 241 GFLOP op is 2.4e5 TFLOP/s)
        if launch > 0 and median_flops > 0 and median_flops / launch < peak:
            ax.axhline(median_flops / launch / TERA, color="tab:red", lw=1, ls=":",
                       label=f"launch overhead {launch * 1e6:.3g} µs at the median op ({median_flops / 1e9:.3g} GFLOP)")
        for k, wl in enumerate(wl_names):
            sel = sub["workload"] == wl
            if sel.any():
                ax.scatter(x[sel], sub.loc[sel, "achieved_flops"] / TERA, s=10 + 400 * sub.loc[sel, "total_time_s"]
                           / total, alpha=0.7, color=pal[k], edgecolor="k", lw=0.3, label=wl)
        if lv == design.offchip_name:
            ridge = peak / bw
            ax.axvline(ridge, color="grey", lw=0.8, ls=":")
            ax.text(ridge, peak / TERA * 1.15, f"ridge {ridge:.0f} FLOP/B ({peak_dtype})", ha="center", fontsize=8,
                    color="grey")
            _network_roof(ax, ops, design, wl_names, pal, lo, hi, peak)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"arithmetic intensity at {lv} (FLOP per byte of {lv} traffic)")
        ax.set_ylabel("achieved throughput (TFLOP/s)")
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(fontsize=6.5, loc="lower right", ncol=1)
    fig.suptitle(f"{title}\neach panel: operators at their predicted TFLOP/s against one level's intensity and roof",
                 fontsize=10)
    return _save(fig, path)


def _network_roof(ax: plt.Axes, ops: pd.DataFrame, design: DesignBatch, wl_names: list[str], pal: list, lo: float,
                  hi: float, peak: float) -> None:
    """The network roof ``min(I_net x injection BW, peak)`` and each workload at FLOP per byte a chip sends."""
    if not (design.n_net and "net_sent_bytes" in ops and (ops["net_sent_bytes"] > 0).any()):
        return
    inj = float(design.net_links[0, 0] * design.net_link_bw[0, 0] * design.net_eff[0, 0])
    pts = []
    for k, wl in enumerate(wl_names):
        w = ops[ops["workload"] == wl]
        nb = float((w["net_sent_bytes"] * w["count"]).sum())
        if nb > 0:
            fl = float((w["flops"] * w["count"]).sum())
            pts.append((fl / nb, fl / w["total_time_s"].sum() / TERA, pal[k]))
    xn = np.logspace(np.log10(lo), np.log10(max(hi, 2 * max(p[0] for p in pts))), 200)
    ax.plot(xn, np.minimum(xn * inj, peak) / TERA, "-.", color="tab:purple", lw=1.2,
            label=f"network {design.system.network[0].name} {inj / 1e9:.0f} GB/s per chip; diamonds: each "
                  "workload at FLOP per network byte")
    for xv, yv, c in pts:
        ax.scatter([xv], [yv], marker="D", s=60, color=c, edgecolor="tab:purple", lw=1.2)


#: line colours of candidate designs (ridge lines, roofs), dark so they stand out over histogram bars
CANDIDATE_COLORS = ("k", "crimson", "navy", "darkgreen", "darkorange", "purple", "saddlebrown", "teal")


def ai_histogram(ops: pd.DataFrame, ridges: dict[str, float], path: Path, title: str, group: str = "workload",
                 band: tuple[float, float] | None = None) -> Path:
    """Histogram of operator arithmetic intensity (compulsory bytes), stacked by ``group`` (a column:
    workload, or family for large mixes), each workload's ops weighted by FLOPs and scaled to the
    workload's mix weight (``mix_weight`` column); vertical lines at the given designs' ridge points
    (FLOP/byte); ``band`` shades an AI interval (e.g. 4-16 FLOP/byte)."""
    df = ops[(ops["flops"] > 0) & (ops["bytes_read"] + ops["bytes_written"] > 0)].copy()
    df["ai"] = df["flops"] / (df["bytes_read"] + df["bytes_written"])
    # Each workload contributes its mix weight, spread over its ops by FLOPs.
    work = df["flops"] * df["count"]
    df["share"] = work / work.groupby(df["workload"]).transform("sum") * df["mix_weight"]
    df["share"] /= df["share"].sum()
    ai_max = float(df["ai"].max()) if len(df) else 1e3
    bins = np.logspace(-1, np.log10(max(ai_max, max(ridges.values(), default=1)) * 2), 40)
    fig, ax = plt.subplots(figsize=(9, 4.8))
    names = list(dict.fromkeys(df[group]))
    pal = palette("tab20" if len(names) > 10 else "tab10", max(len(names), 1))
    ax.hist([df.loc[df[group] == g, "ai"] for g in names], bins=bins, stacked=True,
            weights=[df.loc[df[group] == g, "share"] for g in names], color=pal[: len(names)],
            label=names, edgecolor="white", linewidth=0.3)
    ax.set_xscale("log")
    if band is not None:
        inside = df.loc[(df["ai"] >= band[0]) & (df["ai"] < band[1]), "share"].sum()
        # outlined, not filled: a tint over the bars would change their colours against the legend
        ax.axvspan(*band, facecolor="none", edgecolor="goldenrod", hatch="//", linewidth=1.2, zorder=0,
                   label=f"{band[0]:g}-{band[1]:g} FLOP/byte: {inside:.0%} of FLOPs")
    if len(names) <= 20:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    for k, (name, r) in enumerate(ridges.items()):
        ax.axvline(r, color=CANDIDATE_COLORS[k % len(CANDIDATE_COLORS)], ls="--", lw=1.2)
        ax.text(r, ax.get_ylim()[1] * (0.95 - 0.08 * k), f" {name}: {r:.0f} FLOP/B", fontsize=8,
                color=CANDIDATE_COLORS[k % len(CANDIDATE_COLORS)])
    ax.set_xlabel("operator arithmetic intensity (FLOP/byte, compulsory DRAM bytes)")
    ax.set_ylabel("share of FLOPs (fraction; workloads at mix weight)")
    ax.set_title(title, fontsize=10)
    return _save(fig, path)


def score_heatmap(
    peak_tflops: np.ndarray, bw_tbps: np.ndarray, score: np.ndarray, area_mm2: np.ndarray,
    budget_mm2: float | None, best: tuple[float, float], base: tuple[float, float], path: Path, title: str,
    labels: tuple[str, str] | None = None, feasible: np.ndarray | None = None,
    value_label: str = "mix score (geomean speedup vs base, x)",
    budgets: dict[str, tuple[np.ndarray, float]] | None = None,
) -> Path:
    """Score over a compute x bandwidth grid (score[i, j] at bw_tbps[i], peak_tflops[j]), with the
    area-budget contour, iso-ratio lines (FLOP/byte), the best and the base designs marked, and with ``feasible``
    ([i, j] bool) the cells that break a limit (a budget, the reticle, the die edge, the package or a memory
    capacity) hatched as the sweep figure hatches them; axis ``labels`` with units (default: the first two knobs'
    labels, ``dse.hardware.fields.Knob.label``). ``score`` is the value coloured (a study passes its objective,
    ``value_label`` its label with unit); ``budgets`` adds a contour per other budget (label with unit ->
    (grid, budget value), e.g. ``{"cost budget {v:.0f} USD": (cost, 30000)}``) where it crosses the grid."""
    fig, ax = plt.subplots(figsize=(7.5, 5.5))
    PE, BE = log_edges(peak_tflops), log_edges(bw_tbps)  # the cells' edges on the log axes: hatching matches them
    mesh = ax.pcolormesh(PE, BE, score, shading="flat", cmap="viridis")
    fig.colorbar(mesh, ax=ax, label=value_label)
    lines = {"area budget {v:.0f} mm²": (area_mm2, budget_mm2), **(budgets or {})}
    for k, (fmt, (grid, limit)) in enumerate(lines.items()):
        grid = np.asarray(grid, dtype=float)
        if limit is not None and np.nanmin(grid) < limit < np.nanmax(grid):
            cs = ax.contour(peak_tflops, bw_tbps, grid, levels=[limit], colors=("w", "orange", "cyan")[k % 3],
                            linewidths=1.5)
            cs.set_gid(f"budget-{k}")
            ax.clabel(cs, fmt=lambda v, f=fmt: f.format(v=v), fontsize=7)
    P, B = np.meshgrid(peak_tflops, bw_tbps)
    ratio = P / B
    levels = [r for r in (25, 50, 100, 200, 400, 800) if ratio.min() < r < ratio.max()]
    if levels:
        cr = ax.contour(peak_tflops, bw_tbps, ratio, levels=levels, colors="0.8", linewidths=0.6,
                        linestyles=":")
        ax.clabel(cr, fmt=lambda v: f"{v:.0f} FLOP/B", fontsize=6)
    if feasible is not None and not np.all(feasible):
        hatch_cells(ax, PE, BE, ~np.asarray(feasible, dtype=bool))
        ax.add_patch(matplotlib.patches.Rectangle((np.nan, np.nan), 0, 0, facecolor="none", edgecolor="k",
                                                  hatch="//", label="infeasible (a limit broken)"))
    ax.plot(*best, marker="*", ms=16, color="red", mec="k", ls="none", label="best")
    ax.plot(*base, marker="o", ms=8, color="white", mec="k", ls="none", label="base")
    _log_axes(ax, *(labels or KNOB_LABELS))  # 1-2-5 ticks: several labels per decade
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    return _save(fig, path)


def stacked_bars(parts: dict[str, dict[str, float]], path: Path, title: str, ylabel: str) -> Path:
    """One stacked bar per item (design or workload): ``parts[item][component] = value``."""
    df = pd.DataFrame(parts).T.fillna(0.0)
    fig, ax = plt.subplots(figsize=(max(4.5, 1.3 * len(df) + 3), 4.8))
    bottom = np.zeros(len(df))
    pal = palette("tab20", len(df.columns))
    for k, comp in enumerate(df.columns):
        vals = df[comp].to_numpy()
        ax.bar(df.index, vals, bottom=bottom, color=pal[k], label=comp, edgecolor="white", linewidth=0.5)
        bottom += vals
    for i, tot in enumerate(bottom):
        ax.text(i, tot, f"{tot:.4g}", ha="center", va="bottom", fontsize=8)
    if len(bottom) and bottom.max() > 0:  # headroom for the totals, which ran into the title
        ax.set_ylim(0, bottom.max() * 1.12)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    plt.setp(ax.get_xticklabels(), rotation=20, ha="right", fontsize=8)
    return _save(fig, path)


def cost_vs_area(area_mm2: np.ndarray, die_cost: np.ndarray, yield_: np.ndarray, marks: dict[str, tuple[float, float]],
                 reticle_mm2: float, path: Path, title: str) -> Path:
    """Die cost per good die (USD, log) and yield (%) against die area (mm^2): the yield cliff."""
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    ax.plot(area_mm2, die_cost, color="C0", lw=2, label="die cost per good die")
    ax.set_yscale("log")
    ax.set_xlabel("die area (mm²)")
    ax.set_ylabel("cost per good die (USD)", color="C0")
    ax2 = ax.twinx()
    ax2.plot(area_mm2, yield_ * 100, color="C3", lw=1.2, ls="--", label="yield")
    ax2.set_ylabel("yield (%)", color="C3")
    ax2.set_ylim(0, 100)
    ax.axvline(reticle_mm2, color="k", lw=0.8, ls=":")
    ax.text(reticle_mm2, ax.get_ylim()[1], " reticle", fontsize=8, va="top")
    for k, (name, (a, c)) in enumerate(marks.items()):
        ax.plot(a, c, marker="*o^s"[k % 4], ms=10, ls="none", label=name)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    return _save(fig, path)


def pareto_chart(all_points: pd.DataFrame, front: pd.DataFrame, x: str, y: str, labels: dict[str, str],
                 path: Path, title: str, others: tuple[str, ...] = ()) -> Path:
    """All trials (feasible and not) and the Pareto front in the plane of two objectives. With more objectives
    (``others``) the front is points coloured by the third, not a line: projected onto two axes a 3-objective front
    is not a curve (joined, it zigzagged across the plane)."""
    fig, ax = plt.subplots(figsize=(7.5, 5))
    feas = all_points["feasible"]
    ax.scatter(all_points.loc[~feas, x], all_points.loc[~feas, y], s=10, color="0.75", label="infeasible")
    ax.scatter(all_points.loc[feas, x], all_points.loc[feas, y], s=12, color="C0", alpha=0.6, label="feasible")
    f = front.sort_values(x)
    if others:
        z = others[0]
        pts = ax.scatter(f[x], f[y], c=f[z], cmap="viridis", s=30, edgecolors="crimson", linewidths=0.8,
                         label=f"Pareto front ({len(f)} designs, {len(others) + 2} objectives)")
        fig.colorbar(pts, ax=ax).set_label(labels.get(z, z))
    else:
        ax.plot(f[x], f[y], "-o", color="crimson", ms=5, lw=1.5, label=f"Pareto front ({len(f)} designs)")
    ax.set_xlabel(labels.get(x, x))
    ax.set_ylabel(labels.get(y, y))
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def area_score_front(front: pd.DataFrame, marks: pd.DataFrame, path: Path, title: str) -> Path:
    """The search's area-vs-score plane (``comparison.front_table``): grid designs (grey, infeasible
    hollow), the Pareto front (line), each candidate's ratio line (its ridge across peaks) and the
    candidates themselves (stars; ``marks`` has candidate, area_mm2, score_vs_base, feasible)."""
    fig, ax = plt.subplots(figsize=(8, 5.5))
    g = front[front["line"] == ""]
    ok = g["feasible"].astype(bool)
    ax.scatter(g.loc[ok, "area_mm2"], g.loc[ok, "score"], s=10, color="0.6", alpha=0.6, label="grid design (feasible)")
    ax.scatter(g.loc[~ok, "area_mm2"], g.loc[~ok, "score"], s=10, facecolors="none", edgecolors="0.75",
               label="grid design (infeasible)")
    f = g[g["pareto"]].sort_values("area_mm2")
    ax.step(f["area_mm2"], f["score"], where="post", color="tab:green", lw=4, alpha=0.35,
            label=f"Pareto front ({len(f)} designs)")
    drawn: set[float] = set()
    for k, (_, m) in enumerate(marks.iterrows()):
        color = CANDIDATE_COLORS[k % len(CANDIDATE_COLORS)]
        ln = front[front["line"] == m["candidate"]].sort_values("area_mm2")
        ridge = round(float(ln["ridge_flop_per_byte"].iloc[0]), 3)
        if ridge not in drawn:  # candidates at one ridge share a line
            drawn.add(ridge)
            # the built ridge moves along the line (whole DRAM stacks round the bandwidth up): its span, not one end
            lo, hi = float(ln["ridge_flop_per_byte"].min()), float(ln["ridge_flop_per_byte"].max())
            span = f"{lo:.0f}" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f}"
            ax.plot(ln["area_mm2"], ln["score"], color=color, lw=1.2, ls=("-", "--", "-.", ":")[k % 4],
                    label=f"ratio line of {m['candidate']} (ridge {span} FLOP/B as built)")
        ax.scatter([m["area_mm2"]], [m["score_vs_base"]], marker="*", s=180, color=color, edgecolors="k", zorder=5,
                   label=f"{m['candidate']}" + ("" if m["feasible"] else " [infeasible]"))
    _log_axes(ax, "die area (mm²)", "mix score (x the base design)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    return _save(fig, path)


def tornado(sens: pd.DataFrame, candidate: str, first: str, objective: str, path: Path, title: str,
            top: int = 10) -> Path:
    """The inputs that move ``candidate`` vs ``first`` most (``dse.robustness`` sensitivity rows): one bar
    per input from the mean objective change with the input in its lowest quarter to that in its highest
    quarter, ordered by the first-order (variance-based) index, which labels each bar."""
    s = sens[sens["candidate"] == candidate].head(top).iloc[::-1]
    fig, ax = plt.subplots(figsize=(8, 0.42 * len(s) + 1.6))
    y = np.arange(len(s))
    lo, hi = s["change_pct_at_low_input"].to_numpy(), s["change_pct_at_high_input"].to_numpy()
    ax.barh(y, hi - lo, left=lo, color=np.where(hi >= lo, "tab:blue", "tab:orange"), alpha=0.8)
    for k, (_, r) in enumerate(s.iterrows()):
        ax.text(max(lo[k], hi[k]), k, f"  S1 {r['first_order_index']:.2f}", va="center", fontsize=7)
    ax.set_yticks(y, [f"{r['input']} ({r['input_low']:.3g}-{r['input_high']:.3g})" for _, r in s.iterrows()],
                  fontsize=7)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_xlabel(f"{objective} of {candidate} vs {first} (%): input in its lowest -> highest quarter "
                  "(blue: rises, orange: falls)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    return _save(fig, path)


def host_roofline(df: pd.DataFrame, hw, path: Path, title: str) -> Path:
    """Measured roofs of a host template, each panel operator as a dot (measured) and a ring
    (predicted) at its arithmetic intensity (compulsory bytes)."""
    fig, ax = plt.subplots(figsize=(8, 5.5))
    xs = np.logspace(-2, 3.5, 200)
    peaks = hw.compute.matrix.peak_tflops
    for k, (dt, p) in enumerate(sorted(peaks.items())):
        ax.plot(xs, np.full_like(xs, p * 1e3), color="k", lw=2 - 0.6 * k, ls="-" if k == 0 else "-.",
                label=f"BLAS GEMM peak {dt} {p * 1e3:.0f} GFLOP/s")
    vec = hw.compute.vector.peak_tflops.get("fp32")
    if vec:
        ax.plot(xs, np.full_like(xs, vec * 1e3), color="0.4", lw=1, ls=":", label=f"vector fp32 {vec * 1e3:.1f} GFLOP/s")
    top = max(peaks.values()) * 1e3
    for j, lv in enumerate(hw.memory):
        bw = lv.bandwidth_bps / 1e9
        ax.plot(xs, np.minimum(xs * bw, top), "--", color=f"C{j}", lw=1.2, label=f"{lv.name} {bw:.0f} GB/s")
    x = df["ai_flop_per_byte"]
    ax.scatter(x, df["flops"] / df["measured_s"] / 1e9, s=40, color="crimson", zorder=3, label="measured")
    ax.scatter(x, df["flops"] / df["predicted_s"] / 1e9, s=90, facecolors="none", edgecolors="navy", zorder=3,
               label="predicted")
    for _, r in df.iterrows():
        ax.annotate(r["operator"], (r["ai_flop_per_byte"], r["flops"] / r["measured_s"] / 1e9), fontsize=6,
                    xytext=(3, 3), textcoords="offset points")
    finish(ax, "arithmetic intensity (FLOP/byte, compulsory bytes)", "throughput (GFLOP/s)", title, loc="lower right")
    return _save(fig, path)


def kernels_roofline(df: pd.DataFrame, hw, peak_tflops: float, path: Path, title: str) -> Path:
    """Profiled kernels (AI per DRAM byte, achieved TFLOP/s) on a template's DRAM roofline."""
    fig, ax = plt.subplots(figsize=(7.5, 5))
    ok = df[df["status"] == "ok"]
    ai = ok["ai_flop_per_byte"].replace([np.inf, 0], np.nan).dropna()
    lo = max(float(ai.min()) / 4, 1e-3) if len(ai) else 1e-2
    hi = float(ai.max()) * 4 if len(ai) else 1e4
    xs = np.geomspace(lo, max(hi, 2 * peak_tflops * 1e12 / hw.dram.bandwidth_bps), 200)
    bw = hw.dram.bandwidth_bps
    ax.plot(xs, np.minimum(xs * bw, peak_tflops * 1e12) / 1e12, "k-", lw=2,
            label=f"{hw.name}: {peak_tflops:.0f} TFLOP/s, {bw / 1e12:.2f} TB/s")
    for k, (region, g) in enumerate(ok.groupby("region")):
        ax.scatter(g["ai_flop_per_byte"], g["achieved_tflops"], s=30, color=f"C{k}", edgecolor="k", lw=0.3, label=region)
    finish(ax, "arithmetic intensity (FLOP per DRAM byte)", "achieved (TFLOP/s)", title, fontsize=8)
    return _save(fig, path)


def ai_distribution(df: pd.DataFrame, level: str, weight: str, ridges: dict[str, float], path: Path,
                    title: str, group: str = "workload") -> Path:
    """Weighted AI histogram (stacked by ``group``) and its ECDF, with designs' ridge points."""
    ai = df[f"ai_{level}"].replace([np.inf, -np.inf], np.nan)
    d = df[ai.notna() & (df[weight] > 0)].assign(ai=ai)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [1.6, 1]})
    lo = max(float(d["ai"].min()) / 2, 1e-3) if len(d) else 0.1
    hi = max(float(d["ai"].max()) * 2, max(ridges.values(), default=1.0) * 2) if len(d) else 1e3
    bins = np.geomspace(lo, hi, 45)
    groups = list(dict.fromkeys(d[group]))
    pal = palette("tab20", max(len(groups), 1))
    ax.hist([d.loc[d[group] == g, "ai"] for g in groups], bins=bins, stacked=True,
            weights=[d.loc[d[group] == g, weight] for g in groups], color=pal[: len(groups)],
            label=groups if len(groups) <= 20 else None, edgecolor="white", linewidth=0.2)
    order = np.argsort(d["ai"].to_numpy())
    ax2.plot(d["ai"].to_numpy()[order], np.cumsum(d[weight].to_numpy()[order]) / d[weight].sum(), color="k")
    for a in (ax, ax2):
        a.set_xscale("log")
        # behind the bars and outlined: a tint on top would change the bars' colours against the legend
        a.axvspan(4, 16, facecolor="none", edgecolor="goldenrod", hatch="//", linewidth=1.0, zorder=0)
        for k, (name, r) in enumerate(ridges.items()):
            a.axvline(r, color=f"C{k + 1}", ls="--", lw=1.2, label=f"{name} ridge {r:.0f} FLOP/B" if a is ax2 else None)
        a.set_xlabel(f"arithmetic intensity at {level} (FLOP/byte)")
    what = "FLOPs" if weight == "share_flops" else "time"
    ax.set_ylabel(f"share of {what} (fraction)")
    ax2.set_ylabel(f"cumulative share of {what} (fraction)")
    ax.set_title(title, fontsize=10)
    ax2.set_title("ECDF (hatched: 4-16 FLOP/byte)", fontsize=9)
    if len(groups) <= 20:
        ax.legend(fontsize=6, ncol=2)
    ax2.legend(fontsize=7, loc="lower right")
    ax2.grid(True, which="both", alpha=0.3)
    return _save(fig, path)


def validation_scatter(cov: pd.DataFrame, metric_desc: dict[str, str], path: Path, title: str,
                       band: tuple[float, float] | None = None) -> Path:
    """Log-log predicted vs measured per metric, with y = x, the +/-10 % band and (``band``, percent) the
    p10..p90 error band of the out-of-sample rows shaded."""
    fig, ax = plt.subplots(figsize=(6.5, 6))
    for k, (metric, g) in enumerate(cov.groupby("metric")):
        ax.scatter(g["measured"], g["predicted"], s=28, color=f"C{k}", edgecolor="k", lw=0.3,
                   label=f"{metric} ({metric_desc.get(metric, metric)})")
    lo = float(min(cov["measured"].min(), cov["predicted"].min())) / 2 if len(cov) else 1e-3
    hi = float(max(cov["measured"].max(), cov["predicted"].max())) * 2 if len(cov) else 1e3
    xs = np.geomspace(lo, hi, 50)
    ax.plot(xs, xs, "k-", lw=1, label="y = x")
    if band is not None and np.all(np.isfinite(band)):
        ax.fill_between(xs, xs * (1 + band[0] / 100), xs * (1 + band[1] / 100), color="C1", alpha=0.15,
                        label=f"p10..p90 of out-of-sample errors ({band[0]:+.0f} .. {band[1]:+.0f} %)")
    ax.fill_between(xs, xs * 0.9, xs * 1.1, color="0.85", label="±10 %")
    finish(ax, "measured (metric's unit: s, TFLOP/s, token/s, sample/s or GB/s)", "predicted (same unit)", title,
           loc="upper left")
    return _save(fig, path)


#: colours of the binding ceilings in sweep heatmaps: compute red, overhead grey, memory levels from LEVEL_COLORS
BOUND_COLORS = {"compute": "#d62728", "overhead": "#7f7f7f", "array": "#ff9896"}
LEVEL_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf")


def _nearby_groups(x: np.ndarray, y: np.ndarray, tol: float) -> list[list[int]]:
    """Indices grouped so that points within ``tol`` (in the units given, e.g. decades) of a group's first
    point share it; order kept."""
    groups: list[list[int]] = []
    for k in range(len(x)):
        for g in groups:
            if abs(x[g[0]] - x[k]) < tol and abs(y[g[0]] - y[k]) < tol:
                g.append(k)
                break
        else:
            groups.append([k])
    return groups


def _log_axes(ax: plt.Axes, xlabel: str, ylabel: str) -> None:
    """Log axes with plain-number tick labels (no 4x10^0)."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def hatch_cells(ax: plt.Axes, x_edges: np.ndarray, y_edges: np.ndarray, mask: np.ndarray) -> None:
    """Hatch (``//``) every grid cell where ``mask[i, j]`` (row i along y, column j along x) holds, each cell whole
    between its edges: a contour of the mask at the cell centres (as drawn before) left the outer half of every edge
    cell and single infeasible cells unhatched, so a hatch no longer matched the ``feasible`` column."""
    import matplotlib.collections

    rects = [matplotlib.patches.Rectangle((x_edges[j], y_edges[i]), x_edges[j + 1] - x_edges[j],
                                          y_edges[i + 1] - y_edges[i]) for i, j in zip(*np.nonzero(mask), strict=True)]
    coll = matplotlib.collections.PatchCollection(rects, facecolor="none", edgecolor="k", linewidth=0.0, hatch="//")
    coll.set_gid("infeasible-cells")
    ax.add_collection(coll)


def log_edges(values: np.ndarray) -> np.ndarray:
    """[n + 1] cell edges of ``n`` grid values on a log axis: geometric midpoints, the outer cells as wide as their
    neighbours; one value gets a cell of x/1.25 .. x*1.25 (matplotlib's ``shading='nearest'`` draws a grid that has
    a single value along an axis, a knob not searched, as nothing)."""
    v = np.log(np.asarray(values, dtype=float))
    if v.size == 1:
        return np.exp(v[0] + np.log(1.25) * np.array([-1.0, 1.0]))
    mid = (v[1:] + v[:-1]) / 2
    return np.exp(np.concatenate([[2 * v[0] - mid[0]], mid, [2 * v[-1] - mid[-1]]]))


def sweep_heatmaps(rows: dict[str, pd.DataFrame], axes: dict, budget_mm2: float | None, best: dict[str, pd.Series],
                   base: tuple[float, float], path: Path, title: str, sram_mib: float | None = None,
                   base_sram_mib: float | None = None, show_base: bool = True,
                   axis_labels: tuple[str, str] | None = None, budgets: dict[str, float | None] | None = None) -> Path:
    """A 2 x 2 block of panels per mix over compute x bandwidth (one SRAM size, readable on a slide):
    mix score, score per mm², die area (iso-area lines) and the binding ceiling (categorical); iso-ratio
    lines (FLOP/byte) and the area-budget line on every panel, infeasible cells hatched. The mix's best
    feasible design is starred only on the panel of its own SRAM size (``sram_mib``), the base design
    circled on the panel nearest its SRAM (``show_base``). ``rows[mix]`` holds that mix's grid rows in
    (compute, bandwidth) meshgrid order. ``budgets`` (``power_w``, ``cost_usd`` -> the config's budget or None) adds
    each budget's line (orange: power, cyan: cost) where it crosses the grid, as the study's heatmap draws them."""
    P, B = axes["peak_tflops"], axes["dram_bandwidth_tbps"]
    others = {k: v for k, v in (budgets or {}).items() if v is not None}
    other_style = {"power_w": ("orange", "power budget {v:.0f} W"), "cost_usd": ("cyan", "cost budget {v:.0f} USD")}
    PE, BE = log_edges(P), log_edges(B)  # cell edges: a knob not searched (one value) still draws its row of cells
    shape = (len(P), len(B))
    mixes = list(rows)
    labels = sorted(set().union(*(set(g["binding"]) for g in rows.values())),
                    key=lambda b: (b == "overhead", b not in ("compute", "array"), b))
    colors = [BOUND_COLORS.get(b, LEVEL_COLORS[k % len(LEVEL_COLORS)]) for k, b in enumerate(labels)]
    cmap_b = matplotlib.colors.ListedColormap(colors)
    height = 9.0 * len(mixes) + 0.8
    fig, grid_axs = plt.subplots(2 * len(mixes), 2, figsize=(14, height), squeeze=False)
    fig.subplots_adjust(wspace=0.35, hspace=0.38, top=1 - 0.8 / height, bottom=0.45 / height)
    axs = grid_axs.reshape(len(mixes), 4)  # per mix: score, score/mm2 | area, binding
    R = P[None, :] / B[:, None]
    ratio_levels = [r for r in (12.5, 25, 50, 100, 200, 400, 800, 1600) if R.min() < r < R.max()]
    contours = min(shape) >= 2  # contour lines need a 2-D grid (a knob not searched gives one column)
    for row, mix in zip(axs, mixes, strict=True):
        g = rows[mix]
        feas = g["feasible"].to_numpy().reshape(shape).T  # rows: bandwidth, columns: compute
        area = g["area_mm2"].to_numpy().reshape(shape).T
        for ax, col in zip(row, ("score", "score_per_mm2", "area_mm2", "binding"), strict=True):
            if col == "binding":
                code = g["binding"].map({b: k for k, b in enumerate(labels)}).to_numpy().reshape(shape).T
                ax.pcolormesh(PE, BE, code, shading="flat", cmap=cmap_b, vmin=-0.5, vmax=len(labels) - 0.5)
                handles = [matplotlib.patches.Patch(color=c, label=b) for b, c in zip(labels, colors, strict=True)]
                ax.legend(handles=handles, fontsize=7, loc="upper left", title="largest share", title_fontsize=7)
                heading = "binding ceiling (its share of each workload's time, averaged with the score's weights)"
            else:
                label, cmap = {"score": ("mix score (x vs base)", "viridis"),
                               "score_per_mm2": ("score per mm² (x vs base)", "magma"),
                               "area_mm2": ("die area (mm²)", "cividis")}[col]
                z = g[col].to_numpy().reshape(shape).T
                mesh = ax.pcolormesh(PE, BE, z, shading="flat", cmap=cmap)
                fig.colorbar(mesh, ax=ax, label=label)
                heading = label
            if col == "area_mm2" and contours:
                lv = matplotlib.ticker.MaxNLocator(6).tick_values(area.min(), area.max())
                lv = [v for v in lv if area.min() < v < area.max()]
                if lv:
                    ca = ax.contour(P, B, area, levels=lv, colors="w", linewidths=0.7, linestyles="-")
                    ax.clabel(ca, fmt=lambda v: f"{v:.0f} mm²", fontsize=6)
            if (~feas).any():
                hatch_cells(ax, PE, BE, ~feas)
            if budget_mm2 is not None and area.min() < budget_mm2 < area.max() and contours:
                ax.contour(P, B, area, levels=[budget_mm2], colors="w", linewidths=2.0)
            for key, limit in others.items():  # the other budgets the config sets
                z_b = g[key].to_numpy(dtype=float).reshape(shape).T
                if contours and np.nanmin(z_b) < limit < np.nanmax(z_b):
                    color, fmt = other_style[key]
                    cs = ax.contour(P, B, z_b, levels=[limit], colors=color, linewidths=1.6)
                    cs.set_gid(f"budget-{key}")
                    ax.clabel(cs, fmt=lambda v, f=fmt: f.format(v=v), fontsize=6)
            if ratio_levels and contours:
                cr = ax.contour(P, B, R, levels=ratio_levels, colors="0.85", linewidths=0.6, linestyles=":")
                ax.clabel(cr, fmt=lambda v: f"{v:g} FLOP/B", fontsize=6)
            b = best[mix]
            if sram_mib is None or np.isclose(b["sram_mib"], sram_mib):
                # starred in its grid cell (the values asked); the design built there has whole stacks and cores,
                # which the summary gives, so the label says both where they differ
                built = b.get("dram_bandwidth_tbps_built")
                asked = float(b["dram_bandwidth_tbps"])
                note = (f" (cell asked {asked:.3g} TB/s, built {float(built):.3g})"
                        if built is not None and np.isfinite(built) and not np.isclose(built, asked, rtol=0.01) else "")
                ax.plot(b["peak_tflops"], b["dram_bandwidth_tbps"], marker="*", ms=15, color="red", mec="k",
                        ls="none", label=f"best feasible{note}")
            if show_base:
                at = "" if base_sram_mib is None or sram_mib is None or np.isclose(base_sram_mib, sram_mib) else \
                    f" (its SRAM: {base_sram_mib:.0f} MiB)"
                ax.plot(*base, marker="o", ms=7, color="white", mec="k", ls="none", label=f"base{at}")
            _log_axes(ax, *(axis_labels or KNOB_LABELS))  # a chip without DRAM: its main memory's bandwidth
            mix_label = "" if len(mixes) == 1 else f"mix {mix}: "
            ax.set_title(f"{mix_label}{heading}", fontsize=9)
    handles, names = axs[0, 0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, names, loc="upper right", fontsize=9, ncol=2)
    extra = f"; white line: area budget {budget_mm2:.0f} mm²" if budget_mm2 else ""
    extra += "".join(f"; {other_style[k][0]} line: {other_style[k][1].format(v=v)}" for k, v in others.items())
    where = "" if sram_mib is None or all(np.isclose(best[m]["sram_mib"], sram_mib) for m in mixes) else \
        "; the best design is on another SRAM panel"
    fig.suptitle(f"{title}\nhatched: infeasible (a budget, the reticle, the die edge or the package); dotted: "
                 f"iso-ratio{extra}; star: best feasible{where}", fontsize=10)
    return _save(fig, path)


def speedup_bars(table: pd.DataFrame, names: list[str], path: Path, title: str, max_bars: int = 30) -> Path:
    """Per-workload speedup of each candidate over the first (1.0 line): bars per workload, or for more
    than ``max_bars`` workloads one dot per workload in a row per family (``family`` column), each
    candidate offset vertically, the family median marked."""
    cols = [c for c in table.columns if c.startswith("speedup_")]
    labels = [c.removeprefix("speedup_").replace("_vs_", " vs ") for c in cols]
    if len(table) > max_bars and "family" in table.columns:
        fams = sorted(dict.fromkeys(table["family"]))
        fig, ax = plt.subplots(figsize=(9, 0.45 * len(fams) * max(len(cols), 1) + 1.8))
        step = 0.8 / max(len(cols), 1)
        rng = np.random.default_rng(0)
        for k, (c, lab) in enumerate(zip(cols, labels, strict=True)):
            color = CANDIDATE_COLORS[(k + 1) % len(CANDIDATE_COLORS)]
            for i, f in enumerate(fams):
                v = table.loc[table["family"] == f, c].to_numpy(dtype=float)
                y = i + (k - (len(cols) - 1) / 2) * step + rng.uniform(-0.12, 0.12, v.size) * step
                ax.scatter(v, y, s=14, color=color, alpha=0.6, label=lab if i == 0 else None)
                ax.plot([np.median(v)] * 2, [y.mean() - 0.4 * step, y.mean() + 0.4 * step], color=color, lw=2.5)
        ax.axvline(1.0, color="k", lw=0.8)
        ax.set_yticks(range(len(fams)), [f"{f} ({int((table['family'] == f).sum())})" for f in fams], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(f"speedup over {names[0]} (x); bar: family median")
        ax.set_ylabel("model family (workloads)")
        ax.grid(True, axis="x", alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
        ax.set_title(title, fontsize=10)
        return _save(fig, path)
    fig, ax = plt.subplots(figsize=(max(7, 0.5 * len(table) + 3), 4.8))
    x = np.arange(len(table))
    w = 0.8 / max(len(cols), 1)
    for c, lab in zip(cols, labels, strict=True):
        ax.bar(x + cols.index(c) * w, table[c], width=w, label=lab)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(x + w * (len(cols) - 1) / 2, table["workload"], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel(f"speedup over {names[0]} (x)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return _save(fig, path)


def rooflines(designs: list, names: list[str], ops: pd.DataFrame, path: Path, title: str,
              array_fills: list[float] | None = None) -> Path:
    """Several candidates' DRAM and compute roofs on one chart, with the mix's operators at the first candidate's
    achieved TFLOP/s (``achieved_flops``: its predicted time, not its roof). One intensity throughout: FLOP per
    compulsory byte (each operand read and each result written once: the chip-independent AI), stated on the
    axis. With ``array_fills`` (per candidate, the FLOP-weighted fill of its array-bound ops, nan without any)
    each candidate's lowered roof ``min(AI x BW, peak x fill)`` is drawn dotted; with a ``bound`` column (the
    first candidate's) its array-bound operators are drawn in orange."""
    fig, ax = plt.subplots(figsize=(8, 5.5))
    xs = np.logspace(-2, 4, 200)
    for k, (d, n) in enumerate(zip(designs, names, strict=True)):
        dt, peak = next(iter(matrix_dtype_peaks(ops, d).items()))  # at the mix's FLOP-heaviest matrix dtype
        bw = d.dram_bandwidth[0]
        color = CANDIDATE_COLORS[k % len(CANDIDATE_COLORS)]
        ax.plot(xs, np.minimum(xs * bw, peak) / TERA, color=color, lw=2, ls=("-", "--", "-.", ":")[k % 4],
                label=f"{n}: {peak / TERA:.0f} TFLOP/s ({dt}), {bw / TERA:.2f} TB/s, ridge {peak / bw:.0f} FLOP/B")
        f = array_fills[k] if array_fills is not None else float("nan")
        if np.isfinite(f):
            ax.plot(xs, np.minimum(xs * bw, peak * f) / TERA, color=color, lw=1, ls=":",
                    label=f"{n}: array roof at fill {f:.2f} ({peak * f / TERA:.0f} TFLOP/s)")
    o = ops[(ops["flops"] > 0) & (ops["bytes_read"] + ops["bytes_written"] > 0)]
    ai = o["flops"] / (o["bytes_read"] + o["bytes_written"])
    y = o["achieved_flops"].to_numpy(dtype=float) / TERA
    arr = (o["bound"] == "array").to_numpy() if "bound" in o else np.zeros(len(o), dtype=bool)
    ax.scatter(ai[~arr], y[~arr], s=8, color="0.3", alpha=0.5,
               label=f"mix operators at {names[0]}'s predicted TFLOP/s")
    if arr.any():
        ax.scatter(ai[arr], y[arr], s=10, color="darkorange", alpha=0.7,
                   label=f"{names[0]}'s array-bound operators ({arr.sum()})")
    finish(ax, "arithmetic intensity (FLOP per compulsory byte: each operand and result once)",
           "achieved throughput (TFLOP/s)", title, loc="lower right")
    return _save(fig, path)


def whatif_roofline(table: pd.DataFrame, design: DesignBatch, path: Path, title: str) -> Path:
    """What-if stages on the design's roofline: matrix peak at each dtype the stages use, the DRAM roof,
    one point per stage at (AI at DRAM, achieved TFLOP/s) and an arrow from each stage to the next
    (``gid`` ``whatif-arrow-K`` in the SVG). A stage with no DRAM traffic (every tensor on chip: AI infinite) is
    drawn at the plot's right edge as a right-pointing marker, its label saying so (an infinite coordinate made the
    arrow to it raise inside matplotlib)."""
    from dse.units import DTYPE_INDEX

    fig, ax = plt.subplots(figsize=(8.5, 5.5))
    ai = table["ai_flop_per_byte"].to_numpy(dtype=float)
    y = table["achieved_tflops"].to_numpy(dtype=float)
    bw = float(design.dram_bandwidth[0])
    peaks = {dt: float(design.matrix_peak[0, DTYPE_INDEX[dt]]) for dt in dict.fromkeys(table["dtype"])}
    peaks = {dt: p for dt, p in peaks.items() if np.isfinite(p)}
    top = max(peaks.values(), default=float(design.peak_flops[0]))
    finite = ai[np.isfinite(ai)]
    lo = max(float(finite.min()) / 4, 1e-3) if finite.size else 1e-2
    hi = max(float(finite.max()) if finite.size else 1.0, top / bw) * 4
    xs = np.geomspace(lo, hi, 200)
    on_chip = ~np.isfinite(ai)
    ai = np.where(on_chip, hi, ai)  # no DRAM traffic: at the right edge
    for k, (dt, p) in enumerate(peaks.items()):
        ax.plot(xs, np.minimum(xs * bw, p) / TERA, color=("k", "0.45")[min(k, 1)], lw=2 - 0.5 * min(k, 1),
                ls=("-", "--", "-.", ":")[k % 4],
                label=f"roof at {dt}: {p / TERA:.0f} TFLOP/s, {design.offchip_name} {bw / TERA:.2f} TB/s")
    pal = palette("viridis", len(table))
    for k in range(len(table)):
        ax.scatter(ai[k], y[k], s=70, color=pal[k], edgecolor="k", zorder=4, marker=">" if on_chip[k] else "o",
                   label=f"{k}: {table['transform'].iloc[k]} ({table['time_ms'].iloc[k]:.3g} ms, "
                         f"{table['binding'].iloc[k]}-bound" + ("; no DRAM traffic, drawn at the right edge)"
                                                                  if on_chip[k] else ")"))
    for members in _nearby_groups(np.log10(np.asarray(ai, float)), np.log10(np.asarray(y, float)), 0.03):
        k = members[0]  # stages that land on (nearly) the same point share one label, "1, 2"
        ax.annotate(", ".join(str(m) for m in members), (ai[k], y[k]), xytext=(9, -14), textcoords="offset points",
                    zorder=6,
                    fontsize=8, bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "0.7", "alpha": 0.85})
    for k in range(1, len(table)):
        a = ax.annotate("", xy=(ai[k], y[k]), xytext=(ai[k - 1], y[k - 1]),
                        arrowprops={"arrowstyle": "-|>", "color": "crimson", "lw": 1.4, "shrinkA": 4, "shrinkB": 4})
        a.arrow_patch.set_gid(f"whatif-arrow-{k}")
    _log_axes(ax, f"arithmetic intensity (FLOP per byte of {design.offchip_name} traffic)",
              "achieved throughput (TFLOP/s)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, path)


def sensitivity_chart(curves: dict[str, pd.DataFrame], best: dict[str, tuple[float, float]], base_ridge: float,
                      path: Path, title: str) -> Path:
    """Best feasible mix score per ridge point, one line per mix (star: the search optimum), base ridge dotted."""
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
