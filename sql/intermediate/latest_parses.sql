-- latest_parses: one row per response, its latest parse (of the newest parser_version written).
-- depends_on: all_parses
-- materialised: response_id

CREATE OR REPLACE VIEW latest_parses AS
SELECT * FROM all_parses
QUALIFY row_number() OVER (PARTITION BY response_id ORDER BY created_at DESC) = 1;
