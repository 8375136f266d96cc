"""Family-clustered percentile bootstrap intervals of accuracy, accuracy gaps, Invariance@k and
Consistency@k (the choices are documented in :mod:`tasks.analysis.stats`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import warnings
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import polars as pl

POOLED = "(all)"

# Resampled index cells per batch (resamples × families): bounds the memory of one bootstrap
# (a few arrays of this many float64) however many families an estimate has.
_BATCH_CELLS = 1 << 20


def estimate_rng(seed: int, key: Sequence[Any]) -> np.random.Generator:
    """A random stream for one estimate: a function of ``seed`` and the estimate's key only."""
    # A missing key part hashes as "nan", as it always has, so stored intervals keep their stream.
    digest = hashlib.sha256(json.dumps(["nan" if k is None else str(k) for k in key]).encode("utf-8")).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "big")])


def ratio(numerators: np.ndarray, denominators: np.ndarray, axis: int = -1) -> np.ndarray:
    """``sum(numerators) / sum(denominators)`` along ``axis``; NaN where the denominators sum to 0
    (no scored trial drawn: the estimate is undefined)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sum(numerators, axis=axis) / np.sum(denominators, axis=axis)


def gap(numerators_a: np.ndarray, denominators_a: np.ndarray, numerators_b: np.ndarray,
        denominators_b: np.ndarray, axis: int = -1) -> np.ndarray:
    """``ratio(a) − ratio(b)``; NaN where either is undefined."""
    return ratio(numerators_a, denominators_a, axis) - ratio(numerators_b, denominators_b, axis)


def family_bootstrap(statistic: Callable[..., np.ndarray], per_family: Sequence[np.ndarray], resamples: int,
                     rng: np.random.Generator, level: float) -> tuple[float | None, float | None, int]:
    """The percentile interval of ``statistic`` over ``resamples`` resamples of families, and how
    many resamples it was defined in.

    ``per_family`` are 1-D arrays with one entry per family (numerators, denominators);
    ``statistic(*arrays, axis=-1)`` is vectorized and NaN where undefined. Each resample draws as
    many families as there are, with replacement, and indexes every array with the same draw
    (``scipy.stats.bootstrap`` with ``paired=True``), so a statistic of several arrays (a gap) is
    recomputed on one draw.
    """
    from scipy.stats import DegenerateDataWarning, bootstrap, quantile

    n = per_family[0].shape[0]
    if n < 2:  # scipy wants two observations; one family resamples to itself every time
        value = float(statistic(*per_family, axis=-1))
        return (None, None, 0) if np.isnan(value) else (value, value, resamples)
    with warnings.catch_warnings():
        # With undefined resamples scipy's interval is NaN (and it warns so); the interval is then
        # taken below from the defined part of its bootstrap distribution.
        warnings.simplefilter("ignore", DegenerateDataWarning)
        result = bootstrap(per_family, statistic, n_resamples=resamples, batch=max(1, _BATCH_CELLS // n),
                           vectorized=True, paired=True, confidence_level=level, method="percentile", rng=rng)
    distribution = result.bootstrap_distribution
    valid = int(np.count_nonzero(~np.isnan(distribution)))
    if valid == 0:
        return None, None, 0
    if valid == distribution.size:
        return float(result.confidence_interval.low), float(result.confidence_interval.high), valid
    # scipy's quantile propagates NaN: the undefined resamples are left out, as documented, and
    # the same percentile interval (linear interpolation) is taken over the defined ones.
    tail = (1.0 - level) / 2
    lo, hi = quantile(distribution, [tail, 1.0 - tail], nan_policy="omit")
    return float(lo), float(hi), valid


def status_counts(frame: pl.DataFrame) -> dict[str, int]:
    """The outcome counts of the trials of ``frame`` (its ``status`` column) for the statistics,
    which group trials in Python: the counts of the SQL macro ``status_counts``
    (sql/macros/status_counts.sql, where the rule is stated)."""
    status = frame["status"]
    return {
        "n_scored": int((status != "error").sum()), "n_correct": int((status == "correct").sum()),
        "n_wrong": int((status == "wrong").sum()), "n_unparsable": int((status == "unparsable").sum()),
        "n_truncated": int((status == "truncated").sum()), "n_error": int((status == "error").sum()),
    }


def groups(frame: pl.DataFrame, keys: list[str]) -> Iterable[tuple[tuple, pl.DataFrame]]:
    """(key, rows) per distinct ``keys``, in key order with missing values last."""
    parts = frame.partition_by(keys, as_dict=True, maintain_order=True)
    for key in frame.select(keys).unique().sort(keys, nulls_last=True).iter_rows():
        yield key, parts[key]


def _per_family(frame: pl.DataFrame, variants: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Correct and scored counts per family (rows, by family id) and variant (columns), families
    with a score. The fixed row order makes a seed give the same family draws."""
    columns = []
    for j, variant in enumerate(variants):
        in_variant = pl.col("variant") == variant
        columns += [(in_variant & (pl.col("status") == "correct")).sum().alias(f"num{j}"),
                    in_variant.sum().alias(f"den{j}")]
    counts = frame.filter(pl.col("status") != "error").group_by("family_id").agg(columns).sort("family_id")
    return (counts.select(f"num{j}" for j in range(len(variants))).to_numpy().astype(float),
            counts.select(f"den{j}" for j in range(len(variants))).to_numpy().astype(float))


def accuracy_intervals(trials: pl.DataFrame, resamples: int, seed: int, level: float) -> list[dict[str, Any]]:
    """Bootstrap rows (metric ``accuracy``) per (model, suite, task, variant, prompt style, bin)."""
    rows = []
    keys = ["model", "suite", "task", "variant", "prompt_style", "bin"]
    for key, cell in groups(trials, keys):
        counts = status_counts(cell)
        row = dict(zip(keys, key), metric="accuracy", bin_lo=int(cell["bin_lo"].min()), **counts)
        num, den = _per_family(cell, [key[3]])
        row["n_families"] = int((den[:, 0] > 0).sum())
        row["n_units"] = counts["n_scored"]
        if counts["n_scored"]:
            row["estimate"] = counts["n_correct"] / counts["n_scored"]
            keep = den[:, 0] > 0
            row["ci_lo"], row["ci_hi"], row["n_valid_resamples"] = family_bootstrap(
                ratio, [num[keep, 0], den[keep, 0]], resamples, estimate_rng(seed, ("accuracy", *key)), level)
        rows.append(row)
    return rows


def gap_intervals(trials: pl.DataFrame, variant_order: Sequence[str], resamples: int, seed: int,
                  level: float) -> list[dict[str, Any]]:
    """Bootstrap rows (metric ``gap``) for each pair of variants of a (model, suite, task, prompt style).

    The gap is accuracy(variant) − accuracy(variant_b), all bins together; the pair is oriented
    by variant order. Each resample draws families once and recomputes both accuracies on it.
    """
    rows = []
    keys = ["model", "suite", "task", "prompt_style"]
    for key, group in groups(trials, keys):
        variants = sort_variants(group["variant"].unique(), variant_order)
        for a, b in itertools.combinations(variants, 2):
            pair = group.filter(pl.col("variant").is_in([a, b]))
            num, den = _per_family(pair, [a, b])
            keep = den.sum(axis=1) > 0
            num, den = num[keep], den[keep]
            row = dict(zip(keys, key), metric="gap", variant=a, variant_b=b, n_families=int(keep.sum()),
                       **status_counts(pair))
            row["n_units"] = row["n_scored"]
            if den[:, 0].sum() and den[:, 1].sum():
                row["estimate_a"] = num[:, 0].sum() / den[:, 0].sum()
                row["estimate_b"] = num[:, 1].sum() / den[:, 1].sum()
                row["estimate"] = row["estimate_a"] - row["estimate_b"]
                row["ci_lo"], row["ci_hi"], row["n_valid_resamples"] = family_bootstrap(
                    gap, [num[:, 0], den[:, 0], num[:, 1], den[:, 1]], resamples,
                    estimate_rng(seed, ("gap", *key, a, b)), level)
            rows.append(row)
    return rows


def invariance_intervals(units: pl.DataFrame, resamples: int, seed: int, level: float) -> list[dict[str, Any]]:
    """Bootstrap rows (metrics ``invariance`` and ``consistency``) per group of family units.

    ``units`` are rows of ``family_units_over()``. Groups are those of the ``invariance`` view,
    and each suite's groups pooled over tasks sharing a variant list (task and category ``(all)``).
    """
    rows = []
    for pooled in (False, True):
        frame = units.with_columns(task=pl.lit(POOLED), category=pl.lit(POOLED)) if pooled else units
        keys = ["model", "suite", "task", "category", "prompt_style", "variants_key"]
        for key, group in groups(frame, keys):
            complete = group.filter(pl.col("complete"))
            base = dict(zip(keys[:-1], key[:-1]), variant=key[-1], k=int(group["k"][0]),
                        n_units=complete.height, n_excluded=int((~group["complete"]).sum()),
                        n_families=int(complete["family_id"].n_unique()),
                        n_scored=int(complete["n_scored"].sum()), n_correct=int(complete["n_correct"].sum()),
                        n_wrong=int(complete["n_wrong"].sum()), n_unparsable=int(complete["n_unparsable"].sum()),
                        n_truncated=int(complete["n_truncated"].sum()),
                        n_error=int(group["n_error"].sum()))
            if complete.is_empty():
                rows += [dict(base, metric=m) for m in ("invariance", "consistency")]
                continue
            per_family = complete.group_by("family_id").agg(
                units=pl.len(), invariant=pl.col("invariant").sum(), consistent=pl.col("consistent").sum()
            ).sort("family_id")  # a fixed family order, so a seed gives the same draws
            den = per_family["units"].to_numpy().astype(float)
            for metric, column in (("invariance", "invariant"), ("consistency", "consistent")):
                num = per_family[column].to_numpy().astype(float)
                # both metrics share the group's stream: the same family draws, as one resampling
                lo, hi, valid = family_bootstrap(ratio, [num, den], resamples,
                                                 estimate_rng(seed, ("invariance", *key)), level)
                rows.append(dict(base, metric=metric, estimate=num.sum() / den.sum(),
                                 ci_lo=lo, ci_hi=hi, n_valid_resamples=valid))
    return rows


def sort_variants(variants: Iterable[str], variant_order: Sequence[str]) -> list[str]:
    """Variants in the SQL ``variant_rank`` order: the conventional ones first, then by name."""
    order = {v: i for i, v in enumerate(variant_order)}
    return sorted(variants, key=lambda v: (order.get(v, len(order)), v))
