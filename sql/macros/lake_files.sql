-- Macros: the rows of a lake table, read from its Parquet files.
-- A compaction (tasks/lake/compact.py) merges small files into one merged file whose Parquet metadata
-- (key 'invarbench.replaces') names the files it replaces, one per line. Those files are no longer
-- part of the table, even while they still exist (before they are deleted, or when a compaction was
-- killed before deleting them): the merged file holds their rows, and no row is read twice.

-- The base names of the files that the merged files of lake table `tbl` replace. Every table folder
-- holds an empty merged-schema.parquet (tasks/lake/schemas.py), so the file pattern always matches.
CREATE OR REPLACE MACRO replaced_files(tbl) AS TABLE
SELECT unnest(string_split(decode(value), chr(10))) AS file_name
FROM parquet_kv_metadata('{{lake}}/' || tbl || '/**/merged-*.parquet')
WHERE decode(key) = 'invarbench.replaces';

-- Every row of lake table `tbl` (with its `day` partition column), from the files no merged file replaces.
CREATE OR REPLACE MACRO lake_table(tbl) AS TABLE
SELECT * EXCLUDE (filename)
FROM read_parquet('{{lake}}/' || tbl || '/**/*.parquet', hive_partitioning = true, union_by_name = true, filename = true)
WHERE parse_filename(filename) NOT IN (FROM replaced_files(tbl));
