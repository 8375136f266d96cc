-- items_of(...): one row per item of the relation named `ids_from` (a table, view or CTE with an item_id column): its row of the view items.
-- depends_on: raw_items

-- The items of some ids only (as ledger_of is the ledger of some requests): the view items ranks
-- every item row of the lake (DuckDB does not push a join on item_id below the window), so the
-- parse and score of a sweep's chunk of 1,000 items ranked every item of the lake. The ranking is
-- per item, so picking the ids first gives the view's rows.
CREATE OR REPLACE MACRO items_of(ids_from) AS TABLE
SELECT * FROM raw_items
WHERE item_id IN (SELECT item_id FROM query_table(ids_from))
QUALIFY item_precedence(item_id, created_at) = 1;
