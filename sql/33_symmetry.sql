-- Marts of the symmetry paper (SPEC §2): attractors and the associativity protocol's calls.

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

-- Attractors per gold value (integer answers): the counts, the most frequent wrong answer and
-- the share of scored answers equal to it (ties: the smaller value), the shares of answers
-- equal to 50 and to 100 (the values the symmetry paper reports answers collapsing to), and
-- the whole distribution of parsed answers (predicted_counts, most frequent first).
CREATE OR REPLACE VIEW attractors AS
WITH cells AS (
    SELECT
        model, suite, task, category, prompt_style, gold, TRY_CAST(gold AS BIGINT) AS gold_value,
        count(*) FILTER (WHERE status <> 'error') AS n_scored,
        count(*) FILTER (WHERE status = 'correct') AS n_correct,
        count(*) FILTER (WHERE status = 'wrong') AS n_wrong,
        count(*) FILTER (WHERE status = 'unparsable') AS n_unparsable,
        count(*) FILTER (WHERE status = 'error') AS n_error,
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
    c.n_scored, c.n_correct, c.n_wrong, c.n_unparsable, c.n_error,
    CASE WHEN c.n_scored > 0 THEN c.n_correct / c.n_scored END AS accuracy,
    t.top_wrong, coalesce(t.n_top_wrong, 0) AS n_top_wrong,
    CASE WHEN c.n_scored > 0 THEN coalesce(t.n_top_wrong, 0) / c.n_scored END AS top_wrong_share,
    c.n_50, CASE WHEN c.n_scored > 0 THEN c.n_50 / c.n_scored END AS share_50,
    c.n_100, CASE WHEN c.n_scored > 0 THEN c.n_100 / c.n_scored END AS share_100,
    d.predicted_counts
FROM cells c
LEFT JOIN top_wrong t USING (model, suite, task, category, prompt_style, gold)
LEFT JOIN distribution d USING (model, suite, task, category, prompt_style, gold)
ORDER BY c.model, c.suite, c.task, c.category, c.prompt_style, c.gold_value;

-- Each call of an associativity trial (steps segment_1, segment_2, combine) checked against its
-- own correct sub-answer, one row per trial and step: a segment's gold is the group value of its
-- ones (params.segment_lengths, reduced in params.group); the combine call is correct when its
-- answer is the group sum of the two values its request gave it (read from the request text,
-- so a wrong segment answer does not make a right addition wrong). Values are compared as
-- canonical decimal text (the integer parser's value), exactly at any length. step_status: correct, wrong,
-- unparsable, error (response error), not_run (the chain stopped before this step).
CREATE OR REPLACE VIEW associativity_steps AS
WITH trials AS (
    SELECT ts.*, i.steps AS steps_json,
           json_extract_string(ts.params, '$.group') AS group_name,
           CAST(json_extract(ts.params, '$.segment_lengths[0]') AS BIGINT) AS length_1,
           CAST(json_extract(ts.params, '$.segment_lengths[1]') AS BIGINT) AS length_2
    FROM trial_scores ts JOIN items i USING (item_id)
    WHERE ts.task = 'associativity'
),
step_names AS (
    SELECT * FROM (VALUES ('segment_1', 1), ('segment_2', 2), ('combine', 3)) AS s(step, step_order)
),
latest_requests AS (
    SELECT trial_id, step, request_id,
           json_extract_string(messages, '$[-1].content') AS content
    FROM run_requests
    WHERE trial_id IN (SELECT trial_id FROM trials)
    QUALIFY row_number() OVER (PARTITION BY trial_id, step ORDER BY created_at DESC) = 1
),
answered AS (
    SELECT r.trial_id, r.step, r.content, l.status AS response_status,
           p.status AS parse_status, p.value
    FROM latest_requests r
    LEFT JOIN ledger l USING (request_id)
    LEFT JOIN parses p ON p.response_id = l.response_id
),
checked AS (
    SELECT
        t.trial_id, t.model, t.suite, t.category, t.variant, t.prompt_style, t.key_entities, t.sample_idx,
        s.step, s.step_order, a.value,
        CASE s.step
            WHEN 'segment_1' THEN group_sum_text(CAST(t.length_1 AS VARCHAR), '0', t.group_name)
            WHEN 'segment_2' THEN group_sum_text(CAST(t.length_2 AS VARCHAR), '0', t.group_name)
            ELSE group_sum_text(regexp_extract(a.content, 'What is (-?\d+)\+(-?\d+)', 1),
                                regexp_extract(a.content, 'What is (-?\d+)\+(-?\d+)', 2), t.group_name)
        END AS step_gold,
        a.response_status, a.parse_status
    FROM trials t
    CROSS JOIN step_names s
    LEFT JOIN answered a ON a.trial_id = t.trial_id AND a.step = s.step
)
SELECT
    * EXCLUDE (response_status, parse_status),
    CASE
        WHEN response_status IS NULL THEN 'not_run'
        WHEN response_status <> 'ok' THEN 'error'
        WHEN parse_status IS DISTINCT FROM 'ok' THEN 'unparsable'
        WHEN value = step_gold THEN 'correct'
        ELSE 'wrong'
    END AS step_status
FROM checked;

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
    count(*) FILTER (WHERE status IN ('correct', 'wrong', 'unparsable')) AS n_scored,
    count(*) FILTER (WHERE status = 'correct') AS n_correct,
    count(*) FILTER (WHERE status = 'wrong') AS n_wrong,
    count(*) FILTER (WHERE status = 'unparsable') AS n_unparsable,
    count(*) FILTER (WHERE status = 'error') AS n_error,
    count(*) FILTER (WHERE status = 'not_run') AS n_not_run,
    CASE WHEN count(*) FILTER (WHERE status IN ('correct', 'wrong', 'unparsable')) > 0
         THEN count(*) FILTER (WHERE status = 'correct')
              / count(*) FILTER (WHERE status IN ('correct', 'wrong', 'unparsable')) END AS accuracy
FROM (SELECT * FROM steps UNION ALL SELECT * FROM whole_items UNION ALL SELECT * FROM baselines)
GROUP BY ALL
ORDER BY model, suite, category, variant, prompt_style, step_order;
