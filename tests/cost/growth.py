"""Shared by the area and cost property tests: a design and the same design with one resource grown."""

from dataclasses import replace

import dse
from dse.hardware.designs import DesignBatch


def grown_pair(which: str, level: int, factor: float, scale: float) -> tuple[DesignBatch, DesignBatch]:
    """npu-7nm with compute, bandwidth and capacity scaled by ``scale``, and a copy with ``which``
    (matrix_peak, or level ``level`` of bandwidth/capacity) multiplied by ``factor`` >= 1."""
    d0 = DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    d0 = replace(d0, matrix_peak=d0.matrix_peak * scale, bandwidth=d0.bandwidth * scale, capacity=d0.capacity * scale)
    arr = getattr(d0, which).copy()
    if which == "matrix_peak":
        arr *= factor
    else:
        arr[:, level] *= factor
    return d0, replace(d0, **{which: arr})
