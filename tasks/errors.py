"""The errors every floor raises and the commands catch: a bad configuration and an unusable lake.

They live on the ground floor so that the lake, which raises them, need not import the
configuration file's module, which stands above it.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration problem; the message names the key and what is wrong with it."""


class LakeError(ConfigError):
    """The lake cannot be used: an unreachable endpoint, a missing bucket, wrong credentials."""


# How a full disk reaches us: the OS's ENOSPC through DuckDB's writers, SQLite's SQLITE_FULL, or
# SQLite's I/O error when it cannot even grow its shared-memory file beside a WAL catalog.
_DISK_FULL = ("No space left on device", "database or disk is full", "disk I/O error")
# How a full object store refuses an upload, through DuckDB's httpfs: HTTP 507 Insufficient
# Storage, with MinIO's code when its drives pass their free-space threshold (AWS's S3 never fills).
_STORE_FULL = ("Insufficient Storage", "HTTP code 507", "XMinioStorageFull")


def storage_full(exc: BaseException) -> str | None:
    """What ``exc`` (or what it was raised from) found full when it wrote: ``"disk"``, ``"object
    store"``, or None when it says neither."""
    while exc is not None:
        if isinstance(exc, OSError) and exc.errno == 28 or any(s in str(exc) for s in _DISK_FULL):
            return "disk"
        if any(s in str(exc) for s in _STORE_FULL):
            return "object store"
        exc = exc.__cause__ or exc.__context__
    return None
