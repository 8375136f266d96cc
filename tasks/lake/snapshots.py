"""Which DuckLake snapshot a user's ``--at`` names: a snapshot id, a time, or a run.

Every commit of a run carries the run's id in its snapshot's ``extra_info``
(``ducklake_set_commit_message('lake', 'invarbench', message, extra_info => '{"run_id": "…"}')``),
so the lake as a run left it is the last snapshot that names the run, and reading it
``AT (VERSION => n)`` answers as then: a report from last month reproduced exactly, as long as
its snapshots have not been expired. Snapshots: https://ducklake.select/docs/stable/duckdb/usage/snapshots
"""

from __future__ import annotations

import datetime as dt
import re

import duckdb

from tasks.errors import ConfigError
from tasks.lake.ducklake import ALIAS

# A time in ISO 8601's extended form (2026-11-03, 2026-11-03T10:00, ... +02:00); run ids
# (20261103T100000-1a2b3c4d) are in the basic form, which the hyphens keep apart.
_ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}([T ].*)?")


def resolve_snapshot(con: duckdb.DuckDBPyConnection, at: str) -> int:
    """The id of the snapshot ``at`` names, on ``con`` with the lake attached as ``lake``.

    ``at`` is a snapshot id (it must still exist), an ISO time (the last snapshot at or before it;
    a time without a zone is UTC, a date alone its midnight) or a run id (the last snapshot whose
    commit carries it). Raises ConfigError saying why none fits: no such snapshot or run, a time
    before the first snapshot kept, or a snapshot expired by compaction.
    """
    at = at.strip()
    _require_ducklake(con)
    first, last = con.execute(f"SELECT min(snapshot_id), max(snapshot_id) FROM ducklake_snapshots('{ALIAS}')").fetchone()
    if at.isdigit():
        return _existing(con, int(at), first, last)
    if _ISO_TIME.fullmatch(at):
        return _at_time(con, _utc(at), first)
    found = con.execute(f"SELECT max(snapshot_id) FROM ducklake_snapshots('{ALIAS}') "
                        "WHERE json_extract_string(commit_extra_info, '$.run_id') = ?", [at]).fetchone()[0]
    if found is not None:
        return found
    if con.execute(f"SELECT count(*) FROM {ALIAS}.main.runs WHERE run_id = ?", [at]).fetchone()[0]:
        raise ConfigError(f"run {at} is stored, but no snapshot kept names it (expired by compaction, the "
                          f"oldest kept being {first}, or imported from a lake before snapshots)")
    raise ConfigError(f"{at!r} is no snapshot id, ISO time (2026-11-03T10:00) or run id of this lake "
                      "(invarbench runs lists the runs)")


def _require_ducklake(con: duckdb.DuckDBPyConnection) -> None:
    kind = con.execute("SELECT type FROM duckdb_databases() WHERE database_name = ?", [ALIAS]).fetchone()
    if not kind or kind[0] != "ducklake":
        raise ConfigError("this lake has no snapshots yet: nothing was ever written to it")


def _existing(con: duckdb.DuckDBPyConnection, snapshot: int, first: int, last: int) -> int:
    if snapshot > last:
        raise ConfigError(f"no snapshot {snapshot}: the latest is {last}")
    kept = con.execute(f"SELECT count(*) FROM ducklake_snapshots('{ALIAS}') WHERE snapshot_id = ?",
                       [snapshot]).fetchone()[0]
    if not kept:
        raise ConfigError(f"snapshot {snapshot} was expired by compaction: the oldest kept is {first}")
    return snapshot


def _utc(text: str) -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"{text!r} is not an ISO time such as 2026-11-03T10:00 or 2026-11-03 10:00+02:00") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def _at_time(con: duckdb.DuckDBPyConnection, moment: dt.datetime, first: int) -> int:
    found = con.execute(f"SELECT max(snapshot_id) FROM ducklake_snapshots('{ALIAS}') WHERE snapshot_time <= ?",
                        [moment]).fetchone()[0]
    if found is None:
        since = con.execute(f"SELECT snapshot_time FROM ducklake_snapshots('{ALIAS}') WHERE snapshot_id = ?",
                            [first]).fetchone()[0]
        raise ConfigError(f"{moment.isoformat()} is before the first snapshot kept ({first}, at "
                          f"{since.astimezone(dt.timezone.utc).isoformat()})")
    return found
