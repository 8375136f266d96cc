-- raw_computed_regression: one row per row of lake table computed_regression as stored.
-- depends_on:

CREATE OR REPLACE VIEW raw_computed_regression AS
SELECT * FROM lake_table('computed_regression');
