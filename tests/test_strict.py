"""dse.strict: the shared config-block base rejects unknown keys, non-finite floats and booleans as numbers."""

from __future__ import annotations

import pytest
from pydantic import Field, ValidationError

from dse.errors import from_validation_error
from dse.strict import Strict, _numeric


class Block(Strict):
    size: int = Field(gt=0)
    scale: float | None = None
    on: bool = False
    name: str = "x"


def test_numeric_field_detection_excludes_bools_and_strings() -> None:
    assert _numeric(int) and _numeric(float) and _numeric(float | None)
    assert not _numeric(bool) and not _numeric(str) and not _numeric(int | str) and not _numeric(type(None))


def test_a_boolean_is_refused_where_a_number_is_expected_but_not_where_a_bool_is() -> None:
    with pytest.raises(ValidationError) as ei:
        Block(size=True)
    assert str(from_validation_error(ei.value, file="b.yaml", model=Block)) == (
        "b.yaml: size: got True; accepted: a number, not true/false")
    with pytest.raises(ValidationError):
        Block(size=1, scale=False)
    assert Block(size=2, on=True).on is True


def test_unknown_keys_non_finite_floats_and_mutation_are_errors() -> None:
    with pytest.raises(ValidationError, match="extra_forbidden|Extra inputs"):
        Block(size=1, colour="red")
    with pytest.raises(ValidationError, match="finite"):
        Block(size=1, scale=float("inf"))
    b = Block(size=1)
    with pytest.raises(ValidationError, match="frozen"):
        b.size = 2  # type: ignore[misc]


def test_a_study_workload_entry_takes_every_scenario_field() -> None:
    # residency, memory_format and input_quant were 'unknown key' in a config while dse predict and dse.workload took them
    from dse.config import WorkloadEntry
    from dse.workloads.scenario import Scenario

    assert set(Scenario.model_fields) <= set(WorkloadEntry.model_fields)
    entry = WorkloadEntry.model_validate({"name": "resnet50", "batch": 8, "residency": "none", "memory_format": "nchw"})
    import dse

    assert dse.workload(entry.name, **entry.scenario()).scenario["residency"] == "none"
