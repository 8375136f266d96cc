-- Marts of the symmetry suite: attractors, the answers a model collapses to.
-- attractor_counts: one row per model, suite, task, category, prompt style, gold and predicted value.
-- depends_on: trial_scores

-- How often each predicted value is given for each gold value (integer answers; parsed answers
-- only), per (model, suite, task, category, prompt style): the points of the attractor scatter.
-- share = n / n_scored of the gold's cell, so shares of one gold sum to 1 minus the unparsable share.
CREATE OR REPLACE VIEW attractor_counts AS
WITH scored AS (
    SELECT model, suite, task, category, prompt_style, gold, predicted, status
    FROM trial_scores
    WHERE answer_type = 'integer' AND status <> 'error'
)
SELECT
    model, suite, task, category, prompt_style,
    gold, TRY_CAST(gold AS BIGINT) AS gold_value,
    predicted, TRY_CAST(predicted AS BIGINT) AS predicted_value,
    count(*) AS n,
    count(*) / any_value(n_scored) AS share,
    bool_or(status = 'correct') AS is_gold
FROM (SELECT *, count(*) OVER (PARTITION BY model, suite, task, category, prompt_style, gold) AS n_scored FROM scored)
WHERE predicted IS NOT NULL
GROUP BY model, suite, task, category, prompt_style, gold, predicted
ORDER BY model, suite, task, category, prompt_style, gold_value, n DESC;
