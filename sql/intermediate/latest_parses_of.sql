-- latest_parses_of(...): one row per response of the relation named `ids_from` (a table, view or CTE with a response_id column) that has a parse: its row of the view latest_parses.
-- depends_on: all_parses

-- The latest parses of some responses only (as ledger_of is the ledger of some requests): the view
-- latest_parses ranks every parse of the lake unless its materialised table is current, which it
-- never is during a sweep (each chunk writes parses). The ranking is per response, so picking the
-- responses first gives the view's rows.
CREATE OR REPLACE MACRO latest_parses_of(ids_from) AS TABLE
SELECT * FROM all_parses
WHERE response_id IN (SELECT response_id FROM query_table(ids_from))
QUALIFY parse_recency(response_id, created_at) = 1;
