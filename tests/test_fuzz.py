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


def test_every_command_on_mutated_files_is_a_result_or_one_line(tmp_path, request) -> None:
    """A fixed sample of the corpus in ``tests/fuzz_corpus.py`` (every command, each case forked with a 3 GiB
    address-space cap and a 30 s limit). ``--fuzz-n N`` runs N cases instead (the held-out corpus:
    ``python -m pytest tests/test_fuzz.py --fuzz-n 300 --fuzz-seed 1000``; or
    ``python -m tests.fuzz_corpus --n 300 --seed 1000`` for a table by command)."""
    from tests.fuzz_corpus import corpus, run_corpus, summary

    n = request.config.getoption("--fuzz-n") or 60
    seed = request.config.getoption("--fuzz-seed")
    cases = corpus(n, seed)
    assert len({c.command for c in cases}) >= 6  # the sample reaches most commands
    outcomes = run_corpus(cases, tmp_path / "fuzz", jobs=2)
    failed = [f"{o.case.command} [{o.case.mutation}]: {o.problem}" for o in outcomes if o.problem]
    assert not failed, summary(outcomes)
