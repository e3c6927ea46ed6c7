"""Cross-chip speedups: for every pair of validation rows that differ only in the chip, the predicted against the
measured speedup. A design decision is a comparison, so this is the figure it rests on.

Two rows pair when they share the source (the id's first part, e.g. ``intel118``: one harness and one software
release), the workload, the scenario, the chip count and the metric, and name different chips. With time errors
``e = t_predicted / t_measured - 1`` of the rows on chips ``a`` and ``b``, the speedup of ``b`` over ``a`` is
``t_a / t_b``; its error is::

    ratio error = (predicted t_a / t_b) / (measured t_a / t_b) - 1 = (1 + e_a) / (1 + e_b) - 1

(only out-of-sample rows: a row that set a coefficient pairs with nothing).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dse.validate.families import out_of_sample

PAIR_KEY = ("source_key", "workload", "scenario", "n_chips", "metric")


def source_key(row_id: str) -> str:
    """The source part of a row id: its text up to the first ``-`` (``intel118-gaudi2-...`` -> ``intel118``)."""
    return str(row_id).split("-", 1)[0]


def chip_pairs(results: pd.DataFrame) -> pd.DataFrame:
    """One row per pair of out-of-sample rows that differ only in the chip (``chip_a`` < ``chip_b`` by name):
    measured and predicted speedup of ``chip_b`` over ``chip_a`` and the ratio error (percent)."""
    cols = ["chip_a", "chip_b", "id_a", "id_b", "family", "measured_speedup", "predicted_speedup", "ratio_error_pct"]
    oos = out_of_sample(results)
    if oos.empty or "scenario" not in oos.columns:
        return pd.DataFrame(columns=cols)
    oos = oos.assign(source_key=oos["id"].map(source_key), hardware=oos["hardware"].astype(str))
    e = oos["time_error_pct"].to_numpy(dtype=float) / 100
    is_time = (oos["metric"] == "time_s").to_numpy()
    meas = oos["measured"].to_numpy(dtype=float)
    oos = oos.assign(t_meas=np.where(is_time, meas, 1.0 / meas), e=e)  # a rate's time is 1 / rate (same units)
    rows = []
    for _, g in oos.groupby(list(PAIR_KEY), sort=False):
        if g["hardware"].nunique() < 2:
            continue
        g = g.sort_values("hardware", kind="stable")
        recs = g.to_dict("records")
        for i, a in enumerate(recs):
            for b in recs[i + 1:]:
                if a["hardware"] == b["hardware"]:
                    continue
                measured = a["t_meas"] / b["t_meas"]
                predicted = measured * (1 + a["e"]) / (1 + b["e"])
                rows.append({"chip_a": a["hardware"], "chip_b": b["hardware"], "id_a": a["id"], "id_b": b["id"],
                             "family": a["family"], "measured_speedup": measured, "predicted_speedup": predicted,
                             "ratio_error_pct": (predicted / measured - 1) * 100})
    return pd.DataFrame(rows, columns=cols)


def pair_table(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per chip pair and over all pairs (``all``): pairs, median and max |ratio error| and the median signed one
    (percent)."""
    cols = ["chip_a", "chip_b", "pairs", "median_abs_ratio_error_pct", "max_abs_ratio_error_pct",
            "median_ratio_error_pct"]
    out = []
    groups = [((a, b), g) for (a, b), g in pairs.groupby(["chip_a", "chip_b"], sort=True)] if len(pairs) else []
    for (a, b), g in [*groups, (("all", "all"), pairs)]:
        err = g["ratio_error_pct"].to_numpy(dtype=float)
        if not err.size:
            continue
        out.append({"chip_a": a, "chip_b": b, "pairs": int(err.size),
                    "median_abs_ratio_error_pct": float(np.median(np.abs(err))),
                    "max_abs_ratio_error_pct": float(np.max(np.abs(err))),
                    "median_ratio_error_pct": float(np.median(err))})
    return pd.DataFrame(out, columns=cols)
