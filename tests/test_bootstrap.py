"""The family bootstrap (tasks/analysis/bootstrap.py) as a function: drawn by class, it has the
distribution of drawing families with replacement (exactly, on a case small enough to enumerate),
scipy's interval within Monte Carlo error, and it resamples families, not trials."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tasks.analysis import bootstrap


def test_gap_interval_resamples_both_accuracies_together():
    """Families correct on both variants or on neither: the gap is 0 in every resample, so its
    interval is [0, 0], while each accuracy alone varies widely."""
    rng = np.random.default_rng(0)
    both = (rng.random(50) < 0.5).astype(float)
    ones = np.ones(50)
    assert bootstrap.family_bootstrap(bootstrap.gap, [both, ones, both, ones], 500, np.random.default_rng(1), 0.95) == (
        0.0, 0.0, 500)
    lo, hi, _ = bootstrap.family_bootstrap(bootstrap.ratio, [both, ones], 500, np.random.default_rng(1), 0.95)
    assert hi - lo > 0.15


def test_bootstrap_resamples_families_not_trials():
    """Ten identical trials per family: the clustered interval is as wide as one trial per family,
    wider than a naive trial-level bootstrap would make it."""
    family_outcome = (np.arange(20) < 10).astype(float)

    def width(num: np.ndarray, den: np.ndarray) -> float:
        lo, hi, _ = bootstrap.family_bootstrap(bootstrap.ratio, [num, den], 2000, np.random.default_rng(0), 0.95)
        return hi - lo

    clustered = width(family_outcome * 10, np.full(20, 10.0))
    assert clustered == pytest.approx(width(family_outcome, np.ones(20)))
    assert clustered > 2 * width(np.repeat(family_outcome, 10), np.ones(200))


# Five families, two of them equal (four classes), one with no scored trial: all 5^5 draws of five
# families enumerable. Arrays: numerators and denominators of variant a, then of variant b.
SMALL = [np.array(a, dtype=float) for a in ([1, 1, 0, 0, 2], [1, 1, 2, 0, 3], [0, 0, 1, 0, 1], [1, 1, 1, 0, 2])]


def _exact_distribution(statistic, per_family) -> dict[float, float]:
    """P(statistic = v) over every one of the n^n equally likely draws of n families with
    replacement; an undefined statistic (NaN) is keyed "nan"."""
    n = len(per_family[0])
    draws = np.array(list(itertools.product(range(n), repeat=n)))
    values = statistic(*(a[draws] for a in per_family), axis=-1)
    exact: dict = {}
    for v in values:
        k = "nan" if np.isnan(v) else round(float(v), 12)
        exact[k] = exact.get(k, 0.0) + 1.0 / len(draws)
    return exact


@pytest.mark.parametrize("statistic, arrays", [(bootstrap.ratio, SMALL[:2]), (bootstrap.gap, SMALL)])
def test_class_bootstrap_draws_the_family_bootstrap_s_distribution(statistic, arrays):
    """Drawing per class (a multinomial over the distinct family vectors) gives the distribution of
    drawing families with replacement: against the exact distribution over all 5^5 draws, a
    chi-square test and the largest gap between the two CDFs (about 0.003 expected at 40,000
    resamples; DKW puts P(> 0.012) below 1e-5)."""
    from scipy.stats import chisquare

    exact = _exact_distribution(statistic, arrays)
    values, counts = bootstrap.family_classes(arrays)
    assert len(counts) < len(arrays[0])  # families were merged into classes
    resamples = 40_000
    drawn = bootstrap._distribution(statistic, values, counts, resamples, np.random.default_rng(7))
    seen: dict = {}
    for v in drawn:
        k = "nan" if np.isnan(v) else round(float(v), 12)
        seen[k] = seen.get(k, 0) + 1
    assert set(seen) <= set(exact)
    keys = sorted(exact, key=lambda k: -np.inf if k == "nan" else k)
    p = np.array([exact[k] for k in keys])
    f = np.array([seen.get(k, 0) for k in keys], dtype=float)
    assert np.max(np.abs(np.cumsum(f) / resamples - np.cumsum(p))) < 0.012
    big = p * resamples >= 5  # chi-square over the cells expected 5 times or more, the rest pooled
    observed = np.append(f[big], f[~big].sum())
    expected = np.append(p[big], p[~big].sum()) * resamples
    assert chisquare(observed[expected > 0], expected[expected > 0]).pvalue > 1e-4


@pytest.mark.parametrize("n, resamples", [(7, 20_000), (300, 20_000)])
def test_family_bootstrap_interval_is_scipy_s_within_monte_carlo_error(n, resamples):
    """The interval and the defined resamples of scipy.stats.bootstrap (paired, percentile) on
    the same families, within Monte Carlo error: each endpoint within 0.1 standard deviations of
    the bootstrap distribution (the endpoints' own error is about 0.03 of it at 20,000
    resamples), the defined share within 0.01 (with undefined resamples when n = 7)."""
    from scipy.stats import bootstrap as scipy_bootstrap

    rng = np.random.default_rng(n)
    den = rng.integers(0, 3, n).astype(float)
    den[: n // 2] = 0.0 if n < 10 else den[: n // 2]  # few families scored: some resamples undefined
    num = np.minimum(den, rng.integers(0, 3, n)).astype(float)
    lo, hi, valid = bootstrap.family_bootstrap(bootstrap.ratio, [num, den], resamples, np.random.default_rng(3), 0.95)
    theirs = scipy_bootstrap([num, den], bootstrap.ratio, n_resamples=resamples, vectorized=True, paired=True,
                             confidence_level=0.95, method="percentile", rng=np.random.default_rng(4))
    distribution = theirs.bootstrap_distribution
    defined = distribution[~np.isnan(distribution)]
    tail = (1 - 0.95) / 2
    their_lo, their_hi = np.quantile(defined, [tail, 1 - tail])
    sd = float(np.std(defined))
    assert abs(lo - their_lo) < 0.1 * sd and abs(hi - their_hi) < 0.1 * sd
    assert abs(valid - defined.size) / resamples < 0.01
    assert (valid < resamples) == (n < 10)


def test_family_bootstrap_same_seed_same_interval_and_n_lt_2():
    rng = np.random.default_rng(0)
    num, den = rng.integers(0, 21, 50).astype(float), np.full(50, 20.0)
    first = bootstrap.family_bootstrap(bootstrap.ratio, [num, den], 500, np.random.default_rng(9), 0.95)
    assert first == bootstrap.family_bootstrap(bootstrap.ratio, [num, den], 500, np.random.default_rng(9), 0.95)
    assert first != bootstrap.family_bootstrap(bootstrap.ratio, [num, den], 500, np.random.default_rng(10), 0.95)
    one = [np.array([1.0]), np.array([2.0])]
    assert bootstrap.family_bootstrap(bootstrap.ratio, one, 500, np.random.default_rng(9), 0.95) == (0.5, 0.5, 500)
    assert bootstrap.family_bootstrap(bootstrap.ratio, [np.zeros(1), np.zeros(1)], 500,
                                      np.random.default_rng(9), 0.95) == (None, None, 0)
