"""The shared base of every config block (study configs, hardware templates, workload descriptions, plans).

Strict: unknown keys are errors, instances are immutable, every float is finite, and a boolean is never
accepted where a number is expected. It sits below every stage so that workloads, hardware and the
config all validate the same way (``dse.errors`` turns its failures into one-line messages).
"""

from __future__ import annotations

from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, model_validator

MAX_INT = 2**53  # the largest integer float64 arrays (the predictor's) hold exactly


class Strict(BaseModel):
    """Base for every config block: unknown keys are errors, instances are immutable, every float is
    finite (no .inf / .nan), a boolean is never accepted where a number is expected, and an integer
    is at most ``MAX_INT`` in magnitude (larger ones overflow int64 arrays)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _no_bool_numbers(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, value in data.items():
                field = cls.model_fields.get(name) if isinstance(name, str) else None
                if field is not None and isinstance(value, bool) and _numeric(field.annotation):
                    # "@field@" lets dse.errors name the field itself rather than this block
                    raise ValueError(f"@{name}@got {value}; accepted: a number, not true/false")
                if (field is not None and type(value) is int and abs(value) > MAX_INT and _numeric(field.annotation)
                        and not any(getattr(m, b, None) is not None for m in field.metadata for b in ("le", "lt"))):
                    raise ValueError(f"@{name}@got {value:.3g}; accepted: an integer of magnitude <= 2^53")
        return data


def _numeric(annotation: Any) -> bool:
    """Whether a field's type is a number (int or float, optionally None), not also a bool."""
    args = get_args(annotation) or (annotation,)
    kinds = {a for a in args if a is not type(None)}
    return bool(kinds) and kinds <= {int, float} and bool not in kinds
