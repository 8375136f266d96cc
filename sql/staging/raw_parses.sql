-- raw_parses: one row per row of lake table parses as stored, with its hive partition column day.
-- depends_on:

-- Parse files written before the canonical answer existed lack its column; the empty branch
-- makes it present (NULL there) whatever files the lake holds, so old lakes stay readable.
CREATE OR REPLACE VIEW raw_parses AS
SELECT * FROM lake_table('parses')
UNION ALL BY NAME
SELECT CAST(NULL AS VARCHAR) AS canonical WHERE false;
