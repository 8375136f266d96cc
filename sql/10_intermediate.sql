-- Intermediate: the ledger's answer per request, the latest parse and score versions.

-- Per request, the response that counts: the first ok one; without one, the latest error.
CREATE OR REPLACE VIEW ledger AS
SELECT * FROM responses
QUALIFY row_number() OVER (
    PARTITION BY request_id
    ORDER BY (status = 'ok') DESC, CASE WHEN status = 'ok' THEN created_at END ASC, created_at DESC
) = 1;

-- Latest parse per response (re-parsing appends rows with a newer parser_version).
CREATE OR REPLACE VIEW parses AS
SELECT * FROM all_parses
QUALIFY row_number() OVER (PARTITION BY response_id ORDER BY created_at DESC) = 1;

-- Latest score per trial (re-scoring appends rows with a newer scorer_version).
CREATE OR REPLACE VIEW scores AS
SELECT * FROM all_scores
QUALIFY row_number() OVER (PARTITION BY trial_id ORDER BY created_at DESC) = 1;

-- Which trials each run covered (a trial answered from the ledger still belongs to the run).
CREATE OR REPLACE VIEW run_trials AS
SELECT DISTINCT run_id, trial_id, item_id, model, sample_idx FROM run_requests;

-- One row per scored trial with everything about its item: the base of every metric.
CREATE OR REPLACE VIEW trial_scores AS
SELECT
    s.trial_id, s.model, s.sample_idx, s.status, s.correct, s.lenient_correct, s.predicted,
    s.scorer_version, s.response_ids, s.created_at AS scored_at,
    i.item_id, i.suite, i.task, i.family_id, i.variant, i.prompt_style, i.category,
    i.key_entities, i.bin, i.bin_lo, i.bin_hi, i.gold, i.answer_type, i.params,
    i.n_chars, i.n_words, i.n_tokens, i.n_symbols, i.symbol_density, i.n_numbers,
    i.n_operators, i.n_points
FROM scores s JOIN items i USING (item_id);
