-- breaking_points(threshold): one row per model, suite, task, variant and prompt style.
-- depends_on: accuracy_by_bin

-- Breaking point per (model, suite, task, variant, prompt style): the first bin (by bin_lo) whose
-- accuracy is below `threshold`; NULL breaking_bin when no tested bin is below it. Bins with no
-- scored trial (only errors) have no accuracy and never break. Counts are over all bins; the
-- breaking_* columns describe the breaking bin. The threshold is a parameter: the view uses the
-- default 0.5; `SELECT * FROM breaking_points(0.7)` (or the configured sweep.breaking_threshold,
-- as the report does) uses another.
CREATE OR REPLACE MACRO breaking_points(threshold := 0.5) AS TABLE
WITH per_task AS (
    SELECT model, suite, task, variant, prompt_style,
           count(*) AS n_bins,
           unnest(summed_status_counts(n_scored, n_correct, n_wrong, n_unparsable, n_truncated, n_error))
    FROM accuracy_by_bin
    GROUP BY model, suite, task, variant, prompt_style
),
first_break AS (
    SELECT model, suite, task, variant, prompt_style, bin, bin_lo, accuracy, n_scored
    FROM accuracy_by_bin
    WHERE accuracy < threshold
    QUALIFY row_number() OVER (PARTITION BY model, suite, task, variant, prompt_style ORDER BY bin_lo) = 1
)
SELECT
    t.model, t.suite, t.task, t.variant, t.prompt_style, CAST(threshold AS DOUBLE) AS threshold,
    b.bin AS breaking_bin, b.bin_lo AS breaking_bin_lo, b.accuracy AS breaking_accuracy,
    b.n_scored AS breaking_n_scored,
    t.n_bins, t.n_scored, t.n_correct, t.n_wrong, t.n_unparsable, t.n_truncated, t.n_error
FROM per_task t
LEFT JOIN first_break b USING (model, suite, task, variant, prompt_style)
ORDER BY t.model, t.suite, t.task, t.variant, t.prompt_style;
