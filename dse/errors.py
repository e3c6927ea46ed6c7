"""One error type for bad input, and the one-line message format every entry point prints.

A message names the file, the field path, the bad value and what is accepted, e.g.::

    configs/npu.yaml: search.space.peak_tflops.low: got -5; accepted: a number > 0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError


class DseError(Exception):
    """Bad input: a wrong key, a value out of range, a missing file or name. Printed on one line."""

    def __init__(self, message: str, *, file: str | None = None, field: str | None = None) -> None:
        self.file = file
        self.field = field
        self.message = message
        parts = [p for p in (file, field) if p]
        super().__init__(": ".join([*parts, message]))

    def lines(self) -> list[str]:
        """The lines an entry point prints, each after ``error:`` (one; :class:`DseMultiError` has several)."""
        return [str(self)]


class InfeasibleError(DseError):
    """Valid input that no design can satisfy: a workload larger than the most main memory the search space can
    build (checked before any trial), or a search whose every trial broke a budget, the reticle or a capacity.

    A study with several mixes sets such a mix aside and reports it with this one line
    (:func:`dse.study.run_mixes`); a study of one mix, or one whose every mix is infeasible, fails with it."""


class DseMultiError(DseError):
    """Several bad-input lines found in one pass over a file (e.g. every bad row of a CSV).

    ``str()`` is the first line with ``(+N more)``, for callers that keep one line; :meth:`lines` gives
    each line, which the command line prints as one ``error:`` line each."""

    def __init__(self, errors: Sequence[DseError]) -> None:
        if not errors:
            raise ValueError("DseMultiError needs at least one error")
        self.errors = tuple(errors)
        first = self.errors[0]
        n = len(self.errors) - 1
        more = f" (and {n} more bad field{'s' * (n != 1)})" if n else ""
        super().__init__(first.message + more, file=first.file, field=first.field)

    def lines(self) -> list[str]:
        return [str(e) for e in self.errors]


def close_names(name: str, names: Sequence[str], n: int = 3, first: Sequence[str] = ()) -> list[str]:
    """The ``names`` a mistyped ``name`` most likely meant: difflib's closest (ratio >= 0.6), then those that share a
    whole word with it between ``-``, ``_`` or ``.`` (``node`` -> ``process_node``, ``rows`` -> ``array_rows``,
    ``ffn_hidden`` -> ``ffn``); any of them in ``first`` (the fields the same file leaves missing) leads."""
    import difflib
    import re

    def words(text: str) -> set[str]:
        return set(re.split(r"[-_.]", text.lower()))

    close = difflib.get_close_matches(name, list(names), n=n)
    mine = words(name)
    close += sorted(c for c in names if c not in close and (name.lower() in words(c) or c.lower() in mine))
    return sorted(close, key=lambda c: c not in first)[:n]  # stable: the missing ones first, else as ranked


def did_you_mean(name: str, names: Sequence[str], n: int = 3, first: Sequence[str] = ()) -> str:
    """``" (did you mean 'a' or 'b'?)"`` for :func:`close_names`, or ``""`` when none is close; appended to an
    unknown-name error so a typo is one glance, not a search of a long list (``h100`` -> ``h100-sxm``)."""
    close = close_names(name, names, n, first)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """Walk ``loc`` through nested pydantic models and return the model that owns the last key."""
    import typing

    current: Any = model
    keys = [k for k in loc[:-1] if not isinstance(k, int)]
    i = 0
    while i < len(keys):
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = current.model_fields.get(str(keys[i]))
        if field is None:
            return None
        nxt = keys[i + 1] if i + 1 < len(keys) else None
        current, tag = _unwrap(field.annotation, typing, nxt)
        i += 2 if tag else 1  # a discriminated union's path names the member's tag (a CNN layer's op) next: skip it
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _unwrap(annotation: Any, typing: Any, key: Any = None) -> tuple[Any, bool]:
    """(the pydantic model inside ``list[X]``, ``X | None``, ``dict[str, X]`` and the like, whether ``key`` was its
    tag). Inside a union of several models (a CNN layer is one of Conv, Pool, Bottleneck, ...) the one that has the
    field ``key`` the error's path goes on to, or, in a discriminated union, whose tag is ``key`` (pydantic puts the
    member's tag in the path: ``layers.0.conv.stride``)."""
    models = _models_in(annotation, typing)
    if key is not None:
        for m in models:
            if str(key) in m.model_fields:
                return m, False
        for m in models:
            tags = [a for f in m.model_fields.values() for a in typing.get_args(f.annotation)
                    if typing.get_origin(f.annotation) is typing.Literal]
            if str(key) in tags:
                return m, True
    return (models[0] if models else annotation), False


def _models_in(annotation: Any, typing: Any) -> list[type[BaseModel]]:
    """Every pydantic model inside ``annotation``, in order (the annotation itself if it is one)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    out: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        out += [m for m in _models_in(arg, typing) if m not in out]
    return out


PLAIN = {  # pydantic's wording for a wrong type, said as what is accepted
    "model_type": "a mapping", "model_attributes_type": "a mapping", "dict_type": "a mapping",
    "list_type": "a list", "tuple_type": "a list", "string_type": "a string", "bool_type": "true or false",
    "bool_parsing": "true or false", "int_type": "an integer", "int_parsing": "an integer",
    "int_parsing_size": "an integer of a sensible size", "int_from_float": "an integer",
    "float_type": "a number", "float_parsing": "a number",
}


def _key_hint(err: dict[str, Any], model: type[BaseModel] | None, errors: list[dict[str, Any]]) -> str:
    """The keys an unknown key most likely meant (:func:`did_you_mean` over its block's keys, a key of that block
    the file leaves missing first: ``ffn_hidden`` -> ``ffn``, not ``hidden``), or ``""``."""
    owner = _model_at(model, tuple(err["loc"])) if model else None
    if owner is None or not err["loc"]:
        return ""
    block = tuple(err["loc"][:-1])
    missing = [str(e["loc"][-1]) for e in errors if e["type"] == "missing" and tuple(e["loc"][:-1]) == block]
    return did_you_mean(str(err["loc"][-1]), [f.alias or n for n, f in owner.model_fields.items()], first=missing)


def _accepted(err: dict[str, Any], model: type[BaseModel] | None) -> str:
    kind = err["type"]
    ctx = err.get("ctx", {}) or {}
    if kind == "extra_forbidden":
        owner = _model_at(model, tuple(err["loc"])) if model else None
        if owner is not None:  # the keys a file writes: a field's alias where it has one (Pool's ``global``)
            return "one of " + ", ".join(sorted(f.alias or n for n, f in owner.model_fields.items()))
        return "no such key"
    if kind == "missing":
        return "this field is required"
    if kind == "finite_number":
        return "a finite number"
    if kind in PLAIN:
        return PLAIN[kind]
    if kind == "too_short":  # pydantic: 'List should have at least 2 items after validation, not 1'
        n = ctx.get("min_length", "")
        return f"at least {n} item{'' if n == 1 else 's'}"
    if kind == "too_long":
        n = ctx.get("max_length", "")
        return f"at most {n} item{'' if n == 1 else 's'}"
    if kind == "string_pattern_mismatch":
        return f"a string matching {ctx.get('pattern', '')}"
    if kind == "literal_error":
        return f"one of {ctx.get('expected', '')}"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        ops = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}
        bound = next(iter(v for k, v in ctx.items() if k in ("gt", "ge", "lt", "le")), "")
        return f"a number {ops[kind]} {bound}"
    return err.get("msg", kind)


def _dotted(err: dict[str, Any], prefix: str = "") -> str:
    """A pydantic error's location as a dotted field path (``compute.matrix.peak_tflops``), under ``prefix``."""
    at = ".".join(str(p) for p in err["loc"] if p != "__root__")
    return f"{prefix}.{at}" if prefix and at else (at or prefix)


def from_validation_error(
    exc: ValidationError, *, file: str | None, model: type[BaseModel] | None = None, prefix: str = "",
    prefer: str | None = None,
) -> DseError:
    """Turn the most telling pydantic error into a one-line :class:`DseError` (others are counted): an unknown key
    first (a misspelled ``clock_gHz`` also makes ``clock_ghz`` missing: the typo is the news), then an error at
    ``prefer`` (the field the caller set: its own limit, not that of a field derived from it), then the first."""
    errors = exc.errors()

    def rank(e: dict[str, Any]) -> int:
        return 0 if e["type"] == "extra_forbidden" else 1 if prefer and _dotted(e) == prefer else 2

    err = min(errors, key=rank)
    loc = _dotted(err, prefix)
    others: list[str] = []  # the other bad fields, named (a count alone left the user to find them)
    for e in errors:
        at = _dotted(e, prefix)
        named_at = f"{at} missing" if e["type"] == "missing" else at  # a field left out says so
        if e is not err and at and at != loc and named_at not in others:
            others.append(named_at)
    n = len(errors) - 1
    named = f": {', '.join(others[:3])}{', ...' if len(others) > 3 else ''}" if others else ""
    more = f" (and {n} more bad field{'s' * (n != 1)}{named})" if n else ""
    if err["type"] == "extra_forbidden":
        msg = f"unknown key{_key_hint(err, model, errors)}; accepted: {_accepted(err, model)}{more}"
    elif err["type"] == "missing":
        msg = f"missing; {_accepted(err, model)}{more}"
    elif err["type"] in ("value_error", "assertion_error") and err["msg"].removeprefix("Value error, ").startswith("@"):
        # a block's validator naming one of its fields: "@field@message"
        _, field, text = err["msg"].removeprefix("Value error, ").split("@", 2)
        loc = f"{loc}.{field}" if loc else field
        msg = f"{text}{more}"
    elif err["type"] in ("value_error", "assertion_error"):
        text = err["msg"].removeprefix("Value error, ")  # a validator that says what it got is not prefixed again
        msg = f"{text}{more}" if text.startswith("got ") else f"got {_short(err.get('input'))}; {text}{more}"
    else:
        msg = f"got {_short(err.get('input'))}; accepted: {_accepted(err, model)}{more}"
    return DseError(msg, file=file, field=loc or None)
