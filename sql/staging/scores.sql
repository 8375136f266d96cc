-- Staging: the scores lake table.
-- all_scores: one row per score written, every scorer version (intermediate/latest_versions.sql
-- picks the latest per trial).

CREATE OR REPLACE VIEW raw_scores AS
SELECT * FROM lake_table('scores');

CREATE OR REPLACE VIEW all_scores AS
SELECT * EXCLUDE (day) FROM raw_scores;
