-- items: one row per item.
-- depends_on: raw_items

-- Items are content-addressed: the same id is the same item, whichever run wrote it.
CREATE OR REPLACE VIEW items AS
SELECT * FROM raw_items
QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY created_at) = 1;
