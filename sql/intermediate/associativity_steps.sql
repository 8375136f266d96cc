-- Intermediate, symmetry suite: the associativity protocol's calls, each checked on its own.
-- associativity_steps: one row per associativity trial and step (segment_1, segment_2, combine).
-- depends_on: items, run_requests, ledger_of, latest_parses, trial_scores

-- Each call of an associativity trial (steps segment_1, segment_2, combine) checked against its
-- own correct sub-answer, one row per trial and step: a segment's gold is the group value of its
-- ones (params.segment_lengths, reduced in params.group); the combine call is correct when its
-- answer is the group sum of the two values its request gave it (read from the request text,
-- so a wrong segment answer does not make a right addition wrong). Values are compared as
-- canonical decimal text (the integer parser's value), exactly at any length. step_status: correct, wrong,
-- unparsable, truncated (cut at the token limit before an answer), error (response error), not_run (the chain stopped before this step).
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
-- The latest request of each step of these trials (as latest_requests: macro request_recency) and
-- the response that counts (the ledger's row: table macro ledger_of), ranked among these trials'
-- requests only: reading latest_requests and ledger, DuckDB ranks every request and response of
-- the lake first (it does not push the trials' filter below their windows): 3.7 s of CPU at
-- 1,000,000 responses with no associativity trial at all.
step_requests AS (
    SELECT trial_id, step, request_id, request_content(messages) AS content
    FROM run_requests
    WHERE trial_id IN (SELECT trial_id FROM trials)
    QUALIFY request_recency(trial_id, step, created_at) = 1
),
step_responses AS (
    SELECT request_id, response_id, status FROM ledger_of('step_requests')
),
answered AS (
    SELECT r.trial_id, r.step, r.content, l.status AS response_status,
           p.status AS parse_status, p.value
    FROM step_requests r
    LEFT JOIN step_responses l USING (request_id)
    LEFT JOIN latest_parses p ON p.response_id = l.response_id
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
        WHEN parse_status = 'truncated' THEN 'truncated'
        WHEN parse_status IS DISTINCT FROM 'ok' THEN 'unparsable'
        WHEN value = step_gold THEN 'correct'
        ELSE 'wrong'
    END AS step_status
FROM checked;
