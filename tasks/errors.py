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


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) says a write found the disk full."""
    while exc is not None:
        if isinstance(exc, OSError) and exc.errno == 28 or any(s in str(exc) for s in _DISK_FULL):
            return True
        exc = exc.__cause__ or exc.__context__
    return False
