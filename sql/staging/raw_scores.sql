-- raw_scores: one row per row of lake table scores as stored.
-- depends_on:

CREATE OR REPLACE VIEW raw_scores AS
SELECT * FROM lake_table('scores');
