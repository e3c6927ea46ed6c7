"""dse.search.storage: a storage URL becomes the right optuna storage; a bad one is a one-line error."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

import optuna
import pytest

from dse.errors import DseError
from dse.search.storage import ACCEPTED, make_storage, with_driver


def _a_study_in(storage: optuna.storages.BaseStorage) -> None:
    study = optuna.create_study(storage=storage, study_name="s", direction="minimize")
    study.tell(study.ask({"x": optuna.distributions.FloatDistribution(0, 1)}), 0.5)


def test_sqlite_url_is_an_rdb_storage_in_wal_mode_with_its_folder_made(tmp_path: Path) -> None:
    db = tmp_path / "deep" / "er" / "study.db"
    storage = make_storage(f"sqlite:///{db}")
    assert isinstance(storage, optuna.storages.RDBStorage)
    _a_study_in(storage)
    assert db.is_file()
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # a second storage on the same file sees the trial (resume)
    again = optuna.load_study(study_name="s", storage=make_storage(f"sqlite:///{db}"))
    assert [t.value for t in again.trials] == [0.5]


def test_journal_url_is_a_journal_file_storage(tmp_path: Path) -> None:
    log = tmp_path / "j" / "study.log"
    storage = make_storage(f"journal://{log}")
    assert isinstance(storage, optuna.storages.JournalStorage)
    _a_study_in(storage)
    assert log.is_file() and log.stat().st_size > 0


def test_not_a_url_is_one_line_naming_the_option_and_the_accepted_forms() -> None:
    with pytest.raises(DseError) as ei:
        make_storage("study.db")
    assert str(ei.value) == (f"--storage: cannot open the study storage 'study.db' (ValueError: not a URL); "
                             f"accepted: {ACCEPTED}")


def test_a_corrupt_sqlite_file_is_a_one_line_error(tmp_path: Path) -> None:
    db = tmp_path / "bad.db"
    db.write_bytes(b"this is not a database" * 100)
    with pytest.raises(DseError) as ei:
        _a_study_in(make_storage(f"sqlite:///{db}"))
    msg = str(ei.value)
    assert msg.startswith("--storage: cannot open the study storage") and "\n" not in msg


def test_postgres_without_a_driver_says_which_extra_to_install(monkeypatch) -> None:
    """Runs with or without the pg extra: the drivers are hidden (an import of them raises ImportError)."""
    import sys

    for name in ("psycopg", "psycopg2"):
        monkeypatch.setitem(sys.modules, name, None)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.split(".")[0] in ("psycopg", "psycopg2") else real(name, *a))
    with pytest.raises(DseError, match=r"^--storage: the database driver for this URL is not installed .*\[pg\]"):
        make_storage("postgresql://dse@127.0.0.1:1/dse")


def test_postgres_url_picks_psycopg2_only_when_psycopg3_is_missing(monkeypatch) -> None:
    found = {"psycopg": None, "psycopg2": object()}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: found.get(name))
    assert with_driver("postgresql://u@h:5432/db") == "postgresql+psycopg2://u@h:5432/db"
    found["psycopg"] = object()
    assert with_driver("postgresql://u@h:5432/db") == "postgresql://u@h:5432/db"
    assert with_driver("sqlite:///x.db") == "sqlite:///x.db"
