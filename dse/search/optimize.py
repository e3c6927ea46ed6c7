"""optuna driver: batched ask -> vectorized predict -> tell, on a real storage (SQLite by default).

Each round asks up to ``batch_size`` trials, builds one DesignBatch from their parameters, predicts
the whole mix on all of them in one call and tells the results back; the sampler and the storage,
not the model, set the pace. Several workers (processes or machines) may run :func:`run` on one
study in a shared storage: each round asks only for what the study still lacks, counting every
worker's complete and running trials (optuna's own distributed mode). Infeasible designs are kept,
with their constraints (optuna's constraint attribute, read by TPE and NSGA-II) and reason.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np
import optuna
from optuna.study._constrained_optimization import _CONSTRAINTS_KEY
from optuna.trial import TrialState
from tqdm import tqdm

from dse.config import Search
from dse.errors import DseError
from dse.score import OBJECTIVES
from dse.search.space import distributions, grid

#: evaluate(list of param dicts) -> (objective values [D, K], metrics per design, constraints by name [D])
Evaluator = Callable[[list[dict[str, float]]], tuple[np.ndarray, list[dict], dict[str, np.ndarray]]]

METRICS_ATTR = "metrics"
META_ATTR = "dse"



def record(trial: optuna.trial.Trial, metrics: dict, constraints: list[float]) -> None:
    """Store a trial's metrics as one user attribute and its constraints as one system attribute
    (optuna's list form of ``Trial.set_constraint``): two storage writes per trial, not one per value."""
    trial.set_user_attr(METRICS_ATTR, metrics)
    if constraints:
        trial.storage.set_trial_system_attr(trial._trial_id, _CONSTRAINTS_KEY, constraints)


def metrics(trial: optuna.trial.FrozenTrial) -> dict:
    return trial.user_attrs.get(METRICS_ATTR, {})


def constraint_value(trial: optuna.trial.FrozenTrial) -> float:
    """The trial's largest constraint (<= 0 feasible); 0 when none was recorded."""
    return max(trial.constraints.values(), default=0.0)


def make_sampler(search: Search, worker: int = 0) -> optuna.samplers.BaseSampler:
    """The configured sampler, seeded (``seed + worker``) for repeatable runs."""
    s = search.seed + worker
    multi = len(search.objective_names) > 1
    match search.sampler:
        case "tpe":
            return optuna.samplers.TPESampler(seed=s, constant_liar=True,
                                              n_startup_trials=min(20, max(search.n_trials // 5, 4)))
        case "nsga2":
            return optuna.samplers.NSGAIISampler(seed=s, population_size=max(search.batch_size, 8))
        case "random":
            return optuna.samplers.RandomSampler(seed=s)
        case "qmc":
            return optuna.samplers.QMCSampler(seed=search.seed, scramble=True)
        case "cmaes":
            if multi:
                raise DseError("cmaes optimises one objective; accepted for several: tpe, nsga2, random, qmc",
                               field="search.sampler")
            return optuna.samplers.CmaEsSampler(seed=s)
        case "grid":
            return AskTellGridSampler(grid(search.space, search.grid_points), seed=s)
    raise DseError(f"got {search.sampler!r}; accepted: tpe, nsga2, cmaes, random, qmc, grid", field="search.sampler")


def config_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def open_study(name: str, storage: optuna.storages.BaseStorage, search: Search, resume: bool, meta: dict,
               recover_stale: bool = True, create_missing: bool = False) -> tuple[optuna.Study, int]:
    """Create the study once (or with ``resume`` load it, refusing a changed config); trials left
    RUNNING by a killed single-worker run are marked FAIL on resume (``recover_stale``). With
    ``create_missing`` a resume whose study is not in the storage creates it (a run killed before its
    study was created: the caller knows its folder never got its metadata)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    directions = [OBJECTIVES[o].direction for o in search.objective_names]
    sampler = make_sampler(search)
    if resume and create_missing and name not in {s.study_name for s in storage.get_all_studies()}:
        resume = False
    if resume:
        try:
            study = optuna.load_study(study_name=name, storage=storage, sampler=sampler)
        except KeyError:
            raise DseError(f"no study named {name!r} in the storage; accepted: run without --resume first",
                           field="--resume") from None
        old = study.user_attrs.get(META_ATTR, {})
        if old.get("config_sha256") not in (None, meta["config_sha256"]):
            raise DseError(f"study {name!r} was created from another config (hash {old['config_sha256']} vs "
                           f"{meta['config_sha256']}); accepted: the same workloads, base and search space, "
                           "or a new study name", field="--resume")
        if [d.name.lower() for d in study.directions] != directions:
            raise DseError(f"study {name!r} has other objectives; accepted: the objectives it was created with",
                           field="search.objectives")
    else:
        try:
            study = optuna.create_study(study_name=name, storage=storage, directions=directions, sampler=sampler)
        except optuna.exceptions.DuplicatedStudyError:
            raise DseError(f"study {name!r} already exists in this storage; accepted: --resume, or a new name",
                           field="name") from None
        study.set_user_attr(META_ATTR, meta)
        study.set_user_attr("objective_names", search.objective_names)
    stale = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)) if (resume and recover_stale) else []
    for t in stale:
        study.tell(t.number, state=TrialState.FAIL)
    return study, len(stale)


def _counts(study: optuna.Study) -> tuple[int, int]:
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING))
    running = sum(t.state == TrialState.RUNNING for t in trials)
    return len(trials) - running, running


class AskTellGridSampler(optuna.samplers.GridSampler):
    """optuna's grid sampler for the ask/tell loop: optuna's version calls ``study.stop()`` after the last
    grid point, which raises outside ``study.optimize``; :func:`run` stops at the grid size itself."""

    def after_trial(self, study, trial, state, values) -> None:  # noqa: ANN001 (optuna's signature)
        return None


#: consecutive failed trials (non-finite objective or constraint) after which a study stops
MAX_CONSECUTIVE_FAILURES = 50


def _finite(values: np.ndarray, constraints: list[float]) -> bool:
    return bool(np.all(np.isfinite(values))) and all(np.isfinite(c) for c in constraints)


def run(study: optuna.Study, search: Search, evaluate: Evaluator, progress: bool = True) -> int:
    """Ask/evaluate/tell in batches until the study holds ``search.n_trials`` complete trials
    (counting every worker's). Returns how many trials this call completed.

    A design whose objective or constraints are not finite never reaches the sampler: its trial is
    told FAIL with the reason in its metrics; after ``MAX_CONSECUTIVE_FAILURES`` failures in a row the
    study stops with one line naming the most common reason."""
    dists = distributions(search.space)
    target = search.n_trials
    if search.sampler == "grid":
        target = min(target, int(np.prod([len(v) for v in grid(search.space, search.grid_points).values()])))
    complete, _ = _counts(study)
    bar = tqdm(total=target, initial=complete, desc="search", unit="trial", disable=not progress, leave=False)
    new = 0
    failures: list[str] = []
    while True:
        complete, running = _counts(study)
        k = min(search.batch_size, target - complete - running)
        if k <= 0:
            break
        trials = _claim(study, [study.ask(dists) for _ in range(k)], target)
        if not trials:
            continue
        values, attrs, constraints = evaluate([t.params for t in trials])
        names = list(constraints)
        values = np.asarray(values, dtype=float).reshape(len(trials), -1)
        for i, (trial, a) in enumerate(zip(trials, attrs, strict=True)):
            cons = [float(constraints[c][i]) for c in names]
            v = values[i]
            if not _finite(v, cons):
                bad = [n for n, c in zip(names, cons, strict=True) if not np.isfinite(c)]
                why = "objective " + ", ".join(f"{x:g}" for x in v) if not np.all(np.isfinite(v)) else ""
                why = "; ".join(filter(None, [why, *(f"constraint {n} not finite" for n in bad)]))
                trial.set_user_attr(METRICS_ATTR, {**{k2: v2 for k2, v2 in a.items() if _json_ok(v2)},
                                                   "failed_reason": why})
                study.tell(trial, state=TrialState.FAIL)
                failures.append(why)
                continue
            failures.clear()
            record(trial, a, cons)
            study.tell(trial, float(v[0]) if v.size == 1 else [float(x) for x in v])
            new += 1
            bar.update(1)
        if len(failures) >= MAX_CONSECUTIVE_FAILURES:
            bar.close()
            common = max(set(failures), key=failures.count)
            raise DseError(f"{len(failures)} trials in a row failed (most common: {common}); accepted: inputs that "
                           "give a finite score, area, cost and power (check workload weights, template fields and "
                           "search ranges)", field="search")
    bar.close()
    return new


def _claim(study: optuna.Study, asked: list, target: int) -> list:
    """Of the trials just asked, those that may run: among all live trials (complete or running, every
    worker's), only the ``target`` lowest trial numbers (numbers are handed out atomically by the
    storage); the rest are told PRUNED unevaluated, so several workers complete exactly ``target``."""
    live = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING))
    allowed = {t.number for t in sorted(live, key=lambda t: t.number)[:target]}
    keep = []
    for t in asked:
        if t.number in allowed:
            keep.append(t)
        else:
            study.tell(t, state=TrialState.PRUNED)
    return keep


def _json_ok(v: object) -> bool:
    """Whether a metric value can be stored as a JSON user attribute (finite numbers, strings)."""
    return isinstance(v, str) or (isinstance(v, int | float) and np.isfinite(v))


def feasible_complete(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    return [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)) if constraint_value(t) <= 0]


def best_feasible(study: optuna.Study) -> optuna.trial.FrozenTrial:
    """The best feasible trial: by the objective, or for several objectives the Pareto point with
    the best first objective."""
    trials = feasible_complete(study)
    if not trials:
        from collections import Counter

        reasons = Counter(metrics(t).get("infeasible_reason", "") for t in
                          study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
        common = reasons.most_common(1)[0][0] if reasons else ""
        raise DseError("no feasible design found (every trial broke a budget, the reticle limit or a memory "
                       f"capacity){'; most common reason: ' + common if common else ''}; accepted: larger search "
                       "budgets, other search.space ranges, or a parallelism plan over more chips")
    sign = 1.0 if study.directions[0] == optuna.study.StudyDirection.MAXIMIZE else -1.0
    return max(trials, key=lambda t: sign * t.values[0])


def pareto_front(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """Feasible trials no other feasible trial dominates (all objectives, with their directions)."""
    trials = feasible_complete(study)
    if not trials:
        return []
    signs = np.array([1.0 if d == optuna.study.StudyDirection.MAXIMIZE else -1.0 for d in study.directions])
    v = np.array([t.values for t in trials]) * signs  # larger is better everywhere
    ge = (v[:, None, :] >= v[None, :, :]).all(axis=2)
    gt = (v[:, None, :] > v[None, :, :]).any(axis=2)
    dominated = (ge & gt).any(axis=0)
    return [t for t, d in zip(trials, dominated, strict=True) if not d]
