"""Error per workload family and the error band every prediction carries.

Families group the validation rows by what limits them (``family_of``): single GEMMs, attention,
copies, LLM decode and prefill, CNN and encoder inference, training steps, multi-chip inference and
multi-chip training steps (3D-parallel, e.g. Korthikanti et al. 2022 Table 5) and LLM serving
(prefill + batched decode, ``dse.workloads.serving``). A row
whose measurement set a template coefficient (``fitted_into`` in ``validation/measurements.csv``,
e.g. the best-GEMM row behind a matrix efficiency) is in-sample: it is listed but left out of every
error statistic and band. Errors are compared as time errors ``t_predicted / t_measured - 1`` (a rate
metric such as tokens/s is turned into time first). A family's band is the 10th..90th percentile of
its out-of-sample time errors, or with fewer than :data:`PERCENTILE_ROWS` rows their least..greatest (the 10th and
90th percentiles of a handful of rows leave some of those very rows outside the band); the measured time of a
prediction ``t`` of that family is expected in ``[t / (1 + hi), t / (1 + lo)]``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from dse.hardware.schema import Hardware
from dse.validate.families import family_of, out_of_sample
from dse.workloads.library import Workload

FAMILIES = ("gemm", "attention", "copy", "decode", "prefill", "cnn", "encoder", "training", "multi-chip",
            "multi-chip-training", "serving", "collective")
KEEP_CACHED = 8  #: cached band files kept in the cache folder
MIN_ROWS = 2  #: a family with fewer out-of-sample rows borrows the band of all families
PERCENTILE_ROWS = 10  #: from this many out-of-sample rows a band is their p10..p90, below it their min..max
__all__ = ["FAMILIES", "MIN_ROWS", "Band", "band_for", "bands_from", "family_of", "family_table", "out_of_sample",
           "shipped_bands", "speedup_band", "speedup_bands"]


@dataclass(frozen=True)
class Band:
    """Percentiles of a family's signed time errors (out of sample), in percent."""

    family: str
    p10_pct: float
    p90_pct: float
    rows: int
    borrowed: bool = False  # too few rows of its own: the band of all families

    def interval(self, t: float) -> tuple[float, float]:
        """The truth range for a predicted time ``t``: t / (1 + p90) .. t / (1 + p10)."""
        return t / (1 + self.p90_pct / 100), t / (1 + self.p10_pct / 100)

    def label(self) -> str:
        if self.rows == 0 or not np.isfinite(self.p10_pct):
            return self.family  # no rows to give a band (``band_for``: "no validation rows for this chip")
        src = self.family if self.borrowed and self.family not in FAMILIES else (
            "all families" if self.borrowed else self.family)
        return f"{self.span()} ({src}, {self.rows} rows out of sample)"

    def span(self) -> str:
        """``p10 .. p90`` in whole percent ('-0 %' for -0.3 reads as a sign error: a rounded zero is '0 %')."""
        def pct(v: float) -> str:
            return f"{v:+.0f} %" if round(v) != 0 else "0 %"

        return f"{pct(self.p10_pct)} .. {pct(self.p90_pct)}"


def _error_stats(oos: pd.DataFrame, sel: pd.DataFrame) -> dict[str, float | int]:
    """Rows of ``sel``, how many of them are out of sample (in ``oos``), and the median and max |time error|
    of those (percent; NaN when none)."""
    e = oos.loc[oos.index.intersection(sel.index), "time_error_pct"].to_numpy(dtype=float)
    return {"rows": len(sel), "out_of_sample": e.size,
            "median_abs_time_error_pct": float(np.median(np.abs(e))) if e.size else np.nan,
            "max_abs_time_error_pct": float(np.max(np.abs(e))) if e.size else np.nan,
            "p10_time_error_pct": float(np.percentile(e, 10)) if e.size else np.nan,
            "p90_time_error_pct": float(np.percentile(e, 90)) if e.size else np.nan}


def band_bounds(oos: pd.DataFrame, sel: pd.DataFrame) -> tuple[float, float, int]:
    """(lo, hi, rows) of the band of ``sel``'s out-of-sample rows (in ``oos``): p10..p90 of their signed time errors
    from :data:`PERCENTILE_ROWS` rows, min..max below (a band that holds every row it was built from)."""
    e = oos.loc[oos.index.intersection(sel.index), "time_error_pct"].to_numpy(dtype=float)
    if not e.size:
        return float("nan"), float("nan"), 0
    return *_spread(e), int(e.size)


def _families_in(results: pd.DataFrame) -> list[str]:
    return [f for f in FAMILIES if f in set(results["family"])] + ["all"]


def gpu_rows(results: pd.DataFrame) -> pd.DataFrame:
    """The rows of GPU-style chips (``style`` != ``npu``; every row of results without the column): the families of
    :func:`family_table` and issue 12's bar. NPU rows are reported per chip (:func:`template_table`)."""
    return results[results["style"] != "npu"] if "style" in results.columns else results


def family_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per family over the GPU-style chips' rows (:func:`gpu_rows`): rows (all, out of sample), median and max
    |time error|, p10 and p90 of the signed time error (percent)."""
    results = gpu_rows(results)
    oos = out_of_sample(results)
    return pd.DataFrame([{"family": fam, **_error_stats(oos, results if fam == "all" else
                                                        results[results["family"] == fam])}
                         for fam in _families_in(results)])


def template_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per template (``hardware``) and family, then per template over all its families (``family`` = ``all``):
    rows, out-of-sample rows, median and max |time error|, p10 and p90 of the signed time error (percent): where a
    chip's predictions stand (an NPU chip's families are these)."""
    oos = out_of_sample(results)
    rows = []
    hardware = results["hardware"].astype(str) if "hardware" in results.columns else pd.Series(dtype=str)
    cols = ["hardware", "family", "rows", "out_of_sample", "median_abs_time_error_pct", "max_abs_time_error_pct",
            "p10_time_error_pct", "p90_time_error_pct"]
    for hw in sorted(set(hardware)):
        on = results[hardware == hw]
        for fam in _families_in(on):
            stats = _error_stats(oos, on if fam == "all" else on[on["family"] == fam])
            rows.append({"hardware": hw, "family": fam, **{k: stats[k] for k in cols[2:]}})
    return pd.DataFrame(rows, columns=cols)


def chip_bands(results: pd.DataFrame) -> dict[str, Band]:
    """Bands of each chip's own rows: ``HW/FAMILY`` and ``HW/all`` where a chip has at least :data:`MIN_ROWS`
    out-of-sample rows there, and ``style:npu`` / ``style:gpu`` over every chip of that style (what a chip without
    rows of its own borrows, said in its label)."""
    out: dict[str, Band] = {}
    oos = out_of_sample(results)
    t = template_table(results)
    hardware = results["hardware"].astype(str) if "hardware" in results.columns else pd.Series(dtype=str)
    for _, r in t[t["out_of_sample"] >= MIN_ROWS].iterrows():
        on = results[hardware == r["hardware"]]
        lo, hi, n = band_bounds(oos, on if r["family"] == "all" else on[on["family"] == r["family"]])
        out[f"{r['hardware']}/{r['family']}"] = Band(f"{r['hardware']} {r['family']}", lo, hi, n)
    few = t[(t["out_of_sample"] > 0) & (t["out_of_sample"] < MIN_ROWS)]
    for _, r in few.iterrows():  # rows, but too few for a band: said so, not "no rows" (``band_for``)
        key = f"{r['hardware']}/few" if r["family"] == "all" else f"{r['hardware']}/{r['family']}/few"
        out[key] = Band(f"{r['hardware']}", 0.0, 0.0, int(r["out_of_sample"]))  # a count only
    if "style" in results.columns:
        for style in ("npu", "gpu"):
            sel = results[results["style"] == style]
            for fam in [*FAMILIES, "all"]:
                part = sel if fam == "all" else sel[sel["family"] == fam]
                lo, hi, n = band_bounds(oos, part)
                if n >= MIN_ROWS:
                    chips = ", ".join(sorted(set(oos.loc[oos.index.intersection(part.index), "hardware"].astype(str))))
                    what = f"{style} chips ({chips})" if fam == "all" else f"{style} chips' {fam} rows ({chips})"
                    out[f"style:{style}" + ("" if fam == "all" else f"/{fam}")] = Band(what, lo, hi, n, borrowed=True)
    return out


def bands_from(results: pd.DataFrame) -> dict[str, Band]:
    """A band per GPU family (and ``all``) from suite results with a ``family`` column, and the chips' own bands
    (:func:`chip_bands`)."""
    gpu = gpu_rows(results)
    oos = out_of_sample(gpu)
    everyone = Band("all", *band_bounds(oos, gpu))
    out = {"all": everyone}
    for fam in FAMILIES:
        lo, hi, n = band_bounds(oos, gpu[gpu["family"] == fam])
        if n >= MIN_ROWS:
            out[fam] = Band(fam, lo, hi, n)
        else:
            out[fam] = Band(fam, everyone.p10_pct, everyone.p90_pct, everyone.rows, borrowed=True)
    return out | chip_bands(results) | speedup_bands(results)


def _spread(err: np.ndarray) -> tuple[float, float]:
    """p10..p90 of ``err`` from :data:`PERCENTILE_ROWS` values, min..max below (a band that holds every value it
    was built from)."""
    if err.size >= PERCENTILE_ROWS:
        return float(np.percentile(err, 10)), float(np.percentile(err, 90))
    return float(err.min()), float(err.max())


def speedup_bands(results: pd.DataFrame) -> dict[str, Band]:
    """Bands of the cross-chip speedup errors (``dse.validate.ratios``: predicted / measured speedup - 1 of every pair
    of out-of-sample rows that differ only in the chip, percent): ``speedup`` over all pairs, ``speedup:A|B`` per
    chip pair with :data:`MIN_ROWS` pairs or more (``A`` < ``B`` by name: the speedup of ``B`` over ``A``)."""
    from dse.validate.ratios import chip_pairs

    pairs = chip_pairs(results)
    err = pairs["ratio_error_pct"].to_numpy(dtype=float)
    if not err.size:
        return {}
    out = {"speedup": Band("cross-chip speedups", *_spread(err), int(err.size))}
    for (a, b), g in pairs.groupby(["chip_a", "chip_b"], sort=True):
        e = g["ratio_error_pct"].to_numpy(dtype=float)
        if e.size >= MIN_ROWS:
            out[f"speedup:{a}|{b}"] = Band(f"{a}/{b} speedups", *_spread(e), int(e.size))
    return out


def speedup_band(first: str | Hardware, other: str | Hardware) -> Band | None:
    """The band of the speedup of chip ``other`` over chip ``first`` (percent errors of the predicted speedup; a chip
    by name, or a template, which names a measured chip only when :func:`is_shipped`): the pair's own published pairs
    where :func:`speedup_bands` has them (turned around when ``other`` sorts first: the error of ``1 / s`` is
    ``1 / (1 + e) - 1``), else every pair's, labelled borrowed; None without any pair; a chip against itself: 0 .. 0.
    ``Band.interval(s)`` is then the range the measured speedup ``s`` would be in."""
    first, other = (_measured_name(c) for c in (first, other))
    if first == other:  # the same chip: the speedup is 1 whatever the model's error
        return Band(f"{first} against itself", 0.0, 0.0, 0)
    bands = shipped_bands()
    a, b = sorted((first, other))
    own = bands.get(f"speedup:{a}|{b}")
    if own is not None:
        if (a, b) == (first, other):
            return own
        lo, hi = (100 * (1 / (1 + v / 100) - 1) for v in (own.p90_pct, own.p10_pct))
        return Band(f"{first}/{other} speedups", lo, hi, own.rows)
    every = bands.get("speedup")
    if every is None:
        return None
    return Band(f"no published pairs of {first} and {other}; all {every.rows} pairs", every.p10_pct, every.p90_pct,
                every.rows, borrowed=True)


def _measured_name(chip: str | Hardware) -> str:
    """The name a chip's validation rows carry: a template's name where it is the shipped one, else its name marked
    as never measured (a user's copy keeping a shipped name pairs with no published row)."""
    if not isinstance(chip, Hardware):
        return chip
    return chip.name if is_shipped(chip) else f"{chip.name} (not a shipped template)"


def _inputs_digest() -> str:
    """A hash of everything the shipped bands depend on: the package version, the package source and data
    (``dse/``), the shipped workloads and hardware templates, and the measurements file."""
    from dse._version import __version__
    from dse.units import repo_root
    from dse.validate.suite import default_path

    h = hashlib.blake2b(__version__.encode(), digest_size=16)
    root = repo_root()
    pkg = Path(__file__).resolve().parents[1]
    for base in (pkg, root / "workloads", root / "hw_templates"):
        for f in sorted(base.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix not in (".pyc", ".pyo"):
                h.update(f.relative_to(base).as_posix().encode() + b"\0")
                h.update(f.read_bytes())
    meas = default_path()
    h.update(meas.read_bytes() if meas.is_file() else b"")
    return h.hexdigest()


def cache_dir() -> Path | None:
    """Where computed bands are kept: ``$DSE_CACHE_DIR``, else ``$XDG_CACHE_HOME/dse``, else ``~/.cache/dse``;
    ``None`` (no cache) when ``DSE_CACHE_DIR`` is set to an empty string."""
    env = os.environ.get("DSE_CACHE_DIR")
    if env is not None:
        return Path(env) if env else None
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "dse"


def _read_cached(path: Path) -> dict[str, Band] | None:
    try:
        raw = json.loads(path.read_text())
        return {k: Band(**v) for k, v in raw.items()}
    except (OSError, ValueError, TypeError):
        return None


def _write_cached(path: Path, bands: dict[str, Band]) -> None:
    """Atomically (a temporary file in the same folder, then a rename); a cache that cannot be written is
    silently skipped (the bands are recomputed next time)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump({k: asdict(b) for k, b in bands.items()}, fh)  # floats round-trip exactly (repr)
        os.replace(tmp, path)
        # keep the newest few (several checkouts may share the folder); older inputs are rarely read again
        files = sorted(path.parent.glob("bands-*.json"), key=lambda f: f.stat().st_mtime, reverse=True)
        for old in files[KEEP_CACHED:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass


def compute_shipped_bands() -> dict[str, Band]:
    """Bands from running the shipped validation suite with the shipped templates (~1-2 s)."""
    from dse.validate.suite import load_measurements, run_suite

    return bands_from(run_suite(load_measurements()))


@lru_cache(maxsize=1)
def shipped_bands() -> dict[str, Band]:
    """Bands from the shipped validation suite with the shipped templates: computed once per set of inputs
    (package version, package source and data, workloads, templates, measurements file; see
    :func:`_inputs_digest`) and kept in a small JSON file under :func:`cache_dir`, then once per process."""
    folder = cache_dir()
    if folder is None:
        return compute_shipped_bands()
    path = folder / f"bands-{_inputs_digest()}.json"
    cached = _read_cached(path)
    if cached is not None:
        return cached
    bands = compute_shipped_bands()
    _write_cached(path, bands)
    return bands


#: what a chip without validation rows of its own and of its style carries: no band
NO_ROWS = "no validation rows for this chip"


def band_for(wl: Workload, hardware: Hardware | str | None = None) -> Band:
    """The error band a prediction of ``wl`` on ``hardware`` carries, its own chip's first:

    1. the chip's rows of the workload's family (``HW/FAMILY``);
    2. a chip with rows, none of this family: the rows of the family on every chip of its style, else its own rows
       of other families, labelled as borrowed (a TPU v5e decode took its GEMM and training rows' band as its own);
    3. a chip without rows of its own: its style's chips' band of the family (GPU chips, or NPU chips from
       :data:`PERCENTILE_ROWS` rows), else of every family, labelled as borrowed and naming them; with none, a band
       of NaN labelled :data:`NO_ROWS`. A chip with rows, but fewer than :data:`MIN_ROWS` out of sample, says how
       many instead of :data:`NO_ROWS`.

    Rows measured a shipped template: a template that keeps a shipped name with other numbers (a user's edited copy)
    has no rows of its own (:func:`is_shipped`). Without ``hardware`` the GPU family band (the old behaviour)."""
    bands = shipped_bands()
    fam = family_of(wl)
    if hardware is None:
        return bands[fam]
    hw = hardware if isinstance(hardware, Hardware) else None
    name = hw.name if hw is not None else str(hardware)
    if hw is None and name in _shipped_names():
        hw = _shipped(name)
    style = "npu" if hw is not None and hw.compute.matrix.style == "systolic" else "gpu"
    if hw is not None and not is_shipped(hw):  # a copy of a shipped chip with other numbers was never measured
        why = f"{NO_ROWS} ({name}: not the shipped {name} template)" if name in _shipped_names() else \
            f"{NO_ROWS} ({name})"
        return _borrowed(bands, fam, style, why)
    if f"{name}/{fam}" in bands:
        return bands[f"{name}/{fam}"]
    own = bands.get(f"{name}/all")
    if own is not None:  # rows of its own, none of this family: the style's rows of the family, else its own others
        few_fam = bands.get(f"{name}/{fam}/few")
        why = (f"only {few_fam.rows} {fam} row{'s' * (few_fam.rows != 1)} for this chip ({name}), a band needs "
               f"{MIN_ROWS}" if few_fam is not None else f"no {fam} rows for this chip ({name})")
        sb = _style_band(bands, fam, style)
        if sb is not None:  # the chip's own rows of other families are said beside it: they may disagree
            mine = f", whose {own.rows} rows of other families give {own.span()}"
            return Band(f"{why}{mine}; borrowed from the {sb.family}", sb.p10_pct, sb.p90_pct, sb.rows,
                        borrowed=True)
        return Band(f"{why}; borrowed from its rows of other families", own.p10_pct, own.p90_pct, own.rows,
                    borrowed=True)
    few = bands.get(f"{name}/few")
    why = (f"only {few.rows} validation row{'s' * (few.rows != 1)} for this chip ({name}), a band needs {MIN_ROWS}"
           if few is not None else f"{NO_ROWS} ({name})")
    return _borrowed(bands, fam, style, why)


@lru_cache(maxsize=1)
def _shipped_names() -> frozenset[str]:
    from dse.hardware.templates import list_templates

    return frozenset(list_templates())


def _shipped(name: str) -> Hardware:
    from dse.hardware.templates import _load_shipped

    return _load_shipped(name)


def is_shipped(hw: Hardware) -> bool:
    """Whether ``hw`` is a shipped template as shipped (its name and every field): the only templates the validation
    rows measured. A user's copy that keeps the name and changes a number is not."""
    return hw.name in _shipped_names() and _shipped(hw.name) == hw


def _style_band(bands: dict[str, Band], fam: str, style: str) -> Band | None:
    """What a chip without rows of this family borrows from its style's chips (:func:`chip_bands`' ``style:``
    bands): their rows of the family where there are enough of them, else their rows of every family; None without
    either. Enough is :data:`MIN_ROWS` for the GPU chips (one architecture style), :data:`PERCENTILE_ROWS` for the
    NPU chips (the NPU decode rows are 4, of two Tenstorrent chips: too few to stand for every NPU's decode)."""
    b = bands.get(f"style:{style}/{fam}")
    need = PERCENTILE_ROWS if style == "npu" else MIN_ROWS
    return b if b is not None and b.rows >= need else bands.get(f"style:{style}")


def _borrowed(bands: dict[str, Band], fam: str, style: str, why: str) -> Band:
    """The band of a chip without rows of its own (``why`` says so, and that it is borrowed: never shown as the
    chip's own): its style's (:func:`_style_band`); with none, NaN."""
    b = _style_band(bands, fam, style)
    if b is not None:
        return Band(f"{why}; borrowed from the {b.family}", b.p10_pct, b.p90_pct, b.rows, borrowed=True)
    return Band(why, float("nan"), float("nan"), 0, borrowed=True)
