-- feature_outcome_counts(...): one row per suite, model, task, variant and surface features (n_tokens, symbol_density, n_numbers), with the outcome counts of its trials.
-- depends_on: scoped_trials

-- What the logistic regressions of correctness (tasks/analysis/regression.py) are fitted to. Their
-- covariates are the model, task, variant and the item's surface features, so trials alike in all
-- of them differ only in their outcome: the likelihood of one row per trial is the binomial
-- likelihood of these counts (n_correct of n_scored), with the same estimates, standard errors and
-- tests, and the fit reads one row per covariate pattern instead of one per trial.
CREATE OR REPLACE MACRO feature_outcome_counts(for_run := NULL) AS TABLE
SELECT suite, model, task, variant, n_tokens, symbol_density, n_numbers, unnest(status_counts(status))
FROM scoped_trials(for_run := for_run)
GROUP BY suite, model, task, variant, n_tokens, symbol_density, n_numbers;
