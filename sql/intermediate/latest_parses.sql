-- latest_parses: one row per response, its latest parse (of the newest parser_version written).
-- depends_on: all_parses
-- materialised: response_id

CREATE OR REPLACE VIEW latest_parses AS
SELECT * FROM all_parses
QUALIFY parse_recency(response_id, created_at) = 1;
