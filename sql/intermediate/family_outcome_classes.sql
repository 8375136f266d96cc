-- family_outcome_classes(...): one row per model, suite, task, variant, prompt style, bin and class of families (the same correct and scored counts), with its families counted and their outcome counts summed, of the one (model, suite) part_model, part_suite.
-- depends_on: family_outcome_counts

-- What the bootstrap of accuracy resamples (tasks/analysis/bootstrap.py), by class: a resample
-- sums its families' correct and scored counts, so families with the same pair are interchangeable
-- and the bootstrap draws how many families of each class (c_correct, c_scored) it takes. Python
-- reads a row per class instead of one per family (at 10,000,000 responses, a few hundred rows
-- per (model, suite) instead of hundreds of thousands). The outcome counts summed over the class's
-- families give the cell's totals; bin_lo: the bin's lower bound (for ordering bins).
CREATE OR REPLACE MACRO family_outcome_classes(part_model, part_suite, for_run := NULL) AS TABLE
SELECT model, suite, task, variant, prompt_style, bin, n_correct AS c_correct, n_scored AS c_scored,
       count(*) AS n_families, min(bin_lo) AS bin_lo,
       unnest(summed_status_counts(n_scored, n_correct, n_wrong, n_unparsable, n_truncated, n_error))
FROM family_outcome_counts(for_run := for_run) f
WHERE model IS NOT DISTINCT FROM part_model AND suite IS NOT DISTINCT FROM part_suite
GROUP BY model, suite, task, variant, prompt_style, bin, f.n_correct, f.n_scored;
