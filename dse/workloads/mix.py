"""A workload mix: several workloads with weights, as one concatenated operator table."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from dse.workloads.library import Workload


@dataclass(frozen=True)
class Mix:
    """Workloads and their weights; ``ops`` carries a ``workload`` column (index into ``workloads``)."""

    workloads: tuple[Workload, ...]
    weights: np.ndarray  # [W], normalised to sum 1
    ops: pd.DataFrame
    #: workloads scored at each design's own best plan (``plan: auto``): the predictor times their candidates and
    #: keeps, per design, the fastest that fits (``dse.predict.mix_times``); ``workloads[i]`` is the base's choice
    auto: tuple[AutoPlan, ...] = ()

    def with_auto(self, auto: list[AutoPlan]) -> Mix:
        """This mix with ``auto`` entries (each names its place, ``AutoPlan.index``)."""
        return replace(self, auto=tuple(auto))

    @classmethod
    def of(cls, workloads: list[Workload], weights: list[float] | None = None) -> Mix:
        if not workloads:
            raise ValueError("a mix needs at least one workload")
        w = np.ones(len(workloads)) if weights is None else np.asarray(weights, dtype=float)
        if w.shape != (len(workloads),) or (w < 0).any() or w.sum() <= 0:
            raise ValueError("mix weights must be one non-negative number per workload, not all zero")
        tables = []
        for i, wl in enumerate(workloads):
            t = wl.ops.copy()
            t["workload"] = i
            tables.append(t)
        return cls(tuple(workloads), w / w.sum(), pd.concat(tables, ignore_index=True))

    @property
    def labels(self) -> list[str]:
        return [w.label() for w in self.workloads]

    def membership(self, weight: np.ndarray | None = None) -> np.ndarray:
        """[O, W] matrix: count of op ``o`` in workload ``w`` (so times[D,O] @ it = time per workload),
        times ``weight`` [O] when given (e.g. the pipeline-bubble ``scale``, or a 0/1 selection)."""
        m = np.zeros((len(self.ops), len(self.workloads)))
        w = self.ops["count"].to_numpy(dtype=float)
        if weight is not None:
            w = w * weight
        m[np.arange(len(self.ops)), self.ops["workload"].to_numpy()] = w
        return m

    @property
    def memory_bytes(self) -> np.ndarray:
        """[W] bytes one chip must hold for each workload (an auto entry: its smallest candidate's, since a design
        fits it when some plan fits)."""
        need = np.array([w.memory_bytes for w in self.workloads])
        for a in self.auto:
            need[a.index] = float(a.memory.min())
        return need


@dataclass(frozen=True, eq=False)
class AutoPlan:
    """One workload of a mix at each design's best parallelism plan: its candidate plans (``dse.workloads.plans``),
    each one chip's share on the same chips, as a mix of their own."""

    index: int  # its place in the mix
    candidates: Mix  # one workload per candidate plan
    labels: tuple[str, ...]  # each candidate's plan label
    cache: dict = field(default_factory=dict)  # the predictor's arrays of ``candidates``, built on first use

    @property
    def memory(self) -> np.ndarray:
        """[P] bytes per chip of each candidate."""
        return self.candidates.memory_bytes
