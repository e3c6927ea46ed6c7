"""dse.api: the Python twins of compare, sweep and whatif (the same numbers as the commands, nothing written), and
what predict takes and returns."""

import copy
from pathlib import Path

import pandas as pd
import pytest

import dse
from dse.cli import main
from dse.errors import DseError
from tests.conftest import SMALL_STUDY, write_config


def test_compare_sweep_and_whatif_return_the_commands_tables_and_write_nothing(tmp_path: Path, monkeypatch) -> None:
    data = copy.deepcopy(SMALL_STUDY)
    data["whatif"] = {"workload": {"name": "resnet50", "batch": 8}, "stages": ["fuse_elementwise"]}
    cfg = write_config(tmp_path, data)
    monkeypatch.chdir(tmp_path)
    import dse.comparison  # importing the modules must not replace the functions  # noqa: F401
    import dse.grid  # noqa: F401
    import dse.whatif_stages  # noqa: F401

    cmp = dse.compare(cfg, ratios=["1:2", "1:1"])
    grid = dse.sweep(cfg, points=3)
    stages = dse.whatif(cfg)
    chips = dse.compare_chips(cfg, ["gaudi3", dse.hardware("tpu-v6e")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["study.yaml"]  # nothing written
    assert chips["chip"].tolist() == ["base: npu-7nm", "gaudi3", "tpu-v6e"]
    assert main(["compare", str(cfg), "--hardware", "gaudi3,tpu-v6e", "--out", str(tmp_path / "o")]) == 0
    back = pd.read_csv(next((tmp_path / "o").glob("*-chips")) / "chips.csv")
    assert back["score"].to_numpy() == pytest.approx(chips["score"].to_numpy(), rel=1e-12)
    assert list(cmp.designs_table["candidate"]) == ["1:2", "1:1"] and len(grid) == 9 and len(stages) == 2
    assert main(["compare", str(cfg), "--ratios", "1:2,1:1", "--out", str(tmp_path / "o")]) == 0
    cands = pd.read_csv(next((tmp_path / "o").glob("*-compare")) / "candidates.csv")
    assert cands["score_vs_base"].to_numpy() == pytest.approx(cmp.designs_table["score_vs_base"].to_numpy(), rel=1e-12)
    assert main(["sweep", str(cfg), "--points", "3", "--out", str(tmp_path / "o")]) == 0
    written = pd.read_csv(next((tmp_path / "o").glob("*-sweep")) / "sweep.csv")
    assert written["score"].to_numpy() == pytest.approx(grid["score"].to_numpy(), rel=1e-12)


def test_import_dse_loads_no_heavy_library_until_used() -> None:
    import subprocess
    import sys

    code = ("import sys, dse; heavy = {'numpy', 'pandas', 'optuna', 'matplotlib', 'seaborn', 'scipy', 'pydantic'}; "
            "print(sorted(heavy & set(sys.modules)));"
            "from dse.hardware.designs import DesignBatch; import dse.predict.roofline;"
            "print(callable(dse.hardware), callable(dse.predict), 'optuna' in sys.modules, 'matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == "True True False False"  # the API names win over same-named subpackages


def test_public_names_resolve() -> None:
    import dse

    assert set(dse.__all__) <= set(dir(dse))
    for name in dse.__all__:
        assert getattr(dse, name) is not None


def test_predict_many_equals_one_prediction_per_design_and_workload() -> None:
    import numpy as np
    import pandas as pd
    import pytest

    import dse
    from dse.hardware.designs import DesignBatch

    wls = [dse.workload("llama2-7b", phase="decode", batch=1, context=1024, dtype="bf16"),
           dse.workload("resnet50", batch=32, dtype="bf16")]
    npu = dse.hardware("npu-7nm")
    knobs = pd.DataFrame({"peak_tflops": [64.0, 275.2512, 1024.0], "dram_bandwidth_tbps": [4.0, 1.6384, 0.4],
                          "memory.global.capacity_mib": [8.0, 32.0, 256.0]})
    table = dse.predict_many(wls, knobs, base="npu-7nm")
    assert list(table.columns[:3]) == list(knobs.columns) and len(table) == 3
    base = DesignBatch.from_hardware(npu, 3)
    d = base.with_knobs(peak_flops=knobs["peak_tflops"].to_numpy() * 1e12,
                        dram_bandwidth=knobs["dram_bandwidth_tbps"].to_numpy() * 1e12,
                        sram_bytes=knobs["memory.global.capacity_mib"].to_numpy() * 2**20)
    assert list(table.columns[3:5]) == ["peak_tflops_built", "dram_bandwidth_tbps_built"]  # whole cores and stacks
    assert dse.predict_many(wls, d).iloc[:, :2].equals(table.iloc[:, 5:7])  # a DesignBatch gives the same times
    for i in range(3):
        for wl in wls:
            p = dse.predict(wl, d.take([i]))
            assert table.loc[i, f"time_s.{wl.label()}"] == pytest.approx(p.time_s, rel=1e-12)
            assert table.loc[i, f"binding.{wl.label()}"] == p.time_by_bound().idxmax()
    assert set(table["binding"]) <= {"compute", "local", "global", "hbm", "network", "overhead", "array"}
    with pytest.raises(dse.DseError, match="compute.clock_ghz"):
        dse.predict_many(wls, pd.DataFrame({"speed": [1.0]}), base="npu-7nm")
    assert np.all(table["binding_time_share"].between(0, 1))


def test_repeated_calls_reuse_the_expansion_and_results_do_not_change() -> None:
    import dse

    a = dse.workload("gpt2", phase="decode", batch=8, context=1024, dtype="bf16")
    assert dse.workload("gpt2", phase="decode", batch=8, context=1024, dtype="bf16") is a
    assert dse.workload("gpt2", phase="decode", batch=8, context=512, dtype="bf16") is not a
    p = dse.predict(a, "a100-80gb")
    t = p.time_s  # from arrays, before the per-operator table exists
    assert p.ops["total_time_s"].sum() == t and p.time_s == t


def test_predict_takes_a_planned_workload_as_given_and_the_old_form_plans_once(monkeypatch) -> None:
    """The plan is applied at construction: ``dse.predict`` on a planned workload builds nothing, and the
    older ``dse.predict(wl, hw, chips=, tp=, ...)`` form builds the planned workload once, with the same
    numbers."""
    import dse
    from dse.workloads import library, parallel

    scen = dict(phase="training", batch=8, seq=128, dtype="bf16")
    plan = dict(tp=2, pp=2, microbatches=4, interleave=3, recompute="full")
    monkeypatch.setattr(library, "_WORKLOADS", type(library._WORKLOADS)())
    planned = dse.workload("gpt2", plan={"chips": 4, **plan}, **scen)
    unplanned = dse.workload("gpt2", **scen)
    calls = []
    real = library.build_shard
    monkeypatch.setattr(library, "build_shard", lambda *a: calls.append(a[-1]) or real(*a))

    def refuse(*a, **k):
        raise AssertionError("the plan was applied again")

    with monkeypatch.context() as m:
        for name in ("shard_transformer", "collectives", "per_microbatch", "transformer_memory"):
            m.setattr(parallel, name, refuse)
        p_new = dse.predict(planned, "dgx-a100")
    assert calls == [] and p_new.workload is planned
    monkeypatch.setattr(library, "_WORKLOADS", type(library._WORKLOADS)())
    p_old = dse.predict(unplanned, "dgx-a100", chips=4, **plan)
    assert len(calls) == 1 and calls[0] == planned.plan  # built once, under the same plan
    assert p_old.time_s == p_new.time_s and p_old.fits == p_new.fits  # bit-identical
    pd.testing.assert_frame_equal(p_old.ops, p_new.ops)


def test_best_batch_builds_each_planned_batch_once(monkeypatch) -> None:
    import dse
    from dse.workloads import library

    monkeypatch.setattr(library, "_WORKLOADS", type(library._WORKLOADS)())
    calls = []
    real = library.build_shard
    monkeypatch.setattr(library, "build_shard", lambda *a: calls.append(a[-1]) or real(*a))
    kw = dict(input_len=64, output_len=16, dtype="bf16")
    best, table = dse.best_batch("gpt2", "dgx-a100", 1.0, batches=[1, 2], chips=2, **kw)
    assert [p.tp for p in calls] == [2, 2]  # one planned build per batch, no unplanned one
    p = dse.predict(dse.workload("gpt2", phase="serving", batch=2, **kw), "dgx-a100", chips=2)
    assert table.loc[table["batch"] == 2, "tokens_per_s"].iloc[0] == p.serving["tokens_per_s"]


def test_predict_takes_a_model_name_like_a_template_name():
    by_name = dse.predict("llama2-7b", "a100-80gb")
    built = dse.predict(dse.workload("llama2-7b"), "a100-80gb")
    assert by_name.time_s == built.time_s > 0
    with pytest.raises(DseError, match="accepted: a dse.workload"):
        dse.predict(3, "a100-80gb")


def test_short_reprs_and_named_shares():
    wl = dse.workload("gpt2", phase="decode", batch=8, context=1024)
    text = repr(wl)
    assert "\n" not in text and text.startswith("Workload(gpt2[decode") and "operator rows" in text
    shares = dse.predict(wl, "npu-7nm").time_by_bound()
    assert shares.name == "time_share" and shares.index.name == "bound"
    assert shares.sum() == pytest.approx(1.0)


def test_compare_sweep_and_whatif_take_a_study_or_a_mapping(tmp_path: Path) -> None:
    data = copy.deepcopy(SMALL_STUDY)
    data["whatif"] = {"workload": {"name": "resnet50", "batch": 8}, "stages": ["fuse_elementwise"]}
    path = write_config(tmp_path, data)
    by_path = dse.compare(path, ratios=["1:2", "1:1"], samples=0).table
    for cfg in (data, dse.Study.from_yaml(path)):
        pd.testing.assert_frame_equal(dse.compare(cfg, ratios=["1:2", "1:1"], samples=0).table, by_path)
    pd.testing.assert_frame_equal(dse.sweep(data, points=3), dse.sweep(path, points=3))
    pd.testing.assert_frame_equal(dse.whatif(dse.Study.from_yaml(path)), dse.whatif(path))
    bad = {**data, "search": {**data["search"], "n_trials": -1}}
    with pytest.raises(DseError, match="<mapping>"):
        dse.compare(bad)


def test_predict_many_reuses_its_op_arrays_only_for_the_same_workload_objects() -> None:
    """A second call on the same workloads reuses the mix's op arrays (and their cached tile rows) and gives the same
    table; other workloads or other weights build their own."""
    import dse
    import dse.api as api
    from dse.hardware.designs import DesignBatch

    d = DesignBatch.from_hardware(dse.hardware("a100-80gb"), 4)
    a = [dse.workload("llama2-7b", phase="decode", batch=1, context=512), dse.workload("resnet50", batch=8)]
    first = dse.predict_many(a, d)
    kept = api._MIXES[(tuple(id(w) for w in a), None)]
    second = dse.predict_many(a, d)
    assert api._MIXES[(tuple(id(w) for w in a), None)] is kept and first.equals(second)
    other = [dse.workload("llama2-7b", phase="decode", batch=8, context=512), a[1]]
    assert not dse.predict_many(other, d)["time_s.llama2-7b[decode b8 ctx512 bf16]"].equals(
        first["time_s.llama2-7b[decode b1 ctx512 bf16]"])
    w = dse.predict_many(a, d, weights=[1.0, 0.0])
    assert (w["binding"] == w["binding.llama2-7b[decode b1 ctx512 bf16]"]).all()


def test_a_serving_engine_host_time_is_in_every_path_that_times_the_workload() -> None:
    # dse.predict added the engine's host time of the pass; predict_many, studies and sweeps did not (2346 vs 1727 ms)
    import dse
    from dse.hardware.designs import DesignBatch
    from dse.predict import mix_times
    from dse.workloads.mix import Mix

    wl = dse.workload("llama2-7b", phase="serving", batch=8, input_len=512, output_len=128,
                      serving_engine="vllm-v0-sync")
    assert wl.host_s > 0
    bare = dse.workload("llama2-7b", phase="serving", batch=8, input_len=512, output_len=128)
    d = DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    both = mix_times(d, Mix.of([wl, bare]))[0]
    assert both[0] == pytest.approx(dse.predict(wl, "npu-7nm").time_s, rel=1e-12)
    assert both[0] - both[1] == pytest.approx(wl.host_s, rel=1e-9)


@pytest.mark.parametrize(("kw", "field"), [({"hold": "foo"}, "hold"), ({"samples": -1}, "samples"),
                                           ({"samples": "x"}, "samples"), ({"samples": 10**7}, "samples")])
def test_compare_in_python_checks_what_the_cli_checks(kw: dict, field: str) -> None:
    # hold='foo' ran area-held and labelled 'foo held'; 10 M samples ran for minutes; 'x' raised a TypeError
    import dse
    from dse.errors import DseError

    with pytest.raises(DseError) as err:
        dse.compare(str(Path(__file__).parents[1] / "configs" / "npu.yaml"), ratios=["1:2", "1:1"], **kw)
    assert err.value.field == field


@pytest.mark.parametrize("call", [lambda d: d.hardware(3), lambda d: d.area(None), lambda d: d.workload(None),
                                  lambda d: d.workload("gpt2", plan=5), lambda d: d.workload("gpt2", plan="auto"),
                                  lambda d: d.predict(d.workload("gpt2"), None)])
def test_a_wrongly_typed_argument_is_a_dse_error_not_a_traceback(call) -> None:
    # these raised TypeError / AttributeError / ValueError from deep inside
    import dse
    from dse.errors import DseError

    with pytest.raises(DseError):
        call(dse)


def test_a_model_file_may_be_named_by_a_path_object() -> None:
    import dse

    assert dse.workload(Path(__file__).parents[1] / "workloads" / "gpt2.yaml").name == "gpt2"


@pytest.mark.parametrize("frame", [{"peak_tflops": [-5.0]}, {"dram_bandwidth_tbps": [0.0]}, {"peak_tflops": ["x"]},
                                   {"sram_mib": [float("nan")]}, {"compute.spare_cores": [-1.0]}])
def test_predict_many_refuses_a_knob_no_design_can_have(frame: dict) -> None:
    # -5 TFLOP/s was built as 5, 0 TB/s as the smallest build, NaN gave a misleading dtype error
    import pandas as pd

    import dse
    from dse.errors import DseError

    with pytest.raises(DseError) as err:
        dse.predict_many([dse.gemm(64, 64, 64)], pd.DataFrame(frame), base="npu-7nm")
    assert err.value.field == f"designs.{next(iter(frame))}"


def test_predict_many_takes_zero_spare_cores_and_they_move_no_time() -> None:
    import pandas as pd

    import dse

    out = dse.predict_many([dse.gemm(512, 512, 512)], pd.DataFrame({"compute.spare_cores": [0.0, 3.0]}),
                           base="npu-7nm")
    times = out.filter(like="time_s.").to_numpy()
    assert times[0, 0] == times[1, 0]


def test_more_wrongly_typed_arguments_are_dse_errors() -> None:
    # system=5 raised an AttributeError, points=2.5 a numpy TypeError, an override past a list an IndexError
    import dse
    from dse.errors import DseError

    npu = str(Path(__file__).parents[1] / "configs" / "npu.yaml")
    for call, field in ((lambda: dse.predict(dse.workload("gpt2"), "a100-80gb", chips=2, tp=2, system=5), "system"),
                        (lambda: dse.sweep(npu, points=2.5), "points"),
                        (lambda: dse.Study.from_yaml(npu).with_overrides({"workloads.9.batch": 1}), "overrides")):
        with pytest.raises(DseError) as err:
            call()
        assert err.value.field == field


def test_a_system_named_as_hardware_and_as_system_is_that_system() -> None:
    """dse predict MODEL dgx-h100 --system dgx-h100 said 'unknown hardware template dgx-h100'; naming another
    system beside it is one line."""
    import pytest

    import dse
    from dse.errors import DseError

    wl = dse.workload("llama2-7b", phase="decode", batch=8)
    both = dse.predict(wl, "dgx-h100", system="dgx-h100", chips=8, tp=8)
    alone = dse.predict(wl, "dgx-h100", chips=8, tp=8)
    assert both.system.name == "dgx-h100" and both.time_s == pytest.approx(alone.time_s)
    with pytest.raises(DseError, match="got 'dgx-h100' as the hardware and 'dgx-a100' as the system"):
        dse.predict(wl, "dgx-h100", system="dgx-a100", chips=8, tp=8)


def test_predict_many_refuses_knobs_past_the_templates_limits() -> None:
    """A DataFrame of knobs was built and predicted past the limits templates enforce (a 1400 GHz clock, 10 million
    cores: docs/limits.md's own example); each column's ends must build a design the schema accepts."""
    import pandas as pd

    wl = dse.workload("llama2-7b", phase="decode")
    for col, v, says in (("compute.clock_ghz", 1400.0, "accepted: a number <= 10.0"),
                         ("compute.cores", 1e7, "accepted: a number <= 1048576")):
        with pytest.raises(dse.DseError, match=f"designs.{col}: got .* in row 1: .*{says}"):
            dse.predict_many([wl], pd.DataFrame({col: [2.0 if col.endswith("ghz") else 48.0, v]}), base="npu-7nm")
    ok = dse.predict_many([wl], pd.DataFrame({"peak_tflops": [300.0, 500.0]}), base="npu-7nm")
    assert len(ok) == 2


def test_compare_takes_the_clis_comma_spelling_of_ratios(tmp_path: Path) -> None:
    """``ratios="1:2,1:1"`` was read one character at a time ('ratios: got 1')."""
    from tests.conftest import SMALL_STUDY, write_config

    cfg = write_config(tmp_path, SMALL_STUDY)
    a = dse.compare(cfg, ratios="1:2,1:1", samples=0)
    b = dse.compare(cfg, ratios=["1:2", "1:1"], samples=0)
    assert list(a.designs_table["candidate"]) == list(b.designs_table["candidate"]) == ["1:2", "1:1"]


def test_predict_many_takes_a_dram_part_column_by_name() -> None:
    """A knobs DataFrame may name the main memory's part: the bandwidth target is then whole stacks of the part
    (3.2 TB/s: 4 HBM3 stacks = 3.2768, 2 HBM4 stacks = 4.096 TB/s) and a decode step follows the bandwidth."""
    wl = dse.workload("llama2-7b", phase="decode", batch=1, context=1024, dtype="bf16")
    knobs = pd.DataFrame({"dram_bandwidth_tbps": [3.2, 3.2], "memory.hbm.generation": ["hbm3", "hbm4"]})
    r = dse.predict_many([wl], knobs, base="npu-7nm")
    assert list(r["dram_bandwidth_tbps_built"]) == pytest.approx([3.2768, 4.096])
    t = r[f"time_s.{wl.label()}"]
    assert t[1] < t[0]
    with pytest.raises(DseError, match="got gddr6 for a level of kind dram; accepted: hbm2"):
        dse.predict_many([wl], knobs.assign(**{"memory.hbm.generation": ["hbm3", "gddr6"]}), base="npu-7nm")
    with pytest.raises(DseError, match=r"designs.memory.hbm.generation: got \['hbm3', 'hbm9'\]; accepted: DRAM parts"):
        dse.predict_many([wl], knobs.assign(**{"memory.hbm.generation": ["hbm3", "hbm9"]}), base="npu-7nm")
