-- raw_requests: one row per row of lake table requests as stored.
-- depends_on:

CREATE OR REPLACE VIEW raw_requests AS
SELECT * FROM lake_table('requests');
