"""Shared fixtures: a small study config written into a temporary folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from hypothesis import settings

# CI (.ci/run exports DSE_CI_EXTRAS) draws the same property-test examples on every run, so a landing never hangs on a
# random draw; a developer's run explores new ones (a696f2d fixed a NaN such a draw found). Reproduce a CI failure with
# DSE_CI_EXTRAS=x python -m pytest ...
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("DSE_CI_EXTRAS"):
    settings.load_profile("ci")


def need(module: str, extra: str):
    """Import the module an optional extra brings, or skip with the install line; in CI (CI=true, where .ci/run
    installs every extra but the torch one it may leave out for disk, ``DSE_CI_EXTRAS_LEFT_OUT``) fail instead."""
    try:
        return __import__(module)
    except ModuleNotFoundError:
        left_out = os.environ.get("DSE_CI_EXTRAS_LEFT_OUT", "").split(",")
        if os.environ.get("CI") == "true" and extra not in left_out:
            pytest.fail(f"CI=true but {module} is not installed: .ci/run installs the {extra} extra")
        pytest.skip(f"{module} not installed (pip install -e '.[{extra}]')")

SMALL_STUDY = {
    "name": "tiny",
    "base": "npu-7nm",
    "workloads": [
        {"name": "resnet50", "batch": 8},
        {"name": "llama2-7b", "phase": "decode", "batch": 1, "context": 512, "weight": 2},
    ],
    "search": {
        "n_trials": 24,
        "batch_size": 8,
        "sampler": "tpe",
        "seed": 3,
        "area_budget_mm2": 750,
        "space": {
            "peak_tflops": {"low": 64, "high": 1024},
            "dram_bandwidth_tbps": {"low": 0.4, "high": 4.0},
            "sram_mib": {"low": 8, "high": 256},
        },
    },
    "output": {"plots": False, "heatmap_points": 6},
}
#: the small study with its figures on (``output.plots: false`` above is honoured by run, compare and sweep)
PLOTTED_STUDY = {**SMALL_STUDY, "output": {**SMALL_STUDY["output"], "plots": True}}


def write_config(folder: Path, data: dict, name: str = "study.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture
def small_config(tmp_path: Path) -> Path:
    return write_config(tmp_path, SMALL_STUDY)


def one_line_error_with_cache_cleared(cached, call) -> str:
    """Call ``call()`` expecting a ``DseError``, with ``cached`` (an lru_cache'd loader) cleared before and
    after so a patched data folder is read; return the message, checked to be one line."""
    from dse.errors import DseError

    cached.cache_clear()
    try:
        with pytest.raises(DseError) as ei:
            call()
    finally:
        cached.cache_clear()
    msg = str(ei.value)
    assert "\n" not in msg
    return msg


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fuzz-n", type=int, default=0, help="cases of the all-command fuzz corpus (default: 60)")
    parser.addoption("--fuzz-seed", type=int, default=20261201, help="seed of the all-command fuzz corpus")


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory):
    """Computed caches (validation bands) go to a folder of this test session, not the user's cache."""
    import os

    old = os.environ.get("DSE_CACHE_DIR")
    os.environ["DSE_CACHE_DIR"] = str(tmp_path_factory.mktemp("dse-cache"))
    yield
    if old is None:
        os.environ.pop("DSE_CACHE_DIR", None)
    else:
        os.environ["DSE_CACHE_DIR"] = old
