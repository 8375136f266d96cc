-- raw_items: one row per row of lake table items as stored.
-- An item may be written by several runs.
-- depends_on:

CREATE OR REPLACE VIEW raw_items AS
SELECT * FROM lake_table('items');
