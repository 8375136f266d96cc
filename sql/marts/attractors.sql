-- Marts of the symmetry suite: attractors, the answers a model collapses to.
-- attractors: one row per model, suite, task, category, prompt style and gold value.
-- depends_on: attractor_counts, trial_scores

-- Attractors per gold value (integer answers): the counts, the most frequent wrong answer and
-- the share of scored answers equal to it (ties: the smaller value), the shares of answers
-- equal to 50 and to 100 (the values the symmetry paper reports answers collapsing to), and
-- the whole distribution of parsed answers (predicted_counts, most frequent first).
CREATE OR REPLACE VIEW attractors AS
WITH cells AS (
    SELECT
        model, suite, task, category, prompt_style, gold, TRY_CAST(gold AS BIGINT) AS gold_value,
        unnest(status_counts(status)),
        count(*) FILTER (WHERE status <> 'error' AND TRY_CAST(predicted AS BIGINT) = 50) AS n_50,
        count(*) FILTER (WHERE status <> 'error' AND TRY_CAST(predicted AS BIGINT) = 100) AS n_100
    FROM trial_scores
    WHERE answer_type = 'integer'
    GROUP BY model, suite, task, category, prompt_style, gold
),
top_wrong AS (
    SELECT model, suite, task, category, prompt_style, gold, predicted AS top_wrong, n AS n_top_wrong
    FROM attractor_counts
    WHERE NOT is_gold
    QUALIFY row_number() OVER (PARTITION BY model, suite, task, category, prompt_style, gold
                               ORDER BY n DESC, predicted_value, predicted) = 1
),
distribution AS (
    SELECT model, suite, task, category, prompt_style, gold,
           list({'predicted': predicted, 'n': n} ORDER BY n DESC, predicted_value, predicted) AS predicted_counts
    FROM attractor_counts
    GROUP BY ALL
)
SELECT
    c.model, c.suite, c.task, c.category, c.prompt_style, c.gold, c.gold_value,
    c.n_scored, c.n_correct, c.n_wrong, c.n_unparsable, c.n_truncated, c.n_error,
    accuracy(c.n_correct, c.n_scored) AS accuracy,
    t.top_wrong, coalesce(t.n_top_wrong, 0) AS n_top_wrong,
    CASE WHEN c.n_scored > 0 THEN coalesce(t.n_top_wrong, 0) / c.n_scored END AS top_wrong_share,
    c.n_50, CASE WHEN c.n_scored > 0 THEN c.n_50 / c.n_scored END AS share_50,
    c.n_100, CASE WHEN c.n_scored > 0 THEN c.n_100 / c.n_scored END AS share_100,
    d.predicted_counts
FROM cells c
LEFT JOIN top_wrong t USING (model, suite, task, category, prompt_style, gold)
LEFT JOIN distribution d USING (model, suite, task, category, prompt_style, gold)
ORDER BY c.model, c.suite, c.task, c.category, c.prompt_style, c.gold_value;
