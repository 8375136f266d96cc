-- items: one row per item.
-- depends_on: raw_items

-- Items are content-addressed: the same id is the same item, whichever run wrote it.
CREATE OR REPLACE VIEW items AS
SELECT * FROM raw_items
QUALIFY item_precedence(item_id, created_at) = 1;
