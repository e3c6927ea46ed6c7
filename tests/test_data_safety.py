"""Data safety of a study and a streamed sweep: a full disk (simulated, and a real tmpfs filled up) mid-search,
mid-sweep or while writing results is one error line and a run that ``--resume`` completes; a real kill -9 in
the first second or mid-run, then ``--resume``, loses and duplicates nothing; a failed write leaves no
temporary file."""

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
from tests.conftest import SMALL_STUDY, need, write_config

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


# --- streamed sweeps: kill -9 and --resume -------------------------------------------------------------------------

SWEEP = ["--format", "parquet", "--points", "300", "--sram-points", "4", "--block", "5000", "--no-plots", "--quiet"]
SWEEP_DESIGNS = 300 * 300 * 4


def _parts(folder: Path) -> dict[str, tuple[int, int]]:
    """Each finished part file of a streamed sweep folder: (mtime in ns, size)."""
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(folder.glob("part-*.parquet"))}


def _sweep_is_whole(folder: Path) -> pd.DataFrame:
    """The dataset of a finished sweep: every design once, no row twice."""
    df = pd.read_parquet(folder)
    assert len(df) == SWEEP_DESIGNS
    assert not df.duplicated(["mix", "peak_tflops", "dram_bandwidth_tbps", "sram_mib"]).any()
    assert len(_parts(folder)) == -(-SWEEP_DESIGNS // 5000)
    return df


@pytest.mark.parametrize("when", ["first second", "mid-sweep"])
def test_kill_9_of_a_parquet_sweep_then_resume(tmp_path: Path, when: str, capsys) -> None:
    """A real SIGKILL of a streamed sweep (0.3 s after start, or once its third part file is written):
    ``--resume`` keeps every part already written (same bytes, not rescored), scores the rest, and the
    dataset holds each design exactly once with the values of a block scored afresh."""
    need("pyarrow", "scale")  # a streamed (Parquet) sweep
    cfg, out = write_config(tmp_path, SMALL_STUDY), tmp_path / "r"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "dse", "sweep", str(cfg), "--out", str(out), *SWEEP], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    data = out / "tiny-sweep" / "sweep.parquet"
    deadline = time.monotonic() + (0.3 if when == "first second" else 120)
    while time.monotonic() < deadline and (when == "first second" or len(_parts(data)) < 3):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _parts(data) if data.is_dir() else {}
    if when == "mid-sweep":
        assert 3 <= len(before) < -(-SWEEP_DESIGNS // 5000), "the sweep finished before it was killed"
    rc = main(["sweep", str(cfg), "--out", str(out), *SWEEP, "--resume"])
    err = capsys.readouterr().err.strip().splitlines()
    if rc == 2:  # killed before it claimed its folder
        assert when == "first second" and not (out / "tiny-sweep").exists() and len(err) == 1, err
        assert "nothing to resume" in err[0]
        return
    assert rc == 0, err
    after = _parts(data)
    assert {k: after[k] for k in before} == before  # kept as they were
    assert [p.name for p in data.iterdir() if p.name.startswith(".")] == []  # no temporary file left
    df = _sweep_is_whole(data)
    from dse.grid import axes_for, contexts, sweep_block

    cfg_obj, ctxs = contexts(cfg)
    axes = axes_for(cfg_obj, ctxs["workloads"], 300, 4)
    last = len(after) - 1
    sweep_block(ctxs, axes, last * 5000, SWEEP_DESIGNS, 4096, str(tmp_path), last)
    fresh = pd.read_parquet(tmp_path / f"part-{last:06d}.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(data / f"part-{last:06d}.parquet"), fresh)
    assert len(df) == SWEEP_DESIGNS


# --- a real full filesystem (a small tmpfs, mounted as root) -------------------------------------------------------

@pytest.fixture
def full_disk(tmp_path: Path):  # noqa: ANN201 - yields a callable
    """A 4 MiB tmpfs and ``fill(free_kib)``, which leaves that much room on it (removing the filler frees it).
    Needs root (mount); CI runs as root and sets DSE_REQUIRE_TMPFS=1, where a failed mount is a failure."""
    required = os.environ.get("DSE_REQUIRE_TMPFS") == "1"
    mnt = tmp_path / "fs"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True, text=True) \
        if os.geteuid() == 0 else None
    if r is None or r.returncode != 0:
        why = "not root" if r is None else r.stderr.strip()
        if required:
            pytest.fail(f"DSE_REQUIRE_TMPFS=1 but a tmpfs could not be mounted: {why}")
        pytest.skip(f"a full-filesystem test needs to mount a tmpfs ({why})")

    def fill(free_kib: int) -> Path:
        st = os.statvfs(mnt)
        filler = mnt / "filler"
        with open(filler, "wb") as f:
            f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - free_kib * 1024))
        return filler

    try:
        yield mnt, fill
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _one_full_disk_line(err: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert "disk is full" in lines[0] or "No space left" in lines[0], lines[0]


def test_a_study_on_a_full_filesystem_ends_in_one_line_and_resumes(tmp_path: Path, full_disk, capsys) -> None:
    mnt, fill = full_disk
    cfg = _cfg(tmp_path, 40)
    filler = fill(250)
    assert _run(cfg, mnt / "r") == 2
    _one_full_disk_line(capsys.readouterr().err)
    kept = _complete(mnt / "r" / "tiny") if (mnt / "r" / "tiny" / "metadata.json").is_file() else 0
    filler.unlink()
    assert _run(cfg, mnt / "r", "--resume") == 0, capsys.readouterr().err
    study = optuna.load_study(study_name="tiny", storage=f"sqlite:///{mnt / 'r' / 'tiny' / 'study.db'}")
    numbers = [t.number for t in study.trials]
    assert len(numbers) == len(set(numbers)) and _complete(mnt / "r" / "tiny") == 40 >= kept
    assert (mnt / "r" / "tiny" / "trials.csv").is_file()


def test_a_sweep_on_a_full_filesystem_ends_in_one_line_and_resumes(tmp_path: Path, full_disk, capsys) -> None:
    need("pyarrow", "scale")  # a streamed (Parquet) sweep
    mnt, fill = full_disk
    cfg = write_config(tmp_path, SMALL_STUDY)
    args = ["sweep", str(cfg), "--out", str(mnt / "r"), "--format", "parquet", "--points", "100", "--sram-points",
            "4", "--block", "2000", "--no-plots", "--quiet"]
    filler = fill(300)
    assert main(args) == 2
    err = capsys.readouterr().err
    _one_full_disk_line(err)
    assert "--resume" in err
    data = mnt / "r" / "tiny-sweep" / "sweep.parquet"
    before = _parts(data)
    assert 0 < len(before) < 20 and not [p for p in data.iterdir() if p.name.startswith(".")]
    filler.unlink()
    assert main([*args, "--resume"]) == 0, capsys.readouterr().err
    after = _parts(data)
    assert {k: after[k] for k in before} == before and len(after) == 20
    df = pd.read_parquet(data)
    assert len(df) == 40_000 and not df.duplicated(["peak_tflops", "dram_bandwidth_tbps", "sram_mib"]).any()


def test_a_write_error_no_command_caught_is_still_one_line(monkeypatch, capsys) -> None:
    import dse.cli as cli

    def full(args):  # noqa: ANN001, ANN202
        raise OSError(errno.ENOSPC, "No space left on device", "/some/out/file.csv")

    assert cli.guarded(full, cli.build_parser().parse_args(["hardware"])) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: /some/out/file.csv: cannot write (No space left on device); accepted: a writable folder "
                   "with free space (files written before are kept)"]
    with pytest.raises(OSError, match="Bad file"):  # not a write error: not hidden
        cli.guarded(lambda a: (_ for _ in ()).throw(OSError(errno.EBADF, "Bad file descriptor")),
                    cli.build_parser().parse_args(["hardware"]))


def test_a_run_whose_storage_cannot_be_opened_leaves_no_folder_for_resume_to_pick(tmp_path, capsys) -> None:
    """``--storage foo://bar`` fails before any trial: the results folder it had claimed is removed again, so a later
    ``--resume`` says there is nothing to resume instead of silently starting a new study in the empty folder."""
    cfg, out = _cfg(tmp_path), tmp_path / "out"
    assert _run(cfg, out, "--storage", "foo://bar") == 2
    assert "cannot open the study storage" in capsys.readouterr().err
    assert not (out / "tiny").exists()
    assert _run(cfg, out, "--resume") == 2
    assert "nothing to resume" in capsys.readouterr().err
    assert _run(cfg, out) == 0 and _complete(out / "tiny") == 16  # the next run takes the plain name
