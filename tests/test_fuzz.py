"""Mutated configs through the study command: each ends in success or exit 2 with one line, never a
traceback or a hang, and writes nothing outside its folder."""

import copy
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dse.cli import main
from tests.conftest import SMALL_STUDY

BAD_VALUES = [-1, 0, -0.0, 0.5, 1e308, float("inf"), float("nan"), True, False, "x", "1:inf", "..", [], {}, None,
              2**62, "/"]


def _leaves(node, prefix=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, (*prefix, i))
    else:
        yield prefix


BASE = copy.deepcopy(SMALL_STUDY)
BASE["search"].update(n_trials=8, batch_size=8)
BASE["output"] = {"plots": False}
PATHS = list(_leaves(BASE))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(PATHS), value=st.sampled_from(BAD_VALUES))
def test_a_mutated_config_is_a_result_or_one_line(tmp_path_factory, capsys, path, value) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    data = copy.deepcopy(BASE)
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    cfg = folder / "c.yaml"
    cfg.write_text(yaml.safe_dump(data))
    rc = main(["run", str(cfg), "--out", str(folder / "out"), "--quiet", "--no-plots"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc in (0, 2), (path, value, rc)
    if rc == 2:
        assert len(err) == 1 and err[0].startswith("error: ") and "Traceback" not in err[0], (path, value, err)
    written = {p for p in folder.rglob("*") if p.is_file()} - {cfg}
    assert all(Path(folder / "out") in p.parents for p in written), (path, value)
