-- Staging: the scores lake table.
-- all_scores: one row per score written, every scorer version (intermediate/latest_versions.sql
-- picks the latest per trial).

CREATE OR REPLACE VIEW raw_scores AS
SELECT * FROM read_parquet('{{lake}}/scores/**/*.parquet', hive_partitioning = true, union_by_name = true);

CREATE OR REPLACE VIEW all_scores AS
SELECT * EXCLUDE (day) FROM raw_scores;
