"""Family-clustered percentile bootstrap intervals of accuracy, accuracy gaps, Invariance@k and
Consistency@k (the choices are documented in :mod:`tasks.analysis.stats`).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import polars as pl

POOLED = "(all)"

# Drawn class counts per batch (resamples × classes): bounds the memory of one bootstrap however
# many classes an estimate has.
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


def family_classes(per_family: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct per-family vectors (one row per class, one column per array of ``per_family``,
    in lexicographic order) and how many families each holds."""
    stacked = np.column_stack(per_family)
    return merged_classes(stacked, np.ones(len(stacked), dtype=np.int64))


def merged_classes(values: np.ndarray, families: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``values`` (each a vector of counts standing for ``families`` families) merged into
    classes: the distinct vectors in lexicographic order, and the families of each. The order is
    the one the draws of :func:`class_bootstrap` follow, so one set of families gives one interval
    however its rows were grouped before."""
    unique, inverse = np.unique(values, axis=0, return_inverse=True)
    counts = np.bincount(inverse.ravel(), weights=families, minlength=len(unique))
    return unique, counts.astype(np.int64)


def family_bootstrap(statistic: Callable[..., np.ndarray], per_family: Sequence[np.ndarray], resamples: int,
                     rng: np.random.Generator, level: float) -> tuple[float | None, float | None, int]:
    """The percentile interval of ``statistic`` over ``resamples`` resamples of families, and how
    many resamples it was defined in.

    ``per_family`` are 1-D arrays of counts with one entry per family (numerators,
    denominators); ``statistic(*arrays, axis=-1)`` is vectorized, a function of the arrays' sums
    along ``axis``, and NaN where undefined. Each resample draws as many families as there are,
    with replacement, the same draw for every array, so a statistic of several arrays (a gap) is
    recomputed on one draw. The draw is made by class (:func:`class_bootstrap`).
    """
    values, counts = family_classes(per_family)
    return class_bootstrap(statistic, values, counts, resamples, rng, level)


def class_bootstrap(statistic: Callable[..., np.ndarray], values: np.ndarray, counts: np.ndarray, resamples: int,
                    rng: np.random.Generator, level: float) -> tuple[float | None, float | None, int]:
    """:func:`family_bootstrap` of the families summarised as classes: ``values`` (classes ×
    arrays) the distinct per-family vectors in lexicographic order, ``counts`` the families of each.

    Families with equal vectors are interchangeable in a statistic of sums, so drawing n families
    with replacement is, in distribution, exactly drawing how many land in each class from
    Multinomial(n, counts / n): O(classes) per resample instead of O(n). The distribution of the
    statistic is the one of ``scipy.stats.bootstrap(..., paired=True)``; the draws are not its.
    """
    from scipy.stats import quantile

    n = int(counts.sum())
    if n < 2:  # one family resamples to itself every time
        value = float(statistic(*(counts * values[:, j] for j in range(values.shape[1])), axis=-1))
        return (None, None, 0) if np.isnan(value) else (value, value, resamples)
    distribution = _distribution(statistic, values, counts, resamples, rng)
    valid = int(np.count_nonzero(~np.isnan(distribution)))
    if valid == 0:
        return None, None, 0
    # the percentile interval (linear interpolation) of the defined resamples: the undefined
    # ones are left out, as documented
    tail = (1.0 - level) / 2
    lo, hi = quantile(distribution, [tail, 1.0 - tail], nan_policy="omit" if valid < distribution.size else "propagate")
    return float(lo), float(hi), valid


def _distribution(statistic: Callable[..., np.ndarray], values: np.ndarray, counts: np.ndarray, resamples: int,
                  rng: np.random.Generator) -> np.ndarray:
    """``statistic`` on each of ``resamples`` resamples: per resample the families drawn in each
    class (``rng.multinomial``, batch after batch), and the arrays' sums over the draw, the drawn
    counts times the class values. The per-family values are whole counts: every product and
    partial sum is a whole number below 2**53, so the sums are exact in any order."""
    n = int(counts.sum())
    pvals = counts / n
    batch = max(1, _BATCH_CELLS // len(counts))
    parts = []
    for start in range(0, resamples, batch):
        sums = rng.multinomial(n, pvals, size=min(batch, resamples - start)) @ values
        parts.append(statistic(*(sums[:, j:j + 1] for j in range(values.shape[1])), axis=-1))
    return np.concatenate(parts)


COUNTS = ("n_scored", "n_correct", "n_wrong", "n_unparsable", "n_truncated", "n_error")


def summed_counts(frame: pl.DataFrame) -> dict[str, int]:
    """The outcome counts of the rows of ``frame`` summed: each row holds the counts of some trials
    (the SQL macro ``status_counts``, sql/macros/status_counts.sql, where the rule is stated)."""
    return {name: int(frame[name].sum()) for name in COUNTS}


def groups(frame: pl.DataFrame, keys: list[str]) -> Iterable[tuple[tuple, pl.DataFrame]]:
    """(key, rows) per distinct ``keys``, in key order with missing values last."""
    parts = frame.partition_by(keys, as_dict=True, maintain_order=True)
    for key in frame.select(keys).unique().sort(keys, nulls_last=True).iter_rows():
        yield key, parts[key]


def _classes(rows: pl.DataFrame, columns: Sequence[str], drawn: pl.Expr) -> tuple[np.ndarray, np.ndarray]:
    """The classes of the families of ``rows`` (rows of a ``*_classes`` SQL macro: a class's values
    in ``columns``, its families in ``n_families``) that satisfy ``drawn``, merged and ordered as
    :func:`family_classes` orders the per-family vectors, so the draws are those of
    :func:`family_bootstrap` over the per-family arrays."""
    rows = rows.filter(drawn)
    values = rows.select(columns).to_numpy().astype(float).reshape(rows.height, len(columns))
    return merged_classes(values, rows["n_families"].to_numpy())


def family_cells(classes: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``family_cell_classes`` one per class (``class``, its number) and cell (variant
    and bin) its families have trials in, with their correct and scored trials there."""
    return classes.with_row_index("class").explode("cells").unnest("cells")


def accuracy_intervals(totals: pl.DataFrame, cells: pl.DataFrame, resamples: int, seed: int,
                       level: float) -> list[dict[str, Any]]:
    """Bootstrap rows (metric ``accuracy``) per (model, suite, task, variant, prompt style, bin):
    ``totals`` the cells' outcome counts (``cell_outcome_counts``), ``cells`` the classes of
    families (:func:`family_cells`); the families with a scored trial in the cell are resampled."""
    rows = []
    keys = ["model", "suite", "task", "variant", "prompt_style", "bin"]
    by_cell = cells.partition_by(keys, as_dict=True)
    for key, cell in groups(totals, keys):
        row = dict(zip(keys, key), metric="accuracy", bin_lo=int(cell["bin_lo"].min()), **summed_counts(cell))
        values, counts = _classes(by_cell.get(key, cells.clear()), ("c_correct", "c_scored"), pl.col("c_scored") > 0)
        row["n_families"] = int(counts.sum())
        row["n_units"] = row["n_scored"]
        if row["n_scored"]:
            row["estimate"] = row["n_correct"] / row["n_scored"]
            row["ci_lo"], row["ci_hi"], row["n_valid_resamples"] = class_bootstrap(
                ratio, values, counts, resamples, estimate_rng(seed, ("accuracy", *key)), level)
        rows.append(row)
    return rows


def gap_intervals(totals: pl.DataFrame, cells: pl.DataFrame, variant_order: Sequence[str], resamples: int,
                  seed: int, level: float) -> list[dict[str, Any]]:
    """Bootstrap rows (metric ``gap``) for each pair of variants of a (model, suite, task, prompt
    style), from the cells' totals and the classes of families as :func:`accuracy_intervals`; the
    families with a scored trial on either variant are resampled.

    The gap is accuracy(variant) − accuracy(variant_b), all bins together; the pair is oriented
    by variant order. Each resample draws families once and recomputes both accuracies on it.
    """
    rows = []
    keys = ["model", "suite", "task", "prompt_style"]
    # each class's correct and scored trials per variant, every bin
    per_variant = cells.group_by([*keys, "class", "variant"]).agg(
        pl.col("c_correct", "c_scored").sum(), pl.col("n_families").first()).partition_by(keys, as_dict=True)
    for key, group in groups(totals, keys):
        variants = sort_variants(group["variant"].unique(), variant_order)
        for a, b in itertools.combinations(variants, 2):
            values, counts = _classes(_pair(per_variant.get(key), a, b), _PAIR,
                                      pl.col("c_scored_a") + pl.col("c_scored_b") > 0)
            row = dict(zip(keys, key), metric="gap", variant=a, variant_b=b, n_families=int(counts.sum()),
                       **summed_counts(group.filter(pl.col("variant").is_in([a, b]))))
            row["n_units"] = row["n_scored"]
            num_a, den_a, num_b, den_b = counts @ values
            if den_a and den_b:
                row["estimate_a"] = num_a / den_a
                row["estimate_b"] = num_b / den_b
                row["estimate"] = row["estimate_a"] - row["estimate_b"]
                row["ci_lo"], row["ci_hi"], row["n_valid_resamples"] = class_bootstrap(
                    gap, values, counts, resamples, estimate_rng(seed, ("gap", *key, a, b)), level)
            rows.append(row)
    return rows


_PAIR = ("c_correct_a", "c_scored_a", "c_correct_b", "c_scored_b")


def _pair(per_variant: pl.DataFrame | None, a: str, b: str) -> pl.DataFrame:
    """Per class with trials on variant ``a`` or ``b``: its families' counts on each (0 where none)."""
    if per_variant is None:
        return pl.DataFrame(schema={**{c: pl.Int64 for c in _PAIR}, "n_families": pl.Int64})
    side = {v: per_variant.filter(pl.col("variant") == v).select(
        "class", "n_families", pl.col("c_correct").alias(f"c_correct_{s}"), pl.col("c_scored").alias(f"c_scored_{s}"))
        for v, s in ((a, "a"), (b, "b"))}
    joined = side[a].join(side[b], on="class", how="full", coalesce=True)
    return joined.select(pl.col(_PAIR).fill_null(0), pl.coalesce("n_families", "n_families_right").alias("n_families"))


_UNITS = ("c_invariant", "c_consistent", "c_complete")


def invariance_intervals(classes: pl.DataFrame, resamples: int, seed: int, level: float) -> list[dict[str, Any]]:
    """Bootstrap rows (metrics ``invariance`` and ``consistency``) per group of family units.

    ``classes`` are rows of ``family_unit_classes()`` (families by their invariant, consistent and
    complete units) with a hashable ``variants_key``. Groups are those of the ``invariance`` view,
    and each suite's groups pooled over tasks sharing a variant list (task and category
    ``(all)``: the rows ``pooled``, whose families' units are summed over the tasks).
    """
    rows = []
    for pooled in (False, True):
        frame = classes.filter(pl.col("pooled") == pooled)
        frame = frame.with_columns(task=pl.lit(POOLED), category=pl.lit(POOLED)) if pooled else frame
        keys = ["model", "suite", "task", "category", "prompt_style", "variants_key"]
        for key, group in groups(frame, keys):
            # classes of (invariant, consistent, complete): both metrics drawn from the group's
            # stream over the same classes, so the same draws, as one resampling
            values, counts = _classes(group, _UNITS, pl.col("c_complete") > 0)
            base = dict(zip(keys[:-1], key[:-1]), variant=key[-1], k=int(group["k"][0]),
                        n_units=int(group["n_complete"].sum()), n_excluded=int(group["n_excluded"].sum()),
                        n_families=int(counts.sum()), **summed_counts(group))
            if not counts.sum():
                rows += [dict(base, metric=m) for m in ("invariance", "consistency")]
                continue
            for metric, j in (("invariance", 0), ("consistency", 1)):
                lo, hi, valid = class_bootstrap(functools.partial(_unit_ratio, j), values, counts, resamples,
                                                estimate_rng(seed, ("invariance", *key)), level)
                rows.append(dict(base, metric=metric, estimate=int(group[("n_invariant", "n_consistent")[j]].sum())
                                 / base["n_units"], ci_lo=lo, ci_hi=hi, n_valid_resamples=valid))
    return rows


def _unit_ratio(j: int, *sums: np.ndarray, axis: int = -1) -> np.ndarray:
    """The ratio of array ``j`` of the invariant and consistent units to the complete units."""
    return ratio(sums[j], sums[-1], axis)


def sort_variants(variants: Iterable[str], variant_order: Sequence[str]) -> list[str]:
    """Variants in the SQL ``variant_rank`` order: the conventional ones first, then by name."""
    order = {v: i for i, v in enumerate(variant_order)}
    return sorted(variants, key=lambda v: (order.get(v, len(order)), v))
