-- raw_dataset_items: one row per row of lake table dataset_items as stored.
-- One per recorded membership (an import records every item it names).
-- depends_on:

CREATE OR REPLACE VIEW raw_dataset_items AS
SELECT * FROM lake_table('dataset_items');
