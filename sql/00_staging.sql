-- Staging: one view per lake table, read straight from Parquet (append-only, hive partitions).
-- {{lake}} is replaced by the lake root when the views are created.

CREATE OR REPLACE VIEW raw_items AS
SELECT * FROM read_parquet('{{lake}}/items/**/*.parquet', hive_partitioning = true, union_by_name = true);

CREATE OR REPLACE VIEW raw_runs AS
SELECT * FROM read_parquet('{{lake}}/runs/**/*.parquet', hive_partitioning = true, union_by_name = true);

CREATE OR REPLACE VIEW raw_requests AS
SELECT * FROM read_parquet('{{lake}}/requests/**/*.parquet', hive_partitioning = true, union_by_name = true);

CREATE OR REPLACE VIEW raw_responses AS
SELECT * FROM read_parquet('{{lake}}/responses/**/*.parquet', hive_partitioning = true, union_by_name = true);

-- Parse files written before the canonical answer existed lack its column; the empty branch
-- makes it present (NULL there) whatever files the lake holds, so old lakes stay readable.
CREATE OR REPLACE VIEW raw_parses AS
SELECT * FROM read_parquet('{{lake}}/parses/**/*.parquet', hive_partitioning = true, union_by_name = true)
UNION ALL BY NAME
SELECT CAST(NULL AS VARCHAR) AS canonical WHERE false;

CREATE OR REPLACE VIEW raw_scores AS
SELECT * FROM read_parquet('{{lake}}/scores/**/*.parquet', hive_partitioning = true, union_by_name = true);

-- Items are content-addressed: the same id is the same item, whichever run wrote it.
CREATE OR REPLACE VIEW items AS
SELECT * EXCLUDE (day) FROM raw_items
QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY created_at) = 1;

-- A run writes a row when it starts and when it ends; the latest row is its state.
CREATE OR REPLACE VIEW runs AS
SELECT * EXCLUDE (day) FROM raw_runs
QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY updated_at DESC) = 1;

-- Every request a run made, including those answered from the ledger.
CREATE OR REPLACE VIEW run_requests AS
SELECT * EXCLUDE (day) FROM raw_requests;

CREATE OR REPLACE VIEW requests AS
SELECT * EXCLUDE (run_id) FROM run_requests
QUALIFY row_number() OVER (PARTITION BY request_id ORDER BY created_at) = 1;

-- Every response ever received, errors included (the ledger).
CREATE OR REPLACE VIEW responses AS
SELECT * EXCLUDE (day) FROM raw_responses;

-- All parse and score rows, every version; the unprefixed views pick the latest.
CREATE OR REPLACE VIEW all_parses AS
SELECT * EXCLUDE (day) FROM raw_parses;

CREATE OR REPLACE VIEW all_scores AS
SELECT * EXCLUDE (day) FROM raw_scores;
