"""Build hook: the wheel carries the shipped data (workloads, templates, validation rows, configs) inside
the package as ``dse/_data/``, so a non-editable install works without the source checkout
(``dse.units.data_root``). Everything else is in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA = ("workloads", "hw_templates", "validation", "configs", "experiments")


class BuildPyWithData(build_py):
    def run(self) -> None:
        super().run()
        root = Path(__file__).resolve().parent
        dest = Path(self.build_lib) / "dse" / "_data"
        for name in DATA:
            if (root / name).is_dir():
                shutil.copytree(root / name, dest / name, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__", "custom", "*.pyc"))


setup(cmdclass={"build_py": BuildPyWithData})
