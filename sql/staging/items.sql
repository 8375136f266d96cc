-- Staging: the items lake table. {{lake}} is replaced by the lake root when the views are created;
-- every raw_* view reads Parquet straight from the lake (append-only, hive partitions).
-- raw_<table>: one row per row of the lake table, every file (raw_items: an item may be written by several runs).
-- items: one row per item.

CREATE OR REPLACE VIEW raw_items AS
SELECT * FROM lake_table('items');

-- Items are content-addressed: the same id is the same item, whichever run wrote it.
CREATE OR REPLACE VIEW items AS
SELECT * EXCLUDE (day) FROM raw_items
QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY created_at) = 1;
