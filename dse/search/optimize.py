"""optuna driver: batched ask -> vectorized predict -> tell, on a real storage (SQLite by default).

Each round asks up to ``batch_size`` trials, builds one DesignBatch from their parameters, predicts
the whole mix on all of them in one call and tells the results back; the sampler and the storage,
not the model, set the pace. Several workers (processes or machines) may run :func:`run` on one
study in a shared storage: each round asks only for what the study still lacks, counting every
worker's complete and running trials (optuna's own distributed mode). Infeasible designs are kept,
with their constraints (optuna's constraint attribute, read by TPE and NSGA-II) and reason; a sampler that reads no
constraints (CMA-ES) is told them in its values instead (:func:`ranked_values`).
"""

from __future__ import annotations

import copy
import hashlib
import time
from collections.abc import Callable

import numpy as np
import optuna
from optuna.study._constrained_optimization import _CONSTRAINTS_KEY
from optuna.trial import TrialState
from tqdm import tqdm

from dse.config import Search
from dse.errors import DseError, InfeasibleError
from dse.score import OBJECTIVES
from dse.search.samplers import SAMPLERS
from dse.search.samplers import names as sampler_names
from dse.search.space import distributions, grid

#: evaluate(list of param dicts) -> (objective values [D, K], metrics per design, constraints by name [D])
Evaluator = Callable[[list[dict[str, float]]], tuple[np.ndarray, list[dict], dict[str, np.ndarray]]]

METRICS_ATTR = "metrics"
META_ATTR = "dse"


def trial_attrs(metrics: dict) -> dict:
    """A trial's user attributes: ``metrics`` (the whole dict, what dse reads back) and each metric as its own
    attribute (numbers and text, as optuna-dashboard lists them: ``score``, ``area_mm2``, ``power_w``, ..)."""
    out: dict = {METRICS_ATTR: metrics}
    out.update({k: v for k, v in metrics.items() if k != METRICS_ATTR and isinstance(v, str | int | float)
                and not isinstance(v, bool) and _json_ok(v)})
    return out


def constraint_attrs(constraints: list[float], names: list[str] | None = None) -> dict[str, float]:
    """A trial's constraints as optuna's named system attributes (``constraints:NAME``, the form of
    ``Trial.set_constraint``: read by TPE and NSGA-II as ``FrozenTrial.constraints``, listed by name in
    optuna-dashboard; <= 0 is within the limit). Without ``names`` they are named by position."""
    names = names if names is not None and len(names) == len(constraints) else [str(i) for i in range(len(constraints))]
    return {f"{_CONSTRAINTS_KEY}:{n}": float(c) for n, c in zip(names, constraints, strict=True)}


def record(trial: optuna.trial.Trial, metrics: dict, constraints: list[float], names: list[str] | None = None) -> None:
    """Store a trial's :func:`trial_attrs` as user attributes and its :func:`constraint_attrs` as system ones."""
    store_attrs(trial.storage, trial._trial_id, trial_attrs(metrics), constraint_attrs(constraints, names))


def store_attrs(storage: optuna.storages.BaseStorage, trial_id: int, user: dict, system: dict) -> None:
    """Write one trial's user and system attributes to a shared storage: in an RDB storage (SQLite,
    PostgreSQL) one transaction of multi-row inserts, elsewhere (a journal file) one write per attribute."""
    backend = getattr(storage, "_backend", storage)
    if not isinstance(backend, optuna.storages.RDBStorage):
        for key, value in user.items():
            storage.set_trial_user_attr(trial_id, key, value)
        for key, value in system.items():
            storage.set_trial_system_attr(trial_id, key, value)
        return
    import json

    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session
    from sqlalchemy import insert

    with _create_scoped_session(backend.scoped_session, True) as session:
        for model, attrs in ((models.TrialUserAttributeModel, user), (models.TrialSystemAttributeModel, system)):
            if attrs:
                session.execute(insert(model), [{"trial_id": trial_id, "key": k, "value_json": json.dumps(v)}
                                                for k, v in attrs.items()])


def metrics(trial: optuna.trial.FrozenTrial) -> dict:
    return trial.user_attrs.get(METRICS_ATTR, {})


def constraint_value(trial: optuna.trial.FrozenTrial) -> float:
    """The trial's largest constraint (<= 0 feasible); 0 when none was recorded."""
    return max(trial.constraints.values(), default=0.0)


def make_sampler(search: Search, worker: int = 0) -> optuna.samplers.BaseSampler:
    """The configured sampler (its :data:`~dse.search.samplers.SAMPLERS` record), seeded (``seed + worker``)
    for repeatable runs."""
    spec = SAMPLERS.get(str(search.sampler))
    if spec is None:
        raise DseError(f"got {search.sampler!r}; accepted: {', '.join(SAMPLERS)}", field="search.sampler")
    if len(search.objective_names) > 1 and not spec.multi_objective:
        raise DseError(f"{spec.name} optimises one objective; accepted for several: "
                       f"{', '.join(sampler_names(multi=True))}", field="search.sampler")
    seed = search.seed + worker
    return spec.factory(search, seed, lambda: AskTellGridSampler(grid(search.space, search.grid_points), seed=seed))


def config_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: ``meta["inputs"]`` entries not compared on resume: the config's text (``config_sha256`` covers what defines the
#: search, so n_trials, batch size, output and description may change between runs)
UNCHECKED_INPUTS = ("config",)


def changed_input(old: dict | None, new: dict | None, what: str = "study") -> tuple[str, str] | None:
    """The first input recorded when a study was created (``old``: its ``meta["inputs"]``, see
    :func:`dse.study.study_inputs`) that differs now (``new``), as (field, one-line message); None when every
    input is unchanged or the study recorded none (created before inputs were recorded). ``what`` names
    the run in the message (a study, a sweep)."""
    if not old or new is None:
        return None
    accepted = f"accepted: the unchanged inputs, or a new {what} without --resume"
    if old.get("dse_version") not in (None, new.get("dse_version")):
        return "dse_version", (f"got dse {new.get('dse_version')}; the {what} was created with dse "
                               f"{old['dse_version']}; accepted: that version, or a new {what} without --resume")
    for label in [*old, *(k for k in new if k not in old)]:
        was, now = old.get(label), new.get(label)
        if label in UNCHECKED_INPUTS or label == "dse_version" or not isinstance(was or now, dict):
            continue
        if not isinstance(now, dict):
            return label, f"{was.get('file')} was an input when the {what} was created, and is none now; {accepted}"
        if not isinstance(was, dict):
            return label, f"{now.get('file')} was not an input when the {what} was created; {accepted}"
        if was.get("sha256") != now.get("sha256"):
            return label, (f"{now.get('file')} changed since the {what} was created (sha256 {str(was.get('sha256'))[:12]}"
                           f".. -> {str(now.get('sha256'))[:12]}..); {accepted}")
    return None


def open_study(name: str, storage: optuna.storages.BaseStorage, search: Search, resume: bool, meta: dict,
               recover_stale: bool = True, create_missing: bool = False,
               source: str | None = None) -> tuple[optuna.Study, int]:
    """Create the study once (or with ``resume`` load it, refusing a changed config, and a changed input
    file when the study recorded its inputs: :func:`changed_input`, the error naming the config file
    ``source`` and the input's field); trials left RUNNING by a killed single-worker run are marked FAIL on
    resume (``recover_stale``). With ``create_missing`` a resume whose study is not in the storage creates it
    (a run killed before its study was created: the caller knows its folder never got its metadata)."""
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
        changed = changed_input(old.get("inputs"), meta.get("inputs"))
        if changed is not None:
            raise DseError(changed[1], file=source, field=changed[0])
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


#: seconds between writes of a lone worker's finished trials to the configured storage
FLUSH_S = 2.0


#: how far on the wrong side a constraint-blind sampler is told an infeasible trial: beyond every feasible objective
#: value (a score, a score per resource, or an area, cost or power, all below 1e9 in their units)
INFEASIBLE_RANK = 1e9


def ranked_values(values: float | list[float], constraints: list[float],
                  directions: list[optuna.study.StudyDirection]) -> float | list[float]:
    """Deb's feasibility rule as objective values (Deb, "An efficient constraint handling method for genetic
    algorithms", Comput. Methods Appl. Mech. Eng. 186, 2000): a feasible trial (every constraint <= 0) keeps
    ``values``; an infeasible one is ``INFEASIBLE_RANK x (1 + V)`` on the wrong side of each objective, ``V`` the sum of
    its positive constraint values (the violation by which optuna's NSGA-II ranks infeasible trials). A sampler that
    ranks a generation by value alone (CMA-ES: Hansen, "The CMA Evolution Strategy: A Tutorial", arXiv:1604.00772)
    then puts every feasible design before every infeasible one, and the less infeasible first; told the designs'
    own values it climbs past a budget that the score rewards breaking."""
    v = sum(max(c, 0.0) for c in constraints)
    if v <= 0:
        return values
    told = [(-INFEASIBLE_RANK if d == optuna.study.StudyDirection.MAXIMIZE else INFEASIBLE_RANK) * (1.0 + v)
            for d in directions]
    return told if isinstance(values, list) else told[0]


def _blind_view(ft: optuna.trial.FrozenTrial, directions: list) -> optuna.trial.FrozenTrial:
    """A complete trial as a constraint-blind sampler's twin holds it: :func:`ranked_values`, no constraints."""
    out = copy.copy(ft)
    out.values = list(np.atleast_1d(ranked_values(list(ft.values), list(ft.constraints.values()), directions)))
    out.system_attrs = {k: x for k, x in ft.system_attrs.items() if not k.startswith(_CONSTRAINTS_KEY)}
    return out


def _memory_study(study: optuna.Study) -> optuna.Study:
    """An in-memory twin of ``study`` (same directions, same sampler) that the sampler reads and writes:
    optuna's RDB storages cost ~15x the model per trial when every ask and tell goes through them."""
    return optuna.create_study(storage=optuna.storages.InMemoryStorage(), directions=study.directions,
                               sampler=study.sampler)


def _pull(disk: optuna.Study, mem: optuna.Study, seen: set[int], blind: bool = False) -> None:
    """Copy the storage's complete trials that ``mem`` does not hold yet (resumed ones, other workers'); for a
    constraint-blind sampler as :func:`_blind_view` shows them."""
    new = [t for t in disk.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)) if t._trial_id not in seen]
    for t in new:
        seen.add(t._trial_id)
    if new:
        mem.add_trials([_blind_view(t, disk.directions) for t in new] if blind else new)


def _flush(disk: optuna.Study, mem: optuna.Study, pending: list[int], seen: set[int],
           truth: dict[int, tuple] | None = None) -> None:
    """Write the finished ``mem`` trials (ids ``pending``) to the storage in order: into an RDB storage
    (SQLite, PostgreSQL) as one transaction of bulk inserts, elsewhere one ``create_new_trial`` each. ``truth``:
    the values and constraint attributes of the trials whose twin a constraint-blind sampler was told otherwise."""
    if not pending:
        return
    trials = [mem._storage.get_trial(tid) for tid in pending]
    for i, ft in enumerate(trials):
        if truth and ft._trial_id in truth:
            values, system = truth.pop(ft._trial_id)
            trials[i] = ft = copy.copy(ft)
            ft.values, ft.system_attrs = list(np.atleast_1d(values)), {**ft.system_attrs, **system}
    backend = getattr(disk._storage, "_backend", disk._storage)
    if isinstance(backend, optuna.storages.RDBStorage):
        seen.update(_bulk_insert(backend, disk._study_id, trials))
    else:
        for ft in trials:
            seen.add(disk._storage.create_new_trial(disk._study_id, template_trial=ft))
    pending.clear()


def _bulk_insert(storage: optuna.storages.RDBStorage, study_id: int, trials: list) -> list[int]:
    """Insert finished trials (numbers continuing the study's) in one transaction with one multi-row
    insert per table, the rows optuna's ``create_new_trial(template_trial=...)`` writes one by one
    (``tests/search/test_optimize.py`` reads them back through optuna). Only for a study's sole writer."""
    import json

    from optuna.distributions import distribution_to_json
    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session
    from sqlalchemy import func, insert

    with _create_scoped_session(storage.scoped_session, True) as session:
        models.StudyModel.find_or_raise_by_id(study_id, session, for_update=True)
        n0 = session.query(func.count(models.TrialModel.trial_id)).filter(
            models.TrialModel.study_id == study_id).scalar()
        rows = []
        for k, ft in enumerate(trials):
            tm = models.TrialModel(study_id=study_id, number=n0 + k, state=ft.state)
            tm.datetime_start, tm.datetime_complete = ft.datetime_start, ft.datetime_complete
            rows.append(tm)
        session.add_all(rows)
        session.flush()  # trial ids
        params, values, user, system = [], [], [], []
        for tm, ft in zip(rows, trials, strict=True):
            tid = tm.trial_id
            for name, v in ft.params.items():
                dist = ft.distributions[name]
                params.append({"trial_id": tid, "param_name": name, "param_value": dist.to_internal_repr(v),
                               "distribution_json": distribution_to_json(dist)})
            for j, v in enumerate(ft.values or []):
                stored, kind = models.TrialValueModel.value_to_stored_repr(v)
                values.append({"trial_id": tid, "objective": j, "value": stored, "value_type": kind})
            user += [{"trial_id": tid, "key": key, "value_json": json.dumps(v)} for key, v in ft.user_attrs.items()]
            system += [{"trial_id": tid, "key": key, "value_json": json.dumps(v)} for key, v in ft.system_attrs.items()]
        for model, batch in ((models.TrialParamModel, params), (models.TrialValueModel, values),
                             (models.TrialUserAttributeModel, user), (models.TrialSystemAttributeModel, system)):
            if batch:
                session.execute(insert(model), batch)
        return [tm.trial_id for tm in rows]


def _outcome(values: np.ndarray, attrs: list[dict], constraints: dict[str, np.ndarray], i: int):
    """(state, values, metrics, constraint list, failure reason) of design ``i`` of an evaluated batch."""
    names = list(constraints)
    cons = [float(constraints[c][i]) for c in names]
    v = values[i]
    if _finite(v, cons):
        return TrialState.COMPLETE, (float(v[0]) if v.size == 1 else [float(x) for x in v]), attrs[i], cons, ""
    bad = [n for n, c in zip(names, cons, strict=True) if not np.isfinite(c)]
    why = "objective " + ", ".join(f"{x:g}" for x in v) if not np.all(np.isfinite(v)) else ""
    why = "; ".join(filter(None, [why, *(f"constraint {n} not finite" for n in bad)]))
    return TrialState.FAIL, None, {**{k: x for k, x in attrs[i].items() if _json_ok(x)}, "failed_reason": why}, [], why


def run(study: optuna.Study, search: Search, evaluate: Evaluator, progress: bool = True, exclusive: bool = False,
        flush_s: float = FLUSH_S, claimed: Callable[[], None] | None = None) -> int:
    """Ask/evaluate/tell in batches until the study holds ``search.n_trials`` complete trials
    (counting every worker's). Returns how many trials this call completed.

    The sampler asks and is told on an in-memory twin of the study. With ``exclusive`` (this process is the
    study's only writer: one worker, its own storage) finished trials reach the storage every ``flush_s``
    seconds and at the end (a killed run loses at most that much; ``--resume`` continues from the storage).
    Otherwise each round pulls the other workers' complete trials into the twin, claims its trials in the
    storage (the ``n_trials`` lowest numbers win) and records each result there. ``claimed`` is called once,
    after this worker's first claim (or when it has none to make): several workers pass their start barrier,
    so each holds its first batch before any evaluates and a fast worker cannot take the whole study alone.

    A design whose objective or constraints are not finite never reaches the sampler: its trial is
    told FAIL with the reason in its metrics; after ``MAX_CONSECUTIVE_FAILURES`` failures in a row the
    study stops with one line naming the most common reason."""
    dists = distributions(search.space)
    target = search.n_trials
    if search.sampler == "grid":
        target = min(target, int(np.prod([len(v) for v in grid(search.space, search.grid_points).values()])))
    mem, seen, pending = _memory_study(study), set(), []
    spec = SAMPLERS.get(str(search.sampler))
    blind, truth = spec is not None and spec.constraint_blind, {}
    _pull(study, mem, seen, blind)
    complete, _ = _counts(study)
    bar = tqdm(total=target, initial=complete, desc="search", unit="trial", leave=False,
               disable=None if progress else True)  # None: only on a terminal (no bar lines in a log)
    new = 0
    failures: list[str] = []
    last = time.monotonic()
    try:
        while True:
            if exclusive:
                complete, running = len(mem.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))), 0
            else:
                _pull(study, mem, seen, blind)
                complete, running = _counts(study)
            k = min(search.batch_size, target - complete - running)
            if k <= 0:
                break
            asked = [mem.ask(dists) for _ in range(k)]
            if exclusive:
                trials, claims = asked, [None] * k
            else:
                trials, claims = _claim_twins(study, mem, asked, target, seen)
                if claimed is not None:
                    claimed()
                    claimed = None
                if not trials:
                    continue
            values, attrs, constraints = evaluate([t.params for t in trials])
            values = np.asarray(values, dtype=float).reshape(len(trials), -1)
            for i, (trial, disk_id) in enumerate(zip(trials, claims, strict=True)):
                state, v, m, cons, why = _outcome(values, attrs, constraints, i)
                user, system = trial_attrs(m), constraint_attrs(cons, list(constraints))
                told, twin_system = v, system
                if blind:  # the twin holds what the sampler may read; the storage the trial's own numbers
                    told, twin_system = (None if v is None else ranked_values(v, cons, mem.directions)), {}
                    if exclusive and v is not None:
                        truth[trial._trial_id] = (v, system)
                store_attrs(mem._storage, trial._trial_id, user, twin_system)
                mem.tell(trial, told, state=state) if v is not None else mem.tell(trial, state=state)
                if disk_id is not None:
                    store_attrs(study._storage, disk_id, user, system)
                    study._storage.set_trial_state_values(disk_id, state, None if v is None else
                                                          np.atleast_1d(v).tolist())
                pending.append(trial._trial_id)
                if state == TrialState.FAIL:
                    failures.append(why)
                    continue
                failures.clear()
                new += 1
                bar.update(1)
            if exclusive and time.monotonic() - last >= flush_s:
                _flush(study, mem, pending, seen, truth)
                last = time.monotonic()
            if len(failures) >= MAX_CONSECUTIVE_FAILURES:
                common = max(set(failures), key=failures.count)
                raise DseError(f"{len(failures)} trials in a row failed (most common: {common}); accepted: inputs "
                               "that give a finite score, area, cost and power (check workload weights, template "
                               "fields and search ranges)", field="search")
    finally:
        bar.close()
        if claimed is not None:  # nothing was left to claim: do not keep the other workers waiting
            claimed()
        if exclusive:
            _flush(study, mem, pending, seen, truth)  # also on an error or Ctrl-C: what finished is kept
    return new


def _claim_twins(disk: optuna.Study, mem: optuna.Study, asked: list, target: int, seen: set[int]):
    """Create each asked trial in the storage (RUNNING, with its parameters: one insert), keep those
    the storage allows (among all live trials, every worker's, the ``target`` lowest numbers: the storage
    hands numbers out atomically, so several workers complete exactly ``target``), tell the rest PRUNED there
    and FAIL in the twin. Returns (kept twins, their
    storage trial ids)."""
    stg = disk._storage
    ids = []
    for t in asked:
        ft = mem._storage.get_trial(t._trial_id)
        ids.append(stg.create_new_trial(disk._study_id, template_trial=ft))
        seen.add(ids[-1])
    numbers = {stg.get_trial(i).number: (t, i) for t, i in zip(asked, ids, strict=True)}
    live = disk.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING))
    allowed = {t.number for t in sorted(live, key=lambda t: t.number)[:target]}
    kept, kept_ids = [], []
    for number, (t, i) in numbers.items():
        if number in allowed:
            kept.append(t)
            kept_ids.append(i)
        else:
            stg.set_trial_state_values(i, TrialState.PRUNED)
            mem.tell(t, state=TrialState.FAIL)
    return kept, kept_ids


def _json_ok(v: object) -> bool:
    """Whether a metric value can be stored as a JSON user attribute (finite numbers, strings)."""
    return isinstance(v, str) or (isinstance(v, int | float) and np.isfinite(v))


def complete_count(study: optuna.Study) -> int:
    """Complete trials of ``study``: the trials a search was asked for (``len(study.trials)`` also counts the claims
    several workers made past the target, pruned, and designs that failed)."""
    return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))


def other_count(study: optuna.Study | None) -> int:
    """Trials of ``study`` that did not complete (pruned claims, failed designs, runs interrupted); 0 without one."""
    return 0 if study is None else len(study.get_trials(deepcopy=False)) - complete_count(study)


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
        raise InfeasibleError("no feasible design found (every trial broke a budget, the reticle limit or a memory "
                              f"capacity){'; most common reason: ' + common if common else ''}; accepted: larger "
                              "search budgets, other search.space ranges, or a parallelism plan over more chips")
    sign = 1.0 if study.directions[0] == optuna.study.StudyDirection.MAXIMIZE else -1.0
    return max(trials, key=lambda t: tie_key(sign * t.values[0], metrics(t)))


def tie_key(value: float, m: dict) -> tuple[float, float, float]:
    """Sort key of a trial, larger is better: its objective (signed so larger is better), then on equal objectives
    the smaller die, then the cheaper one (``area_mm2`` and ``cost_usd`` of its metrics; a trial without them last)."""
    return (value, -float(m.get("area_mm2", np.inf)), -float(m.get("cost_usd", np.inf)))


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
