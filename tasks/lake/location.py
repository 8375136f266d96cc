"""Where the lake lives: a local folder or an object-store URL (``s3://bucket/prefix``, with the
endpoint and region as a query string, see ``Config.lake_path``), and the DuckDB secret that lets
DuckDB's ``httpfs`` extension read and write an ``s3://`` lake (:func:`s3_secret_sql`).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tasks.errors import LakeError
from tasks.lake.engine import sql_literal


def is_url(lake: str) -> bool:
    """Whether the lake is an object-store URL (``s3://…``) rather than a local folder."""
    return "://" in lake


def lake_root(lake: str) -> str:
    """The lake's root: an absolute local path, or the URL without its options.

    A URL lake may carry options as a query string (``s3://bucket/lake?endpoint_override=…``,
    see ``Config.lake_path``); they configure the connection and are no part of the file paths.
    """
    if not is_url(lake):
        return str(Path(lake).expanduser().resolve())
    return lake.split("?", 1)[0].rstrip("/")


def s3_secret_sql(lake: str) -> str:
    """The SQL of a temporary DuckDB S3 secret for the ``s3://`` lake ``lake``: the credentials of
    the ``AWS_*`` environment variables, the endpoint and region of the lake URL's options (the
    region from ``AWS_REGION`` / ``AWS_DEFAULT_REGION`` otherwise). Raises LakeError without
    credentials."""
    key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not (key and secret):
        raise LakeError(f"the s3:// lake {lake_root(lake)} is read and written with AWS_ACCESS_KEY_ID and "
                        "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN if any) set in the environment")
    query = {k: v[-1] for k, v in parse_qs(urlsplit(lake).query).items()}
    options = {"TYPE": "s3", "KEY_ID": sql_literal(key), "SECRET": sql_literal(secret)}
    if token := os.environ.get("AWS_SESSION_TOKEN"):
        options["SESSION_TOKEN"] = sql_literal(token)
    if region := query.get("region") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION", ""):
        options["REGION"] = sql_literal(region)
    if endpoint := query.get("endpoint_override", ""):
        url = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        options.update(ENDPOINT=sql_literal(url.netloc), URL_STYLE="'path'", USE_SSL=str(url.scheme == "https").lower())
    body = ", ".join(f"{k} {v}" for k, v in options.items())
    return f"CREATE OR REPLACE TEMPORARY SECRET invarbench_lake ({body});"


def unusable_lake(lake: str, exc: Exception) -> LakeError:
    """The configuration error for a lake that cannot be read or written, with what to check."""
    hint = ("check the credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY), warehouse.endpoint_url "
            "and that the bucket exists") if is_url(lake) else "check warehouse.path / warehouse.lake"
    # DuckDB's messages name the operation, bucket and key, never the credentials.
    return LakeError(f"cannot use the lake {lake_root(lake)}: {exc}; {hint}")
