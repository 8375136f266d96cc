-- raw_computed_bootstrap: one row per row of lake table computed_bootstrap as stored.
-- depends_on:

CREATE OR REPLACE VIEW raw_computed_bootstrap AS
SELECT * FROM lake_table('computed_bootstrap');
