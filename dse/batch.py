"""Scripted studies: the ``Study`` API and ``dse batch`` / ``python -m dse.batch CONFIG...``.

    from dse import Study
    s = Study.from_yaml("configs/npu.yaml").with_overrides({"search.n_trials": 200})
    res = s.run()          # res.trials, res.best, res.pareto (DataFrames); res.out_dir

``dse batch`` runs many configs one after another with a progress bar, continues past a failing one
(reported at the end, exit code 1) and writes one combined table, ``batch.csv``.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from pydantic import ValidationError
from tqdm import tqdm

from dse.config import StudyConfig, refuse_template
from dse.errors import DseError, from_validation_error
from dse.yamlio import load_yaml, write_text


@dataclass(frozen=True)
class StudyRun:
    """What a scripted run returns: DataFrames and the results folder."""

    out_dir: Path
    trials: pd.DataFrame
    best: pd.Series
    pareto: pd.DataFrame
    summary: str
    #: mixes without a feasible design (a study with ``mixes:``): mix -> the one-line reason; the tables hold the others
    infeasible: dict[str, str] = field(default_factory=dict)
    #: a study with ``mixes:``: one row per mix (``mix`` column), the best design of each; ``best`` is the first's
    bests: pd.DataFrame = field(default_factory=pd.DataFrame)


@dataclass(frozen=True)
class Study:
    """A validated config held as data, so scripts can override fields and run it."""

    data: dict[str, Any]
    source: Path | None = None
    overrides: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_yaml(cls, path: str | Path) -> Study:
        path = Path(path)
        data = load_yaml(path)
        if isinstance(data, dict):
            refuse_template(data, str(path))
        base = str(data.get("base", "")) if isinstance(data, dict) else ""
        if base.endswith((".yaml", ".yml")) and not Path(base).is_absolute():
            data["base"] = str((path.parent / base).resolve())  # keep relative templates resolvable
        study = cls(data, path)
        study.config  # validate now  # noqa: B018
        return study

    @property
    def config(self) -> StudyConfig:
        try:
            return StudyConfig.model_validate(self.data)
        except ValidationError as exc:
            raise from_validation_error(exc, file=str(self.source) if self.source else None, model=StudyConfig) from None

    def with_overrides(self, overrides: dict[str, Any]) -> Study:
        """A copy with dotted keys set, e.g. ``{"search.n_trials": 200, "search.area_budget_mm2": 600}``."""
        data = copy.deepcopy(self.data)
        for key, value in overrides.items():
            node = data
            parts = key.split(".")
            try:
                for p in parts[:-1]:
                    node = node.setdefault(p, {}) if isinstance(node, dict) else node[int(p)]
                if isinstance(node, list):
                    node[int(parts[-1])] = value
                else:
                    node[parts[-1]] = value
            except (IndexError, ValueError, TypeError, AttributeError):  # workloads.5 of 2, a key into a number
                raise DseError(f"got {key!r}; accepted: a dotted path into the config (list entries by index, "
                               "e.g. workloads.0.batch)", field="overrides") from None
        study = Study(data, self.source, {**self.overrides, **overrides})
        study.config  # noqa: B018
        return study

    def run(self, out: str | Path | None = None, progress: bool = False, plots: bool | None = None) -> StudyRun:
        """Run the study (a search; several mixes run one after another) and return its tables. ``plots``: draw the
        figures (default: the config's ``output.plots``). The config (with its overrides) runs from a hidden copy
        beside its source file, so relative paths (``path:`` workloads, ``output.relative_to: config``) resolve as
        ``dse run`` resolves them; errors name the source file."""
        cfg = self.config
        plots = cfg.output.plots if plots is None else plots
        with _beside(self.data, cfg.name, self.source, bool(self.overrides)) as path:
            try:
                return self._run(path, cfg, out, progress, plots)
            except DseError as exc:
                if self.source is None or not exc.file or Path(exc.file) != path:
                    raise
                raise DseError(exc.message, file=str(self.source), field=exc.field) from None

    def _run(self, path: Path, cfg: StudyConfig, out: str | Path | None, progress: bool, plots: bool) -> StudyRun:
        from dse.report.write import trials_frame, write_results
        from dse.search import optimize
        from dse.study import run_mixes, run_study

        if cfg.mixes is not None:
            run = run_mixes(path, out=out, progress=progress)
            texts = [write_results(r, plots_on=plots) for r in run.results.values()]
            texts += [f"mix {m}: no feasible design: {e.message}" for m, e in run.infeasible.items()]
            trials = pd.concat([trials_frame(r.study).assign(mix=m) for m, r in run.results.items()])
            best = pd.concat([_best_row(r).rename(m) for m, r in run.results.items()], axis=1).T
            best = best.rename_axis("mix").reset_index()
            source = str(self.source) if self.source else None  # not the temporary copy that ran
            why = {m: str(DseError(e.message, file=source, field=e.field)) for m, e in run.infeasible.items()}
            return StudyRun(run.top, trials, best.iloc[0], pd.DataFrame(), "\n".join(texts), why, best)
        r = run_study(path, out=out, progress=progress)
        text = write_results(r, plots_on=plots)
        trials = trials_frame(r.study)
        front = [t.number for t in optimize.pareto_front(r.study)] if len(cfg.search.objective_names) > 1 else []
        pareto = trials[trials["number"].isin(front)].reset_index(drop=True)
        return StudyRun(r.folder, trials, _best_row(r), pareto, text)


@contextlib.contextmanager
def _beside(data: dict[str, Any], name: str, source: Path | None, overridden: bool) -> Iterator[Path]:
    """The config file to run: the source itself when nothing was overridden (exactly what ``dse run`` runs), else a
    copy of ``data`` named ``SOURCE-overrides-*.yaml`` in the source's folder (so its relative paths mean what they
    mean there; the results' metadata names it), else in a temporary folder; a copy is removed afterwards."""
    if source is not None and not overridden:
        yield Path(source)
        return
    text = yaml.safe_dump(data, sort_keys=False)
    if source is not None:
        try:
            fd, tmp = tempfile.mkstemp(prefix=f"{Path(source).stem}-overrides-", suffix=".yaml", dir=Path(source).parent)
        except OSError:  # a read-only folder: a temporary one (relative paths then fail with their own error)
            pass
        else:
            path = Path(tmp)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(text)
                yield path
            finally:
                path.unlink(missing_ok=True)
            return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.yaml"
        write_text(path, text)
        yield path


def _best_row(r) -> pd.Series:  # noqa: ANN001 - a StudyResult
    """The best design of one study: each searched knob as sampled and as built (``<knob>_built``: whole cores, DRAM
    stacks and SRAM macros, what the score, area and ridge are of), then its score and resources."""
    from dse.search.space import base_knobs

    s = r.best_scored
    built = {f"{k}_built": v for k, v in base_knobs(r.best).items() if k in r.best_params}
    return pd.Series({**r.best_params, **built, "score": float(s.score[0]), "objective": float(s.objective[0]),
                      "area_mm2": float(s.area_mm2[0]), "cost_usd": float(s.cost_usd[0]),
                      "power_w": float(s.power_w[0]), "ridge_flop_per_byte": float(r.best.ridge[0]),
                      "folder": str(r.folder)})


def check_config(path: str) -> dict[str, str]:
    """Everything about a config that can be checked without searching: its schema, base and system,
    every workload of every mix, every searched field (``dse.study.load_context``) and that each workload fits the
    most main memory the search space can build (``dse.study.check_mixes``). Returns the mixes set aside for a
    workload that fits no design (mix -> reason); raises when the config has no mix left (or one that does not fit)."""
    from dse.study import check_mixes

    Study.from_yaml(path).config  # noqa: B018 - the schema first, its error naming the file
    return {m: str(e) for m, e in check_mixes(path, n_trials=1).items()}


def check_configs(paths: list[str]) -> dict[str, str]:
    """{config: its one-line error} of every config that does not check (:func:`check_config`)."""
    bad = {}
    for path in paths:
        try:
            check_config(path)
        except DseError as exc:
            bad[path] = str(exc)
    return bad


def run_batch(paths: list[str], out: str | Path | None = None, progress: bool = True,
              bad: dict[str, str] | None = None, warn: bool | None = None, trials: int | None = None,
              plots: bool | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Check every config first (``bad``: :func:`check_configs` already run; a typo in the last one is found before
    anything runs), then run the good ones (under ``out``, or each under its own ``output.dir``; ``trials``: each
    study's ``search.n_trials``, ``plots``: draw figures, default each config's own); a failing config is recorded
    with its one-line error and the batch goes on. Prints no error: the caller says each once."""
    rows, errors = [], []
    bad = check_configs(paths) if bad is None else bad
    for path in tqdm(paths, desc="batch", unit="config", disable=None if progress else True):
        if path in bad:
            rows.append({"config": path, "status": "error", "error": bad[path]})
            errors.append(bad[path] if bad[path].startswith(f"{path}: ") else f"{path}: {bad[path]}")
            continue
        try:
            study = Study.from_yaml(path)
            res = (study.with_overrides({"search.n_trials": trials}) if trials is not None else study).run(out=out,
                                                                                                       plots=plots)
            note = {"infeasible_mixes": "; ".join(f"{m}: {e}" for m, e in res.infeasible.items())} if res.infeasible \
                else {}
            bests = res.bests if len(res.bests) else pd.DataFrame([res.best])  # every mix of a mixes: config
            rows += [{"config": path, "status": "ok", **b.to_dict(), **note} for _, b in bests.iterrows()]
            if (progress if warn is None else warn) and res.infeasible:  # a warning line, not a progress bar
                for m, e in res.infeasible.items():
                    print(f"warning: mix {m} has no feasible design: {e}", file=sys.stderr)
        except DseError as exc:
            rows.append({"config": path, "status": "error", "error": str(exc)})
            errors.append(str(exc) if str(exc).startswith(f"{path}: ") else f"{path}: {exc}")
    return pd.DataFrame(rows), errors


def main(argv: list[str] | None = None) -> int:
    from datetime import datetime

    from dse.yamlio import atomic_write

    ap = argparse.ArgumentParser(prog="python -m dse.batch", description="Run many study configs")
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--out", help="parent folder of every study (default: each config's output.dir) and of the "
                                  "batch's own batch-TIMESTAMP/ folder that holds batch.csv (default: results/)")
    ap.add_argument("--trials", type=int, help="trials of every study (default: each config's search.n_trials)")
    ap.add_argument("--no-plots", action="store_true", help="draw no figures (default: each config's output.plots)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.trials is not None:
        from dse.study import check_trials

        check_trials(args.trials)
    bad = check_configs(args.configs)
    for path, msg in bad.items():  # before anything runs, once each (they were printed again at the end)
        print(f"error: {msg if msg.startswith(f'{path}: ') else f'{path}: {msg}'}", file=sys.stderr)
    progress = not args.quiet and sys.stderr.isatty()  # bars and notes on a terminal only, as every command's
    table, errors = run_batch(args.configs, args.out, progress=progress, bad=bad, warn=not args.quiet,
                              trials=args.trials, plots=False if args.no_plots else None)
    errors = [e for e in errors if not any(e.startswith(f"{p}: ") for p in bad)]  # said above
    folder = Path(args.out or "results") / f"batch-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    atomic_write(folder / "batch.csv", lambda p: table.to_csv(p, index=False))
    ok = int((table["status"] == "ok").sum())
    print(f"batch: {ok} of {len(table)} configs ran; table {folder / 'batch.csv'}")
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    return 2 if errors or bad else 0  # a config that could not run is bad input (one line each), the others' results kept


if __name__ == "__main__":
    sys.exit(main())
