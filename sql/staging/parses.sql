-- Staging: the parses lake table.
-- all_parses: one row per parse written, every parser version (intermediate/latest_versions.sql
-- picks the latest per response).

-- Parse files written before the canonical answer existed lack its column; the empty branch
-- makes it present (NULL there) whatever files the lake holds, so old lakes stay readable.
CREATE OR REPLACE VIEW raw_parses AS
SELECT * FROM lake_table('parses')
UNION ALL BY NAME
SELECT CAST(NULL AS VARCHAR) AS canonical WHERE false;

CREATE OR REPLACE VIEW all_parses AS
SELECT * EXCLUDE (day) FROM raw_parses;
