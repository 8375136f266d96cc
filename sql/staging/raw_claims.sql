-- raw_claims: one row per row of lake table claims as stored.
-- depends_on:

CREATE OR REPLACE VIEW raw_claims AS
SELECT * FROM lake_table('claims');
