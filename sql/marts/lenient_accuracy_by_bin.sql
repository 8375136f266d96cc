-- lenient_accuracy_by_bin: one row per model, suite, task, variant, prompt style and bin of a task
-- whose parser defines a lenient score.
-- depends_on: trial_scores

-- accuracy_by_bin plus the separately labelled lenient score (lenient_correct, e.g.
-- list_intersection's order-insensitive set match), for tasks whose parser defines one.
CREATE OR REPLACE VIEW lenient_accuracy_by_bin AS
WITH counts AS (
    SELECT
        model, suite, task, variant, prompt_style, bin, min(bin_lo) AS bin_lo,
        unnest(status_counts(status)),
        count(*) FILTER (WHERE lenient_correct) AS n_lenient_correct,
        count(lenient_correct) AS n_lenient_scored
    FROM trial_scores
    GROUP BY model, suite, task, variant, prompt_style, bin
)
SELECT * EXCLUDE (n_lenient_scored),
    accuracy(n_correct, n_scored) AS accuracy,
    accuracy(n_lenient_correct, n_scored) AS lenient_accuracy
FROM counts
WHERE n_lenient_scored > 0
ORDER BY model, suite, task, variant, prompt_style, bin_lo;
