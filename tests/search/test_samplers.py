"""The sampler registry: every record builds an optuna sampler, the config accepts exactly its names,
single-objective samplers are refused for several objectives, and a registered sampler is usable."""

import optuna
import pytest
from pydantic import ValidationError

from dse.config import Search
from dse.errors import DseError
from dse.search import optimize, samplers

SPACE = {"peak_tflops": {"low": 10, "high": 100}}


def _search(sampler: str, **kw) -> Search:
    return Search.model_validate({"n_trials": 8, "batch_size": 4, "sampler": sampler, "space": SPACE, **kw})


@pytest.mark.parametrize("name", list(samplers.SAMPLERS))
def test_every_registered_sampler_builds(name: str) -> None:
    """... without a warning to the user who named it (QMC printed optuna's ExperimentalWarning)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert isinstance(optimize.make_sampler(_search(name)), optuna.samplers.BaseSampler)


def test_config_accepts_the_registry_names_and_lists_them_on_error() -> None:
    with pytest.raises(ValidationError) as exc:
        _search("annealing")
    for name in samplers.SAMPLERS:
        assert name in str(exc.value)


def test_single_objective_samplers_refuse_several_objectives() -> None:
    single = [n for n, s in samplers.SAMPLERS.items() if not s.multi_objective]
    assert single == ["cmaes"]
    with pytest.raises(DseError, match="accepted for several: tpe, nsga2, random, qmc, grid"):
        optimize.make_sampler(_search("cmaes", objectives=["score", "area_mm2"]))


def test_a_registered_sampler_is_built_from_its_record(monkeypatch) -> None:
    made = []

    def factory(search, seed, grid):
        made.append(seed)
        return optuna.samplers.RandomSampler(seed=seed)

    monkeypatch.setitem(samplers.SAMPLERS, "mine", samplers.Sampler("mine", factory, multi_objective=False))
    search = _search("random").model_copy(update={"sampler": "mine", "seed": 5})
    assert isinstance(optimize.make_sampler(search, worker=2), optuna.samplers.RandomSampler)
    assert made == [7]
    with pytest.raises(DseError, match="mine optimises one objective"):
        optimize.make_sampler(search.model_copy(update={"objectives": ["score", "area_mm2"]}))


def test_a_grid_larger_than_the_trials_is_warned_about(tmp_path, capsys) -> None:
    """grid_points 3 over two knobs is 9 points; n_trials 5 tried 5 of them without a word."""
    import copy

    from dse.cli import main
    from tests.conftest import SMALL_STUDY, write_config

    data = copy.deepcopy(SMALL_STUDY)
    data["search"].update({"sampler": "grid", "grid_points": 3, "n_trials": 5})
    data["search"]["space"] = {"peak_tflops": {"low": 200, "high": 300}, "sram_mib": {"low": 8, "high": 64}}
    assert main(["run", str(write_config(tmp_path, data)), "--out", str(tmp_path), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "warning: search.n_trials 5 < the grid's 9 points" in err and "4 of them will not be tried" in err
