-- Intermediate: the latest parse and score versions (re-parsing and re-scoring append rows).
-- parses: one row per response, its latest parse (of the newest parser_version written).
-- scores: one row per trial, its latest score (of the newest scorer_version written).

CREATE OR REPLACE VIEW parses AS
SELECT * FROM all_parses
QUALIFY row_number() OVER (PARTITION BY response_id ORDER BY created_at DESC) = 1;

CREATE OR REPLACE VIEW scores AS
SELECT * FROM all_scores
QUALIFY row_number() OVER (PARTITION BY trial_id ORDER BY created_at DESC) = 1;
