-- Marts: the metric views users query.

-- Accuracy per (model, suite, task, variant, prompt style, bin) with a Wilson 95% interval.
-- Errors and unparsable answers are counted apart and are not in the accuracy denominator's
-- "wrong": accuracy = n_correct / n_scored, where n_scored = correct + wrong + unparsable.
CREATE OR REPLACE VIEW accuracy_by_bin AS
WITH counts AS (
    SELECT
        model, suite, task, variant, prompt_style, bin,
        min(bin_lo) AS bin_lo,
        count(*) FILTER (WHERE status <> 'error') AS n_scored,
        count(*) FILTER (WHERE status = 'correct') AS n_correct,
        count(*) FILTER (WHERE status = 'wrong') AS n_wrong,
        count(*) FILTER (WHERE status = 'unparsable') AS n_unparsable,
        count(*) FILTER (WHERE status = 'error') AS n_error
    FROM trial_scores
    GROUP BY ALL
)
SELECT
    *,
    CASE WHEN n_scored > 0 THEN n_correct / n_scored END AS accuracy,
    CASE WHEN n_scored > 0 THEN
        (n_correct / n_scored + 1.959963984540054^2 / (2 * n_scored)
         - 1.959963984540054 * sqrt(n_correct / n_scored * (1 - n_correct / n_scored) / n_scored
                                    + 1.959963984540054^2 / (4 * n_scored^2)))
        / (1 + 1.959963984540054^2 / n_scored)
    END AS wilson_lo,
    CASE WHEN n_scored > 0 THEN
        (n_correct / n_scored + 1.959963984540054^2 / (2 * n_scored)
         + 1.959963984540054 * sqrt(n_correct / n_scored * (1 - n_correct / n_scored) / n_scored
                                    + 1.959963984540054^2 / (4 * n_scored^2)))
        / (1 + 1.959963984540054^2 / n_scored)
    END AS wilson_hi
FROM counts
ORDER BY model, suite, task, variant, prompt_style, bin_lo;
