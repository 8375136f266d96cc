"""The ``[warehouse]`` keys of the configuration file: where the catalog, the lake and its
DuckLake catalog live, and each DuckDB connection's memory (a section of
:class:`tasks.config.Config`; its checks raise ValueError, which loading turns into a ConfigError
naming the key)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol

from pydantic import Field, field_validator, model_validator

from tasks.strict_config import StrictConfig

# A share of the memory DuckDB sees (the machine's, or the container's limit), as DuckDB's own
# default is: a lake that gave its marts before gives them still, and what does not fit spills to
# warehouse.spill_dir instead of growing further. A fixed size ("2GB", the laptop figure of
# bench/results.md) suits a small or shared machine, and makes the family marts of a lake past about
# a million responses fail with an out-of-memory error until they are materialised (issue #27).
DEFAULT_MEMORY_LIMIT = "80%"
# DuckDB's threads per database, a property of the machine rather than of the lake (as the embedded
# models' INVARBENCH_EMBEDDED_THREADS): unset, DuckDB's own default, one per core; when fewer pay:
# docs/operations.md, "Memory and spilling".
DUCKDB_THREADS_ENV = "INVARBENCH_DUCKDB_THREADS"
_SHARE = re.compile(r"(\d+(?:\.\d+)?)\s*%")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)", re.IGNORECASE)
_UNIT = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
         "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}
_MIN_MEMORY = 64 * 10**6  # below this DuckDB cannot even bind the views
# One keyword=value pair of a libpq connection string; a value may be single-quoted.
_LIBPQ_PAIR = re.compile(r"\s*(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|[^\s']+)")


class WarehouseConfig(StrictConfig):
    """Where data lives: the lake (Parquet) and the catalog (DuckDB views only)."""

    path: str = "warehouse"
    lake: str = Field("", description="lake location; default <path>/lake; may be an object-store URL "
                      "such as s3://bucket/prefix")
    # Never credentials here (the configuration is stored with each run): keys come from the
    # AWS_* variables, AWS_PROFILE or ~/.aws, as for any AWS client.
    endpoint_url: str = Field("", description="S3-compatible endpoint for an s3:// lake (MinIO, Ceph, R2), "
                              "e.g. http://127.0.0.1:9000; default AWS")
    region: str = Field("", description="region of an s3:// lake's bucket; default from AWS_REGION or ~/.aws")
    memory_limit: str = Field(DEFAULT_MEMORY_LIMIT, description="memory each DuckDB connection may use: "
                              "a size (DuckDB's syntax: 512MB, 2GB, 1.5GiB) or a share of the memory DuckDB "
                              "sees (80%, the default); beyond it queries spill to spill_dir")
    spill_dir: str = Field("", description="local folder where DuckDB spills what exceeds memory_limit; "
                           "default <system temp dir>/invarbench-spill (never inside an s3:// lake)")
    # Never a password here either: libpq reads PGPASSWORD or ~/.pgpass itself.
    catalog: str = Field("", description="the DuckLake catalog: \"\" for SQLite in the lake folder (an s3:// "
                         "lake's at <path>/lake-catalog.sqlite), \"sqlite:/abs/path\", or "
                         "\"postgres:<libpq connection string>\" (host=... dbname=... user=...)")

    @field_validator("memory_limit")
    @classmethod
    def _a_size(cls, value: str) -> str:
        share = _SHARE.fullmatch(value.strip())
        if share:
            if not 0 < float(share.group(1)) <= 100:
                raise ValueError(f"{value!r} is not a share of memory between 0% and 100%")
            return value.strip()
        size = _SIZE.fullmatch(value.strip())
        if not size:
            raise ValueError(f"{value!r} is not a size such as 512MB, 2GB or 1.5GiB, nor a share such as 50%")
        if float(size.group(1)) * _UNIT[size.group(2).upper()] < _MIN_MEMORY:
            raise ValueError(f"{value!r} is below 64MB, too little for DuckDB to read the views")
        return value.strip()

    @field_validator("spill_dir")
    @classmethod
    def _a_local_folder(cls, value: str) -> str:
        if "://" in value:
            raise ValueError(f"{value!r} is a URL; DuckDB spills to a local folder only")
        return value

    @field_validator("catalog")
    @classmethod
    def _a_catalog(cls, value: str) -> str:
        kind, _, rest = value.partition(":")
        if not value or (kind == "sqlite" and rest and "://" not in rest):
            return value
        if kind == "postgres":
            pairs = _LIBPQ_PAIR.findall(rest)
            if not rest.strip() or _LIBPQ_PAIR.sub("", rest).strip():
                raise ValueError(f"{value!r}: after postgres: comes a libpq connection string of key=value "
                                 "pairs, e.g. postgres:host=db.example dbname=lake user=invarbench")
            if any(key.lower() == "password" for key, _ in pairs):
                raise ValueError("a password is never written in the configuration (it is stored with each "
                                 "run): set PGPASSWORD or use ~/.pgpass")
            return value
        raise ValueError(f"{value!r} is not a catalog; expected \"\" (SQLite beside the lake), "
                         "\"sqlite:/abs/path\" or \"postgres:host=... dbname=... user=...\"")

    @field_validator("endpoint_url")
    @classmethod
    def _endpoint_is_a_url(cls, value: str) -> str:
        if value and (not value.startswith(("http://", "https://")) or "@" in value or "?" in value):
            raise ValueError(f"{value!r} is not an http(s) URL without credentials or options, "
                             "e.g. http://127.0.0.1:9000")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _options_need_an_s3_lake(self) -> "WarehouseConfig":
        for key in ("endpoint_url", "region"):
            if getattr(self, key) and not self.lake.startswith("s3://"):
                raise ValueError(f"{key} applies to an s3:// lake only, but lake is {self.lake or 'local'!r}")
        return self


class WarehouseSettings(Protocol):
    """What the lake and the catalog read of the whole configuration (:class:`tasks.config.Config`
    gives it; the configuration sits above the lake and gathers every section, so the lake names
    only what it reads)."""

    warehouse: WarehouseConfig

    @property
    def lake_path(self) -> str: ...

    @property
    def lake_catalog(self) -> str | None: ...

    @property
    def catalog_path(self) -> Path: ...
