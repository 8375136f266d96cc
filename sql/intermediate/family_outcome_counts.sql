-- family_outcome_counts(...): one row per model, suite, task, variant, prompt style, bin and family, with the outcome counts of its trials.
-- depends_on: scoped_trials

-- What the family-clustered bootstrap of accuracy and of accuracy gaps resamples
-- (tasks/analysis/bootstrap.py): the family is the resampled unit and a resample sums its
-- families' counts, so the trials are counted here, per family, and the bootstrap reads the counts
-- instead of every trial. bin_lo: the bin's lower bound (for ordering bins).
CREATE OR REPLACE MACRO family_outcome_counts(for_run := NULL) AS TABLE
SELECT model, suite, task, variant, prompt_style, bin, family_id, min(bin_lo) AS bin_lo,
       unnest(status_counts(status))
FROM scoped_trials(for_run := for_run)
GROUP BY model, suite, task, variant, prompt_style, bin, family_id;
