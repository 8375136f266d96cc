-- accuracy_by_bin: one row per model, suite, task, variant, prompt style and bin.
-- depends_on: trial_scores

-- Errors and unparsable answers are counted apart and are not in the accuracy denominator's
-- "wrong": accuracy = n_correct / n_scored, where n_scored = correct + wrong + unparsable.
CREATE OR REPLACE VIEW accuracy_by_bin AS
WITH counts AS (
    SELECT model, suite, task, variant, prompt_style, bin, min(bin_lo) AS bin_lo, unnest(status_counts(status))
    FROM trial_scores
    GROUP BY model, suite, task, variant, prompt_style, bin
)
SELECT
    *,
    accuracy(n_correct, n_scored) AS accuracy,
    wilson_lo(n_correct, n_scored) AS wilson_lo,
    wilson_hi(n_correct, n_scored) AS wilson_hi
FROM counts
ORDER BY model, suite, task, variant, prompt_style, bin_lo;
