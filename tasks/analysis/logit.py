"""Maximum-likelihood logistic regression on grouped binomial counts.

The regressions of :mod:`tasks.analysis.regression` have covariates that trials share (model,
task, variant, the item's surface features), so they are fitted to one row per covariate pattern
with its counts (``successes`` of ``trials``) rather than to one row per trial. Both have the same
log-likelihood up to a constant, so the same estimates, standard errors, tests and pseudo R².

The fit is statsmodels' ``Logit(...).fit(method="newton", maxiter=200)`` written out over the
counts, step for step, so that it reaches the same estimates and makes the same decisions: Newton
steps from zero on the mean negative log-likelihood with a 1e-10 ridge on the Hessian, until no
parameter moves by more than 1e-8; "perfect separation" when after a step every trial's fitted
probability is within 1e-8 of its outcome (``numpy.allclose``); not converged when the iterations
run out; covariance the inverse of the information at the estimate. The null log-likelihood of the
pseudo R² (McFadden's) is that of the intercept-only model, whose estimate is the share of
successes (statsmodels finds it numerically).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_TOL = 1e-8  # statsmodels' Newton tolerance on the parameters
_RIDGE = 1e-10  # statsmodels' ridge on the diagonal of the (mean) Hessian while stepping
_PERFECT = 1e-8  # numpy.allclose's absolute tolerance, statsmodels' perfect-prediction test


@dataclass(frozen=True)
class LogitFit:
    """A fitted logistic regression: estimates, covariance and log-likelihoods."""

    params: np.ndarray
    cov: np.ndarray
    llf: float
    llnull: float
    converged: bool
    perfect: bool  # some step predicted every trial's outcome (perfect separation)

    @property
    def bse(self) -> np.ndarray:
        """Standard errors (NaN where the covariance's diagonal is negative)."""
        with np.errstate(invalid="ignore"):
            return np.sqrt(np.diag(self.cov))

    @property
    def prsquared(self) -> float:
        """McFadden's pseudo R²."""
        return 1.0 - self.llf / self.llnull


def _probabilities(x: np.ndarray, params: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-(x @ params)))


def _loglike(x: np.ndarray, successes: np.ndarray, failures: np.ndarray, params: np.ndarray) -> float:
    """Σ successes·log F(xβ) + failures·log F(−xβ), F the logistic function (statsmodels' form)."""
    xb = x @ params
    with np.errstate(over="ignore", divide="ignore"):
        up, down = np.log(1.0 / (1.0 + np.exp(-xb))), np.log(1.0 / (1.0 + np.exp(xb)))
    return float(np.sum(np.where(successes > 0, successes * up, 0.0)) + np.sum(np.where(failures > 0, failures * down, 0.0)))


def _perfectly_predicted(p: np.ndarray, successes: np.ndarray, trials: np.ndarray) -> bool:
    """Whether every trial's outcome is within _PERFECT of its fitted probability: every pattern
    all successes with p ≥ 1 − tol, or all failures with p ≤ tol."""
    close_to_one = (successes == trials) & (np.abs(p - 1.0) <= _PERFECT)
    close_to_zero = (successes == 0) & (np.abs(p) <= _PERFECT)
    return bool(np.all(close_to_one | close_to_zero))


def fit_grouped_logit(x: np.ndarray, successes: np.ndarray, trials: np.ndarray, maxiter: int = 200) -> LogitFit:
    """Fit ``successes`` of ``trials`` per row of the design ``x`` (first column the intercept).

    Raises ``numpy.linalg.LinAlgError`` when a Newton step or the covariance meets a singular
    matrix, as statsmodels does."""
    successes, trials = successes.astype(float), trials.astype(float)
    nobs = trials.sum()
    new, old, iterations, perfect = np.zeros(x.shape[1]), np.full(x.shape[1], np.inf), 0, False
    while iterations < maxiter and np.any(np.abs(new - old) > _TOL):
        p = _probabilities(x, new)
        hessian = (x.T * (trials * p * (1.0 - p))) @ x / nobs
        hessian[np.diag_indices_from(hessian)] += _RIDGE
        score = -(x.T @ (successes - trials * p)) / nobs
        old, new = new, new - np.linalg.solve(hessian, score)
        perfect = perfect or _perfectly_predicted(_probabilities(x, new), successes, trials)
        iterations += 1
    p = _probabilities(x, new)
    cov = np.linalg.inv((x.T * (trials * p * (1.0 - p))) @ x / nobs) / nobs
    share = successes.sum() / nobs
    llnull = float(nobs * (share * np.log(share) + (1.0 - share) * np.log(1.0 - share)))
    return LogitFit(params=new, cov=cov, llf=_loglike(x, successes, trials - successes, new), llnull=llnull,
                    converged=iterations < maxiter, perfect=perfect)
