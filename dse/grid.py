"""Full-grid sweeps over the knobs of a study's search space, evaluated vectorized in chunks.

``dse sweep CONFIG --points N`` takes each searched knob's range (log-spaced, ``N`` points; SRAM with
``--sram-points``) and scores every combination with the same evaluator as the search (score, area,
cost, power, constraints), ``chunk`` designs at a time so memory stays bounded; the grid is refused
above ``MAX_DESIGNS`` rows (designs x mixes) with its size in the message. A config with ``mixes:``
is swept once per mix (each mix scored against the base on that mix); the grid gets a ``mix`` column.

Every grid row also carries its binding ceiling (:func:`binding_ceiling`): the ceiling (compute, a
memory level, launch overhead) under which the mix spends the largest share of its time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dse._version import __version__
from dse.config import StudyConfig
from dse.cost.area import dram_stacks
from dse.document import Document, Figure, Table
from dse.errors import DseError
from dse.hardware.designs import DesignBatch
from dse.hardware.fields import KNOB, bandwidth_label, built_values
from dse.hardware.fields import KNOBS as KNOBS  # the knob table's names, in grid order
from dse.predict import bound_names, mix_times_bounds
from dse.score import objective_value
from dse.search.optimize import tie_key
from dse.search.space import base_knobs, designs_from_params
from dse.study import Context, clean_stale_temps, score_designs
from dse.yamlio import atomic_write, make_dir

MAX_DESIGNS = 5_000_000
#: a single-mix config's label in the ``mix`` column
ONE_MIX = "workloads"


@dataclass(frozen=True)
class SweepResult:
    grid: pd.DataFrame  # one row per (mix, design): knobs, score, area, cost, power, ridge, feasible, binding
    axes: dict[str, np.ndarray]
    ctxs: dict[str, Context]  # mix label -> its context (one entry, ONE_MIX, for a config with workloads:)

    @property
    def mixes(self) -> list[str]:
        return list(self.ctxs)


def contexts(config: str | Path) -> tuple[StudyConfig, dict[str, Context]]:
    """The config and a prepared context per mix (one, ``ONE_MIX``, for a config without ``mixes:``)."""
    from dse.config import load_study
    from dse.study import load_context

    cfg, _ = load_study(config)
    if cfg.mixes is None:
        return cfg, {ONE_MIX: load_context(config)[1]}
    return cfg, {m: load_context(config, mix=m)[1] for m in cfg.mix_names}


def axes_for(cfg: StudyConfig, ctx: Context, points: int, sram_points: int,
             limit: int | None = MAX_DESIGNS) -> dict[str, np.ndarray]:
    """Grid values per knob: the search space's ranges, or the base value when a knob is not searched.
    ``limit`` (designs) applies to an in-memory grid; a streamed sweep (:func:`stream_sweep`) passes None."""
    kb = base_knobs(ctx.base)
    space = cfg.search.space
    given = {"split": "a split" if space.split is not None else "",
             "params": ", ".join(p.field for p in space.params or ())}
    for what, got in given.items():
        if got:  # a grid over the three knobs only: these were dropped without a word (one design, the base)
            raise DseError(f"got {got}; accepted: a space of peak_tflops, dram_bandwidth_tbps and sram_mib only (dse "
                           "sweep grids those three; dse run searches params and a split)", field=f"search.space.{what}")
    for flag, n in (("points", points), ("sram_points", sram_points)):
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:  # 2.5 raised a TypeError in numpy
            raise DseError(f"got {n!r}; accepted: a positive integer", field=flag)
    if limit is not None and points * points * sram_points > limit:
        raise DseError(f"got {points} x {points} x {sram_points} = {points * points * sram_points:,} designs; "
                       f"accepted: at most {limit:,} (fewer --points), or --format parquet (streamed, any size)",
                       field="--points")
    out = {}
    for knob, n in (("peak_tflops", points), ("dram_bandwidth_tbps", points), ("sram_mib", sram_points)):
        r = getattr(cfg.search.space, knob)
        out[knob] = (np.geomspace(r.low, r.high, n) if r.log else np.linspace(r.low, r.high, n)) if r else \
            np.array([kb[knob]])
    return out


def binding_ceiling(ctx: Context, designs: DesignBatch, member: np.ndarray | None = None,
                    budget: int | None = None, by: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """[D] binding ceiling of the mix on each design (code into ``dse.predict.bound_names``) and its share.

    Per workload ``w``, ``share_b,w = sum of op time bound by b / workload time`` (op times x counts,
    bounds as :func:`dse.predict.evaluate` gives them); the mix share is ``sum_w weight_w * share_b,w``
    (the weights of the score, as each workload's speedup counts in it: not the mix's summed time, where the longest
    workload would decide) and the binding ceiling is the ceiling with the largest mix share. ``by`` [D, W, B] from
    :func:`dse.predict.mix_times_bounds` (computed here when not given; ``member`` and ``budget`` are accepted for the
    old call form and unused)."""
    if by is None:
        by = mix_times_bounds(designs, ctx.mix, arrays=ctx.arrays)[1]
    total = by.sum(axis=2, keepdims=True)
    mix_share = np.einsum("dwb,w->db", by / total, ctx.mix.weights)
    return mix_share.argmax(axis=1), mix_share.max(axis=1)


def score_chunk(ctx: Context, params: dict[str, np.ndarray]) -> pd.DataFrame:
    """The grid rows of one chunk of designs (knob columns ``params``): one lean pass gives the times and the
    binding ceilings, the search's scorer the rest."""
    names = np.array(bound_names(ctx.base.level_names))
    d = designs_from_params(ctx.base, params)
    times, by = mix_times_bounds(d, ctx.mix, arrays=ctx.arrays)  # one pass: times and binding ceilings
    sc, _ = score_designs(ctx, d, times=times)
    code, share = binding_ceiling(ctx, d, by=by)
    return pd.DataFrame({**params, "score": sc.score, "objective": sc.objective, "area_mm2": sc.area_mm2,
                         "cost_usd": sc.cost_usd, "power_w": sc.power_w, "ridge_flop_per_byte": d.ridge,
                         **built_values(d), "dram_stacks": dram_stacks(d),
                         "binding": names[code], "binding_time_share": share,
                         "feasible": sc.feasible, "infeasible_reason": sc.reason,
                         "score_per_mm2": objective_value("score_per_mm2", sc.score, {"area_mm2": sc.area_mm2},
                                                          {"area_mm2": ctx.base_area_mm2})})


def _sweep_one(ctx: Context, flat: dict[str, np.ndarray], chunk: int) -> pd.DataFrame:
    n = len(flat["peak_tflops"])
    parts = [score_chunk(ctx, {k: v[s : s + chunk] for k, v in flat.items()}) for s in range(0, n, chunk)]
    return pd.concat(parts, ignore_index=True)


# ------------------------------------------------------------------------------ streamed sweeps (Parquet, dask)
#: designs per Parquet part file (one dask task); each is written chunk by chunk, so memory follows ``chunk``
BLOCK = 1 << 22


def grid_size(axes: dict[str, np.ndarray]) -> int:
    return int(np.prod([len(axes[k]) for k in KNOBS]))


def block_params(axes: dict[str, np.ndarray], start: int, stop: int) -> dict[str, np.ndarray]:
    """Knob values of grid rows ``start:stop`` rebuilt from their indices (row-major over peak, bandwidth,
    SRAM, as ``np.meshgrid(..., indexing="ij").ravel()`` orders them): no block needs the whole grid."""
    i = np.arange(start, stop, dtype=np.int64)
    nb, ns = len(axes["dram_bandwidth_tbps"]), len(axes["sram_mib"])
    ip, rest = np.divmod(i, nb * ns)
    ib, is_ = np.divmod(rest, ns)
    return {"peak_tflops": np.asarray(axes["peak_tflops"], float)[ip],
            "dram_bandwidth_tbps": np.asarray(axes["dram_bandwidth_tbps"], float)[ib],
            "sram_mib": np.asarray(axes["sram_mib"], float)[is_]}


def need(module: str, feature: str):  # noqa: ANN201 - returns the module
    """Import an optional dependency of the ``scale`` extra, or one line naming the extra."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise DseError(f"{feature} needs {module.split('.')[0]}, which is not installed; accepted: "
                       "pip install -e '.[scale]' (pyarrow, dask[distributed])", field="--engine") from None


def sweep_block(ctxs: dict[str, Context], axes: dict[str, np.ndarray], start: int, stop: int, chunk: int,
                folder: str, part: int) -> dict:
    """Score grid rows ``start:stop`` of every mix, chunk by chunk, into ``folder/part-NNNNNN.parquet``
    (one row group per chunk; written under a temporary name, renamed when complete, so a part file that
    exists is whole). Returns a small summary: rows, and per mix the best feasible row, feasible count and
    binding-ceiling counts. A block whose part file is already there (``--resume``) is summarized from it."""
    pa = need("pyarrow", "a streamed sweep")
    pq = need("pyarrow.parquet", "a streamed sweep")
    path = Path(folder) / part_name(part)
    summary: dict = {"rows": 0, "mixes": {}}
    if path.is_file():
        return part_summary(path)

    def write(tmp: Path) -> None:
        writer = None
        try:
            for s in range(start, stop, chunk):
                params = block_params(axes, s, min(s + chunk, stop))
                for m, ctx in ctxs.items():
                    df = score_chunk(ctx, params)
                    df.insert(0, "mix", m)
                    table = pa.Table.from_pandas(df, preserve_index=False)
                    writer = writer or pq.ParquetWriter(tmp, table.schema, compression="zstd")
                    writer.write_table(table)
                    summary["rows"] += len(df)
                    _merge_summary(summary["mixes"].setdefault(m, _empty()), df)
        finally:
            if writer is not None:
                writer.close()

    atomic_write(path, write)
    return summary


def part_name(part: int) -> str:
    """The file name of block ``part`` of a streamed sweep."""
    return f"part-{part:06d}.parquet"


def _empty() -> dict:
    return {"best": None, "feasible": 0, "binding": {}}


def part_summary(path: Path) -> dict:
    """The summary :func:`sweep_block` returns, read back from a part file it wrote."""
    pq = need("pyarrow.parquet", "a streamed sweep")
    df = pq.read_table(path).to_pandas()
    summary: dict = {"rows": len(df), "mixes": {}}
    for m, g in df.groupby("mix", sort=False):
        _merge_summary(summary["mixes"].setdefault(str(m), _empty()), g)
    return summary


def _merge_summary(acc: dict, df: pd.DataFrame) -> None:
    ok = df[df["feasible"]]
    acc["feasible"] += len(ok)
    for k, v in df["binding"].value_counts().items():
        acc["binding"][k] = acc["binding"].get(k, 0) + int(v)
    if len(ok):
        row = ok.loc[best_index(ok, "score")]
        if acc["best"] is None or _better(row, acc["best"]):
            acc["best"] = row.to_dict()


def _reduce(summaries: list[dict]) -> dict:
    out: dict = {"rows": 0, "mixes": {}}
    for s in summaries:
        out["rows"] += s["rows"]
        for m, acc in s["mixes"].items():
            o = out["mixes"].setdefault(m, _empty())
            o["feasible"] += acc["feasible"]
            for k, v in acc["binding"].items():
                o["binding"][k] = o["binding"].get(k, 0) + v
            if acc["best"] is not None and (o["best"] is None or _better(acc["best"], o["best"])):
                o["best"] = acc["best"]
    return out


def stream_sweep(ctxs: dict[str, Context], axes: dict[str, np.ndarray], folder: Path, chunk: int = 65536,
                 engine: str = "local", scheduler: str | None = None, workers: int | None = None,
                 block: int = BLOCK, progress: bool = False) -> dict:
    """Score the whole grid of every mix into the Parquet dataset ``folder`` (``part-*.parquet``, one per
    block of ``block`` designs, columns as ``sweep.csv`` plus ``mix``), memory bounded by ``chunk`` per
    worker whatever the grid size. ``engine="dask"`` spreads the blocks over a dask.distributed cluster:
    ``scheduler`` (an address such as ``tcp://host:8786``) or a LocalCluster of ``workers`` single-threaded
    processes (default: the local cores). Each block rebuilds its designs from grid indices; only the
    per-block summaries travel back. Returns the reduced summary (rows; per mix best feasible row,
    feasible count, binding-ceiling counts)."""
    if chunk < 1 or block < 1:
        raise DseError(f"got chunk {chunk}, block {block}; accepted: positive integers", field="--chunk")
    need("pyarrow", "a streamed sweep")
    make_dir(folder)
    clean_stale_temps(folder)  # a block cut off mid-write (kill, full disk) is scored again
    n = grid_size(axes)
    blocks = [(k, s, min(s + block, n)) for k, s in enumerate(range(0, n, block))]
    kept = sum((folder / part_name(k)).is_file() for k, _, _ in blocks)  # whole blocks from before (--resume)
    done = {"blocks": len(blocks), "blocks_kept": kept}
    if engine == "local":
        return _reduce([sweep_block(ctxs, axes, s, e, chunk, str(folder), k) for k, s, e in blocks]) | done
    if engine != "dask":
        raise DseError(f"got {engine!r}; accepted: local, dask", field="--engine")
    distributed = need("distributed", "--engine dask")
    import os

    cluster = None
    if scheduler is None:
        cluster = distributed.LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                           processes=True, dashboard_address=None)
    try:
        client_cm = _client(distributed, scheduler, cluster)
        with client_cm as client:
            shared = client.scatter(ctxs, broadcast=True)
            futures = [client.submit(sweep_block, shared, axes, s, e, chunk, str(folder), k, pure=False)
                       for k, s, e in blocks]
            summaries = []
            for fut in distributed.as_completed(futures):
                summaries.append(fut.result())
                fut.release()
                if progress:
                    print(f"  {len(summaries)}/{len(blocks)} blocks", flush=True)
            return _reduce(summaries) | done
    finally:
        if cluster is not None:
            cluster.close()


def _client(distributed, scheduler: str | None, cluster):  # noqa: ANN001, ANN202 - dask types, optional extra
    """A dask Client of ``scheduler`` (an address) or ``cluster``: an address that names no scheduler, or one that
    does not answer within dask's connect timeout, is one line naming ``--scheduler`` (it was a traceback)."""
    if scheduler is None:
        return distributed.Client(cluster)
    try:
        return distributed.Client(scheduler)
    except (OSError, ValueError, TimeoutError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DseError(f"got {scheduler!r} ({reason}); accepted: the address of a running dask scheduler, e.g. "
                       "tcp://HOST:8786, or no --scheduler (a local cluster)", field="--scheduler") from None


#: the file in a streamed sweep's folder that records what defines it (``--resume`` compares it)
SWEEP_META = "sweep.json"


def sweep_meta(config: str | Path, cfg: StudyConfig, ctx: Context, axes: dict[str, np.ndarray],
               block: int = BLOCK) -> dict:
    """What defines a streamed sweep, so ``dse sweep --resume`` continues only the same one: the study's
    config hash (:func:`dse.study.study_meta`), the sha256 of every input file (:func:`dse.inputs.snapshot`)
    and a hash of the grid (its axes and block size, so every part file holds the same designs)."""
    import hashlib
    import json

    from dse.inputs import snapshot
    from dse.study import study_meta

    snap = snapshot(config, ctx.base_hw.process_node)
    inputs: dict = {"dse_version": __version__}
    inputs.update({f.label: {"file": str(f.file), "sha256": f.sha256} for f in snap.files if f.search})
    grid_text = json.dumps({"axes": {k: np.asarray(v).tolist() for k, v in axes.items()}, "block": block},
                           sort_keys=True)
    return {"config_sha256": study_meta(cfg)["config_sha256"], "inputs": inputs,
            "grid_sha256": hashlib.sha256(grid_text.encode()).hexdigest(), "designs": grid_size(axes), "block": block}


def check_sweep_resume(old: dict, new: dict, file: str) -> None:
    """Refuse ``--resume`` of a sweep whose config, input files or grid changed since it began (one line)."""
    from dse.search.optimize import changed_input

    accepted = "accepted: the unchanged config and --points/--sram-points, or a new sweep without --resume"
    if old.get("grid_sha256") != new["grid_sha256"]:
        if "block" in old and old["block"] != new["block"]:  # every part file holds one block: the split must hold
            raise DseError(f"the block size changed since the sweep began ({old['block']:,} -> {new['block']:,} "
                           f"designs per part file); accepted: the sweep's --block, or a new sweep without --resume",
                           file=file, field="--block")
        what = (f"{old.get('designs'):,} -> {new['designs']:,} designs" if old.get("designs") != new["designs"]
                else f"the same {new['designs']:,} designs over other ranges")
        raise DseError(f"the grid changed since the sweep began ({what}); {accepted}", file=file, field="--points")
    if old.get("config_sha256") != new["config_sha256"]:
        raise DseError(f"the workloads, base or search space changed since the sweep began; {accepted}", file=file)
    changed = changed_input(old.get("inputs"), new["inputs"], what="sweep")
    if changed is not None:
        raise DseError(changed[1], file=file, field=changed[0])


def run_sweep(ctx: Context | dict[str, Context], axes: dict[str, np.ndarray], chunk: int = 4096) -> SweepResult:
    """Score every grid point of every mix (``chunk`` designs per vectorized call)."""
    ctxs = ctx if isinstance(ctx, dict) else {ONE_MIX: ctx}
    per_mix = len(axes["peak_tflops"]) * len(axes["dram_bandwidth_tbps"]) * len(axes["sram_mib"])
    n = per_mix * len(ctxs)  # counted before anything is allocated
    if n > MAX_DESIGNS:
        raise DseError(f"the grid has {n:,} designs ({per_mix:,} per mix x {len(ctxs)} mix(es)); accepted: at most "
                       f"{MAX_DESIGNS:,} (fewer --points)", field="--points")
    P, B, S = np.meshgrid(axes["peak_tflops"], axes["dram_bandwidth_tbps"], axes["sram_mib"], indexing="ij")
    if chunk < 1:
        raise DseError(f"got {chunk}; accepted: a positive integer", field="--chunk")
    flat = {"peak_tflops": P.ravel(), "dram_bandwidth_tbps": B.ravel(), "sram_mib": S.ravel()}
    grids = [_sweep_one(c, flat, chunk).assign(mix=m) for m, c in ctxs.items()]
    grid = pd.concat(grids, ignore_index=True)
    grid = grid[["mix", *[c for c in grid.columns if c != "mix"]]]
    return SweepResult(grid, axes, ctxs)


def best_row(res: SweepResult, column: str = "score", mix: str | None = None) -> pd.Series:
    """The feasible row with the highest ``column`` (of one mix, or the first mix)."""
    g = res.grid[res.grid["mix"] == (mix or res.mixes[0])]
    ok = g[g["feasible"]]
    if ok.empty:
        raise DseError(f"no feasible design in the grid of mix {mix or res.mixes[0]!r} ({infeasible_kinds(g)}); "
                       "accepted: larger budgets or other ranges")
    return ok.loc[best_index(ok, column)]


def infeasible_kinds(g: pd.DataFrame) -> str:
    """What the infeasible rows of ``g`` break, most often first: ``limit points`` per kind (the first word of each
    ``;``-separated clause of ``infeasible_reason``; ``reticle`` for the reticle limit), then the last row's clause
    of the most common kind as an example, e.g. ``capacity 9, reticle 3 points; e.g. capacity: ... > 1.1 GB global``."""
    counts: dict[str, int] = {}
    example: dict[str, str] = {}
    for reason in g["infeasible_reason"].fillna("").astype(str):
        for clause in filter(None, (c.strip() for c in reason.split(";"))):
            kind = "reticle" if "reticle limit" in clause else clause.split()[0].rstrip(":")
            counts[kind] = counts.get(kind, 0) + 1
            example[kind] = clause
    if not counts:
        return "no reason recorded"
    order = sorted(counts, key=lambda k: -counts[k])
    return ", ".join(f"{k} {counts[k]}" for k in order) + f" points; e.g. {example[order[0]]}"


def best_index(df: pd.DataFrame, column: str) -> object:
    """Index of the row with the highest ``column``; on equal values the smaller die, then the cheaper one (many grid
    points build the same whole-core, whole-stack design)."""
    return df.sort_values([column, "area_mm2", "cost_usd"], ascending=[False, True, True], kind="stable").index[0]


def _better(a, b) -> bool:
    """Row ``a`` beats row ``b`` by the study's rule (``optimize.tie_key``: score, then the smaller die, the cheaper)."""
    return tie_key(a["score"], a) > tie_key(b["score"], b)


def heatmap_figures(res: SweepResult, title: str) -> list[Figure]:
    """One heatmap figure per SRAM value (``dse.report.plots.sweep_heatmaps``): a 2 x 2 block of panels per mix
    (score, score/mm2, area, binding ceiling), each mix's best feasible point starred on its own SRAM's figure."""
    ctx0 = next(iter(res.ctxs.values()))
    budget = ctx0.cfg.search.area_budget_mm2
    kb = base_knobs(ctx0.base)
    best = {m: best_row(res, mix=m) for m in res.mixes}
    srams = np.asarray(res.axes["sram_mib"], dtype=float)
    nearest_base = int(np.argmin(np.abs(np.log(srams / kb["sram_mib"]))))
    figures = []
    for k, s in enumerate(srams):
        at = np.isclose(res.grid["sram_mib"], s)
        rows = {m: res.grid[at & (res.grid["mix"] == m)] for m in res.mixes}
        figures.append(Figure(f"sweep_sram{k}.png", "sweep_heatmaps",
                              (rows, res.axes, budget, best, (kb["peak_tflops"], kb["dram_bandwidth_tbps"])),
                              f"{title}: sweep at {s:.0f} MiB SRAM",
                              {"sram_mib": float(s), "base_sram_mib": kb["sram_mib"], "show_base": k == nearest_base,
                               "axis_labels": (KNOB["peak_tflops"].label, bandwidth_label(ctx0.base.base)),
                               "budgets": {"power_w": ctx0.cfg.search.power_budget_w,
                                           "cost_usd": ctx0.cfg.search.cost_budget_usd}}))
    return figures


#: columns of the summary's best-design table
BEST_COLUMNS = ["mix", "peak_tflops", "peak_tflops_built", "cores", "dram_bandwidth_tbps", "dram_stacks",
                "dram_bandwidth_tbps_built", "dram_capacity_gb", "sram_mib",
                "ridge_flop_per_byte", "score", "score_per_mm2",
                "area_mm2", "cost_usd", "power_w", "binding", "binding_time_share"]


def sweep_document(title: str, headline: str, best_rows: dict[str, pd.Series], counts: dict[str, dict],
                   res: SweepResult | None = None, csv: bool = True, plots: bool = True,
                   written: tuple[str, ...] = (), config_text: str | None = None) -> Document:
    """The sweep's report (``dse.report.render.render`` writes it): sweep.csv (with ``csv`` and an in-memory
    ``res``), the heatmaps (with ``plots`` and ``res``), and a summary of the best feasible design per mix and
    of the share of grid points under each binding ceiling (``counts[mix][ceiling]`` = points). ``written``:
    files already in the folder to list first (a streamed ``sweep.parquet``)."""
    tables = (Table("sweep.csv", res.grid),) if csv and res is not None else ()
    figures = tuple(heatmap_figures(res, title)) if plots and res is not None else ()
    share = pd.DataFrame([{"mix": m, **{k: v / sum(c.values()) for k, v in c.items()}} for m, c in counts.items()]
                         ).fillna(0.0)
    files = "\n".join(f"- `{f}`" for f in [*written, *(t.file for t in tables), *(f.file for f in figures)])
    body = (f"# Sweep `{title}`\n\n{headline}\n\n## Best feasible design per mix\n\n",
            pd.DataFrame(list(best_rows.values()))[BEST_COLUMNS],
            "\n\n## Share of grid points by binding ceiling (fraction of the mix's points)\n\n", share,
            "\n\n(binding ceiling: the ceiling with the largest share of each workload's time, averaged with the "
            "score's weights; `score` is the mix score relative to the base design on each mix (x), "
            "`score_per_mm2` that score per die area relative to the base's (x), `binding_time_share` a fraction)"
            f"\n\n{files}\n")
    return Document(f"dse sweep {title}", body, tables, figures, config_text)
