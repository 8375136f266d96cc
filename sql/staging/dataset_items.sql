-- dataset_items: one row per (dataset_id, item_id). Items stored before memberships were recorded
-- carry their dataset in items.dataset_id (the first dataset that stored them): read both, so a
-- lake written by an earlier release selects as it did.
-- depends_on: items, raw_dataset_items

CREATE OR REPLACE VIEW dataset_items AS
SELECT dataset_id, item_id FROM raw_dataset_items
UNION
SELECT dataset_id, item_id FROM items;
