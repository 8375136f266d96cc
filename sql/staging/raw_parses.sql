-- raw_parses: one row per row of lake table parses as stored.
-- depends_on:

CREATE OR REPLACE VIEW raw_parses AS
SELECT * FROM lake_table('parses');
