-- ledger_of(...): one row per request of the relation named `ids_from` (a table, view or CTE with a request_id column) that has a response: its row of the view ledger.
-- depends_on: responses

-- The ledger of some requests only: the view ledger ranks every response of the lake (DuckDB
-- does not push a filter on its requests below the window), so a sweep's chunk of 1,000 requests
-- paid for ranking every response ever stored. The ranking is per request, so picking the
-- requests first gives the view's rows. `ids_from` is a name (`ledger_of('asked')`), so the
-- requests are a semi-join against a relation of the query, never a list of ids: a rescore of
-- every run selects millions of requests.
CREATE OR REPLACE MACRO ledger_of(ids_from) AS TABLE
SELECT * FROM responses
WHERE request_id IN (SELECT request_id FROM query_table(ids_from))
QUALIFY response_precedence(request_id, status, created_at) = 1;
