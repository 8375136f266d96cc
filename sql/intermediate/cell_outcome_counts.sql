-- cell_outcome_counts(...): one row per model, suite, task, variant, prompt style and bin, with the outcome counts of its trials, of the one (model, suite) part_model, part_suite.
-- depends_on: scoped_trials

-- The totals of the accuracy cells the bootstrap reports (tasks/analysis/bootstrap.py; a gap's are
-- its two variants' over every bin); the classes it resamples are family_cell_classes'. bin_lo:
-- the bin's lower bound (for ordering bins).
CREATE OR REPLACE MACRO cell_outcome_counts(part_model, part_suite, for_run := NULL) AS TABLE
SELECT model, suite, task, variant, prompt_style, bin, min(bin_lo) AS bin_lo, unnest(status_counts(status))
FROM scoped_trials(for_run := for_run)
WHERE model IS NOT DISTINCT FROM part_model AND suite IS NOT DISTINCT FROM part_suite
GROUP BY model, suite, task, variant, prompt_style, bin;
