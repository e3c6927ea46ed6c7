"""Command line: ``dse run CONFIG`` (also ``python -m dse.run CONFIG``), ``dse workloads``,
``dse hardware``, ``dse predict``. Bad input prints one line ``error: ...`` and exits 2;
``--debug`` shows the traceback."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dse.errors import DseError

if TYPE_CHECKING:  # pandas loads lazily, inside the commands that use it
    import pandas as pd


def status(args: argparse.Namespace, message: str) -> None:
    """A progress line on stderr for a step that takes seconds: on a terminal only (so piped output and
    logs keep errors to their one line), silent with --quiet."""
    if not getattr(args, "quiet", False) and sys.stderr.isatty():
        print(f"... {message}", file=sys.stderr, flush=True)


def _progress(args: argparse.Namespace) -> bool:
    """Progress bars on stderr: on a terminal only and without --quiet, as :func:`status` lines (a log that
    redirects stderr keeps errors to their one line)."""
    return not getattr(args, "quiet", False) and sys.stderr.isatty()


def _add_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="study config YAML, e.g. configs/npu.yaml")
    p.add_argument("--resume", action="store_true", help="continue the latest results/<name>* study to n_trials")
    p.add_argument("--storage", help="optuna storage: sqlite:///F.db (default: in the results folder), "
                   "postgresql://USER@HOST:PORT/DB, journal:///F.log")
    p.add_argument("--workers", type=int, default=1, help="worker processes sharing the study (default 1)")
    p.add_argument("--out", help="parent folder for results (default: output.dir of the config)")
    p.add_argument("--trials", type=int, help="override search.n_trials")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def cmd_run(args: argparse.Namespace) -> int:
    from dse.config import load_study
    from dse.report.write import write_results
    from dse.study import run_mixes, run_study

    if args.trials is not None and args.trials <= 0:
        raise DseError(f"got {args.trials}; accepted: a positive integer", field="--trials")
    cfg, _ = load_study(args.config)
    search = cfg.search
    if search.sampler == "grid":  # a grid larger than the trials stops part-way: say so before it starts
        from dse.search.space import grid

        points = 1
        for v in grid(search.space, search.grid_points).values():
            points *= len(v)
        trials = args.trials or search.n_trials
        if trials < points:
            print(f"warning: search.n_trials {trials} < the grid's {points} points (search.grid_points "
                  f"{search.grid_points} per parameter): {points - trials} of them will not be tried; accepted: "
                  f"n_trials >= {points}, or fewer grid_points", file=sys.stderr)
    if cfg.mixes is not None:
        from dse.report.mixes import write_mix_report

        run = run_mixes(args.config, resume=args.resume, storage=args.storage, out=args.out,
                        n_trials=args.trials, progress=_progress(args), workers=args.workers)
        plots = cfg.output.plots and not args.no_plots  # the config's output.plots, or --no-plots
        for r in run.results.values():
            status(args, f"writing {r.folder.name}: tables" + (", figures" if plots else "") + " and report")
            write_results(r, plots_on=plots)
        print(write_mix_report(run.top, list(run.results.values()), list(run.results), cfg.name, run.infeasible))
        return 0
    result = run_study(args.config, resume=args.resume, storage=args.storage, out=args.out,
                       n_trials=args.trials, progress=_progress(args), workers=args.workers)
    plots = cfg.output.plots and not args.no_plots  # the config's output.plots, or --no-plots
    status(args, f"search done; writing {result.folder}: tables" + (", figures" if plots else "") + " and report")
    print(write_results(result, plots_on=plots))
    return 0


def _scaled(value: float, unit: str = "") -> str:
    """``value`` with a decimal prefix to 4 significant digits: 7.392e10 bytes reads ``73.92 GB``, 6.71e11 params
    ``671 G`` (a plain ``6.71e+05 M params`` is hard to read)."""
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}".rstrip()


def _scenario_flags(args: argparse.Namespace) -> dict:
    keys = ("phase", "batch", "seq", "context", "resolution", "dtype", "weight_dtype", "kv_dtype", "input_len",
            "output_len", "chunk")
    return {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}


def _need_pyarrow(fmt: str) -> None:
    """A parquet sweep without pyarrow is refused before any folder is made (nothing could be written into it)."""
    import importlib.util

    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise DseError("got parquet, and pyarrow is not installed; accepted: pip install 'dse[scale]' (pyarrow, "
                       "dask) or --format csv with --engine local", field="--format")


def _sweep_axes(cfg, ctxs: dict, args: argparse.Namespace, limit: int | None) -> dict:
    """``dse.grid.axes_for`` of the first mix; a bad search-space field is reported against the config file."""
    from dse.grid import axes_for

    try:
        return axes_for(cfg, next(iter(ctxs.values())), args.points, args.sram_points, limit=limit)
    except DseError as exc:
        if exc.file is None and (exc.field or "").startswith("search."):
            raise DseError(exc.message, file=str(args.config), field=exc.field) from None
        raise


def _sweep_headline(name: str, designs: int, workloads: int, mixes: int, seconds: float) -> str:
    """``sweep NAME: N designs x W workloads (M mixes) in T``: a small grid's time in ms (it read '0.00 s')."""
    took = f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"
    return f"sweep {name}: {designs:,} designs x {workloads} workloads ({mixes} mix{'es' * (mixes != 1)}) in {took}"


def _sweep_mix_line(mix: str, b: pd.Series, feasible: int, designs: int) -> str:
    """A sweep's console line for one mix: its best feasible design as built and how many designs are within the
    limits."""
    stacks = f" ({b['dram_stacks']:.0f} stacks)" if b["dram_stacks"] > 0 else ""  # main memory not bought in stacks
    return (f"  {mix}: best feasible {b['peak_tflops_built']:.0f} TFLOP/s, {b['dram_bandwidth_tbps_built']:.2f} TB/s"
            f"{stacks}, {b['sram_mib_built']:.0f} MiB (as built), score {b['score']:.3f}x, "
            f"area {b['area_mm2']:.0f} mm2, ridge {b['ridge_flop_per_byte']:.1f} FLOP/byte, binding {b['binding']} "
            f"({b['binding_time_share']:.0%} of time); {feasible:,} of {designs:,} designs within the limits")


def cmd_sweep(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    import pandas as pd

    from dse.errors import DseError
    from dse.grid import (
        BLOCK,
        KNOBS,
        MAX_DESIGNS,
        SweepResult,
        best_row,
        contexts,
        grid_size,
        run_sweep,
        stream_sweep,
        sweep_document,
    )
    from dse.report.render import render
    from dse.study import results_folder

    for flag, value in (("--points", args.points), ("--sram-points", args.sram_points)):
        if value < 1:
            raise DseError(f"got {value}; accepted: a positive integer", field=flag)
    cfg, ctxs = contexts(args.config)
    fmt = args.format or ("parquet" if args.engine == "dask" else "csv")
    if fmt == "csv" and args.engine == "dask":
        raise DseError("got --engine dask with --format csv; accepted: --format parquet (blocks stream to files)",
                       field="--format")
    given = {"--scheduler": args.scheduler, "--workers": args.workers, "--block": args.block}
    plots = cfg.output.plots and not args.no_plots  # the config's output.plots, or --no-plots
    axes = _sweep_axes(cfg, ctxs, args, MAX_DESIGNS if fmt == "csv" else None)
    n = grid_size(axes) * len(ctxs)
    args.block = BLOCK if args.block is None else args.block
    if args.block < 1:
        raise DseError(f"got {args.block}; accepted: a positive integer", field="--block")
    if args.resume and fmt != "parquet":
        raise DseError("got --resume with --format csv; accepted: --format parquet (a CSV sweep is scored in memory "
                       "and written once: run it again)", field="--resume")
    for flag, needs, ok in (("--scheduler", "--engine dask", args.engine == "dask"),
                            ("--workers", "--engine dask", args.engine == "dask"),
                            ("--block", "--format parquet", fmt == "parquet")):
        if given[flag] is not None and not ok:  # accepted and dropped without a word before
            raise DseError(f"got {given[flag]} with --engine {args.engine} --format {fmt}; accepted: only with {needs}",
                           field=flag)
    _need_pyarrow(fmt)
    root = Path(args.out or cfg.output.root(Path(args.config).parent))
    folder = sweep_folder(args, cfg, ctxs, axes, root) if fmt == "parquet" else results_folder(
        root, f"{cfg.name}-sweep", False)
    status(args, f"scoring {n:,} designs" + (f" on {args.engine}" if fmt == "parquet" else ""))
    t0 = time.perf_counter()
    if fmt == "parquet":
        try:
            summary = stream_sweep(ctxs, axes, folder / "sweep.parquet", chunk=args.chunk, engine=args.engine,
                                   scheduler=args.scheduler, workers=args.workers, block=args.block,
                                   progress=_progress(args))
        except DseError as exc:
            raise DseError(f"{exc.message}; the blocks already written are kept: continue with dse sweep --resume",
                           file=exc.file, field=exc.field) from None
        dt = time.perf_counter() - t0
        small = n <= MAX_DESIGNS and plots
        res = None
        if small:  # the grid fits in memory: the same heatmaps as a CSV sweep
            grid = pd.read_parquet(folder / "sweep.parquet").sort_values(["mix", *KNOBS], kind="stable")
            res = SweepResult(grid.reset_index(drop=True), axes, ctxs)
        status(args, f"writing {folder}: sweep.parquet/" + (" and heatmaps" if small else ""))
        csv, written = False, ("sweep.parquet",)
        best_rows = {m: pd.Series(summary["mixes"][m]["best"]) for m in ctxs if summary["mixes"][m]["best"]}
        counts = {m: summary["mixes"][m]["binding"] for m in ctxs}
        feasible = {m: int(summary["mixes"][m]["feasible"]) for m in ctxs}
    else:
        res = run_sweep(ctxs, axes, chunk=args.chunk)
        dt = time.perf_counter() - t0
        status(args, f"writing {folder}: sweep.csv and heatmaps")
        csv, written = True, ()
        best_rows = {m: best_row(res, mix=m) for m in res.mixes}
        counts = {m: res.grid.loc[res.grid["mix"] == m, "binding"].value_counts().to_dict() for m in res.mixes}
        feasible = {m: int(res.grid.loc[res.grid["mix"] == m, "feasible"].sum()) for m in res.mixes}
    missing = [m for m in ctxs if m not in best_rows]
    if missing:
        raise DseError(f"no feasible design in the grid of mix {missing[0]!r}; accepted: larger budgets or other ranges")
    n_wl = sum(len(c.mix.workloads) for c in ctxs.values())
    kept = summary.get("blocks_kept", 0) if fmt == "parquet" else 0
    scored = (f"; {summary['blocks'] - kept} of its {summary['blocks']} blocks scored now, {kept} kept from before"
              if kept else "")
    lines = [_sweep_headline(cfg.name, n, n_wl, len(ctxs), dt) + scored]
    lines += [_sweep_mix_line(m, best_rows[m], feasible[m], n // len(ctxs)) for m in ctxs]
    render(sweep_document(cfg.name, lines[0], {m: best_rows[m] for m in ctxs}, counts, res, csv=csv,
                          plots=plots, written=written,
                          config_text=Path(args.config).read_text(encoding="utf-8")), folder)
    print("\n".join(lines))
    print(f"  {folder}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from pathlib import Path

    import numpy as np
    import pandas as pd

    from dse.comparison import check_strict, compare_config, comparison_document, infeasible_lines
    from dse.report.render import render
    from dse.study import load_context, results_folder
    from dse.units import watts

    status(args, f"loading {args.config} and predicting the base design")
    cfg, ctx = load_context(args.config, one_mix="compare")
    if args.hardware is not None:
        return _compare_chips(args, cfg, ctx)
    status(args, "building and predicting the candidates")
    ratios = None
    if args.ratios is not None:
        ratios = [r.strip() for r in args.ratios.split(",") if r.strip()]
        from dse.comparison import parse_ratio

        for r in ratios:  # a bad ratio is the news, before how many there are
            parse_ratio(r)
        if len(ratios) < 2:
            one = f" ({len(ratios)} ratio{'' if len(ratios) == 1 else 's'})"
            raise DseError(f"got {args.ratios!r}{one}; accepted: two or more ratios, comma-separated: the candidates "
                           "compared, e.g. 1:2,1:1", field="--ratios")
    if args.samples is not None and not 0 <= args.samples <= 100_000:  # named as the flag (the API says samples)
        raise DseError(f"got {args.samples}; accepted: 0 (no robustness analysis) to 100000 samples", field="--samples")
    status(args, "building and predicting the candidates, Monte Carlo robustness")
    cmp, heading = compare_config(cfg, ctx, args.config, ratios, args.hold, samples=args.samples)
    if args.strict:
        check_strict(cmp, args.config)
    folder = results_folder(Path(args.out or cfg.output.root(Path(args.config).parent)), f"{cfg.name}-compare", False)
    plots = cfg.output.plots and not args.no_plots
    status(args, f"writing {folder}: tables" + (", figures" if plots else "") + " and report")
    render(comparison_document(ctx, cmp, heading, Path(args.config).read_text(encoding="utf-8"), plots=plots), folder)
    width = max(len(n) for n in cmp.names)
    if not cmp.designs_table["feasible"].astype(bool).any():  # said before any row, which would read as a ranking
        print(f"no candidate is feasible (each one's reason below and in {folder / 'summary.md'}); the rows compare "
              "them anyway")
    for _, r in cmp.designs_table.iterrows():
        print(f"  {r['candidate']:<{width}s} {r['peak_tflops']:7.1f} TFLOP/s {r['dram_bandwidth_tbps']:6.3f} TB/s ridge "
              f"{r['ridge_flop_per_byte']:6.1f} FLOP/B ({r['bw_per_flop_vs_base']})  score {r['score_vs_base']:.3f}x "
              f"({r['score_vs_base_change_pct']:+.1f} %)  area {r['area_mm2']:.0f} mm2 "
              f"({r['area_mm2_change_pct']:+.1f} %)  power {watts(r['power_w'])} W"
              + (f"  P(beats {cmp.names[0]}) {r['p_beats_first']:.0%}" if pd.notna(r.get("p_beats_first", np.nan))
                 else "") + ("" if r["feasible"] else "  INFEASIBLE"))
        if r.get("hold_note"):  # a candidate built other than asked (a hold it could not meet): say so here too
            print(f"  {'':<{width}s} held as built: {r['hold_note']}")
    for line in infeasible_lines(cmp):
        print(f"warning: {line}", file=sys.stderr)
    print(f"  {folder}")
    return 0


def _stage_arg(text: str) -> str | dict:
    """``--stages`` item: ``fuse_elementwise`` or ``weight_dtype=int8`` / ``sram_mib=128``; ``window=TOKENS[:N]``
    (every N-th layer global; ``window=none``: every layer global)."""
    if "=" not in text:
        return text
    key, value = (x.strip() for x in text.split("=", 1))
    if key == "window" and value != "none":
        tokens, _, every = value.partition(":")
        try:
            return {key: {"tokens": int(tokens), **({"global_every": int(every)} if every else {})}}
        except ValueError:
            return {key: value}  # refused by the stage's check, naming what it accepts
    try:
        number = float(value)
    except ValueError:
        return {key: value}
    return {key: int(number) if number.is_integer() else number}


def _output_dir_of(config: str, spec: object) -> str:
    """The output folder (``Output.root``) of a what-if file, or of the study config holding a whatif: section."""
    from pathlib import Path

    from dse.config import load_study

    output = getattr(spec, "output", None)
    if output is not None:
        return str(output.root(Path(config).parent))
    try:
        return str(load_study(config)[0].output.root(Path(config).parent))
    except DseError:
        return "results"


def cmd_whatif(args: argparse.Namespace) -> int:
    from pathlib import Path

    import pandas as pd
    from pydantic import ValidationError

    from dse.config import WhatIfFile
    from dse.errors import from_validation_error
    from dse.hardware.templates import load_hardware
    from dse.report.render import render
    from dse.study import results_folder
    from dse.whatif_stages import load_whatif, run_whatif, whatif_document

    out_dir = "results"
    _whatif_positionals(args)
    if args.config:
        spec, name, hw = load_whatif(args.config)
        text = Path(args.config).read_text(encoding="utf-8")
        out_dir = _output_dir_of(args.config, spec)
    else:
        if not (args.workload and args.stages):
            missing, given = ("--stages", repr(args.stages or "") + f" with --workload {args.workload}") \
                if args.workload else (("--workload", f"--stages {args.stages}") if args.stages else ("CONFIG", "nothing"))
            raise DseError(f"got {given}; accepted: dse whatif CONFIG, or --workload MODEL --stages T1,T2,... "
                           "[--hardware T]", field=missing)
        from dse.workloads.library import is_path

        # the results folder's name: a model YAML's file stem (its path is no folder name), else the model or operator
        label = Path(args.workload).stem if is_path(args.workload) else args.workload.replace(":", "-")
        data = {"name": label, "hardware": args.hardware,
                "workload": {"name": args.workload, **_scenario_flags(args)},
                "stages": [_stage_arg(t) for t in args.stages.split(",") if t.strip()]}
        try:
            spec = WhatIfFile.model_validate(data)
        except ValidationError as exc:
            raise from_validation_error(exc, file="command line", model=WhatIfFile) from None
        name, hw, text = spec.name, load_hardware(args.hardware), None
    try:
        res = run_whatif(spec, hw)
    except DseError as exc:
        raise DseError(exc.message, file=exc.file or args.config, field=exc.field) from None
    folder = results_folder(Path(args.out or out_dir), f"{name}-whatif", False)
    render(whatif_document(res, name, text, plots=not args.no_plots), folder)
    cols = ["stage", "transform", "ai_flop_per_byte", "time_ms", "speedup_vs_stage0", "achieved_tflops",
            "dram_bw_utilization", "binding", "note"]
    with pd.option_context("display.width", 220, "display.max_colwidth", 60):
        print(f"{res.subject} on {hw.name}:")
        print(res.table[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"  {folder}")
    return 0


def cmd_batch(args: argparse.Namespace) -> int:
    from dse.batch import main as batch_main

    return batch_main([*args.configs, *(["--out", args.out] if args.out else []), *(["--quiet"] if args.quiet else []),
                       *(["--trials", str(args.trials)] if args.trials is not None else []),
                       *(["--no-plots"] if args.no_plots else [])])


def cmd_workloads(args: argparse.Namespace) -> int:
    import pandas as pd

    from dse.workloads.library import list_workloads, workload

    action = args.action or "list"
    _check_workloads_flags(args, action)
    if action == "list":
        df = list_workloads().drop(columns=["source"])
        if args.format == "json":
            _print_json(_records(df))
            return 0
        with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_rows", 500):
            # plain numbers, grouped by thousands (6.71e+05 M params read as a puzzle: 671,026)
            print(df.to_string(index=False, float_format=lambda v: f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"))
        print(f"{len(df)} architectures")
        return 0
    if action == "show":
        if not args.target:
            raise DseError("missing the model name; accepted: dse workloads show NAME [--batch N ...]", field="NAME")
        wl = workload(args.target, **_scenario_flags(args))
        o = wl.ops.assign(total_flops=wl.ops["flops"] * wl.ops["count"],
                          total_bytes=(wl.ops["bytes_read"] + wl.ops["bytes_written"]) * wl.ops["count"])
        g = o.groupby("kind")[["total_flops", "total_bytes"]].sum()
        g["share_flops"] = g["total_flops"] / g["total_flops"].sum()
        g["ai_flop_per_byte"] = g["total_flops"] / g["total_bytes"]
        params = f"{_scaled(wl.scenario.get('params', 0))} params"
        if wl.scenario.get("expert_params"):  # MoE: the parameters one token's forward pass runs, beside the total
            from dse.workloads.library import load_description

            moe = load_description(wl.origin or wl.name).arch["moe"]
            pe = float(wl.scenario["expert_params"])
            active = float(wl.scenario["params"]) - pe * (1.0 - moe["active"] / moe["experts"])
            params += f" ({_scaled(active)} active per token: {moe['active']} of {moe['experts']} routed experts)"
        print(f"{wl.label()}: {wl.flops / 1e9:.4g} GFLOP, {_scaled(wl.bytes, 'B')}, AI {wl.ai:.3g} FLOP/byte, "
              f"{params}; source: {wl.source}")
        print(g.to_string(float_format=lambda v: f"{v:.4g}"))
        return 0
    if action == "ai":
        return _workloads_ai(args)
    if action == "import":
        return _workloads_import(args)
    raise DseError(f"got {action!r}; accepted: list, show, ai, import", field="action")


#: the options each ``dse workloads`` action reads (beside its target); any other given is an error, not a no-op
WORKLOADS_FLAGS = {"list": {"format"}, "show": {"scenario", "batch"},
                   "ai": {"scenario", "batch", "hardware", "quiet", "out"}, "import": {"output", "batch"}}


def _check_workloads_flags(args: argparse.Namespace, action: str) -> None:
    """One line naming an option ``action`` does not read (``dse workloads list --batch 32`` printed the library at
    the models' defaults without a word)."""
    scen = _scenario_flags(args)
    given = [("format", "--format", args.format, args.format != "table"),
             ("hardware", "--hardware", args.hardware, args.hardware is not None),
             ("quiet", "--quiet", True, args.quiet), ("out", "--out", args.out, args.out != "results/ai"),
             ("output", "--output", args.output, args.output is not None),
             *(("batch" if k == "batch" else "scenario", "--" + k.replace("_", "-"), v, True)
               for k, v in scen.items())]
    reads = WORKLOADS_FLAGS.get(action, set())
    for key, flag, value, on in given:
        if on and key not in reads:
            users = [a for a, r in WORKLOADS_FLAGS.items() if key in r]
            raise DseError(f"got {value} with {action}; accepted: only with {' or '.join(users)}", field=flag)


def _import_target(out: Path | None, desc: dict) -> tuple[Path, dict]:
    """Where an import is written without overwriting anything: ``--output`` must be a new file (an existing one is
    one line naming it); the default ``results/imports/NAME.yaml`` takes the first free ``NAME-2``, ``NAME-3``, ...
    (the description renamed to match) unless the file there already holds this very description."""
    from dse.yamlio import load_yaml

    if out is not None:
        if out.exists():
            raise DseError(f"got {str(out)!r}, which exists; accepted: a new file (imports never overwrite)",
                           field="--output")
        return out, desc
    base, k = desc["name"], 1
    while True:
        name = base if k == 1 else f"{base}-{k}"
        path = Path("results") / "imports" / f"{name}.yaml"
        cand = {**desc, "name": name}
        if not path.exists() or load_yaml(path) == cand:
            return path, cand
        k += 1


def _workloads_import(args: argparse.Namespace) -> int:
    from pathlib import Path

    from dse.workloads.importers import from_hf_config, from_onnx, onnx_free_dims, workload_from_description
    from dse.yamlio import write_yaml

    if not args.target:
        raise DseError("missing PATH; accepted: dse workloads import model.onnx|config.json [-o OUT.yaml]", field="PATH")
    src = Path(args.target)
    out = Path(args.output) if args.output else None
    name = out.stem if out else None
    batch = _scenario_flags(args).get("batch")
    free: list[tuple[str, int, str]] = []
    if src.suffix == ".onnx":
        desc = from_onnx(src, name, batch=batch)
        free = onnx_free_dims(src)
    elif src.suffix == ".json":
        if batch is not None:
            raise DseError(f"got {batch} for a Hugging Face config; accepted: only for an ONNX file (a config.json "
                           "model takes --batch where it is used: dse predict, a study's workload entry)",
                           field="--batch")
        desc = from_hf_config(src, name)
    else:
        raise DseError(f"got {src.name!r}; accepted: an .onnx file or a Hugging Face config.json", field="PATH")
    wl = workload_from_description(desc)
    out, desc = _import_target(out, desc)
    write_yaml(out, desc)
    unknown = desc["arch"].get("unknown_ops", []) if desc["family"] == "optable" else []
    print(f"{desc['name']}: {len(wl.ops)} operator rows, {wl.flops / 1e9:.4g} GFLOP, {wl.bytes / 1e6:.4g} MB -> {out}")
    print(f"  use it as dse.workload({str(out)!r}), a config entry {{path: {out}}}, or by name with "
          f"DSE_PATH={out.parent}")
    if unknown:
        print(f"  counted as bytes only ({len(unknown)}): {', '.join(unknown)}")
    if free:  # the sizes are fixed in the written rows: say which were chosen here
        bound = [f"{inp}[{ax}] {dim}={(batch or 1) if ax == 0 else 1}" for inp, ax, dim in free]
        print(f"  note: free input dimensions bound (leading ones to --batch, default 1; others to 1): "
              f"{', '.join(bound)}")
    return 0


def _workloads_ai(args: argparse.Namespace) -> int:
    from pathlib import Path

    from dse.hardware.designs import DesignBatch
    from dse.hardware.templates import load_hardware
    from dse.predict.intensity import ai_document, op_intensity
    from dse.report.render import render
    from dse.workloads.intensity import summary
    from dse.workloads.library import workload
    from dse.workloads.mix import Mix
    from dse.workloads.suites import load_suite

    suite = args.target or "all"
    if suite.endswith((".yaml", ".yml")) or Path(suite).is_file():  # a study config: its own weighted mix
        from dse.grid import contexts

        if _scenario_flags(args):
            flags = ", ".join("--" + k.replace("_", "-") for k in _scenario_flags(args))
            raise DseError(f"got {flags} with a config; accepted: scenario flags with a suite only (a config's "
                           "entries set their own)", file=suite, field=flags)
        cfg, ctxs = contexts(suite)
        label, ctx = next(iter(ctxs.items()))
        if len(ctxs) > 1:
            print(f"{suite}: several mixes; AI of the first ({label})")
        mix, what = ctx.mix, f"config {cfg.name}"
        suite = cfg.name
        hw = load_hardware(args.hardware) if args.hardware else ctx.base_hw
        d = DesignBatch.from_hardware(hw) if args.hardware else ctx.base
    else:
        entries = load_suite(suite)
        over = _scenario_flags(args)
        from tqdm import tqdm

        if over.get("phase") == "inference":  # a language model without a phase contributes prefill and decode
            from dse.workloads.library import inference_phases

            entries = [e if e.get("phase") not in (None, "inference") else
                       {**e, "phase": ph, "weight": float(e["weight"]) / len(phases)}
                       for e in entries for phases in [inference_phases(e["name"])]
                       for ph in (phases if e.get("phase") in (None, "inference") else phases[:1])]
            over = {k: v for k, v in over.items() if k != "phase"}
        wls = [workload(e["name"], **{**{k: v for k, v in e.items() if k not in ("name", "weight")}, **over})
               for e in tqdm(entries, desc="expanding workloads", unit="model",
                             disable=True if args.quiet else None, leave=False)]  # None: a bar on a terminal only
        mix, what = Mix.of(wls, [float(e["weight"]) for e in entries]), f"suite {suite}"
        hw = load_hardware(args.hardware or "npu-7nm")
        d = DesignBatch.from_hardware(hw)
    wls = mix.workloads
    status(args, f"operator intensities of {len(wls)} workloads on {hw.name}")
    df = op_intensity(mix, d)
    status(args, f"writing {args.out}: table and histograms")
    out = Path(args.out)
    render(ai_document(df, suite, what, d, hw.name), out)
    dram = hw.offchip_level.name
    print(f"{what}: {len(wls)} workloads, {len(df)} operator rows; design {hw.name} "
          f"(ridge {float(d.ridge[0]):.0f} FLOP/byte)")
    offs = False
    for label, level, weight in ((f"time-weighted, at {dram}", dram, "share_time"),  # where the time goes first
                                 (f"FLOP-weighted, at {dram}", dram, "share_flops"),
                                 ("FLOP-weighted, compulsory", "compulsory", "share_flops")):
        st = summary(df, level, weight)
        offs = offs or any(st[q] == float("inf") for q in ("p10", "p50", "p90"))
        print(f"  {label:<28s} p10 {st['p10']:8.3g}  p50 {st['p50']:8.3g}  p90 {st['p90']:8.3g} FLOP/byte;"
              f" share in 4-16 FLOP/byte {st['share_4_16']:.1%}")
    if offs:
        print(f"  (inf: the operators at that percentile move no byte across {dram}: their data stays on chip)")
    fam = df.groupby("family").apply(lambda g: summary(g.assign(share_flops=g["share_flops"] / g["share_flops"].sum())),
                                      include_groups=False)
    for f, st in fam.items():
        print(f"  {f:<28s} p10 {st['p10']:8.3g}  p50 {st['p50']:8.3g}  p90 {st['p90']:8.3g} FLOP/byte;"
              f" share in 4-16 FLOP/byte {st['share_4_16']:.1%}")
    print(f"  {out}/ai_{suite}.csv, ai_{suite}_flops.png, ai_{suite}_time.png, ai_{suite}_family.png")
    return 0


def _template_label(arg: str, hw) -> str:  # noqa: ANN001 - a Hardware
    """What names a template in a table row, an error or a warning: the YAML path it was read from when given as one
    (a copied template keeps its ``name:``, so two edited copies would read the same), else its name."""
    return arg if arg.endswith((".yaml", ".yml")) else hw.name


def cmd_hardware(args: argparse.Namespace) -> int:
    from dse.cost.area import area
    from dse.hardware.templates import list_templates, load_hardware

    def dies(hw) -> str:
        """``1`` for one die, else the package's dies (``8 xcd + 4 iod``)."""
        return " + ".join(f"{g.count} {g.name}" for g in hw.die_groups) or "1"

    def memory(hw) -> str:
        """The main memory as bought: ``8 x hbm3e``, ``6 x gddr6``, ``5 x hbm`` (no part named), ``-`` (no DRAM)."""
        level = hw.offchip_level
        if not level.off_chip:
            return "-"
        return f"{level.stacks} x {level.generation or level.kind}"

    def sram_mib(hw) -> float:
        """MiB of on-chip SRAM: every on-chip level's capacity, all its copies (registers are not a level)."""
        return sum(m.capacity_bytes for m in hw.memory if not m.off_chip) / 2**20

    from dse.hardware.designs import DesignBatch
    from dse.report.residency import resident_level

    def keeps(hw) -> str:
        """What its on-chip memory keeps between operators (docs/residency.md): ``steps`` (the weights and KV cache
        that fit too, from step to step), ``step`` (activations within a step), ``tiles`` (nothing between
        operators: per-core copies or ``keeps: tiles``), ``all`` on a chip without DRAM (every tensor)."""
        if not hw.offchip_level.off_chip:
            return "all"
        level = resident_level(DesignBatch.from_hardware(hw))  # the storage the predictor keeps tensors in
        return "tiles" if level is None else "steps" if level.steps else "step"

    names = args.templates or list_templates()
    hws = [load_hardware(n) for n in names]  # every name checked before any output
    labels = [_template_label(n, hw) for n, hw in zip(names, hws, strict=True)]
    if args.yaml:
        if args.format != "table":  # --yaml prints the files as they are: a JSON table would be dropped unsaid
            raise DseError(f"got {args.format} with --yaml; accepted: --yaml alone (each template's YAML file) or "
                           "--format json without it", field="--format")
        return _print_template_files(args.templates)
    if args.format == "json":
        _print_json([{"template": lb, "node": hw.process_node, "dtype": hw.reference_dtype,
                      "peak_tflops": hw.peak_flops / 1e12,
                      "dram_bandwidth_tbps": hw.dram.bandwidth_bps / 1e12, "ridge_flop_per_byte": hw.ridge_flop_per_byte,
                      "sram_mib": sram_mib(hw), "sram_keeps": keeps(hw), "area_mm2": area(hw).total_mm2,
                      "dies": {g.name: int(g.count) for g in hw.die_groups} or {"die": 1},
                      "dram_part": hw.offchip_level.generation, "dram_stacks": hw.offchip_level.stacks
                      if hw.offchip_level.off_chip else 0}
                     for lb, hw in zip(labels, hws, strict=True)])
        return 0
    w = max(12, *(len(lb) for lb in labels))
    # the peak (and the ridge from it) is each template's reference dtype: bf16 on most, int8 on the Groq TSP, fp8
    # on Blackhole, fp16 on Wormhole and V100, so the column says which
    print(f"{'template':<{w}} {'node':<6} {'dtype':<5} {'peak TFLOP/s':>12} {'DRAM TB/s':>10} {'ridge FLOP/B':>13} "
          f"{'SRAM MiB':>9} {'keeps':<5} {'area mm2':>9}  {'DRAM':<11} dies")
    sram_only = False
    for lb, hw in zip(labels, hws, strict=True):
        mark = " " if any(m.off_chip for m in hw.memory) else "*"  # an all-SRAM chip: its outermost on-chip level
        sram_only |= mark == "*"
        print(f"{lb:<{w}} {hw.process_node:<6} {hw.reference_dtype:<5} {hw.peak_flops / 1e12:>12.1f} "
              f"{hw.dram.bandwidth_bps / 1e12:>9.3f}"
              f"{mark} {hw.ridge_flop_per_byte:>13.1f} {sram_mib(hw):>9.1f} {keeps(hw):<5} {area(hw).total_mm2:>9.1f}  "
              f"{memory(hw):<11} {dies(hw)}")
    if sram_only:
        print("* no DRAM: the bandwidth of its outermost on-chip level")
    print("keeps: what on-chip memory keeps between operators: steps (weights and KV cache that fit too), step "
          "(activations), tiles (nothing), all (no DRAM); docs/residency.md")
    _build_warnings(hws, labels)
    return 0


def _print_template_files(names: list[str]) -> int:
    """``dse hardware NAME --yaml``: each named template's file as it is (a pip install keeps the shipped ones inside
    the package, where a user would not look); a YAML path prints that file."""
    from dse.hardware.templates import template_file

    if not names:
        raise DseError("got --yaml without a template; accepted: one or more template names or YAML paths "
                       "(dse hardware npu-7nm --yaml)", field="--yaml")
    for i, name in enumerate(names):
        path = Path(name) if name.endswith((".yaml", ".yml")) else template_file(name)
        if i:
            print("---")
        print(f"# {name}: {path}")
        print(path.read_text().rstrip("\n"))
    return 0


def _build_warnings(hws, labels: list[str] | None = None) -> None:  # noqa: ANN001 - Hardware templates
    """A ``warning:`` line on stderr for each template that could not be built as described (a die over the reticle,
    more DRAM stacks than its edges and package hold; ``dse.cost.area.build_warnings``), naming it by ``labels``
    (its YAML path where it was given as one)."""
    from dse.cost.area import build_warnings

    for i, hw in enumerate(hws):
        for line in build_warnings(hw, label=labels[i] if labels else None):
            print(f"warning: {line}", file=sys.stderr)


def _noc_row(name: str, d) -> dict:
    """One template's on-chip network for ``dse area``: topology, link width, routers, what it carries."""
    g = d.noc()
    noc = d.base.compute.noc
    auto = noc.topology == "auto"
    return {"template": name, "topology": g.topology + (" (auto)" if auto else ""),
            "link_bytes": f"{g.link_bytes[0]:.0f}" + ("" if noc.link_bytes else " (auto)"), "networks": g.networks,
            "routers": int(g.routers[0]), "ports": int(g.ports[0]), "traffic": noc.traffic,
            "carries_tbps": d.noc_demand[0] / 1e12, "delivers_tbps": g.delivered_bps[0] / 1e12}


def _d2d_rows(name: str, d) -> list[dict]:
    """A multi-die template's levels whose bytes cross die-to-die links, for ``dse area``: the links each byte
    crosses over each die kind's network, the level's own bandwidth, the ceiling the links put on it and what it
    delivers (``dse.hardware.designs.DesignBatch.d2d_crossings`` and ``d2d_ceiling``)."""
    kinds = d.die_kinds
    cap, own, got = d.d2d_ceiling[0], d.bandwidth[0], d.delivered_bandwidth[0]
    return [{"template": name, "level": lv,
             "links_per_byte": ", ".join(f"{kinds[g]} {f[0]:.2f}" for g, f in path if f[0] > 0),
             "level_tbps": own[j] / 1e12, "d2d_ceiling_tbps": cap[j] / 1e12, "delivers_tbps": got[j] / 1e12}
            for j, (lv, path) in enumerate(zip(d.level_names, d.d2d_crossings(), strict=True))
            if any(f[0] > 0 for _, f in path)]


def _power_row(hw, d, node) -> dict:
    """One template's power columns for ``dse area``: the 8192^3 GEMM in bf16 and in its hungriest mode, every
    unit at once (``dse.cost.power.stress_power``), the published limit, the GEMM's error against it and where the
    limit falls against the modelled range [hungriest GEMM, all units at once] (0 inside it)."""
    from dse.cost.power import gemm_mode_power, stress_power

    modes = {dt: float(w[0]) for dt, w in gemm_mode_power(d, node).items()}
    dt = "bf16" if "bf16" in modes else next(iter(modes))
    hungriest = max(modes, key=modes.__getitem__)
    low, high = modes[hungriest], float(stress_power(d, node)[0])
    pub = hw.published
    limit = (pub.chip_power_limit_w or pub.tdp_w) if pub else None
    outside = float("nan") if not limit else (limit / high - 1 if limit > high else min(0.0, limit / low - 1)) * 100
    return {"gemm_power_w": modes[dt], "peak_mode": hungriest, "peak_mode_power_w": low, "all_units_w": high,
            "published_tdp_w": pub.tdp_w if pub and pub.tdp_w else float("nan"),
            "chip_limit_w": pub.chip_power_limit_w if pub and pub.chip_power_limit_w else float("nan"),
            "power_err_pct": (low / limit - 1) * 100 if limit else float("nan"), "limit_outside_range_pct": outside}


#: how far a template's hungriest GEMM may sit from its published power limit (issue 32: within 25 %)
POWER_BAR_PCT = 25.0


def _power_summary(rows: list[dict]) -> str:
    """One line under ``dse area``'s table: of the templates with a published power limit, how many draw within
    :data:`POWER_BAR_PCT` of it in their hungriest 8192^3 GEMM (``power_err_pct``), and the others with their error;
    empty when none of ``rows`` has a limit."""
    import math

    pub = [r for r in rows if not math.isnan(r["power_err_pct"])]
    if not pub:
        return ""
    out = [r for r in pub if abs(r["power_err_pct"]) > POWER_BAR_PCT]
    return (f"power: the hungriest GEMM is within {POWER_BAR_PCT:g} % of the published limit on {len(pub) - len(out)} "
            f"of {len(pub)} templates" + ("; outside: " + ", ".join(f"{r['template']} {r['power_err_pct']:+.2f} %"
                                                                     for r in out) if out else ""))


def cmd_area(args: argparse.Namespace) -> int:
    import pandas as pd

    from dse.cost.area import COMPONENTS, area, check_package, register_mib, shoreline
    from dse.cost.cost import unit_cost
    from dse.cost.dies import calibration_table, fitted_reference
    from dse.hardware.designs import DesignBatch
    from dse.hardware.templates import list_templates, load_hardware

    rows, die_rows, noc_rows, d2d_rows = [], [], [], []
    if args.dram_part is not None and not args.templates:
        raise DseError(f"got --dram-part {args.dram_part} without a template; accepted: one or more template names "
                       "or YAML paths (dse area npu-7nm --dram-part hbm4)", field="--dram-part")
    for arg in args.templates or list_templates():
        hw = load_hardware(arg) if args.dram_part is None else with_dram_part(arg, args.dram_part)
        name = _template_label(arg, hw)
        d = DesignBatch.from_hardware(hw)
        ar = area(d)
        noc_rows.append(_noc_row(name, d))
        check_package(d, ar, file=name)
        _build_warnings([hw], [name])
        c = unit_cost(d, ar)
        if ar.multi_die:
            d2d_rows += _d2d_rows(name, d)
            die_rows += [{"template": name, "die": g.name, "count": int(g.count[0]), "node": g.node.name,
                          "on": g.stacked_on or "", "model_mm2": g.mm2[0], "d2d_tbps": g.d2d_tbps[0],
                          "d2d_mm2": g.parts["d2d"][0],
                          "published_mm2": g.published_mm2 or float("nan"),
                          "err_pct": (g.mm2[0] / g.published_mm2 - 1) * 100 if g.published_mm2 else float("nan"),
                          "yield_pct": c.die_yields[g.name][0] * 100,
                          "assembly_yield_pct": c.assembly_yield[0] * 100} for g in ar.dies]
        sh = shoreline(d, ar)
        power = _power_row(hw, d, ar.node)
        rows.append({"template": name, "node": hw.process_node, "cores": hw.compute.cores,
                     "spare_cores": hw.compute.spare_cores,  # on the die beside the enabled ones, fused off for yield
                     "registers_mib": register_mib(d)[0],  # priced inside matrix_mm2 (dse.cost.area.register_mib)
                     **{f"{k}_mm2": ar.parts[k][0] for k in COMPONENTS},
                     "total_mm2": ar.total[0], "edge_need_mm": sh.edge_need_mm[0], "perimeter_mm": sh.perimeter_mm[0],
                     # a package of several die kinds: its worst die kind's yield (it was the first kind's: 92 % for
                     # MI300X's XCDs beside 82 % for its IODs), then the yield of bonding its tested dies together
                     "yield_pct": min(v[0] for v in c.die_yields.values()) * 100 if c.die_yields else c.yield_[0] * 100,
                     "assembly_yield_pct": c.assembly_yield[0] * 100,
                     "unit_cost_usd": c.total[0], **power,
                     # the hungriest GEMM's heat over the silicon it leaves through (dse.cost.area.footprint_mm2)
                     "power_density_w_per_mm2": power["peak_mode_power_w"] / ar.footprint_mm2[0]})
    if args.format == "json":
        theta = fitted_reference()
        _print_json({"templates": _records(pd.DataFrame(rows)), "package_dies": _records(pd.DataFrame(die_rows)),
                     "networks": _records(pd.DataFrame(noc_rows)), "d2d_ceilings": _records(pd.DataFrame(d2d_rows)),
                     "dies": _records(calibration_table()),
                     "fit_7nm": {"systolic_pe_um2_bf16": theta["pe"], "scratchpad_mm2_per_mib": theta["scratchpad"]}})
        return 0
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.1f}",
                                           formatters={"power_density_w_per_mm2": "{:.2f}".format}))
        if line := _power_summary(rows):
            print(line)
        print("\non-chip networks (dse.hardware.noc, priced by dse.cost.noc): routers of the topology; links sized by the "
              "template or, auto, so that the network's traffic (local: each core's share at its port; uniform: across "
              "the bisection) gets what it carries through; delivers = what it gets through (the predictor reads the "
              "carried level at no more)")
        print(pd.DataFrame(noc_rows).to_string(index=False, float_format=lambda v: f"{v:.2f}"))
        if die_rows:
            print("\nmulti-die packages: each die kind (area per die; published where public; yields of one die and "
                  "of bonding every die)")
            print(pd.DataFrame(die_rows).to_string(index=False, float_format=lambda v: f"{v:.1f}"))
        if d2d_rows:
            print("\ndie-to-die links (dse.hardware.designs.DesignBatch.d2d_ceiling): the links a byte of each level "
                  "crosses on each die kind's network (its remote share x the mean hops of the kind's d2d_topology); a "
                  "level delivers no more than n dies x half their d2d bandwidth / those links (inf: no bandwidth given)")
            print(pd.DataFrame(d2d_rows).to_string(index=False, float_format=lambda v: f"{v:.2f}"))
        print("\ndie area: published vs the shipped model, the fit on all calibration dies and leave-one-out "
              "(holdout dies are in no fit)")
        t = calibration_table()
        fmt = {c: (lambda v: f"{v:+.1f}") if c.endswith("_pct") else (lambda v: f"{v:.4g}")
               for c in t.columns if t[c].dtype.kind == "f"}
        print(t.to_string(index=False, formatters=fmt))
        theta = fitted_reference()
        print(f"\nfit at 7 nm: systolic PE {theta['pe']:.4g} um2 (bf16), "
              f"scratchpad {theta['scratchpad']:.4g} mm2/MiB; |error| median / max: "
              + ", ".join(f"{role} LOO {g['loo_err_pct'].abs().median():.1f} / {g['loo_err_pct'].abs().max():.1f} %"
                          for role, g in t.groupby("role")))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from pathlib import Path

    import pandas as pd

    from dse.hardware.templates import load_hardware
    from dse.report.render import render
    from dse.validate.outputs import validation_document
    from dse.validate.suite import check_measurements, error_stats, run_suite

    templates = {}
    for item in args.template or []:
        if "=" not in item:
            raise DseError(f"got {item!r}; accepted: NAME=TEMPLATE (e.g. a100-80gb=a100-80gb-calibrated)",
                           field="--template")
        name, spec = item.split("=", 1)
        templates[name] = load_hardware(spec).model_copy(update={"name": name})  # it stands in for NAME
    prepared: dict = {}  # each row prepared once: by the file's check, then predicted from there
    chips = {n.strip() for n in args.hardware.split(",")} if args.hardware else None
    # the whole file, before any prediction (the roofs of the chips asked for)
    df, warnings = check_measurements(args.measurements, templates, prepared, chips)
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    df = _only(df, "hardware", args.hardware, "--hardware")
    families = [n.strip() for n in args.family.split(",") if n.strip()] if args.family else None
    status(args, f"predicting {len(df)} measurement rows")
    res = run_suite(df, templates, families, prepared)  # only the families asked for are predicted
    out = Path(args.out)
    doc = validation_document(res)
    render(doc, out)
    # the summary first, then the tables by family, chip and pair, then every row (validation.csv has them too)
    st = error_stats(res)
    print(f"{st['covered']} out-of-sample rows of {st['rows']}: median |time error| {st['median_abs_error_pct']:.1f} %, "
          f"max {st['max_abs_error_pct']:.1f} %  ({out / 'validation.csv'})")
    fam = next(t.frame for t in doc.tables if t.file == "families.csv")
    if fam["rows"].sum() > 0:  # none when --hardware or --family keeps NPU rows only
        print("\nerror by family, GPU chips (out of sample: rows whose measurement set no template coefficient; time "
              "error = predicted / measured time - 1, rates turned into time)")
        print(fam.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    by_hw = next(t.frame for t in doc.tables if t.file == "templates.csv")
    npu = set(res.loc[res["style"] == "npu", "hardware"].astype(str))
    if npu:
        print("\nerror by NPU chip and family (systolic arrays; the same time error)")
        print(by_hw[by_hw["hardware"].isin(npu)].to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    print("\nerror by template (all families; templates.csv splits each by family)")
    print(by_hw[by_hw["family"] == "all"].drop(columns=["family", "p10_time_error_pct", "p90_time_error_pct"])
          .to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    pairs = next(t.frame for t in doc.tables if t.file == "chip_pair_errors.csv")
    if len(pairs):
        print("\ncross-chip speedups (rows that differ only in the chip: predicted / measured speedup - 1; "
              "chip_pairs.csv lists every pair)")
        print(pairs.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    cols = ["id", "family", "metric", "measured", "predicted", "error_pct", "time_error_pct", "fitted_into"]
    print("\nper row (out of sample unless fitted_into names what it set; error_pct: of the metric, as measured "
          "(a rate's error has the other sign); time_error_pct: predicted / measured time - 1, what the tables above "
          "use):")
    with pd.option_context("display.width", 200, "display.max_colwidth", 90):
        print(res[res["status"] == "covered"][cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        other = res[res["status"] != "covered"]
        if len(other):
            print("\nnot covered / errors:")
            for _, r in other.iterrows():
                print(f"  {r['id']}: {r['status']}: {r['reason']}")
    return 0


def _only(df: pd.DataFrame, column: str, names: str | None, flag: str) -> pd.DataFrame:
    """The rows of ``df`` whose ``column`` is one of the comma-separated ``names`` (all rows without them); a name no
    row has is one ``DseError`` listing the names that have rows."""
    if not names:
        return df
    want = [n.strip() for n in names.split(",") if n.strip()]
    have = sorted(set(df[column].astype(str)))
    missing = [n for n in want if n not in have]
    if missing or not want:
        raise DseError(f"got {names!r}; accepted: comma-separated names that have rows ({', '.join(have)})", field=flag)
    return df[df[column].astype(str).isin(want)].reset_index(drop=True)


def _calibration_rows(args: argparse.Namespace, hw) -> tuple[pd.DataFrame, list, list[str]]:
    """The measurements (the whole file checked first, as ``dse validate`` does: a malformed row is an error, not a
    skipped row), ``hw``'s cases and the rows skipped as not covered; warns when the rows are fewer than the
    parameters the fit moves."""
    from dse.validate.calibrate import chip_cases, parameter_names
    from dse.validate.suite import check_measurements

    named = {hw.name: hw, args.template: hw}  # rows may name the template as it is given (a YAML path) or its name
    df, warnings = check_measurements(args.measurements, named,
                                      others=f"the calibrated template, by its name {hw.name!r} or as given")
    df["hardware"] = df["hardware"].astype(str).str.strip().replace({args.template: hw.name})
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    cases, skipped = chip_cases(df, hw)
    if not cases:
        have = sorted(set(df["hardware"]))  # the chips that have rows, for the message
        why = (f"whose {len(skipped)} row{'s' * (len(skipped) != 1)} the model cannot cover ({skipped[0]})" if skipped
               else "which no measurement row names")
        raise DseError(f"got {hw.name!r}, {why}; accepted: a template with rows it covers ({', '.join(have)})",
                       field="template")
    n_params = len(parameter_names(hw)) - (0 if any(c.isolated for c in cases) else 1)  # sync only with isolated rows
    if len(cases) < n_params:
        print(f"warning: {hw.name}: {len(cases)} row{'s' * (len(cases) != 1)} for {n_params} parameters: the fit is "
              "underdetermined (its errors say nothing), and leave-one-out needs 2 rows", file=sys.stderr)
    return df, cases, skipped


def cmd_calibrate(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    import numpy as np
    import pandas as pd

    from dse.hardware.templates import load_hardware
    from dse.validate.calibrate import (
        bound_warnings,
        calibrate,
        calibrated_template,
        chip_cases,
        leave_chip_out,
        overhead_name,
        style_chips,
    )
    from dse.validate.families import fitted
    from dse.validate.suite import chip_style, load_measurements
    from dse.yamlio import write_yaml

    t_start = time.monotonic()
    hw = load_hardware(args.template)
    df, cases, skipped = _calibration_rows(args, hw)
    pool: list[tuple] = []
    if not args.no_loo:
        names = style_chips(df, hw) if args.chips is None else [hw.name, *dict.fromkeys(
            n.strip() for n in args.chips.split(",") if n.strip() and n.strip() != hw.name)]
        pool = [(hw, cases)] + [(h, chip_cases(df, h)[0]) for h in (load_hardware(n) for n in names[1:])]
        pool = [p for p in pool if p[1]]
    status(args, f"fitting {hw.name} on {len(cases)} rows" + ("" if args.no_loo else
           f", then {len(cases)} leave-one-out and one leave-family-out refit per family"
           + (f", then one fit shared by {len(pool)} chips ({sum(len(p[1]) for p in pool)} rows) and one "
              "leave-one-chip-out refit per chip" if len(pool) > 1 else "") + " (up to a few minutes)"))
    fit = calibrate(hw, cases, loo=not args.no_loo)
    print(f"calibrating {hw.name} on {len(cases)} rows ({len(skipped)} skipped)")
    w = max(18, *(len(n) for n in fit.names))
    for name, v in zip(fit.names, fit.values, strict=True):
        print(f"  {name:<{w}s} {v:.4g}")
    for line in bound_warnings(fit.names, fit.values):
        print(f"warning: {line}", file=sys.stderr)
    t = fit.table()
    if args.no_loo:  # no refits: no leave-one-out or leave-family-out columns of NaN
        t = t.drop(columns=[c for c in t.columns if c.startswith(("loo_", "leave_family_out"))])
    print(t.to_string(index=False, float_format=lambda v: f"{v:+.1f}"))
    def pct(v: float) -> str:  # a statistic with no row behind it (leave-one-out of one row) prints n/a, not nan
        return f"{v:.1f}" if np.isfinite(v) else "n/a"

    ab = lambda a: pct(float(np.nanmedian(np.abs(a)))) if np.isfinite(a).any() else "n/a"  # noqa: E731
    mx = lambda a: pct(float(np.nanmax(np.abs(a)))) if np.isfinite(a).any() else "n/a"  # noqa: E731
    if args.no_loo:
        print(f"median |time error|: template {ab(fit.before_error_pct)} %, fit {ab(fit.fit_error_pct)} % "
              f"(max {mx(fit.before_error_pct)} / {mx(fit.fit_error_pct)} %); --no-loo: no leave-one-out")
    else:
        print(f"median |time error|: template {ab(fit.before_error_pct)} %, fit {ab(fit.fit_error_pct)} %, "
              f"leave-one-out {ab(fit.loo_error_pct)} % (max {mx(fit.before_error_pct)} / "
              f"{mx(fit.fit_error_pct)} / {mx(fit.loo_error_pct)} %)")

    def pairs(ft: pd.DataFrame, columns: tuple[tuple[str, str], ...]) -> dict[str, list[str]]:
        return {label: [f"{pct(a)} / {pct(b)}" for a, b in zip(ft[f"median_abs_{c}"], ft[f"max_abs_{c}"], strict=True)]
                for label, c in columns}

    out = Path(args.out)
    if not args.no_loo:
        print("\nby family: median / max |time error| (leave-family-out refits without every row of the family)")
        ft = fit.family_table()
        show = pd.DataFrame({"family": ft["family"], "rows": ft["rows"], **pairs(ft, (
            ("template %", "before_error_pct"), ("fit %", "fit_error_pct"), ("leave-one-out %", "loo_error_pct"),
            ("leave-family-out %", "leave_family_out_error_pct")))})
        print(show.to_string(index=False))
        if len(pool) > 1:
            chips = leave_chip_out(pool)
            meas = load_measurements(args.measurements)  # the template column over the rows dse validate counts
            ct = chips.chip_table(set(meas.loc[fitted(meas), "id"].astype(str)))
            print(f"\nleave-one-chip-out: one set of fractions and launch overhead (one per dispatch: kernels, static) "
                  f"fitted to the rows of {len(pool)} {chip_style(hw)} chips at once (each on its own template),\n"
                  "then refitted without every row of a chip to predict that chip's rows: "
                  "median / max |time error| per chip left out")
            show = pd.DataFrame({"chip": ct["chip"], "rows": ct["rows"], **pairs(ct, (
                ("template % (out of sample)", "before_error_pct"), ("shared fit %", "pooled_fit_error_pct"),
                ("leave-chip-out %", "leave_chip_out_error_pct")))})
            print(show.to_string(index=False))
            own = {"matrix_eff", "vector_eff", overhead_name(hw), *(f"{m.name}_eff" for m in hw.memory)}
            print(f"{hw.name} from the other chips' rows: " + ", ".join(
                f"{k} {v:.4g}" for k, v in chips.transferred(hw.name).items() if k in own))
            out.mkdir(parents=True, exist_ok=True)
            ct.to_csv(out / f"{hw.name}-leave-chip-out.csv", index=False)
            chips.table().to_csv(out / f"{hw.name}-leave-chip-out-rows.csv", index=False)
            print(f"leave-one-chip-out tables: {out / f'{hw.name}-leave-chip-out.csv'} (per chip), "
                  f"{hw.name}-leave-chip-out-rows.csv (per row)")
        else:
            which = "named by --chips" if args.chips is not None else f"of style {chip_style(hw)}"
            print(f"\nleave-one-chip-out: no other chip {which} has covered rows")
    path = out / f"{hw.name}-calibrated.yaml"
    write_yaml(path, calibrated_template(hw, fit).model_dump(mode="json", exclude_none=True))
    print(f"calibrated template: {path} (calibrate took {time.monotonic() - t_start:.0f} s)")
    return 0


def cmd_host(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    import numpy as np
    import pandas as pd

    from dse.report.render import render
    from dse.validate.calibrate import calibrate, calibrated_template
    from dse.validate.host import (
        host_document,
        host_template,
        measure_host,
        measure_panel,
        panel,
        panel_cases,
        run_panel,
    )
    from dse.yamlio import write_yaml

    t0 = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print("measuring this machine (GEMM peaks, bandwidth per cache level, call overhead) ...", flush=True)
    m = measure_host()
    hw = host_template(m)
    write_yaml(out / "host.yaml", hw.model_dump(mode="json", exclude_none=True))
    items = panel()
    print(f"timing {len(items)} operators (cold cache, median of repeats) ...", flush=True)
    measured = measure_panel(items)
    before = run_panel(items, hw, measured)
    fit = calibrate(hw, panel_cases(items, measured, hw))
    cal = calibrated_template(hw, fit)
    write_yaml(out / "host-calibrated.yaml", cal.model_dump(mode="json", exclude_none=True))
    after = run_panel(items, cal, measured)
    table = after.assign(uncalibrated_error_pct=before["error_pct"].to_numpy(), loo_error_pct=fit.loo_error_pct)
    render(host_document(table, after, cal), out)
    cols = ["operator", "ai_flop_per_byte", "measured_s", "predicted_s", "error_pct", "uncalibrated_error_pct",
            "loo_error_pct", "roof_utilization", "region"]
    with pd.option_context("display.width", 220, "display.max_columns", 20):
        print(table[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    med = lambda a: float(np.nanmedian(np.abs(a)))  # noqa: E731
    print(f"\nGEMM peak fp64 {m.peak['fp64'] / 1e9:.1f} / fp32 {m.peak['fp32'] / 1e9:.1f} GFLOP/s; bandwidth "
          + ", ".join(f"{k} {v / 1e9:.0f} GB/s" for k, v in m.bandwidth.items())
          + f"; call overhead {m.overhead_s * 1e6:.2f} us")
    print(f"median |predicted - measured| / measured: {med(before['error_pct']):.1f} % measured template, "
          f"{med(after['error_pct']):.1f} % calibrated, {med(fit.loo_error_pct):.1f} % leave-one-out")
    print(f"wrote {out}/host.yaml, host-calibrated.yaml, host_panel.csv, host_roofline.png "
          f"({time.perf_counter() - t0:.0f} s)")
    return 0


def cmd_gpu(args: argparse.Namespace) -> int:
    from pathlib import Path

    from dse.validate.gpu import parse_nvidia_smi, query_nvidia_smi, template_for
    from dse.yamlio import write_yaml

    if args.from_file:
        path = Path(args.from_file)
        if not path.is_file():
            raise DseError("file not found; accepted: a recorded nvidia-smi output", file=str(path))
        from dse.yamlio import read_text

        text = read_text(path, "a recorded nvidia-smi output", 1 << 20)
    else:
        text = query_nvidia_smi()
    out = Path(args.out)
    try:
        gpus = parse_nvidia_smi(text)
    except DseError as exc:  # name the recorded file the lines came from
        raise DseError(exc.message, file=exc.file or (args.from_file or "nvidia-smi"), field=exc.field) from None
    for i, gpu in enumerate(gpus):
        hw = template_for(gpu)
        path = write_yaml(out / f"gpu{i}-{hw.name}.yaml", hw.model_dump(mode="json", exclude_none=True))
        print(f"GPU {i}: {gpu['name']} -> {hw.name} ({path})")
    return 0


def cmd_kernels(args: argparse.Namespace) -> int:
    from pathlib import Path

    import pandas as pd

    from dse.hardware.templates import load_hardware
    from dse.report.render import render
    from dse.units import DTYPES, fallback_dtype
    from dse.validate.kernels import kernels_document, load_kernels, place

    hw = load_hardware(args.hardware)
    if args.dtype is not None and args.dtype not in DTYPES:
        raise DseError(f"got {args.dtype!r}; accepted: one of {', '.join(DTYPES)}", field="--dtype")
    df = place(load_kernels(args.file), hw, args.dtype)
    out = Path(args.out)
    peak = hw.compute.matrix.peak_tflops[fallback_dtype(args.dtype or hw.reference_dtype, hw.compute.matrix.peak_tflops)]
    render(kernels_document(df, hw, peak), out)
    cols = ["name", "ai_flop_per_byte", "achieved_tflops", "roof_tflops", "roof_utilization", "region", "status",
            "reason"]
    with pd.option_context("display.width", 200, "display.max_colwidth", 50):
        print(df[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    bad = int((df["status"] == "error").sum())
    suspect = int((df["status"] == "suspect").sum())
    print(f"{len(df) - bad - suspect} kernels placed, {bad} with errors, {suspect} above the roof; "
          f"{out / 'kernels.csv'}")
    if bad == len(df):  # nothing could be placed: the file, not the chip, is the problem
        raise DseError(f"got {len(df)} row(s), none readable ({df['reason'].iloc[0]}); accepted: rows with a duration "
                       "> 0 and FLOPs and bytes >= 0", file=str(args.file))
    return 0


def cmd_explore(args: argparse.Namespace) -> int:
    import contextlib

    from dse.explore.app import serve

    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: the server stops, the command exits 0
        serve(args.config, host=args.host, port=args.port, open_browser=not args.no_browser, mix=args.mix,
              check=args.check)
    if args.check:
        return 0
    print("dse explore: stopped", file=sys.stderr)
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    import pandas as pd

    from dse.plan_search import best_plan, no_fit_reason
    from dse.workloads.library import workload
    from dse.workloads.plans import SEARCHED

    scen = _scenario_of(args)
    # every field best_plan holds (sp is an on/off flag, below)
    fixed = {k: getattr(args, k) for k in SEARCHED if k != "sp" and getattr(args, k) is not None}
    if args.sp is not None:
        fixed["sp"] = args.sp == "on"
    if args.top < 1:
        raise DseError(f"got {args.top}; accepted: a positive integer (rows of the table shown)", field="--top")
    wl = workload(args.workload, **scen)
    status(args, f"predicting every plan of {wl.label()} on {args.chips} chips of {args.system}")
    r = best_plan(wl, args.system, args.chips, **fixed)
    cols = ["label", "tp", "pp", "dp", "fsdp", "ep", "sp", "microbatches", "interleave", "zero", "recompute", "time_s",
            "memory_gb", "fits", "error"]
    table = r.table
    if wl.scenario.get("phase") == "serving":  # what a pass gives: the batch's output tokens over the pass time
        table = table.assign(tokens_per_s=wl.scenario["batch"] * wl.scenario["output_len"] / table["time_s"])
        cols.insert(cols.index("time_s") + 1, "tokens_per_s")
    if "interleave" in table and (table["interleave"] == 1).all():
        table = table.drop(columns="interleave")
    if not (table["fsdp"] < table["dp"]).any():  # no hybrid sharding among the candidates: fsdp is dp or unset
        table = table.drop(columns="fsdp")
    shown = table[[c for c in cols if c in table]].head(args.top)
    if "error" in shown and not shown["error"].astype(bool).any():
        shown = shown.drop(columns="error")  # a shown candidate that did not build says why in this column
    if args.format == "json":
        _print_json({"workload": wl.label(), "system": args.system, "chips": args.chips, "seconds": r.seconds,
                     "best": r.best.model_dump(exclude_defaults=True) if r.best else None,
                     "time_s": r.prediction.time_s if r.prediction else None, "candidates": _records(r.table)})
        return 0
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    n_fit = int(r.table["fits"].sum())
    chips = f"{args.chips} chip{'s' * (args.chips != 1)}"  # 'on 1 chips'
    print(f"{len(r.table)} candidate plan{'s' * (len(r.table) != 1)} of {wl.label()} on {chips} of {args.system}, "
          f"{n_fit} fit; searched in {r.seconds:.1f} s")
    if r.best is None:
        raise DseError(f"no plan fits: {no_fit_reason(r)}; accepted: more chips or a chip with more memory",
                       field="--chips")
    p = r.prediction
    print(f"best: {r.best.label()} (zero {r.best.zero}, microbatches {r.best.m}, sp {r.best.sp}): "
          f"{p.time_s:.4g} s per {_time_unit(p)}, {p.workload.memory_bytes / 1e9:.1f} GB per chip of "
          f"{p.capacity_bytes / 1e9:.0f} GB")
    if p.serving:  # ranked by the pass; what the pass gives a user, as dse predict says it
        print(_serving_line(p.serving))
    return 0


def _time_unit(p) -> str:  # noqa: ANN001 - a Prediction
    """What a prediction's time is of: a serving pass or a step."""
    return "pass (prefill of the batch's prompts + output_len decode steps)" if p.serving else "step"


def _serving_line(sv: dict[str, float]) -> str:
    """A serving prediction's tokens/s, TTFT and TPOT (``Prediction.serving``), as dse predict and dse plan say them."""
    return (f"serving: {sv['tokens_per_s']:.1f} output tokens/s, TTFT {sv['ttft_s'] * 1e3:.2f} ms, "
            f"TPOT {sv['tpot_s'] * 1e3:.3f} ms (worst {sv['tpot_max_s'] * 1e3:.3f} ms)")


def _energy_fields(p) -> dict[str, float]:  # noqa: ANN001 - a Prediction
    """Energy of the predicted step on one chip and its average power (``dse.cost.power.mix_energy``: the same
    joules a study's power column and budget use), at the printed step time; a user could not check a study's
    per-workload power from the command line."""
    import numpy as np

    from dse.cost.power import mix_energy
    from dse.hardware.designs import DesignBatch
    from dse.workloads.mix import Mix

    d = DesignBatch.from_hardware(p.hardware)
    if p.system is not None:
        d = d.with_system(p.system)
    e = mix_energy(d, Mix.of([p.workload]), times=np.array([[p.time_s]]))
    return {"energy_j_per_chip": float(e.energy_j[0, 0]), "average_power_w": float(e.power_w[0, 0]),
            "static_power_w": float(e.static_w[0])}


def _rate_text(p) -> str:  # noqa: ANN001 - a Prediction
    """What a predicted step achieves: TFLOP/s per chip; for one collective the algorithm and bus bandwidth
    nccl-tests prints (bus bytes = the bytes one rank sends); for a copy its bytes read and written per second."""
    wl = p.workload
    coll = wl.ops["coll"].iloc[0] if len(wl.ops) == 1 else ""
    if wl.flops > 0:
        return f"{p.achieved_flops / 1e12:.2f} TFLOP/s achieved per chip"
    if coll:
        from dse.predict.network import sent_bytes

        S = float(wl.ops["net_bytes"].iloc[0])
        bus = sent_bytes(coll, S, wl.chips)  # nccl-tests' bus bytes are the bytes one rank sends
        return f"{S / p.time_s / 1e9:.1f} GB/s algorithm bandwidth, {bus / p.time_s / 1e9:.1f} GB/s bus bandwidth"
    return f"{wl.bytes / p.time_s / 1e9:.0f} GB/s read and written per chip"


#: the per-operator table of ``dse predict`` with each quantity's unit in its heading (the JSON keeps the ops' names)
PREDICT_UNITS = {"flops": "flop", "ai": "ai_flop_per_byte", "time_s": "time_s", "total_time_s": "total_time_s",
                 "utilization": "utilization_of_roof"}


#: the scenario fields ``dse predict`` and ``dse plan`` take as flags (``_add_scenario_args``)
SCENARIO_FLAGS = ("phase", "batch", "seq", "context", "dtype", "weight_dtype", "weight_dtypes", "weight_group", "kv_dtype",
                  "kv_block", "execution", "resolution", "input_len", "output_len", "chunk", "serving_engine", "dropout",
                  "attention_kernel", "attention_dtype", "activation_dtype", "input_quant", "causal", "kv_heads",
                  "gemm_kernel", "attention_gqa", "residency", "fused_attention", "fuse_elementwise", "logits",
                  "memory_format", "framework", "weight_cast", "optimizer", "zero_grad", "optimizer_dtype", "grad_dtype")


def _scenario_of(args: argparse.Namespace) -> dict[str, Any]:
    """The scenario fields given as flags (:data:`SCENARIO_FLAGS`), ``--fused-attention on|off`` as a bool."""
    scen = {k: getattr(args, k) for k in SCENARIO_FLAGS if getattr(args, k, None) is not None}
    if "fused_attention" in scen:  # an on/off flag
        scen["fused_attention"] = scen["fused_attention"] == "on"
    return scen


def cmd_predict(args: argparse.Namespace) -> int:
    import pandas as pd

    from dse.api import predict
    from dse.predict import gb
    from dse.workloads.library import plan_for, workload

    scen = _scenario_of(args)
    plan = {k: getattr(args, k) for k in ("tp", "pp", "dp", "ep", "microbatches", "zero", "recompute", "interleave",
                                          "fsdp", "first_stage_layers", "last_stage_layers", "bucket_mb",
                                          "tp_per_chip", "pad_heads")
            if getattr(args, k) is not None}
    if args.sp is not None:
        plan["sp"] = args.sp == "on"
    if args.overlap is not None:
        plan["overlap"] = overlap_flag(args.overlap)
    # the plan applied once, when the workload is built
    wl = workload(args.workload, plan=plan_for(args.chips, **plan) if args.chips is not None or plan else None, **scen)
    if len(args.hardware) > 1:
        return _predict_several(args, wl)
    args.hardware = args.hardware[0]
    hw = args.hardware if args.dram_part is None else with_dram_part(args.hardware, args.dram_part)
    p = predict(wl, hw, system=args.system)
    cols = ["name", "kind", "ran_on", "count", "flops", "ai", "time_s", "total_time_s", "bound", "utilization",
            "region"]
    if (p.ops["bound_via"] != "").any():  # a level held down by the on-chip network or d2d links; a GEMM's pipeline
        cols.insert(cols.index("bound") + 1, "bound_via")
    if args.format == "json":
        from dse.validate.bands import band_for

        band = band_for(p.workload, p.hardware)
        lo, hi = band.interval(p.time_s)
        wl = p.workload
        doc = {"workload": wl.label(), "hardware": p.hardware.name, "time_s": p.time_s,
               "achieved_tflops": p.achieved_flops / 1e12, "band": {"family": band.family,
               "p10_pct": band.p10_pct, "p90_pct": band.p90_pct, "rows": band.rows, "measured_s": [lo, hi]},
               "memory_gb_per_chip": wl.memory_bytes / 1e9, "fits": p.fits,
               # what the table's last line says: the parts of the footprint and what the chip holds
               "memory_gb_by_part": {k: float(v) / 1e9 for k, v in p.memory.items()},
               "capacity_gb_per_chip": p.capacity_bytes / 1e9, "infeasible_reason": p.infeasible_reason or None,
               "time_share_by_bound": {k: float(v) for k, v in p.time_by_bound().items()},  # fractions of time_s
               "notes": [line.removeprefix("note: ") for line in _mode_notes(p) + _residency_notes(p)],
               "on_chip": _on_chip(p),
               **_energy_fields(p)}
        if p.system is not None:  # a multi-chip run: the system, the chips and the step's network and bubble time
            doc |= {"system": p.system.name, "chips": wl.chips, "network_s": p.network_s, "bubble_s": p.bubble_s}
        if p.serving:
            doc["serving"] = {k: float(v) for k, v in p.serving.items()}
        # the table's column names, each with its unit (flop, ai_flop_per_byte, utilization_of_roof)
        doc["ops"] = _records(p.ops[cols + ["clock_fraction", "fill"]].rename(columns=PREDICT_UNITS))
        _print_json(doc)
        return 0
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_rows", 200):
        shown = p.ops[cols].rename(columns=PREDICT_UNITS)  # every column with its unit
        print(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    for line in _mode_notes(p) + _residency_notes(p):
        print(line)
    wl = p.workload
    chip = _template_label(args.hardware, p.hardware)  # a template read from a file: its path, as dse hardware says
    if chip != p.hardware.name:
        chip += f" ({p.hardware.name})"
    where = chip + (f" x {wl.chips} on {p.system.name}" if p.system is not None else "")
    unit = _time_unit(p)
    rate = _rate_text(p)
    print(f"{wl.label()} on {where}: {p.time_s * 1e3:.4f} ms per {unit}, {rate}"
          + (f", network {p.network_s * 1e3:.3f} ms, bubble {p.bubble_s * 1e3:.3f} ms" if p.system is not None else ""))
    en = _energy_fields(p)
    print(f"energy: {en['energy_j_per_chip']:.4g} J per {unit.split(' (')[0]} per chip, average power "
          f"{en['average_power_w']:.4g} W (static {en['static_power_w']:.4g} W; dse.cost.power, as a study prices it)")
    named = getattr(args, "system", None) is not None or p.system is not None and args.hardware == p.system.name
    if p.system is not None and not named:  # the hardware argument naming a system chooses it too
        print(f"system: {assumed_system(p.system, p.hardware.name)} (--system to choose)")
    elif p.system is not None and p.system.chip != p.hardware.name:  # a what-if: another chip in this system's network
        print(f"system: {p.system.name} is built for {p.system.chip}; here it carries {p.hardware.name} (a what-if: "
              f"{p.hardware.name}'s peaks and memory, {p.system.name}'s links)")
    from dse.validate.bands import band_for

    band = band_for(wl, p.hardware)
    lo, hi = band.interval(p.time_s)
    if not p.fits:  # the time streams weights the chip cannot hold: no measurement could fall in a band around it
        print("error band: none: the workload does not fit this chip's memory (below), so no run measures this time")
    elif band.rows:
        print(f"error band: {band.label()}; the measured {'pass' if p.serving else 'step'} would be "
              f"{lo * 1e3:.4f} .. {hi * 1e3:.4f} ms")
    else:
        print(f"error band: {band.label()}")
    if p.serving:
        print(_serving_line(p.serving))
    # GB to 2 decimals from 1 GB up; a footprint under 1 GB (an SRAM-only chip's) to 3 significant digits, not 0.00
    small = wl.memory_bytes < 1e9
    fmt = gb if small else (lambda v: f"{v / 1e9:.2f}")
    mem = ", ".join(f"{k} {fmt(v)}" for k, v in p.memory.items() if v) or "nothing held"
    print(f"memory per chip: {fmt(wl.memory_bytes)} GB ({mem}) of {gb(p.capacity_bytes)} GB: "
          + ("fits" if p.fits else f"DOES NOT FIT ({p.infeasible_reason})"))
    on_chip = _on_chip(p)
    if on_chip is not None:
        print(f"on chip: {on_chip['text']}")
    return 0


def _predict_several(args: argparse.Namespace, wl) -> int:  # noqa: ANN001 - a Workload
    """``dse predict MODEL CHIP CHIP ...``: one workload on several chips, one row each (time, speedup over the first
    chip, achieved rate, the ceiling that binds most of the time, energy and power, memory, error band), the chip
    comparison an architect makes first; each row is the prediction ``dse predict MODEL CHIP`` prints alone."""
    import pandas as pd

    from dse.api import predict
    from dse.validate.bands import band_for

    rows, hws = [], []
    for arg in args.hardware:
        p = predict(wl, arg if args.dram_part is None else with_dram_part(arg, args.dram_part), system=args.system)
        hws.append(p.hardware)
        share = p.time_by_bound()
        band = band_for(p.workload, p.hardware)
        rows.append({"hardware": _template_label(arg, p.hardware), "time_s": p.time_s,
                     "achieved_tflops": p.achieved_flops / 1e12, "binding": str(share.idxmax()),
                     "binding_share_pct": 100 * float(share.max()), **_energy_fields(p),
                     "memory_gb_per_chip": p.workload.memory_bytes / 1e9, "capacity_gb_per_chip": p.capacity_bytes / 1e9,
                     "fits": p.fits, "band": band.span() if band.rows and p.fits else "none",
                     "band_rows": band.rows, "band_borrowed": band.rows > 0 and band.borrowed,
                     "unit": _time_unit(p).split(" (")[0], "system": p.system.name if p.system is not None else None,
                     "tokens_per_s": float(p.serving["tokens_per_s"]) if p.serving else None})
    df = pd.DataFrame(rows)
    df.insert(2, "speedup_vs_first", df["time_s"].iloc[0] / df["time_s"])
    spans = _speedup_spans(df, hws)
    df.insert(3, "speedup_measured_lo", [s[0] for s in spans])
    df.insert(4, "speedup_measured_hi", [s[1] for s in spans])
    df.insert(5, "speedup_band", [s[2] for s in spans])
    if args.format == "json":
        _print_json({"workload": wl.label(), "chips": _records(df)})
        return 0
    shown = pd.DataFrame({
        "chip": df["hardware"], f"time_ms per {df['unit'].iloc[0]}": df["time_s"] * 1e3,
        "speedup (x)": df["speedup_vs_first"],
        "measured speedup would be (x)": [f"{lo:.3g}..{hi:.3g}" if lo == lo else "-" for lo, hi in
                                          zip(df["speedup_measured_lo"], df["speedup_measured_hi"], strict=True)],
        "TFLOP/s per chip": df["achieved_tflops"],
        "binds most (% of time)": [f"{b} {s:.0f} %" for b, s in zip(df["binding"], df["binding_share_pct"], strict=True)],
        "energy (J per chip)": df["energy_j_per_chip"], "power (W)": df["average_power_w"],
        "memory (GB of GB)": [f"{m:.3g} of {c:.3g}" + ("" if f else " DOES NOT FIT")
                              for m, c, f in zip(df["memory_gb_per_chip"], df["capacity_gb_per_chip"], df["fits"],
                                                 strict=True)],
        "error band": [b if not n else f"{b} ({n} rows{', borrowed' if br else ''})" if b != "none" else b
                       for b, n, br in zip(df["band"], df["band_rows"], df["band_borrowed"], strict=True)]})
    if df["tokens_per_s"].notna().any():  # a serving pass: what it gives a user
        shown.insert(3, "output tokens/s", df["tokens_per_s"])
    if df["system"].notna().any():  # a multi-chip run: the system each chip's network came from
        shown.insert(1, "system", df["system"].fillna("-"))
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        print(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"{wl.label()}: speedup = {df['hardware'].iloc[0]}'s time / the chip's (each row is `dse predict` of one "
          "chip); the measured speedup would be in the range (p10..p90; min..max of fewer than 10) of the speedup "
          "errors on published pairs of the two chips (dse validate's cross-chip speedups), else of every pair:")
    for chip, band in zip(df["hardware"].iloc[1:], df["speedup_band"].iloc[1:], strict=True):
        print(f"  {chip}: {band}")
    return 0


def _speedup_spans(df, hws: list) -> list[tuple[float, float, str]]:  # noqa: ANN001 - a DataFrame, Hardware
    """Per chip of ``dse predict MODEL A B ...``: the interval its measured speedup over the first chip is expected
    in (``Band.interval`` of :func:`dse.validate.bands.speedup_band`; the first chip: NaN), and the band's words."""
    from dse.validate.bands import speedup_band

    out = [(float("nan"), float("nan"), "")]
    for hw, s in zip(hws[1:], df["speedup_vs_first"].iloc[1:], strict=True):
        band = speedup_band(hws[0], hw)
        if band is None:
            out.append((float("nan"), float("nan"), "no published pairs to say"))
            continue
        out.append((*band.interval(s), f"{band.span()} ({band.family}{'' if band.borrowed else f', {band.rows} pairs'})"))
    return out


def _on_chip(p) -> dict | None:  # noqa: ANN001 - a Prediction
    """What stays in on-chip SRAM between operators (``dse.report.residency``, as a study's summary.md words it for
    its best design): the resident level, the shares that stay and the size that keeps the next tensor; None where
    the table has no residency columns."""
    from dse.hardware.designs import DesignBatch
    from dse.report.residency import nothing_resident_text, residency_text, resident_level, workload_residency

    d = DesignBatch.from_hardware(p.hardware)
    level = resident_level(d)
    if level is None:
        return {"level": None, "text": nothing_resident_text(d)}
    r = workload_residency(p.ops, level)
    if r is None:
        return None
    pct = {k: (100 * v if size > 0 and v == v else None)  # None (JSON null) where the workload has none, not NaN
           for k, v, size in (("activations_pct", r.activations, 1.0), ("weights_pct", r.weights, r.weights_bytes),
                              ("kv_cache_pct", r.kv, r.kv_bytes))}
    return {"level": level.label(), **pct, "next_kind": r.next_kind,
            "next_mib": None if r.next_kind is None else r.next_mib,
            "text": f"{level.label()}: {residency_text(r, level)}"}


def _mode_notes(p) -> list[str]:  # noqa: ANN001 - a Prediction
    """A ``note:`` line for each dtype the prediction's matrix-unit operators run in that the unit has no mode of
    its own for (``dse.units.fallback_dtype``: bf16 on a V100 runs in its fp16 mode, fp8 on an A100 in a wider
    one): the table's times are that mode's, said rather than silent."""
    from dse.units import fallback_dtype

    modes = p.hardware.compute.matrix.peak_tflops
    on = p.ops[(p.ops["ran_on"] == "matrix") & (p.ops["flops"] > 0)]
    out = []
    for dt in dict.fromkeys(on["dtype"].astype(str)):
        if dt and dt not in modes:
            mode = fallback_dtype(dt, modes)
            out.append(f"note: {p.hardware.name}'s matrix unit has no {dt} mode: its {dt} operators run in its "
                       f"{mode} mode ({modes[mode]:g} TFLOP/s)" if mode else
                       f"note: {p.hardware.name}'s matrix unit has no {dt} mode")
    return out


def _residency_notes(p) -> list[str]:  # noqa: ANN001 - a Prediction
    """A ``note:`` line where main memory binds most of the time on a chip whose SRAM keeps no tensor between
    operators only because it is per core (a scratchpad with a copy per core keeps tiles unless it says ``keeps``):
    which field would keep the activations on chip (docs/residency.md, distributed SRAM)."""
    hw = p.hardware
    if any(m.resident_share > 0 for m in hw.memory):
        return []
    spread = [m for m in hw.memory if not m.off_chip and m.instances > 1 and m.organization == "scratchpad"
              and m.keeps is None]
    main = hw.offchip_level
    share = float(p.time_by_bound().get(main.name, 0.0))
    if not spread or not main.off_chip or share < 0.5:
        return []
    ops, level = p.ops, spread[-1]
    traffic = ops[f"traffic_{main.name}_bytes"]
    moved = traffic * ops["count"]
    held = ops["held_bytes"].clip(upper=traffic) * ops["count"]  # of them weights and KV cache bytes
    if float(moved.sum()) <= 0 or float((moved - held).sum() / moved.sum()) < 0.25:  # mostly weights: no help
        return []
    return [f"note: {share:.0%} of the time is bound by {main.name}, and no on-chip level keeps a tensor between "
            f"operators: {level.name}'s {level.instances} per-core copies keep only tiles unless the template says "
            f"keeps: step (activations) or steps (also weights) on it (docs/residency.md; dse whatif --stages "
            "keeps=step)"]


def overlap_flag(text: str) -> dict[str, float]:
    """``--overlap tp=0.5,dp`` -> the plan's ``overlap`` mapping: the named collective kinds hide that share of
    their time behind compute (a bare name: all of it), the others none."""
    from collections import Counter

    kinds = ("tp", "pp", "dp", "ep")
    accepted = f"a comma list of {', '.join(kinds)}, each optionally =FRACTION (0..1), or none"
    out = dict.fromkeys(kinds, 0.0)
    named = [] if text.strip() == "none" else [k.strip() for k in text.split(",") if k.strip()]
    if not (named or text.strip() == "none"):
        raise DseError(f"got {text!r}; accepted: {accepted}", field="--overlap")
    twice = sorted(k for k, c in Counter(n.partition("=")[0].strip() for n in named).items() if c > 1)
    if twice:
        raise DseError(f"got {', '.join(twice)} twice in {text!r}; accepted: each kind once ({accepted})",
                       field="--overlap")
    for item in named:
        kind, _, frac = item.partition("=")
        try:
            value = float(frac) if frac else 1.0
        except ValueError:
            value = float("nan")
        if kind.strip() not in kinds or not 0.0 <= value <= 1.0:
            raise DseError(f"got {item!r}; accepted: {accepted}", field="--overlap")
        out[kind.strip()] = value
    return out


def assumed_system(system: object, chip: str) -> str:
    """What a prediction without ``--system`` assumed: the chip's shipped system (a torus: the slice it took), or,
    where none ships, one switch over the chip's own links."""
    from dse.hardware.system import is_system

    levels = "; ".join(f"{lv.name} {lv.topology} of {lv.size}" + (f" ({'x'.join(map(str, lv.dims))} slice)"
                                                                    if lv.topology == "torus" and lv.dims else "")
                       for lv in system.network)
    if not is_system(system.name):  # dse.hardware.system.default_system's fallback: no template ships it
        return f"no system ships for {chip}: assumed {system.name}, one switch over the chip's own links ({levels})"
    return f"assumed {system.name}, the system {chip} ships in ({levels})"


class _Parser(argparse.ArgumentParser):
    """argparse with the project's error format: a bad flag is one line ``error: ...`` and exit 2
    (argparse's usage block stays on ``-h``)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"error: {self.prog}: {flag_error(message)}", file=sys.stderr)
        sys.exit(2)


#: argparse's messages for a bad flag, and the ``FIELD: got X; accepted: Y`` line each becomes
_ARGPARSE_ERRORS: tuple[tuple[str, str], ...] = (
    (r"argument (?P<f>\S+?)(?:/\S+)?: invalid choice: (?P<x>'.*?') \(choose from (?P<y>.*)\)",
     "{f}: got {x}; accepted: {y}"),
    (r"argument (?P<f>\S+?)(?:/\S+)?: invalid (?P<t>int|float) value: (?P<x>'.*?')", "{f}: got {x}; accepted: {t}"),
    (r"argument (?P<f>\S+?)(?:/\S+)?: expected one argument", "{f}: got no value; accepted: one value"),
    (r"unrecognized arguments: (?P<x>.*)", "got {x}; accepted: the flags -h lists"),
    (r"the following arguments are required: (?P<f>.*)", "{f}: got nothing; accepted: a value (required)"),
)


def flag_error(message: str) -> str:
    """argparse's error ``message`` in the project's ``FIELD: got X; accepted: Y`` form where it is one argparse
    writes (a bad choice, a non-number, a missing value, an unknown or missing flag); else the message as it is."""
    import re

    for pattern, form in _ARGPARSE_ERRORS:
        m = re.fullmatch(pattern, message)
        if m:
            parts = m.groupdict()
            if "y" in parts:  # "'a', 'b'" -> "a, b"
                parts["y"] = ", ".join(v.strip().strip("'") for v in parts["y"].split(","))
            if parts.get("t") == "int":
                parts["t"] = "an integer"
            elif parts.get("t") == "float":
                parts["t"] = "a number"
            return form.format(**parts)
    return message


def _add_workloads_args(wp: argparse.ArgumentParser) -> None:
    """The arguments of the ``workloads`` subcommand: list | show | ai | import, scenario flags, output."""
    wp.add_argument("action", nargs="?", choices=["list", "show", "ai", "import"], help="default: list")
    wp.add_argument("target", nargs="?", help="model (show), suite or study config (ai; default the suite all: a "
                    "config gives its own weighted mix on its base design), or a file (import)")
    wp.add_argument("-o", "--output", help="import: the description YAML to write (default results/imports/NAME.yaml)")
    for flag, typ in (("--phase", str), ("--batch", int), ("--seq", int), ("--context", int), ("--resolution", int),
                      ("--dtype", str), ("--weight-dtype", str), ("--kv-dtype", str)):
        wp.add_argument(flag, type=typ)
    for flag in ("--input-len", "--output-len", "--chunk"):
        wp.add_argument(flag, type=int, help="phase serving: prompt and generated tokens per sequence, prefill chunk")
    wp.add_argument("--hardware", help="design for time-weighted and per-level AI (ai; default: a config's base "
                    "design, else npu-7nm)")
    wp.add_argument("--format", choices=["table", "json"], default="table", help="list: a table or JSON")
    wp.add_argument("--quiet", action="store_true", help="no progress bar (ai)")
    wp.add_argument("--out", default="results/ai", help="output folder (ai)")


def _compare_chips(args: argparse.Namespace, cfg, ctx) -> int:  # noqa: ANN001 - a StudyConfig and its Context
    """``dse compare CONFIG --hardware A,B``: the config's mix on whole chips beside its base design
    (:func:`dse.comparison.chip_table`), printed with workloads as rows and written to ``chips.csv``."""
    from pathlib import Path

    import pandas as pd

    from dse.comparison import chip_table
    from dse.hardware.templates import load_hardware
    from dse.report.write import write_csv
    from dse.study import results_folder

    names = [n.strip() for n in args.hardware.split(",") if n.strip()]
    if not names:
        raise DseError(f"got {args.hardware!r}; accepted: chip templates or YAML paths, comma-separated (dse hardware "
                       "lists them), e.g. h100-sxm,gaudi3", field="--hardware")
    for flag in ("ratios", "hold", "samples"):  # they shape ratio candidates, which whole chips are not
        if getattr(args, flag) is not None:
            raise DseError(f"got --{flag} with --hardware; accepted: one of them (--hardware compares whole chips as "
                           "built; --ratios, --hold and --samples shape ratio candidates of the base)", field=f"--{flag}")
    status(args, f"predicting the mix on {', '.join(names)}")
    chips = []
    for n in names:
        try:
            hw = load_hardware(n)
        except DseError as exc:  # a name, not a file: the flag that gave it
            raise DseError(exc.message, file=exc.file, field=exc.field or (None if exc.file else "--hardware")) from None
        chips.append((_template_label(n, hw), hw))
    df = chip_table(ctx, chips, Path(args.config).parent)
    folder = results_folder(Path(args.out or cfg.output.root(Path(args.config).parent)), f"{cfg.name}-chips", False)
    folder.mkdir(parents=True, exist_ok=True)
    write_csv(folder / "chips.csv", df)
    labels = ctx.mix.labels
    per = ["pass" if w.scenario.get("phase") == "serving" else "step" for w in ctx.mix.workloads]
    rows = {f"{lb} (ms per {u})": [f"{t * 1e3:.4g}" + ("" if ok else " (does not fit)") for t, ok in
                                   zip(df[f"time_s.{lb}"], df[f"fits.{lb}"], strict=True)]
            for lb, u in zip(labels, per, strict=True)}
    rows |= {f"mix score (x vs {ctx.base_hw.name})": [f"{v:.4g}" for v in df["score"]],
             "measured mix score would be (x)": [f"{lo:.3g}..{hi:.3g}" if lo == lo else "-" for lo, hi in
                                                 zip(df["score_measured_lo"], df["score_measured_hi"], strict=True)],
             "area (mm², all dies)": [f"{v:.4g}" for v in df["area_mm2"]],
             "unit cost (USD)": [f"{v:.4g}" for v in df["cost_usd"]],
             "peak average power over the mix (W)": [f"{v:.4g}" for v in df["power_w"]],
             "binds most (% of weighted time)": [f"{b} {v:.0f} %" for b, v in
                                                 zip(df["binding"], df["binding_share_pct"], strict=True)],
             "within the study's limits": ["yes" if ok else "no" for ok in df["feasible"]]}
    if (df["system"] != "-").any():  # a multi-chip mix: the network each chip ran on
        rows["system (its network)"] = df["system"].tolist()
    table = pd.DataFrame(rows, index=df["chip"]).T
    with pd.option_context("display.width", 250, "display.max_columns", 20, "display.max_colwidth", 60):
        print(table.to_string())
    for chip, ok, why in zip(df["chip"], df["feasible"], df["reason"], strict=True):
        if not ok:
            print(f"{chip}: outside the study's limits: {why}")
    print("how sure: each mix score over the range (p10..p90; min..max of fewer than 10) of the speedup errors on "
          "published pairs of the two chips (dse validate's cross-chip speedups), else of every pair:")
    for chip, band in zip(df["chip"].iloc[1:], df["score_band"].iloc[1:], strict=True):
        print(f"  {chip}: {band}")
    print(f"results: {folder}")
    return 0


def _add_compare_args(cpp: argparse.ArgumentParser) -> None:
    """The arguments of the ``compare`` subcommand: ratios, hold, robustness samples."""
    cpp.add_argument("config")
    cpp.add_argument("--ratios", help="comma-separated 1:x ratios relative to the base (default: the config's "
                     "compare: section, else 1:2,1:1)")
    cpp.add_argument("--hold", choices=["compute", "area", "score"], help="what ratio candidates keep fixed "
                     "(default: the config's compare.hold, else compute); score: the first candidate's score at the "
                     "smallest area (later candidates only)")
    cpp.add_argument("--out", help="parent folder (default: output.dir of the config)")
    cpp.add_argument("--quiet", action="store_true", help="no progress lines")
    cpp.add_argument("--strict", action="store_true", help="an infeasible candidate is an error (exit 2)")
    cpp.add_argument("--no-plots", action="store_true", help="draw no figures (default: the config's output.plots)")
    cpp.add_argument("--samples", type=int, help="Monte Carlo samples of the robustness analysis (default: the "
                     "config's compare.samples, else 256; 0: none)")
    cpp.add_argument("--hardware", help="instead of ratio candidates: whole chips (templates or YAML paths, comma-"
                     "separated), each as built, on the config's mix beside its base design: mix score, area, cost, "
                     "power, binding ceiling and per-workload times (chips.csv)")


def _whatif_positionals(args: argparse.Namespace) -> None:
    """``dse whatif MODEL [HARDWARE] --stages ...`` as ``dse predict MODEL HARDWARE`` is written: a first positional
    that is no file is the workload (``--workload``), a second the template (``--hardware``)."""
    from pathlib import Path

    from dse.workloads.library import is_path

    first, second = args.config, args.hardware_at
    if first and (Path(first).is_file() or is_path(first)):
        if second:
            raise DseError(f"got {second!r} after the file {first}; accepted: dse whatif CONFIG (its hardware is in "
                           "the file), or dse whatif MODEL [HARDWARE] --stages T1,T2,...", field="HARDWARE")
        return
    if first:
        if args.workload:
            raise DseError(f"got {first!r} and --workload {args.workload}; accepted: one of them", field="MODEL")
        args.workload, args.config = first, None
    if second:
        args.hardware = second


def _add_whatif_args(wi: argparse.ArgumentParser) -> None:
    """The arguments of the ``whatif`` subcommand: a file or a library model with scenario flags and stages."""
    wi.add_argument("config", nargs="?", help="a study config with whatif: or a what-if YAML (name, hardware, "
                    "workload|operator, stages); or a library model or operator, as --workload")
    wi.add_argument("hardware_at", nargs="?", metavar="hardware",
                    help="after a model: its template (as --hardware): dse whatif MODEL HARDWARE --stages ...")
    wi.add_argument("--workload", help="instead of a file: a library model")
    for flag, typ in (("--phase", str), ("--batch", int), ("--seq", int), ("--context", int), ("--resolution", int),
                      ("--dtype", str), ("--weight-dtype", str), ("--kv-dtype", str)):
        wi.add_argument(flag, type=typ)
    wi.add_argument("--hardware", default="npu-7nm", help="template (with --workload)")
    wi.add_argument("--no-plots", action="store_true", help="draw no figure (whatif.csv and the report only)")
    wi.add_argument("--stages", help="with --workload: e.g. fuse_elementwise,flash_attention,weight_dtype=int8,"
                    "sram_mib=128,winograd,window=1024:4 (tokens:every n-th layer global; window=none),"
                    "dram_part=hbm3,op_boundaries=overlapped,keeps=step")
    wi.add_argument("--out", help="parent folder (default: output.dir of the what-if file or config, else results)")
    wi.add_argument("--quiet", action="store_true", help="no progress lines")


def sweep_folder(args: argparse.Namespace, cfg: object, ctxs: dict, axes: dict, root: object) -> object:
    """A streamed sweep's folder: a new one, claimed atomically, with ``sweep.json`` (what defines the sweep)
    written before any block; with ``--resume`` the latest one, refused when its config, inputs or grid changed
    (a folder killed before its ``sweep.json`` was written starts over)."""
    import json

    from dse.errors import DseError
    from dse.grid import SWEEP_META, check_sweep_resume, sweep_meta
    from dse.study import claim_results_folder, results_folder
    from dse.yamlio import write_text

    meta = sweep_meta(args.config, cfg, next(iter(ctxs.values())), axes, args.block)
    name = f"{cfg.name}-sweep"
    folder = results_folder(root, name, True) if args.resume else claim_results_folder(root, name)
    file = folder / SWEEP_META
    if args.resume and file.is_file():
        try:
            old = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DseError(f"unreadable ({exc}); accepted: the sweep.json a sweep wrote, or a new sweep without "
                           "--resume", file=str(file)) from None
        check_sweep_resume(old, meta, str(file))
    else:
        write_text(file, json.dumps(meta, indent=2) + "\n")
    return folder


def _add_sweep_args(sp: argparse.ArgumentParser) -> None:
    """The arguments of the ``sweep`` subcommand: grid points, chunk, format, local or dask engine."""
    sp.add_argument("config")
    sp.add_argument("--points", type=int, default=24, help="grid points per compute/bandwidth axis")
    sp.add_argument("--sram-points", type=int, default=1, help="grid points on the SRAM axis (facets)")
    sp.add_argument("--chunk", type=int, default=4096, help="designs evaluated per vectorized call")
    sp.add_argument("--format", choices=["csv", "parquet"],
                    help="sweep.csv in memory (default; at most 5,000,000 designs) or sweep.parquet/ streamed per "
                         "chunk, any size (default with --engine dask; needs the scale extra)")
    sp.add_argument("--engine", choices=["local", "dask"], default="local",
                    help="dask: blocks of the grid on a dask.distributed cluster (LocalCluster over the local cores "
                         "unless --scheduler)")
    sp.add_argument("--scheduler", help="dask scheduler address, e.g. tcp://host:8786 (with --engine dask)")
    sp.add_argument("--workers", type=int, help="LocalCluster worker processes (default: the local cores)")
    sp.add_argument("--block", type=int,
                    help="designs per Parquet part file and per dask task (default: dse.grid.BLOCK, 4 Mi)")
    sp.add_argument("--resume", action="store_true",
                    help="continue the latest streamed sweep of this config (its finished part files are kept; "
                         "refused if the config, an input file or the grid changed)")
    sp.add_argument("--no-plots", action="store_true", help="no heatmaps")
    sp.add_argument("--out", help="parent folder (default: output.dir of the config)")
    sp.add_argument("--quiet", action="store_true", help="no progress lines")


def with_dram_part(hardware: str, part: str):  # noqa: ANN201 - a dse.hardware.schema.Hardware
    """``--dram-part``: the template with its main memory rebuilt on ``part`` (``DesignBatch.with_part``: its stacks
    each one of the part's), under the template's own name; a part the level does not take is one line."""
    from dse.hardware.designs import DesignBatch
    from dse.hardware.dram_parts import GENERATION, searchable_names
    from dse.hardware.templates import load_hardware

    hw = load_hardware(hardware)
    if part not in GENERATION:
        raise DseError(f"got {part!r}; accepted: one of {', '.join(searchable_names(hw.offchip_level.kind))} (a "
                       f"part of the main memory's kind, {hw.offchip_level.kind})", field="--dram-part")
    try:
        d = DesignBatch.from_hardware(hw).with_field(f"memory.{hw.offchip_level.name}.generation", [part])
    except ValueError as exc:
        head, _, accepted = str(exc).partition("; accepted: ")
        why = f" ({head.split(': ', 1)[-1]})" if head.startswith("cannot search") else ""
        raise DseError(f"got {part!r}{why}; accepted: {accepted}", field="--dram-part") from None
    return d.to_hardware(0, hw.name, note=f"main memory on {part} (--dram-part)")


def _add_predict_args(pp: argparse.ArgumentParser) -> None:
    """The arguments of the ``predict`` subcommand: scenario, serving, parallelism plan and output flags."""
    pp.add_argument("workload", help="a library model (dse workloads list), a description YAML, or one operator: "
                    "gemm:MxNxK, attention:BxHxSQxSKxD, copy:BYTES, all_reduce:BYTES, ...")
    pp.add_argument("hardware", nargs="+", help="a chip template (dse hardware lists them) or its YAML path; "
                    "several: one row each, with its speedup over the first")
    _add_scenario_args(pp)
    pp.add_argument("--chips", type=int, help="chips the workload is split over (default 1; alone: tensor parallel)")
    pp.add_argument("--system", help="system template (default: the chip's shipped system, e.g. dgx-a100)")
    pp.add_argument("--dram-part", help="rebuild the chip's main memory on this DRAM part, each stack one of the "
                    "part's (hbm2, hbm2e, hbm3, hbm3e, hbm4; gddr6, gddr6x, gddr7 for board DRAM)")
    for flag in ("--tp", "--pp", "--dp", "--ep", "--microbatches", "--zero", "--interleave", "--fsdp"):
        pp.add_argument(flag, type=int)
    pp.add_argument("--sp", nargs="?", const="on", choices=["on", "off"],
                    help="sequence parallelism (with --tp): --sp or --sp on, --sp off (as dse plan takes it)")
    pp.add_argument("--recompute", choices=["none", "minimal", "selective", "full"])
    pp.add_argument("--first-stage-layers", type=int, help="layers on the first pipeline stage (uneven split)")
    pp.add_argument("--last-stage-layers", type=int, help="layers on the last pipeline stage (uneven split)")
    pp.add_argument("--bucket-mb", type=float, help="data-parallel gradient bucket, MB (default 25)")
    _add_rank_args(pp)
    pp.add_argument("--overlap", help="collectives that hide behind compute: a comma list of tp, pp, dp, ep, each "
                                      "optionally =FRACTION of its time (tp=0.7), or none (default: dp only)")
    pp.add_argument("--format", choices=["table", "json"], default="table")


def _add_rank_args(pp: argparse.ArgumentParser) -> None:
    """The flags that cut the tensor-parallel shards per core (``plan.tp_per_chip``, ``plan.pad_heads``)."""
    pp.add_argument("--tp-per-chip", type=int, help="tensor-parallel ranks on one chip, one per core (Neuron: TP 24 "
                    "on 12 Inferentia2 chips is --tp 12 --tp-per-chip 2)")
    pp.add_argument("--pad-heads", action="store_true", default=None,
                    help="pad heads and FFN to the TP ranks as transformers-neuronx does (a TP that does not divide them)")


def _add_scenario_args(pp: argparse.ArgumentParser) -> None:
    """The scenario flags (:data:`SCENARIO_FLAGS`) that ``dse predict`` and ``dse plan`` share."""
    pp.add_argument("--phase")
    pp.add_argument("--batch", type=int)
    pp.add_argument("--seq", type=int)
    pp.add_argument("--context", type=int)
    pp.add_argument("--dtype", help="the matrix products' dtype (default: the model's, bf16 for the library's LLMs; "
                    "fp32 for a one-operator workload such as gemm:MxNxK, as torch.matmul on fp32 tensors: give "
                    "--dtype bf16 for an NPU's arrays)")
    pp.add_argument("--weight-dtype", help="weights (narrower than --dtype = weight-only quantization)")
    pp.add_argument("--weight-dtypes", help="per weight role, its own dtype: role=dtype,... (roles qkv_proj, "
                    "out_proj, ffn_up, ffn_down, lm_head; e.g. ffn_up=bfp4 beside --weight-dtype bfp8)")
    pp.add_argument("--weight-group", type=int, help="weights per quantization scale group (e.g. 128)")
    pp.add_argument("--kv-dtype", help="KV cache dtype")
    pp.add_argument("--kv-block", type=int, help="decode/serving: the attention reads the KV cache in whole blocks of "
                    "this many tokens (optimum-habana --bucket_internal: its --bucket_size)")
    pp.add_argument("--attention-dtype", help="attention matrix products' dtype (default: --dtype)")
    pp.add_argument("--activation-dtype",
                    help="activations between kernels and GEMM outputs (default: --dtype; e.g. fp16 beside fp8 GEMMs)")
    pp.add_argument("--execution", choices=["graph", "eager"], help="graph (default) or eager host dispatch")
    pp.add_argument("--residency", choices=["auto", "none", "weights", "activations"],
                    help="which tensors may stay on chip between operators and across steps (default auto; none: "
                    "every tensor to and from main memory; docs/residency.md)")
    pp.add_argument("--causal", action="store_true", default=None,
                    help="attention:BxHxSQxSKxD only: causal mask (each query attends the keys up to its position)")
    pp.add_argument("--kv-heads", type=int, help="attention:BxHxSQxSKxD only: key/value heads (default: heads)")
    from dse.workloads.ops import ATTENTION_GQA, ATTENTION_KERNELS, GEMM_KERNELS, INPUT_QUANTS

    pp.add_argument("--attention-kernel", choices=ATTENTION_KERNELS,
                    help="fused attention kernel (default auto: whole_row up to 512 keys, else flash)")
    pp.add_argument("--attention-gqa", choices=ATTENTION_GQA,
                    help="GQA/MQA attention kernels: grouped (default: a CTA holds a KV head's query heads and reads it "
                         "once) or per_head (a CTA per query head: TensorRT-LLM's masked MHA without XQA)")
    pp.add_argument("--gemm-kernel", choices=GEMM_KERNELS,
                    help="GEMM kernels: one_tile (a CTA per output tile, serial epilogue) or persistent (epilogue "
                         "overlapped); default auto: the template's compute.matrix.gemm_kernel")
    pp.add_argument("--input-quant", choices=INPUT_QUANTS,
                    help="with --activation-dtype wider than --dtype: the norm/activation writing a GEMM's input "
                         "quantizes it (producer, default: TensorRT) or a quantize kernel before each GEMM does "
                         "(kernel: vLLM's apply_fp8_linear)")
    pp.add_argument("--resolution", type=int)
    pp.add_argument("--input-len", type=int, help="serving: prompt tokens per request")
    pp.add_argument("--output-len", type=int, help="serving: generated tokens per request")
    pp.add_argument("--chunk", type=int, help="serving: chunked-prefill tokens per iteration")
    pp.add_argument("--serving-engine", dest="serving_engine",
                    help="serving, prefill or decode: charge this engine's host time per step "
                         "(workloads/engines/NAME.yaml)")
    pp.add_argument("--dropout", type=float, help="training: dropout probability (e.g. 0.1)")
    from dse.workloads.training import GRAD_DTYPES, OPTIMIZER_DTYPES, OPTIMIZER_KERNELS, WEIGHT_CASTS, ZERO_GRADS

    pp.add_argument("--framework", help="training: the framework preset whose step is modelled (pytorch-eager, "
                                        "pytorch-compile, megatron, xla: workloads/frameworks/NAME.yaml); flags "
                                        "given beside it win")
    pp.add_argument("--weight-cast", choices=WEIGHT_CASTS,
                    help="training: none (a low-precision weight copy, default) or kernel (autocast casts each fp32 "
                         "weight before every forward GEMM)")
    pp.add_argument("--optimizer", choices=OPTIMIZER_KERNELS,
                    help="training: AdamW kernels, fused (default) or foreach (torch's default, eight passes)")
    pp.add_argument("--zero-grad", choices=ZERO_GRADS,
                    help="training: the gradient buffer, memset each step (default) or none (set_to_none, JAX)")
    pp.add_argument("--optimizer-dtype", choices=OPTIMIZER_DTYPES,
                    help="training: the optimizer state, fp32 (master weights and moments, default) or bf16 (pure "
                         "bf16 training: no master copy)")
    pp.add_argument("--grad-dtype", choices=GRAD_DTYPES,
                    help="training: the gradients kept and reduced over data parallelism, auto (default: fp32 for "
                         "bf16/fp8 mixed precision, Megatron-LM's rule) or a dtype")
    pp.add_argument("--fused-attention", choices=["on", "off"], help="one fused (flash) attention kernel (default on)")
    pp.add_argument("--fuse-elementwise", action="store_true", default=None,
                    help="norms, activations and adds fused into their producers")
    pp.add_argument("--logits", choices=["last", "all"], help="prefill: the LM head on the last token or on all")
    pp.add_argument("--memory-format", choices=["nhwc", "nchw"], help="CNN activation layout")


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="dse", description="Design-space exploration for AI chips")
    ap.add_argument("--version", action="version", version=version_line())
    ap.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = ap.add_subparsers(dest="cmd", required=True)
    _add_run_args(sub.add_parser("run", help="run a study config"))
    _add_workloads_args(sub.add_parser("workloads", help="the workload library: list | show NAME | "
                                       "ai [SUITE|CONFIG] | import PATH"))
    hwp = sub.add_parser("hardware", help="list hardware templates (or the named ones / YAML paths)")
    hwp.add_argument("templates", nargs="*", help="template names or YAML paths (default: every shipped one)")
    hwp.add_argument("--format", choices=["table", "json"], default="table")
    hwp.add_argument("--yaml", action="store_true", help="print each named template's YAML file (its sources and "
                     "comments), e.g. `dse hardware npu-7nm --yaml > my-npu.yaml` to start a template of your own")
    bp = sub.add_parser("batch", help="run many configs; continue past failures; one combined table")
    bp.add_argument("configs", nargs="+")
    bp.add_argument("--out", help="parent folder of every study (default: each config's output.dir) and of the batch's "
                    "own batch-TIMESTAMP/ folder that holds batch.csv (default: results/)")
    bp.add_argument("--trials", type=int, help="trials of every study (default: each config's search.n_trials)")
    bp.add_argument("--no-plots", action="store_true", help="draw no figures (default: each config's output.plots)")
    bp.add_argument("--quiet", action="store_true")
    _add_compare_args(sub.add_parser("compare", help="candidate compute:bandwidth ratios side by side (e.g. 1:2,1:1)"))
    _add_whatif_args(sub.add_parser("whatif", help="staged optimisations (fusion, flash attention, precision, SRAM, "
                                    "Winograd) of one workload or operator on a roofline"))
    _add_sweep_args(sub.add_parser("sweep", help="full grid over the search space's compute x bandwidth (x SRAM)"))
    arp = sub.add_parser("area", help="area, cost and power of every template (or the named ones / YAML paths); "
                                      "die-area calibration table")
    arp.add_argument("templates", nargs="*", help="template names or YAML paths (default: every shipped one)")
    arp.add_argument("--format", choices=["table", "json"], default="table")
    arp.add_argument("--dram-part", help="price each named template with its main memory rebuilt on this DRAM part "
                     "(its stacks each one of the part's: PHY and controller by interface width, price per GB)")
    vp = sub.add_parser("validate", help="predicted vs published measurements (validation/measurements.csv)")
    vp.add_argument("--measurements", help="measurements CSV (default: validation/measurements.csv)")
    vp.add_argument("--template", action="append", help="use another template for a name: NAME=TEMPLATE")
    vp.add_argument("--out", default="results/validate", help="output folder")
    vp.add_argument("--quiet", action="store_true", help="no progress lines")
    vp.add_argument("--hardware", help="only the rows of these templates, comma-separated (e.g. gaudi2,gaudi3: their "
                                       "families, and the speedups between them)")
    vp.add_argument("--family", help="only the rows of these families, comma-separated (e.g. gemm,serving)")
    cp = sub.add_parser("calibrate", help="fit a template's efficiencies and overheads to measurements")
    cp.add_argument("template", help="template name or YAML path")
    cp.add_argument("--measurements", help="measurements CSV (default: validation/measurements.csv)")
    cp.add_argument("--out", default="results/calibrate",
                    help="folder for <name>-calibrated.yaml (default results/calibrate; never the shipped templates "
                         "unless given)")
    cp.add_argument("--chips", help="comma-separated templates whose rows a leave-one-chip-out fit shares with "
                    "TEMPLATE's (default: every shipped chip of its style, GPU or NPU, with rows)")
    cp.add_argument("--no-loo", action="store_true",
                    help="skip the leave-one-out, leave-family-out and leave-one-chip-out refits")
    cp.add_argument("--quiet", action="store_true", help="no progress lines")
    hp = sub.add_parser("host", help="roofline health check of this machine with a numpy operator panel")
    hp.add_argument("--out", default="results/host", help="output folder")
    gp = sub.add_parser("gpu", help="build a template from nvidia-smi (or a recorded output)")
    gp.add_argument("--from-file", help="recorded output of nvidia-smi --query-gpu=... --format=csv,noheader,nounits")
    gp.add_argument("--out", default="results/gpu", help="output folder")
    kp = sub.add_parser("kernels", help="place profiled kernels (generic or Nsight Compute CSV) on a roofline")
    kp.add_argument("file", help="CSV: name,flops,bytes,seconds or ncu --csv --page raw")
    kp.add_argument("--hardware", required=True, help="template name or YAML path")
    kp.add_argument("--dtype", help="matrix mode for the FLOP roof (default: the template's reference dtype)")
    kp.add_argument("--out", default="results/kernels", help="output folder")
    _add_predict_args(sub.add_parser("predict", help="predict one workload on one template or system "
                                     "(--chips/--tp/--pp/--dp)"))
    lp = sub.add_parser("plan", help="the fastest parallelism plan that fits: every plan of a model on N chips of a "
                        "system, predicted at once")
    lp.add_argument("workload", help="model name (e.g. llama2-70b) or description YAML")
    lp.add_argument("system", help="system template (e.g. dgx-h100) or chip template (its shipped system)")
    lp.add_argument("--chips", type=int, required=True, help="chips the workload is split over")
    _add_scenario_args(lp)
    for flag in ("--tp", "--pp", "--dp", "--ep", "--microbatches", "--zero", "--interleave"):
        lp.add_argument(flag, type=int, help="hold this plan field")
    lp.add_argument("--fsdp", type=int, help="hold the ZeRO-3 shard group: fsdp ranks share one copy of the sharded "
                    "state (fsdp = dp: fully sharded; fsdp < dp: hybrid sharding, dp / fsdp replicas of the group)")
    lp.add_argument("--recompute", choices=["none", "minimal", "selective", "full"],
                    help="hold the recomputation policy")
    lp.add_argument("--sp", nargs="?", const="on", choices=["on", "off"],
                    help="hold sequence parallelism: --sp or --sp on, --sp off (default: searched with tp > 1)")
    _add_rank_args(lp)
    lp.add_argument("--top", type=int, default=10, help="rows of the candidate table shown (fastest first)")
    lp.add_argument("--format", choices=["table", "json"], default="table")
    lp.add_argument("--quiet", action="store_true", help="no progress line")
    ep = sub.add_parser("explore", help="interactive design explorer in the browser (pip install 'dse[explore]')")
    ep.add_argument("config", help="study config YAML, e.g. configs/npu.yaml")
    ep.add_argument("--port", type=int, default=8050, help="port of the local web server (default 8050)")
    ep.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    ep.add_argument("--no-browser", action="store_true", help="do not open a browser")
    ep.add_argument("--mix", help="the mix to explore, for a config with a mixes: section (one of its names)")
    ep.add_argument("--check", action="store_true",
                    help="load the config and build the page at the base design, then exit without serving")
    return ap


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": cmd_run, "workloads": cmd_workloads, "hardware": cmd_hardware, "area": cmd_area, "predict": cmd_predict,
    "validate": cmd_validate, "calibrate": cmd_calibrate, "host": cmd_host, "gpu": cmd_gpu, "sweep": cmd_sweep,
    "compare": cmd_compare, "batch": cmd_batch, "whatif": cmd_whatif,
    "kernels": cmd_kernels, "explore": cmd_explore, "plan": cmd_plan,
}


def _records(df) -> list[dict]:  # noqa: ANN001 - a DataFrame
    """DataFrame rows as JSON-safe dicts (NaN and inf -> null, numpy scalars -> Python)."""
    import math

    out = []
    for rec in df.to_dict(orient="records"):
        row = {}
        for k, v in rec.items():
            v = v.item() if hasattr(v, "item") else v
            row[str(k)] = None if isinstance(v, float) and not math.isfinite(v) else v
        out.append(row)
    return out


def _print_json(obj: object) -> None:
    import json

    print(json.dumps(obj, indent=1, default=str))


def packaged_config(path: str) -> str:
    """``path`` when it is a file here (or absolute); else the installed package's file of that name, if it has one:
    ``configs/npu.yaml`` or ``experiments/npu_story.yaml`` as in a checkout, or a bare ``npu`` for
    ``configs/npu.yaml`` (a plain ``pip install`` keeps them in ``dse/_data/``, where the README's commands, run from
    another folder, did not look)."""
    from dse.units import repo_root

    p = Path(path)
    if p.is_absolute() or p.exists():
        return path
    root = repo_root()
    for cand in (root / p, None if p.suffix else root / "configs" / f"{path}.yaml"):
        if cand is not None and cand.is_file():
            return str(cand)
    return path


#: what Ctrl-C leaves behind, per command (a search's trials are in its storage; a streamed sweep's blocks in their
#: part files; the other commands write their folder at the end, atomically)
INTERRUPTED = {
    "run": "completed trials are saved in the study storage; continue with --resume",
    "batch": "completed trials are saved in each study's storage; continue with --resume",
    "sweep": "a streamed sweep (--format parquet) keeps the blocks already written; continue with dse sweep --resume "
             "(an in-memory CSV sweep writes nothing until it ends)",
}


def _packaged_configs(args: argparse.Namespace) -> None:
    """Point ``args.config`` / ``args.configs`` at the package's copy where the named file is not here
    (:func:`packaged_config`), saying so on a terminal."""
    for attr in ("config", "configs"):
        value = getattr(args, attr, None)
        if isinstance(value, str):
            found = packaged_config(value)
            if found != value:
                status(args, f"{value} is not in this folder: the installed package's {found}")
                setattr(args, attr, found)
        elif isinstance(value, list):
            setattr(args, attr, [packaged_config(v) if isinstance(v, str) else v for v in value])


def guarded(fn: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a command; bad input -> one line on stderr per error (several for a file with several bad rows) and
    exit 2 (traceback only with --debug)."""
    try:
        _packaged_configs(args)
        return fn(args)
    except DseError as exc:
        if getattr(args, "debug", False):
            raise
        for line in exc.lines():
            print(f"error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: {INTERRUPTED.get(getattr(args, 'cmd', None), 'nothing was written')}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # a write no command wrapped: a full disk, a read-only or unwritable folder
        import errno

        if getattr(args, "debug", False) or exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES,
                                                               errno.EIO, errno.EEXIST, errno.ENOTDIR):
            raise
        what = ("a folder path (a file of that name is in the way)" if exc.errno in (errno.EEXIST, errno.ENOTDIR)
                else "a writable folder with free space")
        print(f"error: {exc.filename or 'output'}: cannot write ({exc.strerror}); accepted: {what} (files written "
              "before are kept)", file=sys.stderr)
        return 2


def package_version() -> str:
    """The installed package's version (pyproject's when installed from a checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dse")
    except PackageNotFoundError:
        return "unknown (not installed)"


def version_line() -> str:
    """``dse VERSION (batch predictor: PATH)``: the package's version and which batch path runs
    (``dse.predict.fused``)."""
    from dse.predict import fused

    return f"dse {package_version()} (batch predictor: {fused.describe()})"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return guarded(COMMANDS[args.cmd], args)


if __name__ == "__main__":
    sys.exit(main())
