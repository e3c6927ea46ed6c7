"""The ask/tell driver: non-finite designs fail without reaching the sampler, and a run of them stops."""

import numpy as np
import optuna
import pytest

from dse.config import Search
from dse.errors import DseError
from dse.search import optimize

SEARCH = Search.model_validate({"n_trials": 40, "batch_size": 8, "sampler": "random", "seed": 1,
                                "space": {"peak_tflops": {"low": 10, "high": 100}}})


def _study() -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(direction="maximize", sampler=optimize.make_sampler(SEARCH))


def _evaluator(bad):
    def evaluate(params):
        x = np.array([p["peak_tflops"] for p in params], dtype=float)
        values = np.where(bad(x), np.nan, x)[:, None]
        return values, [{"score": float(v)} for v in x], {"area": x - 1e9}
    return evaluate


def test_non_finite_designs_fail_with_their_reason_and_the_study_still_completes() -> None:
    study = _study()
    new = optimize.run(study, SEARCH, _evaluator(lambda x: x > 70), progress=False)
    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    failed = study.get_trials(states=(optuna.trial.TrialState.FAIL,))
    assert new == len(complete) == 40 and failed
    assert all(np.isfinite(t.value) for t in complete)
    assert all("objective nan" in optimize.metrics(t)["failed_reason"] for t in failed)


def test_a_run_of_failures_stops_with_one_line_naming_the_reason() -> None:
    with pytest.raises(DseError) as ei:
        optimize.run(_study(), SEARCH, _evaluator(lambda x: x > 0), progress=False)
    import re

    msg = str(ei.value)
    n = int(re.search(r"(\d+) trials in a row failed", msg).group(1))
    assert optimize.MAX_CONSECUTIVE_FAILURES <= n < optimize.MAX_CONSECUTIVE_FAILURES + SEARCH.batch_size
    assert "objective nan" in msg
    assert "\n" not in msg
