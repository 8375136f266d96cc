"""``--at``: a snapshot id, a time or a run resolved to the DuckLake snapshot that answers as of
it (tasks/lake/snapshots.py), on a lake whose commits carry their run's id as ingestion does."""

from __future__ import annotations

import datetime as dt
import json
import re

import duckdb
import pyarrow as pa
import pytest

from conftest import run_cli, write_config
from tasks.errors import ConfigError
from tasks.lake.ducklake import DuckLakeStore, compact, snapshot
from tasks.lake.schemas import SCHEMAS
from tasks.lake.snapshots import resolve_snapshot
from tasks.lake.views import query
from test_ducklake import responses


def commit_for_run(con: duckdb.DuckDBPyConnection, table: str, chunk: pa.Table, run_id: str) -> int:
    """One transaction as a run's stage commits it: its message carries the run id."""
    con.register("chunk", chunk)
    con.execute("BEGIN")
    con.execute(f"INSERT INTO lake.main.{table} SELECT * FROM chunk")
    con.execute("CALL ducklake_set_commit_message('lake', 'invarbench', ?, extra_info => ?)",
                [f"{run_id} {table}", json.dumps({"run_id": run_id})])
    con.execute("COMMIT")
    con.unregister("chunk")
    return snapshot(con)


def count_at(con: duckdb.DuckDBPyConnection, at: str) -> int:
    version = resolve_snapshot(con, at)
    return query(con, f"SELECT count(*) AS n FROM lake.responses AT (VERSION => {version})")[0]["n"]


@pytest.fixture
def lake(tmp_path):
    """A lake where run r1 stored 200 responses and its run row, then run r2 100 more; with the
    last snapshot of r1 and a time between the two runs."""
    con = DuckLakeStore.local(tmp_path / "wh").connect()
    run = {name: None for name in SCHEMAS["runs"].names}
    commit_for_run(con, "runs", pa.Table.from_pylist([{**run, "run_id": "r1"}], schema=SCHEMAS["runs"]), "r1")
    commit_for_run(con, "responses", responses("r1a"), "r1")
    end_of_r1 = commit_for_run(con, "responses", responses("r1b"), "r1")
    between = dt.datetime.now(dt.timezone.utc)
    commit_for_run(con, "responses", responses("r2"), "r2")
    yield con, end_of_r1, between
    con.close()


def test_a_run_a_snapshot_id_and_a_time_each_answer_as_then(lake):
    con, end_of_r1, between = lake
    assert resolve_snapshot(con, "r1") == end_of_r1
    assert count_at(con, "r1") == 200
    assert count_at(con, "r2") == 300
    assert count_at(con, str(end_of_r1)) == 200
    assert resolve_snapshot(con, f" {end_of_r1} ") == end_of_r1
    assert resolve_snapshot(con, between.isoformat()) == end_of_r1
    # A time without a zone is UTC; in another zone it is the same instant.
    assert resolve_snapshot(con, between.replace(tzinfo=None).isoformat()) == end_of_r1
    assert resolve_snapshot(con, between.astimezone(dt.timezone(dt.timedelta(hours=5))).isoformat()) == end_of_r1
    assert count_at(con, (between + dt.timedelta(days=1)).isoformat()) == 300


def test_what_names_no_snapshot_is_refused_with_the_reason(lake):
    con, end_of_r1, _ = lake
    latest = snapshot(con)
    for at, reason in [
        (str(latest + 1), f"no snapshot {latest + 1}: the latest is {latest}"),
        ("1999-01-01", "1999-01-01T00:00:00+00:00 is before the first snapshot kept (0, at "),
        ("2026-13-45", "'2026-13-45' is not an ISO time"),
        ("20261103T100000-1a2b3c4d", "is no snapshot id, ISO time (2026-11-03T10:00) or run id of this lake"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(reason)):
            resolve_snapshot(con, at)
    compact(con)  # expires every snapshot but its own last one
    with pytest.raises(ConfigError, match=f"snapshot {end_of_r1} was expired by compaction: the oldest kept is"):
        resolve_snapshot(con, str(end_of_r1))
    with pytest.raises(ConfigError, match="run r1 is stored, but no snapshot kept names it"):
        resolve_snapshot(con, "r1")


def test_a_lake_without_snapshots_is_refused():
    con = duckdb.connect()
    con.execute("ATTACH ':memory:' AS lake")
    with pytest.raises(ConfigError, match="this lake has no snapshots"):
        resolve_snapshot(con, "r1")


def test_sql_at_what_names_no_snapshot_is_bad_input(tmp_path):
    cfg = write_config(tmp_path / "c.toml", {"warehouse": {"path": str(tmp_path / "wh")}})
    result = run_cli("sql", "--config", str(cfg), "--at", "no-such-run", "SELECT count(*) AS n FROM responses")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "error: --at no-such-run: " in result.stderr and "Traceback" not in result.stderr
