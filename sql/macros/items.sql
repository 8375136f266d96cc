-- Macros: which row of an item counts.

-- The precedence of a row of an item among the rows of the same item_id: 1 is the first written
-- (items are content-addressed, and several runs may write the same item). Used as
-- `QUALIFY item_precedence(...) = 1` by the view items and by the table macro items_of (the items
-- of some ids only).
CREATE OR REPLACE MACRO item_precedence(item_id, created_at) AS
    row_number() OVER (PARTITION BY item_id ORDER BY created_at);
