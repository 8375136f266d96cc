"""The lake: Parquet tables, their writes and compaction, and the DuckDB catalog of views over them."""
