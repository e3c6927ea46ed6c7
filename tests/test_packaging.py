"""Installed like a real package: the wheel carries its data, user models load by path."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

import dse
from dse.cli import main
from dse.errors import DseError
from dse.workloads.library import description_path
from tests.conftest import SMALL_STUDY, write_config

ROOT = Path(__file__).resolve().parent.parent


def _my_model(folder: Path, name: str = "my-mlp") -> Path:
    """A small model description of one's own: a copy of the library's bert-base renamed."""
    data = yaml.safe_load(description_path("bert-base").read_text())
    data["name"] = name
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_model_of_ones_own_loads_by_path_and_from_dse_path(tmp_path: Path, monkeypatch) -> None:
    path = _my_model(tmp_path)
    wl = dse.workload(str(path), batch=2, seq=64)
    ref = dse.workload("bert-base", batch=2, seq=64)
    assert wl.name == "my-mlp" and wl.flops == pytest.approx(ref.flops)
    assert dse.predict(wl, "a100-80gb", chips=2, tp=2).workload.name == "my-mlp"  # rebuilt from its path
    with pytest.raises(DseError, match="no such file"):
        dse.workload(str(tmp_path / "missing.yaml"))
    monkeypatch.setenv("DSE_PATH", str(tmp_path))
    assert dse.workload("my-mlp", batch=2, seq=64).flops == pytest.approx(ref.flops)
    # $DSE_PATH comes before the shipped library: a model or template there overrides the shipped one
    over = _my_model(tmp_path, "gpt2")
    assert description_path("gpt2") == over
    chip = dse.hardware("npu-7nm").model_dump(mode="json", exclude_none=True)
    chip["compute"]["clock_ghz"] = 1.0  # a slower clock, and the peaks it gives (cores x array x 2 x clock)
    for unit in ("matrix", "vector"):
        chip["compute"][unit]["peak_tflops"] = {k: v / 1.4 for k, v in chip["compute"][unit]["peak_tflops"].items()}
    (tmp_path / "npu-7nm.yaml").write_text(yaml.safe_dump(chip))
    assert dse.hardware("npu-7nm").compute.clock_ghz == 1.0
    monkeypatch.delenv("DSE_PATH")
    assert dse.hardware("npu-7nm").compute.clock_ghz == 1.4


def test_a_config_uses_a_model_next_to_it(tmp_path: Path, capsys) -> None:
    (tmp_path / "models").mkdir()
    _my_model(tmp_path / "models")
    data = {**SMALL_STUDY, "workloads": [{"path": "models/my-mlp.yaml", "batch": 4, "seq": 128},
                                         {"name": "resnet50", "batch": 8}]}
    cfg = write_config(tmp_path, data)
    assert main(["run", str(cfg), "--out", str(tmp_path / "out")]) == 0
    assert "my-mlp[" in capsys.readouterr().out
    bad = write_config(tmp_path, {**data, "workloads": [{"path": "models/nope.yaml"}]}, "bad.yaml")
    assert main(["run", str(bad), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "workloads.0.path: got 'models/nope.yaml'" in err and err.count("\n") == 1
    (tmp_path / "models" / "chip.yaml").write_text(yaml.safe_dump(
        dse.hardware("npu-7nm").model_dump(mode="json", exclude_none=True)))  # a template, not a model
    wrong = write_config(tmp_path, {**data, "workloads": [{"path": "models/chip.yaml"}]}, "wrong.yaml")
    assert main(["run", str(wrong), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "workloads.0.path: 'models/chip.yaml' is not a usable model description" in err and err.count("\n") == 1


def test_the_wheel_ships_workloads_templates_and_validation_and_works_outside_the_checkout(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q",
                    "-w", str(tmp_path / "dist")], check=True, capture_output=True)
    wheel = next((tmp_path / "dist").glob("dse-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("dse/_data/workloads/resnet50.yaml", "dse/_data/hw_templates/a100-80gb.yaml",
                   "dse/_data/hw_templates/nodes/7nm.yaml", "dse/_data/hw_templates/calibration/area_dies.yaml",
                   "dse/_data/validation/measurements.csv", "dse/_data/configs/npu.yaml"):
        assert needed in names, needed
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    work = tmp_path / "elsewhere"
    work.mkdir()
    _my_model(work)
    env = {k: v for k, v in os.environ.items() if k not in ("DSE_HOME", "DSE_PATH")}
    env["PYTHONPATH"] = str(site)
    code = (f"import dse, dse.units as u; assert str(u.repo_root()).startswith({str(site)!r}), u.repo_root(); "
            "assert len(dse.list_workloads()) > 100; print(dse.predict(dse.workload('./my-mlp.yaml'), "
            "'h100-sxm').time_s > 0, dse.area('npu-7nm').total_mm2 > 0)")
    out = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "True True"
    # a config outside the checkout that uses the model next to it, run by the installed command
    data = {**SMALL_STUDY, "workloads": [{"path": "my-mlp.yaml", "batch": 2, "seq": 64}],
            "output": {"dir": "res", "plots": False}}
    (work / "study.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    run = subprocess.run([sys.executable, "-m", "dse", "run", "study.yaml", "--quiet"], cwd=work, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "my-mlp[" in run.stdout and (work / "res" / "tiny" / "summary.md").is_file()


#: what each optional extra of pyproject.toml must make importable
EXTRA_MODULES = {"test": ["pytest", "hypothesis", "selenium"], "pg": ["psycopg2"], "onnx": ["onnx"],
                 "torch": ["torch", "torchvision"], "dashboard": ["optuna_dashboard"],
                 "scale": ["pyarrow", "dask", "distributed"], "explore": ["dash"], "fast": ["numba"]}


def test_every_extra_names_its_modules():
    import tomllib

    extras = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert set(extras) == set(EXTRA_MODULES)


@pytest.mark.skipif(not os.environ.get("DSE_CI_EXTRAS"), reason="DSE_CI_EXTRAS (set by .ci/run) names the extras "
                    "installed")
def test_installed_extras_import():
    """Each extra .ci/run installed imports (a broken pin or a missing module fails here, not in a feature test)."""
    import importlib

    for extra in os.environ["DSE_CI_EXTRAS"].split(","):
        for mod in EXTRA_MODULES[extra]:
            importlib.import_module(mod)
