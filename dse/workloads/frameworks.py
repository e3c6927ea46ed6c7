"""Framework presets: how a framework runs a training step, as defaults of the scenario fields that say it.

A record ``workloads/frameworks/NAME.yaml`` (the only place a framework is registered: adding one is one file) names
the scenario fields it sets (:data:`FIELDS`: ``execution``, ``fuse_elementwise``, ``fused_attention``,
``weight_cast``, ``optimizer``, ``zero_grad``, ``optimizer_dtype``, ``grad_dtype``) and the source of each choice. A
scenario's
``framework: NAME`` puts them between the model's defaults and the fields the scenario gives itself (a field given
beside the framework wins).
The mechanisms behind the fields are in ``dse.workloads.training`` (weight casts, optimizer kernels and state, gradient
zeroing) and ``dse.workloads.ops`` (eager dispatch, fusion).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import Field, field_validator

from dse.strict import Strict
from dse.workloads.records import load_record, record_names

#: the scenario fields a framework record may set
FIELDS: tuple[str, ...] = ("execution", "fuse_elementwise", "fused_attention", "weight_cast", "optimizer",
                           "zero_grad", "optimizer_dtype", "grad_dtype")


class Framework(Strict):
    """One framework's way of running a training step (``workloads/frameworks/NAME.yaml``)."""

    name: str = Field(min_length=1, description="The framework's name: the file's name without .yaml")
    description: str = Field(min_length=3, description="How the framework runs a training step, in words")
    scenario: dict[str, Any] = Field(description="Scenario fields the framework sets (FIELDS), each a valid value")
    source: str = Field(min_length=3, description="Where each choice comes from")

    @field_validator("scenario")
    @classmethod
    def _known(cls, v: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(v) - set(FIELDS))
        if unknown:
            raise ValueError(f"got {', '.join(unknown)}; accepted: {', '.join(FIELDS)}")
        return v


def framework_names() -> list[str]:
    return record_names("frameworks")


@lru_cache(maxsize=32)
def load_framework(name: str) -> Framework:
    """The record ``workloads/frameworks/NAME.yaml``; an unknown name or a bad file is one ``DseError``."""
    return load_record("frameworks", name, Framework, "framework")


def framework_defaults(name: str | None, accepted: set[str] | frozenset[str]) -> dict[str, Any]:
    """The scenario fields framework ``name`` sets that a model accepts (``accepted``; a CNN takes no
    ``fused_attention``), or ``{}`` without a framework."""
    if not name:
        return {}
    return {k: v for k, v in load_framework(name).scenario.items() if k in accepted}
