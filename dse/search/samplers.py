"""The samplers a search may use: one record per sampler (name -> factory, objectives it supports).

``search.sampler`` in a config accepts the names of :data:`SAMPLERS` and its error message lists them;
:func:`dse.search.optimize.make_sampler` builds the configured one from its record. Adding a sampler =
one :class:`Sampler` record here (plus its test). The factories import optuna only when called, so the
config schema stays light.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dse.config import Search


@dataclass(frozen=True)
class Sampler:
    """One sampler: ``factory(search, seed)`` returns an optuna sampler seeded with ``seed``
    (``search.seed + worker``); ``multi_objective`` says whether it handles several objectives."""

    name: str
    factory: Callable[[Search, int], Any]
    multi_objective: bool = True
    description: str = ""


def _tpe(search: Search, seed: int) -> Any:
    import optuna
    return optuna.samplers.TPESampler(seed=seed, constant_liar=True,
                                      n_startup_trials=min(20, max(search.n_trials // 5, 4)))


def _nsga2(search: Search, seed: int) -> Any:
    import optuna
    return optuna.samplers.NSGAIISampler(seed=seed, population_size=max(search.batch_size, 8))


def _random(search: Search, seed: int) -> Any:
    import optuna
    return optuna.samplers.RandomSampler(seed=seed)


def _qmc(search: Search, seed: int) -> Any:
    import optuna
    return optuna.samplers.QMCSampler(seed=search.seed, scramble=True)  # one sequence shared by the workers


def _cmaes(search: Search, seed: int) -> Any:
    import optuna
    return optuna.samplers.CmaEsSampler(seed=seed)


def _grid(search: Search, seed: int) -> Any:
    from dse.search.optimize import AskTellGridSampler
    from dse.search.space import grid
    return AskTellGridSampler(grid(search.space, search.grid_points), seed=seed)


SAMPLERS: dict[str, Sampler] = {s.name: s for s in (
    Sampler("tpe", _tpe, description="tree-structured Parzen estimator (default for one objective)"),
    Sampler("nsga2", _nsga2, description="NSGA-II genetic algorithm (default for several objectives)"),
    Sampler("cmaes", _cmaes, multi_objective=False, description="CMA evolution strategy"),
    Sampler("random", _random, description="independent uniform draws"),
    Sampler("qmc", _qmc, description="scrambled Sobol quasi-Monte-Carlo sequence"),
    Sampler("grid", _grid, description="search.grid_points values per searched parameter"),
)}


def names(multi: bool | None = None) -> list[str]:
    """Sampler names in registry order; with ``multi`` only those that support (True) several objectives."""
    return [n for n, s in SAMPLERS.items() if multi is None or not multi or s.multi_objective]
