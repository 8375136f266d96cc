"""``--at``: a snapshot id, a time or a run resolved to the DuckLake snapshot that answers as of
it (tasks/lake/snapshots.py), on a lake whose commits carry their run's id as ingestion does."""

from __future__ import annotations

import datetime as dt
import re

import duckdb
import pytest

from conftest import run_cli, write_config
from tasks.errors import ConfigError
from tasks.lake.lake import Lake
from tasks.lake.snapshots import resolve_snapshot
from tasks.lake.views import query
from tasks.lake.writes import write_rows
from tasks.records import now_utc


def responses(prefix: str, run_id: str, n: int = 100) -> list[dict]:
    """``n`` responses of run ``run_id`` with ids of their own (``<prefix>-<j>``)."""
    return [{"response_id": f"{prefix}-{j}", "request_id": f"{prefix}-{j}", "run_id": run_id, "status": "ok",
             "created_at": now_utc()} for j in range(n)]


def count_at(con: duckdb.DuckDBPyConnection, at: str) -> int:
    version = resolve_snapshot(con, at)
    return query(con, f"SELECT count(*) AS n FROM lake.responses AT (VERSION => {version})")[0]["n"]


@pytest.fixture
def lake(tmp_path):
    """A lake where run r1 stored 200 responses and its run row, then run r2 100 more (each write
    a commit carrying its run's id); with the last snapshot of r1 and a time between the two runs."""
    lake = Lake(str(tmp_path / "lake"))
    write_rows(lake, "runs", [{"run_id": "r1", "kind": "sweep", "status": "completed", "started_at": now_utc()}])
    write_rows(lake, "responses", responses("r1a", "r1"))
    end_of_r1 = write_rows(lake, "responses", responses("r1b", "r1"))
    between = dt.datetime.now(dt.timezone.utc)
    write_rows(lake, "responses", responses("r2", "r2"))
    with lake.connect("") as con:
        yield lake, con, end_of_r1, between


def test_a_run_a_snapshot_id_and_a_time_each_answer_as_then(lake):
    _, con, end_of_r1, between = lake
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
    lake, con, end_of_r1, _ = lake
    latest = con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('lake')").fetchone()[0]
    for at, reason in [
        (str(latest + 1), f"no snapshot {latest + 1}: the latest is {latest}"),
        ("1999-01-01", "1999-01-01T00:00:00+00:00 is before the first snapshot kept (0, at "),
        ("2026-13-45", "'2026-13-45' is not an ISO time"),
        ("20261103T100000-1a2b3c4d", "is no snapshot id, ISO time (2026-11-03T10:00) or run id of this lake"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(reason)):
            resolve_snapshot(con, at)
    lake.compact(expire_before=now_utc())  # expires every snapshot but the last one
    with pytest.raises(ConfigError, match=f"snapshot {end_of_r1} was expired by compaction: the oldest kept is"):
        resolve_snapshot(con, str(end_of_r1))
    with pytest.raises(ConfigError, match="run r1 is stored, but no snapshot kept names it"):
        resolve_snapshot(con, "r1")


def test_a_lake_never_written_to_is_refused(tmp_path):
    with Lake(str(tmp_path / "lake"), read_only=True).connect("") as con:
        with pytest.raises(ConfigError, match="this lake has no snapshots yet"):
            resolve_snapshot(con, "r1")
    assert not (tmp_path / "lake").exists()  # a reader wrote nothing


def test_sql_at_what_names_no_snapshot_is_bad_input(tmp_path):
    cfg = write_config(tmp_path / "c.toml", {"warehouse": {"path": str(tmp_path / "wh")}})
    result = run_cli("sql", "--config", str(cfg), "--at", "no-such-run", "SELECT count(*) AS n FROM responses")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "error: --at no-such-run: " in result.stderr and "Traceback" not in result.stderr


def test_sql_at_a_run_answers_as_the_lake_was_when_it_ended(tmp_path):
    cfg = write_config(tmp_path / "c.toml", {"warehouse": {"path": str(tmp_path / "wh")}})
    lake = Lake(str(tmp_path / "wh" / "lake"))
    write_rows(lake, "responses", responses("r1a", "r1"))
    write_rows(lake, "responses", responses("r2", "r2"))
    count = "SELECT count(*) AS n, count(DISTINCT run_id) AS runs FROM responses"
    for at, expected in [("r1", "100,1"), ("r2", "200,2"), (None, "200,2")]:
        result = run_cli("sql", "--config", str(cfg), *(["--at", at] if at else []), "--format", "csv", count)
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.split() == ["n,runs", expected]
