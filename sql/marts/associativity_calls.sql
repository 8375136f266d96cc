-- Marts of the symmetry suite: the associativity protocol, call by call.
-- associativity_calls: one row per model, suite, category, split variant, prompt style and step.
-- depends_on: associativity_steps, trial_scores

-- Accuracy of each associativity call and of the whole item, with the single-call closure item
-- of the same n as baseline (params.baseline), per (model, suite, category, split variant,
-- prompt style). step: segment_1, segment_2, combine (from associativity_steps), item (the
-- trial's score), closure_baseline (the baseline family's closure trials of the same model,
-- prompt style and sample). n_not_run: calls never made because the chain stopped earlier.
CREATE OR REPLACE VIEW associativity_calls AS
WITH steps AS (
    SELECT model, suite, category, variant, prompt_style, step, step_order, step_status AS status
    FROM associativity_steps
),
whole_items AS (
    SELECT model, suite, category, variant, prompt_style, 'item' AS step, 4 AS step_order, status
    FROM trial_scores
    WHERE task = 'associativity'
),
baselines AS (
    SELECT a.model, a.suite, a.category, a.variant, a.prompt_style, 'closure_baseline' AS step, 5 AS step_order, c.status
    FROM trial_scores a
    JOIN trial_scores c
      ON c.task = 'closure' AND c.suite = a.suite AND c.model = a.model
     AND c.prompt_style = a.prompt_style AND c.sample_idx = a.sample_idx
     AND c.family_id = json_extract_string(a.params, '$.baseline.family_id')
    WHERE a.task = 'associativity'
)
SELECT
    model, suite, category, variant, prompt_style, step, step_order,
    count(*) AS n_trials,
    count(*) FILTER (WHERE status IN ('correct', 'wrong', 'unparsable', 'truncated')) AS n_scored,
    count(*) FILTER (WHERE status = 'correct') AS n_correct,
    count(*) FILTER (WHERE status = 'wrong') AS n_wrong,
    count(*) FILTER (WHERE status = 'unparsable') AS n_unparsable,
    count(*) FILTER (WHERE status = 'truncated') AS n_truncated,
    count(*) FILTER (WHERE status = 'error') AS n_error,
    count(*) FILTER (WHERE status = 'not_run') AS n_not_run,
    CASE WHEN count(*) FILTER (WHERE status IN ('correct', 'wrong', 'unparsable', 'truncated')) > 0
         THEN count(*) FILTER (WHERE status = 'correct')
              / count(*) FILTER (WHERE status IN ('correct', 'wrong', 'unparsable', 'truncated')) END AS accuracy
FROM (SELECT * FROM steps UNION ALL SELECT * FROM whole_items UNION ALL SELECT * FROM baselines)
GROUP BY ALL
ORDER BY model, suite, category, variant, prompt_style, step_order;
