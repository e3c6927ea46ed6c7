"""The samplers a search may use: one record per sampler (name -> factory, objectives it supports).

``search.sampler`` in a config accepts the names of :data:`SAMPLERS` and its error message lists them;
:func:`dse.search.optimize.make_sampler` builds the configured one from its record. Adding a sampler =
one :class:`Sampler` record here (plus its test). The factories import optuna only when called, so the
config schema stays light.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Sampler:
    """One sampler: ``factory(search, seed, grid)`` returns an optuna sampler seeded with ``seed``
    (``search.seed + worker``; ``search`` is the config's ``Search`` block; ``grid()`` builds the grid
    sampler of the searched parameters, for grid-type samplers); ``multi_objective`` says whether it
    handles several objectives; ``constraint_blind`` that it learns from objective values alone and ignores
    optuna's constraints (CMA-ES), so the search tells it each infeasible trial as worse than every feasible one
    (:func:`dse.search.optimize.ranked_values`). The module imports nothing of dse, so the config can read it."""

    name: str
    factory: Callable[[Any, int, Callable[[], Any]], Any]
    multi_objective: bool = True
    description: str = ""
    constraint_blind: bool = False


def _tpe(search: Any, seed: int, grid: Callable[[], Any]) -> Any:
    import optuna
    return optuna.samplers.TPESampler(seed=seed, constant_liar=True,
                                      n_startup_trials=min(20, max(search.n_trials // 5, 4)))


def _nsga2(search: Any, seed: int, grid: Callable[[], Any]) -> Any:
    import optuna
    return optuna.samplers.NSGAIISampler(seed=seed, population_size=max(search.batch_size, 8))


def _random(search: Any, seed: int, grid: Callable[[], Any]) -> Any:
    import optuna
    return optuna.samplers.RandomSampler(seed=seed)


def _qmc(search: Any, seed: int, grid: Callable[[], Any]) -> Any:
    import warnings

    import optuna
    with warnings.catch_warnings():  # optuna marks it experimental since 3.0; the user chose it by name
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.QMCSampler(seed=search.seed, scramble=True)  # one sequence shared by the workers


def _cmaes(search: Any, seed: int, grid: Callable[[], Any]) -> Any:
    import optuna
    return optuna.samplers.CmaEsSampler(seed=seed)


def _grid(search: Any, seed: int, grid: Callable[[], Any]) -> Any:
    return grid()


SAMPLERS: dict[str, Sampler] = {s.name: s for s in (
    Sampler("tpe", _tpe, description="tree-structured Parzen estimator (default for one objective)"),
    Sampler("nsga2", _nsga2, description="NSGA-II genetic algorithm (default for several objectives)"),
    Sampler("cmaes", _cmaes, multi_objective=False, description="CMA evolution strategy", constraint_blind=True),
    Sampler("random", _random, description="independent uniform draws"),
    Sampler("qmc", _qmc, description="scrambled Sobol quasi-Monte-Carlo sequence"),
    Sampler("grid", _grid, description="search.grid_points values per searched parameter"),
)}


def names(multi: bool | None = None) -> list[str]:
    """Sampler names in registry order; with ``multi`` only those that support (True) several objectives."""
    return [n for n, s in SAMPLERS.items() if multi is None or not multi or s.multi_objective]
