"""Optuna storages from a URL: SQLite (default), any SQLAlchemy URL (PostgreSQL for many machines),
or a journal file for shared file systems.

* ``sqlite:///path.db``: an RDB storage with SQLite in WAL mode (readers do not block the writer;
  a killed process leaves a consistent database).
* ``postgresql://user@host:port/db`` (needs the ``pg`` extra, psycopg2) or any other SQLAlchemy URL.
* ``journal:///path/to/study.log``: optuna's ``JournalStorage`` with a file backend (append-only,
  file-locked; optuna's recommended option for NFS-like shared file systems).
"""

from __future__ import annotations

from pathlib import Path

import optuna
import sqlalchemy

from dse.errors import DseError

ACCEPTED = "sqlite:///PATH.db, postgresql://USER@HOST:PORT/DB (pip install -e '.[pg]'), journal:///PATH.log"


def _sqlite_pragmas(dbapi_conn, _record) -> None:  # noqa: ANN001 - SQLAlchemy event signature
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def with_driver(url: str) -> str:
    """``postgresql://`` means psycopg 3 to SQLAlchemy 2.1; use psycopg2 (the ``pg`` extra) when only it is there."""
    if url.startswith("postgresql://"):
        import importlib.util

        if importlib.util.find_spec("psycopg") is None and importlib.util.find_spec("psycopg2") is not None:
            return "postgresql+psycopg2://" + url.removeprefix("postgresql://")
    return url


def make_storage(url: str) -> optuna.storages.BaseStorage:
    """An optuna storage for ``url``; an unreachable or unreadable one is a one-line :class:`DseError`."""
    try:
        if url.startswith("journal://"):
            path = Path(url.removeprefix("journal://"))
            path.parent.mkdir(parents=True, exist_ok=True)
            return optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(path)))
        if url.startswith("sqlite:///"):
            Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
            engine_kwargs = {"connect_args": {"timeout": 30}}
            storage = optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs)
            sqlalchemy.event.listen(storage.engine, "connect", _sqlite_pragmas)
            storage.engine.dispose()
            return storage
        if "://" not in url:
            raise ValueError("not a URL")
        return optuna.storages.RDBStorage(with_driver(url), engine_kwargs={"pool_pre_ping": True})
    except (ModuleNotFoundError, ImportError) as exc:
        raise DseError(f"the database driver for this URL is not installed ({exc}); accepted: {ACCEPTED}",
                       field="--storage") from None
    except Exception as exc:  # sqlalchemy/optuna errors: unreachable server, corrupt database
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DseError(f"cannot open the study storage {url!r} ({type(exc).__name__}: {first}); accepted: {ACCEPTED}",
                       field="--storage") from None
