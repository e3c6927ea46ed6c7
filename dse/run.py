"""``python -m dse.run CONFIG [--resume] [--storage URL] [--out DIR] [--trials N] [--debug]``."""

from __future__ import annotations

import argparse
import sys

from dse.cli import _add_run_args, cmd_run, guarded, version_line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dse.run", description="Run a dse study config")
    _add_run_args(ap)
    ap.add_argument("--version", action="version", version=version_line())
    ap.add_argument("--debug", action="store_true", help="show tracebacks")
    return guarded(cmd_run, ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
