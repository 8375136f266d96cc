-- Macros: the rows of a lake table.
-- Every lake table is a DuckLake table of the lake attached as `lake` (tasks/lake/lake.py): DuckLake's
-- snapshots decide which data files hold its rows (https://ducklake.select/docs/stable/specification/introduction).

-- Every row of lake table `tbl`, as of the snapshot the lake is attached at (the latest by default).
CREATE OR REPLACE MACRO lake_table(tbl) AS TABLE
SELECT * FROM query_table('lake.main.' || tbl);
