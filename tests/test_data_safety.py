"""Data safety of a study: a full disk mid-search or while writing results is one error line and a study
that ``--resume`` completes; a run killed before its study existed is found by ``--resume``; a failed
write leaves no temporary file."""

from __future__ import annotations

import errno
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pandas as pd
import pytest

from dse.cli import main
from dse.errors import DseError
from dse.yamlio import atomic_write, make_dir
from tests.conftest import SMALL_STUDY, write_config

ROOT = Path(__file__).resolve().parents[1]


def _cfg(tmp_path: Path, n_trials: int = 16) -> Path:
    data = {**SMALL_STUDY, "search": {**SMALL_STUDY["search"], "n_trials": n_trials, "batch_size": 4}}
    return write_config(tmp_path, data)


def _run(cfg: Path, out: Path, *extra: str) -> int:
    return main(["run", str(cfg), "--out", str(out), "--quiet", "--no-plots", *extra])


def _complete(folder: Path, name: str = "tiny") -> int:
    study = optuna.load_study(study_name=name, storage=f"sqlite:///{folder / 'study.db'}")
    return sum(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)


def test_disk_full_mid_search_is_one_line_and_resumable(tmp_path: Path, capsys, monkeypatch) -> None:
    cfg, out = _cfg(tmp_path), tmp_path / "r"
    real_tell, calls = optuna.study.Study.tell, []

    def tell(self, *args, **kwargs):  # noqa: ANN001, ANN202 - optuna's signature
        calls.append(1)
        if len(calls) == 7:  # SQLite's own error for a full disk, as optuna's RDB storage wraps it
            try:
                raise sqlite3.OperationalError("database or disk is full")
            except sqlite3.OperationalError as exc:
                raise optuna.exceptions.StorageInternalError("An exception is raised during the commit") from exc
        return real_tell(self, *args, **kwargs)

    monkeypatch.setattr(optuna.study.Study, "tell", tell)
    assert _run(cfg, out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "database or disk is full" in err[0], err
    assert "--resume" in err[0]
    assert 0 < _complete(out / "tiny") < 16
    monkeypatch.setattr(optuna.study.Study, "tell", real_tell)
    assert _run(cfg, out, "--resume") == 0, capsys.readouterr().err
    assert _complete(out / "tiny") == 16
    assert not list((out / "tiny").glob(".*.tmp*"))


def test_disk_full_while_writing_results_leaves_no_temporary_file(tmp_path: Path, capsys, monkeypatch) -> None:
    cfg, out = _cfg(tmp_path, 8), tmp_path / "r"

    def full(self, *args, **kwargs):  # noqa: ANN001, ANN202
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(pd.DataFrame, "to_csv", full)
        assert _run(cfg, out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "No space left on device" in err[0], err
    assert not list((out / "tiny").glob(".*.tmp*"))
    assert _run(cfg, out, "--resume") == 0  # the search is complete: the resume only writes the results
    assert (out / "tiny" / "trials.csv").is_file() and _complete(out / "tiny") == 8


def test_unwritable_folder_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(DseError, match="cannot write"):
        make_dir(blocker / "sub")
    with pytest.raises(DseError, match="cannot write"):
        atomic_write(blocker / "a.csv", lambda p: p.write_text("x"))


def test_a_run_killed_before_its_study_existed_is_resumed(tmp_path: Path, capsys, monkeypatch) -> None:
    """The window between the results folder and the study in its storage (the first second of a run)."""
    cfg, out = _cfg(tmp_path, 8), tmp_path / "r"

    def killed(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(optuna, "create_study", killed)
        assert _run(cfg, out) == 130
    assert (out / "tiny").is_dir() and not (out / "tiny" / "metadata.json").exists()
    capsys.readouterr()
    assert _run(cfg, out, "--resume") == 0, capsys.readouterr().err
    assert _complete(out / "tiny") == 8 and (out / "tiny" / "config.yaml").is_file()


@pytest.mark.parametrize("after_s", [0.4, 1.2, 2.5])
def test_kill_9_in_the_first_seconds_then_resume(tmp_path: Path, after_s: float, capsys) -> None:
    """A real SIGKILL early in a run: either nothing was created yet (--resume says so in one line) or
    --resume finds the study and completes it."""
    cfg, out = _cfg(tmp_path, 8), tmp_path / "r"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "dse", "run", str(cfg), "--out", str(out), "--quiet",
                             "--no-plots"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(after_s)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    rc = _run(cfg, out, "--resume")
    err = capsys.readouterr().err.strip().splitlines()
    if rc == 2:
        assert not (out / "tiny").exists() and len(err) == 1 and "nothing to resume" in err[0], err
    else:
        assert rc == 0, err
        assert _complete(out / "tiny") == 8


def test_two_runs_started_together_get_their_own_folders(tmp_path: Path) -> None:
    cfg, out = _cfg(tmp_path, 8), tmp_path / "r"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "dse", "run", str(cfg), "--out", str(out), "--quiet", "--no-plots"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(2)]
    errs = [p.communicate(timeout=300)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    assert sorted(p.name for p in out.iterdir()) == ["tiny", "tiny-2"]
    assert _complete(out / "tiny") == _complete(out / "tiny-2") == 8
