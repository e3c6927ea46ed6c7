"""Calibration: fit a template's achievable fractions to measurements (least squares in log space).

Robust loss (soft L1, scale 0.2 in log space) so one odd row cannot drag every parameter.
Parameters (per template, never per row): matrix-unit efficiency, vector-unit efficiency, the
bandwidth efficiency of each memory level, the per-operator overhead, and the host-sync overhead of
calls timed one at a time, one per timing harness (only rows with ``timing=isolated`` see it; rows of one
harness share it, as in ``dse validate``: ``dse.validate.suite.harness_of``). The "template" column
predicts as ``dse validate`` does: on a template without ``sync_overhead_us`` each isolated row gets its
harness time estimated from the other rows of its harness (``dse.validate.suite.harness_sync_us``). Residuals are
``ln(predicted / measured)``; scipy's bounded trust-region least squares keeps every fraction in
(0, 1] and the overhead >= 0. Leave-one-out error (refit without each row, predict it) is reported
next to the fit error, because a fit always looks good on its own rows, and so is leave-one-family-out
error (refit without every row of the row's family, ``dse.validate.bands.family_of``): the error on a
kind of workload the fit never saw. Every reported error is a time error, predicted / measured time - 1 (a rate
row's ``measured / predicted - 1``, :func:`dse.validate.suite.time_error_pct`), as ``dse validate`` reports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from dse.hardware.designs import DesignBatch, rescale_dtype_efficiency
from dse.hardware.schema import Hardware
from dse.validate.bands import family_of
from dse.validate.suite import RowCase, case_arrays, case_time, harness_sync_us, metric_from_time, time_error_pct

OVERHEAD_MAX_US = 1000.0


@dataclass(frozen=True)
class Fit:
    names: list[str]
    values: np.ndarray
    fit_error_pct: np.ndarray  # per row, with all rows fitted
    loo_error_pct: np.ndarray  # per row, fitted without that row
    before_error_pct: np.ndarray  # per row, with the template's own values
    row_ids: list[str]
    families: list[str] = field(default_factory=list)
    lofo_error_pct: np.ndarray | None = None  # per row, fitted without every row of its family

    def table(self) -> pd.DataFrame:
        lofo = self.lofo_error_pct if self.lofo_error_pct is not None else np.full(len(self.row_ids), np.nan)
        return pd.DataFrame({"id": self.row_ids, "family": self.families or [""] * len(self.row_ids),
                             "before_error_pct": self.before_error_pct, "fit_error_pct": self.fit_error_pct,
                             "loo_error_pct": self.loo_error_pct, "leave_family_out_error_pct": lofo})

    def family_table(self) -> pd.DataFrame:
        """Per family: rows and the median / max |error| before, fitted, leave-one-out and leave-family-out."""
        t = self.table()
        cols = ["before_error_pct", "fit_error_pct", "loo_error_pct", "leave_family_out_error_pct"]
        rows = []
        for fam, g in [*t.groupby("family", sort=False), ("all", t)]:
            rec = {"family": fam, "rows": len(g)}
            for c in cols:
                a = g[c].abs()
                rec[f"median_abs_{c}"] = float(a.median()) if a.notna().any() else np.nan
                rec[f"max_abs_{c}"] = float(a.max()) if a.notna().any() else np.nan
            rows.append(rec)
        return pd.DataFrame(rows)


def harnesses(cases: list[RowCase]) -> list[str]:
    """The distinct timing harnesses of the isolated rows, in order: one host-sync parameter each (one
    parameter, named ``sync_overhead_us``, when there are none or one)."""
    return list(dict.fromkeys(c.harness for c in cases if c.isolated)) or [""]


def parameter_names(hw: Hardware, harness_names: list[str] | tuple[str, ...] = ("",)) -> list[str]:
    sync = ["sync_overhead_us"] if len(harness_names) <= 1 else [f"sync_us[{h}]" for h in harness_names]
    return ["matrix_eff", "vector_eff", *[f"{m.name}_eff" for m in hw.memory], "overhead_us", *sync]


def initial(hw: Hardware, n_sync: int = 1) -> np.ndarray:
    c = hw.compute
    return np.array([c.matrix.efficiency, c.vector.efficiency, *[m.efficiency for m in hw.memory],
                     c.launch_overhead_us, *[c.sync_overhead_us] * max(1, n_sync)])


def apply(d: DesignBatch, x: np.ndarray) -> DesignBatch:
    """A batch with parameter vector ``x`` (see :func:`parameter_names`) set on every design."""
    L = d.bandwidth.shape[1]
    return replace(d, matrix_eff=np.full(d.n, x[0]), vector_eff=np.full(d.n, x[1]),
                   bw_eff=np.tile(x[2:2 + L], (d.n, 1)), overhead_s=np.full(d.n, x[2 + L] * 1e-6))


class _Rows:
    """Pre-built op arrays per row so each residual evaluation is only the vectorized predictor."""

    def __init__(self, hw: Hardware, cases: list[RowCase]) -> None:
        self.hw = hw
        self.cases = cases
        self.base = DesignBatch.from_hardware(hw)
        self.arrays = [case_arrays(c) for c in cases]
        self.measured = np.array([c.measured for c in cases])
        self.harnesses = harnesses(cases)
        self.n_fractions = 2 + self.base.bandwidth.shape[1]  # efficiencies; overheads (us) follow
        first_sync = self.n_fractions + 1
        self.sync_at = [first_sync + self.harnesses.index(c.harness) if c.isolated else -1 for c in cases]

    def predict(self, x: np.ndarray, idx: list[int] | None = None) -> np.ndarray:
        d = apply(self.base, x)
        idx = list(range(len(self.cases))) if idx is None else idx
        out = []
        for i in idx:
            t = case_time(self.cases[i], d, self.arrays[i])
            if self.cases[i].isolated:
                t = t + x[self.sync_at[i]] * 1e-6
            out.append(float(metric_from_time(self.cases[i].metric, self.cases[i].workload, d, t)[0]))
        return np.array(out)

    def residuals(self, x: np.ndarray, idx: list[int]) -> np.ndarray:
        return np.log(self.predict(x, idx) / self.measured[idx])

    def as_validated(self, x0: np.ndarray) -> np.ndarray:
        """[R] predictions with the template's own values, as ``dse validate`` makes them: on a template without
        ``sync_overhead_us`` an isolated time row takes its harness time estimated from the OTHER time rows of
        its harness (leave-one-out, :func:`dse.validate.suite.harness_sync_us`)."""
        out = self.predict(x0)
        if self.hw.compute.sync_overhead_us != 0:
            return out
        for h in self.harnesses:  # x0's sync entries are the template's 0 us here
            idx = [i for i, c in enumerate(self.cases) if c.isolated and c.harness == h and c.metric == "time_s"]
            if len(idx) < 2:
                continue
            sync = harness_sync_us(out[idx], self.measured[idx])
            for i, s_us in zip(idx, sync, strict=True):
                x = x0.copy()
                x[self.sync_at[i]] = s_us
                out[i] = self.predict(x, [i])[0]
        return out


def _bounds(n: int, n_fractions: int) -> tuple[np.ndarray, np.ndarray]:
    """Fractions in [0.02, 1]; the overheads after them (launch, host-sync per harness) in [0, 1000] us."""
    lo = np.full(n, 0.02)
    hi = np.full(n, 1.0)
    lo[n_fractions:], hi[n_fractions:] = 0.0, OVERHEAD_MAX_US
    return lo, hi


def constrained(rows: _Rows, idx: list[int], x0: np.ndarray, step: float = 1e-2, tol: float = 1e-6) -> np.ndarray:
    """[P] bool: the parameters the rows ``idx`` constrain (a step of ``step`` times the parameter, or of its
    range's 1 % for a parameter at 0, moves some row's log residual by more than ``tol``). A parameter no
    fitted row depends on keeps its value."""
    lo, hi = _bounds(x0.size, rows.n_fractions)
    r0 = rows.residuals(x0, idx)
    out = np.zeros(x0.size, dtype=bool)
    for p in range(x0.size):
        x = x0.copy()
        x[p] += step * max(abs(x0[p]), 1e-2 * (hi[p] - lo[p]))
        out[p] = bool(np.max(np.abs(rows.residuals(x, idx) - r0), initial=0.0) > tol)
    return out


def fit_rows(rows: _Rows, idx: list[int], x0: np.ndarray) -> np.ndarray:
    """Robust least squares (log residuals, soft-L1) of the parameters the rows ``idx`` constrain; the others
    keep their ``x0`` value (fitting them would move them along flat directions to arbitrary bounds)."""
    lo, hi = _bounds(x0.size, rows.n_fractions)
    x0 = np.clip(x0, lo + 1e-9, hi)
    active = constrained(rows, idx, x0)
    if not active.any():
        return x0

    def residuals(sub: np.ndarray, idx: list[int]) -> np.ndarray:
        x = x0.copy()
        x[active] = sub
        return rows.residuals(x, idx)

    res = least_squares(residuals, x0[active], bounds=(lo[active], hi[active]), args=(idx,), x_scale="jac",
                        diff_step=1e-3, loss="soft_l1", f_scale=0.2)
    x = x0.copy()
    x[active] = res.x
    return x


def calibrate(hw: Hardware, cases: list[RowCase], loo: bool = True) -> Fit:
    """Fit ``hw``'s achievable fractions and overhead to ``cases`` (rows on this template)."""
    if not cases:
        raise ValueError(f"no measurement rows for template {hw.name!r}")
    rows = _Rows(hw, cases)
    x0 = initial(hw, len(rows.harnesses))
    all_idx = list(range(len(cases)))
    x = fit_rows(rows, all_idx, x0)
    is_time = np.array([c.metric == "time_s" for c in cases])

    def pct(p: np.ndarray, at: list[int] | slice = slice(None)) -> np.ndarray:
        """Time errors of predictions ``p`` of rows ``at`` (as dse validate reports them: a rate's inverse)."""
        return time_error_pct(p, rows.measured[at], is_time[at])

    before = pct(rows.as_validated(x0))
    fitted = pct(rows.predict(x))
    loo_err = np.full(len(cases), np.nan)
    lofo_err = np.full(len(cases), np.nan)
    fams = [family_of(c.workload) for c in cases]
    if loo and len(cases) > 1:
        for i in all_idx:
            others = [j for j in all_idx if j != i]
            xi = fit_rows(rows, others, x)
            loo_err[i] = pct(rows.predict(xi, [i]), [i])[0]
        for fam in dict.fromkeys(fams):
            inside = [j for j in all_idx if fams[j] == fam]
            rest = [j for j in all_idx if fams[j] != fam]
            if rest:  # a template measured on one family only has nothing to hold out against
                xf = fit_rows(rows, rest, x0)
                lofo_err[inside] = pct(rows.predict(xf, inside), inside)
    return Fit(parameter_names(hw, rows.harnesses), x, fitted, loo_err, before, [c.id for c in cases], fams, lofo_err)


def calibrated_template(hw: Hardware, fit: Fit) -> Hardware:
    """``hw`` with the fitted values, each block's source naming the fit and its rows."""
    data = hw.model_dump(mode="python", exclude_none=True)
    v = dict(zip(fit.names, fit.values, strict=True))
    note = f"; calibrated by dse calibrate on rows {', '.join(fit.row_ids)} (validation/measurements.csv)"
    data["name"] = f"{hw.name}-calibrated"
    data["compute"]["matrix"]["efficiency"] = round(float(v["matrix_eff"]), 4)
    rescale_dtype_efficiency(data["compute"]["matrix"], hw.compute.matrix)
    data["compute"]["vector"]["efficiency"] = round(float(v["vector_eff"]), 4)
    data["compute"]["launch_overhead_us"] = round(float(v["overhead_us"]), 3)
    if "sync_overhead_us" in v:  # one timing harness: its host-sync time is the template's
        data["compute"]["sync_overhead_us"] = round(float(v["sync_overhead_us"]), 3)
    else:  # several: each belongs to its harness, not to the chip; the template keeps its own and names them
        note += "; host-sync time per timing harness (not written: dse validate estimates it per harness): " + ", ".join(
            f"{k[len('sync_us['):-1]} {float(val):.1f} us" for k, val in v.items() if k.startswith("sync_us["))
    for part in (data["compute"], data["compute"]["matrix"], data["compute"]["vector"]):
        part["source"] += note
    for level in data["memory"]:
        level["efficiency"] = round(float(v[f"{level['name']}_eff"]), 4)
        level["source"] += note
    return Hardware.model_validate(data)
