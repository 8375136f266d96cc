-- Marts: the metric views users query.

-- Wilson score interval of k successes in n trials (NULL when n = 0), clamped to [0, 1] against
-- rounding (k = 0 otherwise gives -1e-17).
CREATE OR REPLACE MACRO wilson_lo(k, n, z := 1.959963984540054) AS
    CASE WHEN n > 0 THEN greatest(0.0,
        (k / n + z * z / (2 * n) - z * sqrt(k / n * (1 - k / n) / n + z * z / (4 * n * n))) / (1 + z * z / n))
    END;

CREATE OR REPLACE MACRO wilson_hi(k, n, z := 1.959963984540054) AS
    CASE WHEN n > 0 THEN least(1.0,
        (k / n + z * z / (2 * n) + z * sqrt(k / n * (1 - k / n) / n + z * z / (4 * n * n))) / (1 + z * z / n))
    END;

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
    wilson_lo(n_correct, n_scored) AS wilson_lo,
    wilson_hi(n_correct, n_scored) AS wilson_hi
FROM counts
ORDER BY model, suite, task, variant, prompt_style, bin_lo;
