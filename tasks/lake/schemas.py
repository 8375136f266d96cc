"""The lake's tables: every table's schema (:data:`SCHEMAS`, in Arrow; :func:`column_types`, in
DuckDB) and the one column rule (:func:`conform`).

Every table is a DuckLake table of that schema (``tasks.lake.ducklake``); a column added since a
lake was written is added to its table on the next write, and reads as nulls in older rows.
"""

from __future__ import annotations

import pyarrow as pa

_str = pa.string()
_int = pa.int64()
_f = pa.float64()
_ts = pa.timestamp("us", tz="UTC")

# The surface features each item row carries (tasks.items.features.SurfaceFeatures, one column each).
FEATURE_NAMES = (
    "n_chars",
    "n_words",
    "n_tokens",
    "n_symbols",
    "symbol_density",
    "n_numbers",
    "n_operators",
    "n_points",
)

SCHEMAS: dict[str, pa.Schema] = {
    "items": pa.schema(
        [
            ("item_id", _str), ("dataset_id", _str), ("suite", _str), ("task", _str),
            ("family_id", _str), ("variant", _str), ("prompt_style", _str), ("category", _str),
            ("key_entities", _int), ("bin", _str), ("bin_lo", _int), ("bin_hi", _int),
            ("prompt", _str), ("messages", _str), ("steps", _str), ("solver", _str),
            ("gold", _str), ("answer_type", _str), ("generator", _str), ("generator_version", _str),
            ("seed", _int), ("params", _str),
        ]
        + [(name, _f if name == "symbol_density" else _int) for name in FEATURE_NAMES]
        + [("created_at", _ts)]
    ),
    "runs": pa.schema(
        [
            ("run_id", _str), ("flow_run_id", _str), ("kind", _str), ("status", _str),
            ("started_at", _ts), ("updated_at", _ts), ("config", _str), ("models", _str),
            ("n_items", _int), ("n_requests", _int), ("n_sent", _int), ("n_cached", _int),
            ("n_errors", _int), ("report_path", _str), ("message", _str), ("host", _str), ("pid", _int),
            # a sweep's plan (tasks.runs.plan): its key and the families it dropped (JSON)
            ("plan_key", _str), ("dropped_families", _str),
        ]
    ),
    "requests": pa.schema(
        [
            ("run_id", _str), ("request_id", _str), ("trial_id", _str), ("item_id", _str),
            ("model", _str), ("step", _str), ("step_index", _int), ("provider", _str),
            ("route_model", _str), ("api_base", _str), ("sampling", _str), ("sample_idx", _int),
            ("messages", _str), ("created_at", _ts),
        ]
    ),
    "responses": pa.schema(
        [
            ("response_id", _str), ("request_id", _str), ("run_id", _str), ("model", _str),
            ("status", _str), ("text", _str), ("error", _str), ("attempts", _int),
            ("latency_s", _f), ("prompt_tokens", _int), ("completion_tokens", _int),
            ("created_at", _ts), ("cost_usd", _f),
            # "length" marks a response cut at the token limit; files written before it existed lack it
            ("finish_reason", _str),
        ]
    ),
    # A sweep's lease on requests it is sending (tasks.models.claims); renewals append rows.
    "claims": pa.schema([
        ("request_id", _str), ("run_id", _str), ("claimed_at", _ts), ("expires_at", _ts),
    ]),
    # Provider batch jobs (tasks.models.batch_jobs): one row per state seen; the latest row is the job's state.
    "batch_jobs": pa.schema([
        ("batch_id", _str), ("run_id", _str), ("model", _str), ("api_base", _str),
        ("request_ids", pa.list_(_str)), ("input_file_id", _str), ("status", _str),
        ("output_file_id", _str), ("error_file_id", _str), ("message", _str), ("updated_at", _ts),
    ]),
    "parses": pa.schema(
        [
            ("response_id", _str), ("request_id", _str), ("answer_type", _str),
            ("parser_version", _str), ("status", _str), ("value", _str), ("extracted", _str),
            # the canonical answer (tasks.scoring.parse.answer_key) that Consistency@k compares; files
            # written before it existed lack the column, and sql/staging/raw_parses.sql reads them as NULL
            ("canonical", _str), ("created_at", _ts),
        ]
    ),
    "scores": pa.schema(
        [
            ("trial_id", _str), ("run_id", _str), ("item_id", _str), ("model", _str),
            ("sample_idx", _int), ("scorer_version", _str), ("status", _str),
            ("correct", pa.bool_()), ("lenient_correct", pa.bool_()), ("predicted", _str),
            ("response_ids", _str), ("created_at", _ts),
        ]
    ),
    # Which items a dataset holds (sql/staging/dataset_items.sql): an item, stored once by content,
    # may belong to several datasets (the same families imported twice, with more prompt styles).
    "dataset_items": pa.schema([("dataset_id", _str), ("item_id", _str), ("created_at", _ts)]),
    # Statistics computed in Python by tasks.analysis.stats; the views of sql/staging/computed_*.sql expose them.
    "computed_bootstrap": pa.schema([
        ("computation_id", _str), ("computed_at", _ts), ("scope", _str), ("metric", _str),
        ("model", _str), ("suite", _str), ("task", _str), ("category", _str), ("prompt_style", _str),
        ("variant", _str), ("variant_b", _str), ("bin", _str), ("bin_lo", _int), ("k", _int),
        ("estimate", _f), ("estimate_a", _f), ("estimate_b", _f), ("ci_lo", _f), ("ci_hi", _f),
        ("level", _f), ("n_families", _int), ("n_units", _int), ("n_excluded", _int),
        ("n_scored", _int), ("n_correct", _int), ("n_wrong", _int), ("n_unparsable", _int),
        ("n_truncated", _int), ("n_error", _int), ("resamples", _int), ("n_valid_resamples", _int), ("seed", _int),
        # what the computation read (tasks.analysis.stats.inputs_digest): a report reuses it while unchanged
        ("inputs_sha256", _str),
    ]),
    "computed_regression": pa.schema([
        ("computation_id", _str), ("computed_at", _ts), ("scope", _str), ("suite", _str),
        ("model", _str), ("task", _str), ("fit", _str), ("formula", _str), ("reference_variant", _str),
        ("reference_model", _str), ("reference_task", _str), ("term", _str), ("coef", _f), ("std_err", _f), ("z", _f),
        ("p_value", _f), ("ci_lo", _f), ("ci_hi", _f), ("n", _int), ("n_correct", _int),
        ("n_unparsable", _int), ("n_truncated", _int), ("n_error", _int), ("pseudo_r2", _f), ("dropped", _str),
        ("status", _str), ("reason", _str),
    ]),
}


_DUCKDB_TYPES = {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN",
                 pa.timestamp("us", tz="UTC"): "TIMESTAMPTZ", pa.list_(pa.string()): "VARCHAR[]"}


def column_types(table: str) -> list[tuple[str, str]]:
    """The columns of lake table ``table`` with their DuckDB types, in order."""
    return [(f.name, _DUCKDB_TYPES[f.type]) for f in SCHEMAS[table]]


def empty_table_sql(table: str) -> str:
    """A query of no rows with the columns of lake table ``table`` (for a table a read-only lake lacks)."""
    return f"(SELECT {', '.join(f'CAST(NULL AS {kind}) AS {name}' for name, kind in column_types(table))} WHERE false)"


def conform(table: str, data: pa.Table) -> pa.Table:
    """``data`` with exactly the columns of lake table ``table``, in its order and types: a missing
    column is nulls (rows written before it existed), an unknown one a KeyError."""
    schema = SCHEMAS[table]
    extra = set(data.column_names) - set(schema.names)
    if extra:
        raise KeyError(f"{table}: unknown columns {sorted(extra)}")
    return pa.table([data[f.name].cast(f.type) if f.name in data.column_names else pa.nulls(data.num_rows, f.type)
                     for f in schema], schema=schema)
