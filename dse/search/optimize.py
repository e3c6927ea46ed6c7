"""optuna driver: batched ask -> vectorized predict -> tell, with a real storage (SQLite by default).

Each round asks ``batch_size`` trials, builds one DesignBatch from their parameters, predicts the
whole mix on all of them in one call, and tells the results back; the sampler, not the model,
sets the pace. Infeasible designs (area over budget or reticle) are kept, with their constraint
value (``Trial.set_constraint``) and reason (a user attribute); optuna's constrained TPE steers
away from them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import optuna
from tqdm import tqdm

from dse.config import Search
from dse.errors import DseError
from dse.search.space import distributions

#: evaluate(list of param dicts) -> (objective [D], user attrs per design, constraints by name [D])
Evaluator = Callable[[list[dict[str, float]]], tuple[np.ndarray, list[dict], dict[str, np.ndarray]]]


def constraint_value(trial: optuna.trial.FrozenTrial) -> float:
    """The trial's constraint (<= 0 feasible); 0 when none was recorded."""
    return max(trial.constraints.values(), default=0.0)


def make_sampler(search: Search) -> optuna.samplers.BaseSampler:
    """The configured sampler, seeded for repeatable runs."""
    s = search.seed
    match search.sampler:
        case "tpe":
            return optuna.samplers.TPESampler(seed=s, constant_liar=True,
                                              n_startup_trials=min(20, max(search.n_trials // 5, 4)))
        case "random":
            return optuna.samplers.RandomSampler(seed=s)
        case "qmc":
            return optuna.samplers.QMCSampler(seed=s, scramble=True)
        case "cmaes":
            return optuna.samplers.CmaEsSampler(seed=s)
    raise DseError(f"got {search.sampler!r}; accepted: tpe, random, qmc, cmaes", field="search.sampler")


@dataclass(frozen=True)
class SearchOutcome:
    study: optuna.Study
    new_trials: int
    recovered: int  # stale RUNNING trials from an interrupted run, marked FAIL on resume


def open_study(name: str, storage: str, search: Search, resume: bool) -> tuple[optuna.Study, int]:
    """Create (or with ``resume`` load) the study; mark trials left RUNNING by a crash as FAIL."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        if resume:
            study = optuna.load_study(study_name=name, storage=storage, sampler=make_sampler(search))
        else:
            study = optuna.create_study(study_name=name, storage=storage, direction="maximize",
                                        sampler=make_sampler(search))
    except KeyError:
        raise DseError(f"no study named {name!r} in the storage; accepted: run without --resume first",
                       file=storage) from None
    except optuna.exceptions.DuplicatedStudyError:
        raise DseError(f"study {name!r} already exists in this storage; accepted: --resume, or a new name",
                       file=storage) from None
    except Exception as exc:  # sqlalchemy errors on a corrupt or unreadable database
        raise DseError(f"cannot open the study storage ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
                       "accepted: a readable optuna storage URL", file=storage) from None
    stale = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))]
    for t in stale:
        study.tell(t.number, state=optuna.trial.TrialState.FAIL)
    return study, len(stale)


def run(study: optuna.Study, search: Search, evaluate: Evaluator, progress: bool = True) -> int:
    """Ask/evaluate/tell in batches until the study holds ``search.n_trials`` complete trials."""
    dists = distributions(search.space)
    done = len(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))
    todo = max(search.n_trials - done, 0)
    bar = tqdm(total=search.n_trials, initial=done, desc="search", unit="trial", disable=not progress,
               leave=False)
    new = 0
    while new < todo:
        k = min(search.batch_size, todo - new)
        trials = [study.ask(dists) for _ in range(k)]
        values, attrs, constraints = evaluate([t.params for t in trials])
        for i, (trial, v, a) in enumerate(zip(trials, values, attrs, strict=True)):
            for key, val in a.items():
                trial.set_user_attr(key, val)
            for key, c in constraints.items():
                trial.set_constraint(key, float(c[i]))
            study.tell(trial, float(v))
        new += k
        bar.update(k)
        best = _best_feasible(study)
        if best is not None:
            bar.set_postfix(best=f"{best.value:.4g}")
    bar.close()
    return new


def _best_feasible(study: optuna.Study) -> optuna.trial.FrozenTrial | None:
    trials = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
              if constraint_value(t) <= 0]
    return max(trials, key=lambda t: t.value) if trials else None


def best_feasible(study: optuna.Study) -> optuna.trial.FrozenTrial:
    best = _best_feasible(study)
    if best is None:
        raise DseError("no feasible design found (every trial broke a budget or the reticle limit); "
                       "accepted: larger search budgets or other search.space ranges")
    return best
