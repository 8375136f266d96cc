-- accuracy_by_n: one row per model, suite, task, category, variant, prompt style and key entities n.
-- depends_on: trial_scores

-- The symmetry paper's accuracy-by-n, for any suite.
CREATE OR REPLACE VIEW accuracy_by_n AS
WITH counts AS (
    SELECT model, suite, task, category, variant, prompt_style, key_entities, bin, unnest(status_counts(status))
    FROM trial_scores
    GROUP BY model, suite, task, category, variant, prompt_style, key_entities, bin
)
SELECT *,
    accuracy(n_correct, n_scored) AS accuracy,
    wilson_lo(n_correct, n_scored) AS wilson_lo,
    wilson_hi(n_correct, n_scored) AS wilson_hi
FROM counts
ORDER BY model, suite, task, category, variant, prompt_style, key_entities;
