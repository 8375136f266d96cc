-- all_scores: one row per score written, every scorer version (intermediate/latest_scores.sql
-- picks the latest per trial).
-- depends_on: raw_scores

CREATE OR REPLACE VIEW all_scores AS
SELECT * FROM raw_scores;
