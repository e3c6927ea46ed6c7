"""Several workers on one study: a real PostgreSQL server (started by .ci/run), a journal file and
SQLite. Every trial is recorded exactly once, with its metrics."""

import os
import uuid
from pathlib import Path

import optuna
import pytest

from dse.errors import DseError
from dse.search.storage import make_storage
from dse.study import run_study
from tests.conftest import SMALL_STUDY, write_config


@pytest.fixture
def pg_url() -> str:
    url = os.environ.get("DSE_TEST_PG_URL")
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but DSE_TEST_PG_URL is not set: .ci/run must start the PostgreSQL server")
        pytest.skip("no PostgreSQL server: set DSE_TEST_PG_URL=postgresql://... (bash .ci/run starts one)")
    return url


def _check_every_trial_once(url: str, name: str, n_trials: int, batch: int, workers: int) -> None:
    study = optuna.load_study(study_name=name, storage=make_storage(url))
    trials = study.get_trials(deepcopy=False)
    numbers = [t.number for t in trials]
    assert len(numbers) == len(set(numbers))
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(complete) == n_trials  # exactly: a trial asked past the target is pruned unevaluated
    assert all(t.state in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED) for t in trials)
    assert all("score" in t.user_attrs["metrics"] and t.params for t in complete)
    # optuna-dashboard's view: each metric its own attribute, each constraint by name
    assert all(t.user_attrs["score"] == t.user_attrs["metrics"]["score"] for t in complete)
    assert all(t.constraints and not any(k.isdigit() for k in t.constraints) for t in complete)
    assert {t.user_attrs["metrics"]["worker"] for t in complete} == set(range(workers))


def _distributed(tmp_path: Path, url: str, workers: int = 2) -> None:
    name = f"dist-{uuid.uuid4().hex[:8]}"
    search = {**SMALL_STUDY["search"], "n_trials": 160, "batch_size": 2, "sampler": "random"}
    cfg = write_config(tmp_path, {**SMALL_STUDY, "name": name, "search": search})
    r = run_study(cfg, out=tmp_path / "r", progress=False, storage=url, workers=workers)
    assert r.workers == workers
    _check_every_trial_once(url, name, 160, 2, workers)
    # the summary counts the trials asked for, all of them new (it said '176 trials' with the pruned claims, and
    # 'N new' for the first worker's share alone)
    assert r.n_trials == r.new_trials == 160
    from dse.report.write import write_results

    assert write_results(r, plots_on=False).startswith(f"study {name}: 160 trials")


def test_two_workers_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    _distributed(tmp_path, pg_url)


def test_two_workers_on_a_journal_file(tmp_path: Path) -> None:
    _distributed(tmp_path, f"journal://{tmp_path / 'study.log'}")


def test_four_workers_on_one_sqlite_study(tmp_path: Path, capfd) -> None:
    """Four processes on one SQLite file (WAL mode): exactly n_trials complete, each once, every worker
    contributes (each claims a first batch before any evaluates) and no worker met a lock error (any would
    have ended the run, or been printed on the processes' shared stderr)."""
    _distributed(tmp_path, f"sqlite:///{tmp_path / 'shared.db'}", workers=4)
    err = capfd.readouterr().err
    assert "locked" not in err.lower() and "Traceback" not in err, err[-2000:]
    assert "A new study created" not in err, err[-2000:]  # the spawned workers' optuna INFO lines


def test_unreachable_storage_is_one_line(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, SMALL_STUDY)
    with pytest.raises(DseError) as ei:
        run_study(cfg, out=tmp_path / "r", progress=False, storage="postgresql://nobody@127.0.0.1:1/none")
    msg = str(ei.value)
    assert "--storage" in msg and "\n" not in msg and ("cannot open" in msg or "driver" in msg)


def test_resume_with_a_changed_config_is_refused(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, SMALL_STUDY)
    run_study(cfg, out=tmp_path / "r", progress=False, n_trials=8)
    changed = {**SMALL_STUDY, "workloads": SMALL_STUDY["workloads"][:1]}
    write_config(tmp_path, changed)
    with pytest.raises(DseError, match="created from another config"):
        run_study(cfg, out=tmp_path / "r", progress=False, resume=True, n_trials=16)
    # changing only n_trials (here via the override) is a legitimate resume
    write_config(tmp_path, SMALL_STUDY)
    r = run_study(cfg, out=tmp_path / "r", progress=False, resume=True, n_trials=16)
    assert r.n_trials == 16
