-- cost_by_run: one row per run and model that received responses.
-- depends_on: cost_responses

-- Per run and model: responses received, tokens and USD. A response belongs to the run that
-- paid for it; answers a run took from the ledger cost it nothing. cost_usd sums the priced
-- responses only; n_unpriced counts those without a price (cost_usd is NULL when none has one).
CREATE OR REPLACE VIEW cost_by_run AS
SELECT
    c.run_id, c.model,
    count(*) AS n_responses,
    count(*) FILTER (WHERE c.status = 'ok') AS n_ok,
    count(*) FILTER (WHERE c.status = 'error') AS n_error,
    sum(c.prompt_tokens) AS prompt_tokens,
    sum(c.completion_tokens) AS completion_tokens,
    sum(c.cost_usd) AS cost_usd,
    count(*) FILTER (WHERE c.cost_usd IS NULL) AS n_unpriced,
    min(c.created_at) AS first_at,
    max(c.created_at) AS last_at
FROM cost_responses c
GROUP BY c.run_id, c.model;
