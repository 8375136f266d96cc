-- raw_scores: one row per row of lake table scores as stored, with its hive partition column day.
-- depends_on:

CREATE OR REPLACE VIEW raw_scores AS
SELECT * FROM lake_table('scores');
