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

A template's fit sees only its own chip's rows, so leaving its chip out would leave nothing to fit. Leave-one-chip-out
(:func:`leave_chip_out`) is therefore measured on a fit shared by several chips (by default every shipped chip of
the template's style with rows: :func:`style_chips`): one set of fractions and launch overhead for all of them (one
launch overhead per dispatch, ``compute.dispatch``: a statically scheduled chip launches no kernels), each row
predicted on its own chip's template, refitted without every row of one chip to predict that chip's rows, for each
chip in turn. It is the error of carrying a calibration to a chip it was never fitted on, which is what a
design study does with a chip not built yet.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from dse.errors import DseError
from dse.hardware.designs import DesignBatch, rescale_dtype_efficiency, written_fraction
from dse.hardware.schema import Hardware
from dse.hardware.templates import list_templates, load_hardware
from dse.predict.tiles import freeze_rates
from dse.validate.bands import family_of
from dse.validate.suite import (
    MAX_HARNESS_US,
    NotCoveredError,
    RowCase,
    case_arrays,
    case_time,
    chip_style,
    harness_sync_us,
    metric_from_time,
    prepare_row,
    time_error_pct,
)

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
        return abs_error_table(self.table(), "family", ["before_error_pct", "fit_error_pct", "loo_error_pct",
                                                        "leave_family_out_error_pct"])


def abs_error_table(t: pd.DataFrame, by: str, cols: list[str]) -> pd.DataFrame:
    """Per group of column ``by`` (in order of appearance), then ``all`` rows: ``rows`` and, for each error column
    ``C``, ``median_abs_C`` and ``max_abs_C``, the median and max of ``|C|`` over the group's rows where ``C`` is
    known (NaN where none is)."""
    out = []
    for key, g in [*t.groupby(by, sort=False), ("all", t)]:
        rec: dict[str, object] = {by: key, "rows": len(g)}
        for c in cols:
            a = g[c].abs()
            rec[f"median_abs_{c}"] = float(a.median()) if a.notna().any() else np.nan
            rec[f"max_abs_{c}"] = float(a.max()) if a.notna().any() else np.nan
        out.append(rec)
    return pd.DataFrame(out)


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
    """A batch with parameter vector ``x`` (see :func:`parameter_names`) set on every design, or with one
    vector per design (``x`` of shape [d.n, P]: design ``k`` takes ``x[k]``)."""
    L = d.bandwidth.shape[1]
    X = np.broadcast_to(np.asarray(x, dtype=float), (d.n, np.shape(x)[-1]))
    return replace(d, matrix_eff=X[:, 0].copy(), vector_eff=X[:, 1].copy(), bw_eff=X[:, 2:2 + L].copy(),
                   overhead_s=X[:, 2 + L] * 1e-6)


class _Predictor:
    """Rows to fit: ``measured`` [R], ``n_fractions`` (the parameters that are fractions; overheads in us follow)
    and ``predict_many``; the residuals are ``ln(predicted / measured)``."""

    measured: np.ndarray
    n_fractions: int
    n_overheads: int = 1  # launch overheads (us) after the fractions; host-sync times (us) follow them

    def predict_many(self, X: np.ndarray, idx: list[int] | None = None) -> np.ndarray:
        raise NotImplementedError

    def predict(self, x: np.ndarray, idx: list[int] | None = None) -> np.ndarray:
        return self.predict_many(x, idx)[0]

    def residuals_many(self, X: np.ndarray, idx: list[int]) -> np.ndarray:
        """[n, len(idx)] ``ln(predicted / measured)`` of rows ``idx`` for each parameter vector of ``X``."""
        return np.log(self.predict_many(X, idx) / self.measured[idx])

    def residuals(self, x: np.ndarray, idx: list[int]) -> np.ndarray:
        return self.residuals_many(x, idx)[0]


class _Rows(_Predictor):
    """Pre-built op arrays per row so each residual evaluation is only the vectorized predictor."""

    def __init__(self, hw: Hardware, cases: list[RowCase]) -> None:
        self.hw = hw
        self.cases = cases
        self.base = DesignBatch.from_hardware(hw)
        self.arrays = [case_arrays(c) for c in cases]
        for a in self.arrays:  # the fit's steps keep the template's GEMM tile choice (docs/validation.md)
            freeze_rates(a.o)
        self.measured = np.array([c.measured for c in cases])
        self.harnesses = harnesses(cases)
        self.n_fractions = 2 + self.base.bandwidth.shape[1]  # efficiencies; overheads (us) follow
        first_sync = self.n_fractions + 1
        self.sync_at = [first_sync + self.harnesses.index(c.harness) if c.isolated else -1 for c in cases]
        self.names = parameter_names(hw, self.harnesses)
        self._bases: dict[tuple[bytes | None, int], DesignBatch] = {}

    def _base(self, n: int, x: np.ndarray | None = None) -> DesignBatch:
        """``n`` copies of the template, or with ``x`` of the template with those values written into it
        (:func:`template_with`; the last few kept): the tile model reads the template's efficiencies."""
        key = (None if x is None else np.asarray(x, dtype=float).tobytes(), n)
        if key not in self._bases:
            if len(self._bases) > 8:
                self._bases.pop(next(iter(self._bases)))
            self._bases[key] = DesignBatch.from_hardware(self.hw if x is None else template_with(self.hw, self.names, x), n)
        return self._bases[key]

    def predict_many(self, X: np.ndarray, idx: list[int] | None = None, exact: bool = False) -> np.ndarray:
        """[n, len(idx)] the metric of rows ``idx`` predicted with each parameter vector (``X``: [n, P] or [P]).
        The n vectors are n designs of one batch, so a finite-difference Jacobian is one pass over the rows.

        The fit's steps (``exact`` False) keep the template's own efficiencies in the tile model (its GEMM tile
        and wave fills are computed once, not at every step: the fit then moves the roofline's terms only); with
        ``exact`` the batch's template carries the first vector, so the prediction is exactly the one of the
        template :func:`template_with` writes for it (the errors calibrate reports)."""
        X = np.atleast_2d(np.asarray(X, dtype=float))
        d = apply(self._base(len(X), X[0] if exact else None), X)
        idx = list(range(len(self.cases))) if idx is None else idx
        out = np.empty((len(X), len(idx)))
        for k, i in enumerate(idx):
            c = self.cases[i]
            t = case_time(c, d, self.arrays[i])
            if c.isolated:
                t = t + X[:, self.sync_at[i]] * 1e-6
            out[:, k] = metric_from_time(c.metric, c.workload, d, t)
        return out

    def as_validated(self, x0: np.ndarray) -> np.ndarray:
        """[R] predictions of the template with the values ``x0`` written into it, as ``dse validate`` makes them:
        on a template without ``sync_overhead_us`` an isolated time row takes its harness time estimated from the
        OTHER time rows of its harness (leave-one-out, :func:`dse.validate.suite.harness_sync_us`)."""
        if template_with(self.hw, self.names, x0).compute.sync_overhead_us != 0:
            return self.predict_many(x0, exact=True)[0]
        x0 = np.array(x0, dtype=float)
        x0[self.n_fractions + 1:] = 0.0  # the template holds no host-sync time: per-harness fits are not written
        out = self.predict_many(x0, exact=True)[0]
        for h in self.harnesses:
            idx = [i for i, c in enumerate(self.cases) if c.isolated and c.harness == h and c.metric == "time_s"]
            if len(idx) < 2:
                continue
            sync = harness_sync_us(out[idx], self.measured[idx])
            for i, s_us in zip(idx, sync, strict=True):
                x = x0.copy()
                x[self.sync_at[i]] = s_us
                out[i] = self.predict_many(x, [i], exact=True)[0, 0]
        return out


def _bounds(n: int, n_fractions: int, n_overheads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Fractions in [0.02, 1]; then the launch overheads (one, or one per dispatch in a pooled fit) in [0, 1000] us
    and the host-sync time per harness after them in [0, :data:`dse.validate.suite.MAX_HARNESS_US`] us (the bound
    ``dse validate``'s leave-one-out estimate has)."""
    lo = np.full(n, 0.02)
    hi = np.full(n, 1.0)
    lo[n_fractions:], hi[n_fractions:] = 0.0, OVERHEAD_MAX_US
    hi[n_fractions + n_overheads:] = MAX_HARNESS_US
    return lo, hi


def bound_warnings(names: list[str], values: np.ndarray) -> list[str]:
    """A line for each fitted value on a bound of :func:`_bounds` (an efficiency of 1 is 100 % of the peak, 0.02 the
    floor; a launch overhead of 1000 us the ceiling): the rows did not pin it, and a template written with it claims
    what no measurement showed (a TPU v5e fit put HBM and VMEM at 100 % of peak without a word)."""
    out = []
    for name, v in zip(names, values, strict=True):
        if name.endswith("_eff") and (v >= 1.0 - 1e-9 or v <= 0.02 + 1e-9):
            edge = "upper bound 1 (100 % of the peak)" if v >= 1.0 - 1e-9 else "lower bound 0.02"
            out.append(f"{name} {v:.4g} sits on its {edge}: these rows do not pin it; check it before using the "
                       "calibrated template, or add rows bound by it")
        elif name.startswith("overhead_us") and v >= OVERHEAD_MAX_US * (1 - 1e-9):
            out.append(f"{name} {v:.4g} sits on its upper bound {OVERHEAD_MAX_US:g} us: these rows do not pin it")
    return out


DIFF_STEP = 1e-3  #: relative finite-difference step of the Jacobian


def forward_steps(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, rel: float = DIFF_STEP) -> np.ndarray:
    """[P] forward-difference steps ``h = rel * sign(x) * max(|x|, rel * (hi - lo))`` (the floor keeps a
    parameter at or near 0, an overhead, from a step lost in rounding); a step that leaves ``[lo, hi]`` goes the
    other way when it fits there, else to the farther bound (scipy's one-sided scheme)."""
    sign = np.where(x >= 0, 1.0, -1.0)
    h = rel * sign * np.maximum(np.abs(x), rel * (hi - lo))
    below, above = x - lo, hi - x
    fits = np.abs(h) <= np.maximum(below, above)
    h = np.where(((x + h < lo) | (x + h > hi)) & fits, -h, h)
    return np.where(fits, h, np.where(above >= below, above, -below))


def constrained(rows: _Predictor, idx: list[int], x0: np.ndarray, step: float = 1e-2, tol: float = 1e-6) -> np.ndarray:
    """[P] bool: the parameters the rows ``idx`` constrain (a step of ``step`` times the parameter, or of its
    range's 1 % for a parameter at 0, moves some row's log residual by more than ``tol``). A parameter no
    fitted row depends on keeps its value. One batch of P + 1 designs: ``x0`` and each step."""
    lo, hi = _bounds(x0.size, rows.n_fractions, rows.n_overheads)
    X = np.tile(x0, (x0.size + 1, 1))
    X[1 + np.arange(x0.size), np.arange(x0.size)] += step * np.maximum(np.abs(x0), 1e-2 * (hi - lo))
    r = rows.residuals_many(X, idx)
    return np.max(np.abs(r[1:] - r[0]), axis=1, initial=0.0) > tol


def fit_rows(rows: _Predictor, idx: list[int], x0: np.ndarray) -> np.ndarray:
    """Robust least squares (log residuals, soft-L1) of the parameters the rows ``idx`` constrain; the others
    keep their ``x0`` value (fitting them would move them along flat directions to arbitrary bounds). The
    Jacobian is forward differences (:func:`forward_steps`), all columns in one batch of designs."""
    lo, hi = _bounds(x0.size, rows.n_fractions, rows.n_overheads)
    x0 = np.clip(x0, lo + 1e-9, hi)
    active = constrained(rows, idx, x0)
    if not active.any():
        return x0
    at = np.flatnonzero(active)

    def full(sub: np.ndarray) -> np.ndarray:
        x = x0.copy()
        x[active] = sub
        return x

    def residuals(sub: np.ndarray) -> np.ndarray:
        return rows.residuals(full(sub), idx)

    def jacobian(sub: np.ndarray) -> np.ndarray:
        h = forward_steps(sub, lo[active], hi[active])
        X = np.tile(full(sub), (at.size + 1, 1))
        X[1 + np.arange(at.size), at] += h
        r = rows.residuals_many(X, idx)
        return ((r[1:] - r[0]) / ((sub + h) - sub)[:, None]).T

    res = least_squares(residuals, x0[active], jac=jacobian, bounds=(lo[active], hi[active]), x_scale="jac",
                        loss="soft_l1", f_scale=0.2)
    return full(res.x)


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
    x = written_values(hw, rows.names, x)
    fitted = pct(rows.as_validated(x))  # the calibrated template under dse validate
    loo_err = np.full(len(cases), np.nan)
    lofo_err = np.full(len(cases), np.nan)
    fams = [family_of(c.workload) for c in cases]
    if loo and len(cases) > 1:
        for i in all_idx:
            others = [j for j in all_idx if j != i]
            xi = fit_rows(rows, others, x)
            loo_err[i] = pct(rows.predict_many(xi, [i], exact=True)[0], [i])[0]
        for fam in dict.fromkeys(fams):
            inside = [j for j in all_idx if fams[j] == fam]
            rest = [j for j in all_idx if fams[j] != fam]
            if rest:  # a template measured on one family only has nothing to hold out against
                xf = fit_rows(rows, rest, x0)
                lofo_err[inside] = pct(rows.predict_many(xf, inside, exact=True)[0], inside)
    return Fit(parameter_names(hw, rows.harnesses), x, fitted, loo_err, before, [c.id for c in cases], fams, lofo_err)


def chip_cases(df: pd.DataFrame, hw: Hardware) -> tuple[list[RowCase], list[str]]:
    """The rows of measurement table ``df`` whose ``hardware`` is ``hw``'s name, ready to fit on ``hw``, and
    ``"ID: reason"`` for each of them the model cannot predict (not covered) or that is malformed."""
    cases, skipped = [], []
    for _, row in df[df["hardware"].astype(str).str.strip() == hw.name].iterrows():
        try:
            cases.append(prepare_row(row, {hw.name: hw}))
        except (NotCoveredError, DseError) as exc:
            skipped.append(f"{row['id']}: {exc}")
    return cases, skipped


def style_chips(df: pd.DataFrame, hw: Hardware) -> list[str]:
    """``hw``'s name, then every other shipped template of its style (``dse.validate.suite.chip_style``: systolic
    NPU or SIMT GPU) that rows of ``df`` name, in the order of the rows: the chips of a leave-one-chip-out fit."""
    style = chip_style(hw)
    named = dict.fromkeys(str(h).strip() for h in df["hardware"])
    shipped = set(list_templates())
    return [hw.name, *[n for n in named if n != hw.name and n in shipped and chip_style(load_hardware(n)) == style]]


def sync_names(rows: _Rows) -> list[str]:
    """The host-sync parameters of one chip's rows in a fit of several chips: one per timing harness of its
    isolated rows, ``sync_us[CHIP]`` (one harness) or ``sync_us[CHIP HARNESS]``; none without isolated rows."""
    if not any(c.isolated for c in rows.cases):
        return []
    chip = rows.hw.name
    return [f"sync_us[{chip}]"] if len(rows.harnesses) == 1 else [f"sync_us[{chip} {h}]" for h in rows.harnesses]


def overhead_name(hw: Hardware) -> str:
    """The pooled launch-overhead parameter of ``hw``'s dispatch (``compute.dispatch``): ``overhead_us`` for chips
    that launch kernels, ``overhead_us[static]`` for statically scheduled ones, whose per-operator cost is their
    instruction pipeline's fill, not a launch (one overhead pooled over the kernel-launching NPUs put their launch on
    each of a Groq TSP's operators, whose template holds 0.05 us: held out, its ResNet-50 row went 21 -> 492 % slow)."""
    d = hw.compute.dispatch
    return "overhead_us" if d == "kernels" else f"overhead_us[{d}]"


def pooled_names(chips: list[_Rows]) -> list[str]:
    """The parameters of a fit shared by several chips: ``matrix_eff``, ``vector_eff``, one ``NAME_eff`` per memory
    level name (levels of one name share it across chips: ``hbm_eff``, ``l2_eff``; a name only one chip has is that
    chip's), the launch overhead of each dispatch among them (:func:`overhead_name`: kernel-launching chips share
    ``overhead_us``, statically scheduled ones ``overhead_us[static]``), then each chip's host-sync times
    (:func:`sync_names`): a harness's sync time is a property of the measurement, shared by no other chip."""
    levels = dict.fromkeys(m.name for r in chips for m in r.hw.memory)
    overheads = sorted(dict.fromkeys(overhead_name(r.hw) for r in chips), key=lambda n: (n != "overhead_us", n))
    return ["matrix_eff", "vector_eff", *[f"{lv}_eff" for lv in levels], *overheads,
            *[n for r in chips for n in sync_names(r)]]


def pooled_initial(V: np.ndarray, among: list[int]) -> np.ndarray:
    """[P] start of a pooled fit: ``V`` [C, P] holds each chip's template value of each pooled parameter (NaN where
    the chip has no such parameter); each parameter starts at the median over the chips ``among`` that have it, or
    over every chip that has it when none of ``among`` does."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column ("All-NaN slice"): filled below
        z = np.nanmedian(V[among], axis=0)
        return np.where(np.isnan(z), np.nanmedian(V, axis=0), z)


class _Pool(_Predictor):
    """Rows of several chips (one :class:`_Rows` each, on its own template) predicted with one pooled parameter
    vector (:func:`pooled_names`): chip ``c`` takes its template's vector with every pooled parameter it has
    replaced (:meth:`local`), so its peaks, bandwidths, geometry, dtype efficiency ratios and kernel costs stay
    its own and only the fitted fractions and the launch overhead are shared."""

    def __init__(self, chips: list[_Rows]) -> None:
        self.chips = chips
        self.names = pooled_names(chips)
        self.n_fractions = next(i for i, n in enumerate(self.names) if n.startswith("overhead_us"))
        self.n_overheads = sum(n.startswith("overhead_us") for n in self.names)
        self.x0 = [initial(r.hw, len(r.harnesses)) for r in chips]
        self.maps: list[tuple[np.ndarray, np.ndarray]] = []  # per chip: (local positions, pooled positions)
        for r in chips:
            local = parameter_names(r.hw, r.harnesses)
            pooled = [*local[:r.n_fractions], overhead_name(r.hw), *sync_names(r)]  # sync entries last in both
            self.maps.append((np.arange(len(pooled)), np.array([self.names.index(n) for n in pooled])))
        self.template_values = np.full((len(chips), len(self.names)), np.nan)
        for c, (lp, pp) in enumerate(self.maps):
            self.template_values[c, pp] = self.x0[c][lp]
        sizes = [len(r.cases) for r in chips]
        self.chip_of = np.repeat(np.arange(len(chips)), sizes)
        self.local_row = np.concatenate([np.arange(n) for n in sizes])
        self.measured = np.concatenate([r.measured for r in chips])

    def local(self, Z: np.ndarray, c: int) -> np.ndarray:
        """[n, P_c] chip ``c``'s parameter vectors for pooled vectors ``Z`` [n, P]."""
        Z = np.atleast_2d(Z)
        X = np.tile(self.x0[c], (len(Z), 1))
        lp, pp = self.maps[c]
        X[:, lp] = Z[:, pp]
        return X

    def predict_many(self, X: np.ndarray, idx: list[int] | None = None) -> np.ndarray:
        Z = np.atleast_2d(np.asarray(X, dtype=float))
        at = np.arange(self.measured.size) if idx is None else np.asarray(idx, dtype=int)
        out = np.empty((len(Z), at.size))
        for c in np.unique(self.chip_of[at]):
            sel = np.flatnonzero(self.chip_of[at] == c)
            out[:, sel] = self.chips[c].predict_many(self.local(Z, c), self.local_row[at[sel]].tolist())
        return out


@dataclass(frozen=True)
class ChipFit:
    """A fit shared by several chips and its leave-one-chip-out errors (:func:`leave_chip_out`), per row."""

    names: list[str]
    values: np.ndarray  # fitted on the rows of every chip
    chips: list[str]  # the chips, in order
    held_values: np.ndarray  # [C, P] fitted without every row of chip c (NaN rows when not refitted)
    row_ids: list[str]
    row_chips: list[str]
    families: list[str]
    before_error_pct: np.ndarray  # with each chip's template values, as dse validate predicts
    fit_error_pct: np.ndarray  # with the shared fit on every chip (in sample)
    loco_error_pct: np.ndarray  # with the shared fit on the other chips (out of sample for the row's chip)

    ERRORS = ("before_error_pct", "pooled_fit_error_pct", "leave_chip_out_error_pct")

    def table(self) -> pd.DataFrame:
        return pd.DataFrame({"id": self.row_ids, "chip": self.row_chips, "family": self.families,
                             "before_error_pct": self.before_error_pct, "pooled_fit_error_pct": self.fit_error_pct,
                             "leave_chip_out_error_pct": self.loco_error_pct})

    def chip_table(self, fitted: frozenset[str] | set[str] = frozenset()) -> pd.DataFrame:
        """Per chip left out, then all rows: rows and the median / max |time error| with the templates (over the rows
        that set no template coefficient, ``fitted``'s ids left out, as ``dse validate`` counts them: the fitted rows
        flattered the baseline the transfer is compared with), with the shared fit on every chip and with the shared
        fit on the other chips."""
        t = self.table()
        t.loc[t["id"].isin(fitted), "before_error_pct"] = np.nan
        return abs_error_table(t, "chip", list(self.ERRORS))

    def transferred(self, chip: str) -> dict[str, float]:
        """The shared values ``chip`` was predicted with (fitted on the other chips' rows), by name; no sync times."""
        v = self.held_values[self.chips.index(chip)]
        return {n: float(x) for n, x in zip(self.names, v, strict=True) if not n.startswith("sync_us[")}


def leave_chip_out(chips: list[tuple[Hardware, list[RowCase]]], held_out: bool = True) -> ChipFit:
    """One set of fractions and launch overhead fitted to the rows of several chips at once (each row on its own
    chip's template: :class:`_Pool`), then, for each chip in turn, refitted without every row of that chip and its
    rows predicted (leave-one-chip-out): the error of a coefficient carried to a chip it was never fitted on, as an
    architect carries a calibration to a chip not built yet.

    ``dse calibrate`` fits one template to its own rows, so leaving its chip out would leave nothing to fit; this
    is the closest form: a coefficient shared by the chips of one style (``dse.validate.suite.chip_style``). What
    stays each chip's own: its template's peaks, bandwidths, geometry, dtype efficiency ratios, kernel costs, the
    efficiency of a memory level whose name no other chip has, and its host-sync times: a held-out chip's
    isolated rows get them as ``dse validate`` does (the template's ``sync_overhead_us``, or the harness time
    estimated from the chip's other isolated rows, :meth:`_Rows.as_validated`). So a held-out row whose
    measurement set one of those template values (``fitted_into``) is not wholly out of sample. Each refit starts
    from the median of the other chips' template values (:func:`pooled_initial`). Errors are time errors,
    ``t_predicted / t_measured - 1`` (:func:`dse.validate.suite.time_error_pct`)."""
    if not any(cases for _, cases in chips):
        raise ValueError("no measurement rows for any chip")
    pool = _Pool([_Rows(hw, cases) for hw, cases in chips if cases])
    n_chips = len(pool.chips)
    all_idx = list(range(pool.measured.size))
    is_time = np.array([c.metric == "time_s" for r in pool.chips for c in r.cases])
    z = fit_rows(pool, all_idx, pooled_initial(pool.template_values, list(range(n_chips))))
    before = np.concatenate([r.as_validated(x0) for r, x0 in zip(pool.chips, pool.x0, strict=True)])
    loco = np.full(pool.measured.size, np.nan)
    held = np.full((n_chips, len(pool.names)), np.nan)
    if held_out and n_chips > 1:
        for c, r in enumerate(pool.chips):
            others = [k for k in range(n_chips) if k != c]
            held[c] = fit_rows(pool, np.flatnonzero(pool.chip_of != c).tolist(),
                               pooled_initial(pool.template_values, others))
            loco[pool.chip_of == c] = r.as_validated(pool.local(held[c], c)[0])
    return ChipFit(pool.names, z, [r.hw.name for r in pool.chips], held,
                   [c.id for r in pool.chips for c in r.cases], [r.hw.name for r in pool.chips for _ in r.cases],
                   [family_of(c.workload) for r in pool.chips for c in r.cases],
                   time_error_pct(before, pool.measured, is_time), time_error_pct(pool.predict(z), pool.measured, is_time),
                   time_error_pct(loco, pool.measured, is_time))


def template_with(hw: Hardware, names: list[str], values: np.ndarray, note: str = "") -> Hardware:
    """``hw`` with the parameter vector ``values`` (:func:`parameter_names` ``names``) written into its fields, at
    the precision a calibrated template keeps (fractions to 4 decimals, overheads to 3): the one rule by which
    the fit predicts (:class:`_Rows` builds its designs from it, so the tile model sees the same efficiencies as
    the roofline) and :func:`calibrated_template` writes. ``note`` is appended to every changed block's source."""
    data = hw.model_dump(mode="python", exclude_none=True)
    v = dict(zip(names, values, strict=True))
    data["compute"]["matrix"]["efficiency"] = written_fraction(v["matrix_eff"])
    rescale_dtype_efficiency(data["compute"]["matrix"], hw.compute.matrix)
    data["compute"]["vector"]["efficiency"] = written_fraction(v["vector_eff"])
    data["compute"]["launch_overhead_us"] = round(float(v["overhead_us"]), 3)
    if "sync_overhead_us" in v:  # one timing harness: its host-sync time is the template's
        data["compute"]["sync_overhead_us"] = round(float(v["sync_overhead_us"]), 3)
    for level in data["memory"]:
        level["efficiency"] = written_fraction(v[f"{level['name']}_eff"])
    if note:
        for part in (data["compute"], data["compute"]["matrix"], data["compute"]["vector"], *data["memory"]):
            part["source"] += note
    return Hardware.model_validate(data)


def written_values(hw: Hardware, names: list[str], x: np.ndarray) -> np.ndarray:
    """``x`` at the precision :func:`template_with` writes (what a calibrated template holds); per-harness sync
    times, not written, keep their value."""
    t = template_with(hw, names, x)
    c = t.compute
    out = np.array(x, dtype=float)
    at = {n: i for i, n in enumerate(names)}
    out[at["matrix_eff"]], out[at["vector_eff"]] = c.matrix.efficiency, c.vector.efficiency
    out[at["overhead_us"]] = c.launch_overhead_us
    for m in t.memory:
        out[at[f"{m.name}_eff"]] = m.efficiency
    if "sync_overhead_us" in at:
        out[at["sync_overhead_us"]] = c.sync_overhead_us
    return out


def calibrated_template(hw: Hardware, fit: Fit) -> Hardware:
    """``hw`` with the fitted values (:func:`template_with`), named ``NAME-calibrated``, each block's source naming
    the fit and its rows. Validating with it (``dse validate --template NAME=FILE``) reproduces ``fit.fit_error_pct``
    row for row: the fit's errors are the written template's, with each isolated row's harness time estimated
    as dse validate estimates it when several harnesses share the template."""
    note = f"; calibrated by dse calibrate on rows {', '.join(fit.row_ids)} (validation/measurements.csv)"
    v = dict(zip(fit.names, fit.values, strict=True))
    if "sync_overhead_us" not in v:  # several harnesses: each belongs to its harness, not to the chip
        note += "; host-sync time per timing harness (not written: dse validate estimates it per harness): " + ", ".join(
            f"{k[len('sync_us['):-1]} {float(val):.1f} us" for k, val in v.items() if k.startswith("sync_us["))
    out = template_with(hw, fit.names, np.asarray(fit.values), note)
    return out.model_copy(update={"name": f"{hw.name}-calibrated",
                                  "calibrated_on": sorted({*hw.calibrated_on, *fit.row_ids})})
