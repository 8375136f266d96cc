"""Compaction is DuckLake's (``invarbench compact``, ``tasks.lake.ducklake.compact``): small files
merged, inlined rows written out, files no snapshot needs deleted; the views never show a row
twice or lose one, not with two compactions at once nor with writes going on meanwhile."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Callable

import pytest

from conftest import REPO, run_cli, write_config
from tasks.lake.lake import Lake
from tasks.lake.views import query
from tasks.lake.writes import write_rows
from tasks.records import now_utc

# A process that writes `n` chunks of responses, or compacts `n` times, into the lake at argv[1]
# (its catalog argv[4] when given, else the default one).
WORKER = """
import sys
from tasks.lake.lake import Lake
from tasks.lake.writes import write_rows
from tasks.records import now_utc
lake, who, n = Lake(sys.argv[1], catalog=(sys.argv[4:] or [None])[0]), sys.argv[2], int(sys.argv[3])
for i in range(n):
    if who.startswith("compactor"):
        lake.compact()
    else:
        write_rows(lake, "responses", [{"response_id": f"{who}-{i}-{j}", "request_id": f"{who}-{i}-{j}",
                                         "run_id": who, "status": "ok", "created_at": now_utc()} for j in range(30)])
"""


def response(i: int, run_id: str = "r1") -> dict:
    return {"response_id": f"resp-{i}", "request_id": f"req-{i}", "run_id": run_id, "model": "m",
            "status": "ok", "text": f"answer {i}", "attempts": 1, "created_at": now_utc()}


def data_files(lake: Lake, table: str) -> int:
    return Lake(lake.location).read(f"SELECT count(*) AS n FROM ducklake_list_files('lake', '{table}')")[0]["n"]


def test_compaction_merges_the_small_files_and_keeps_every_row_once(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    for i in range(0, 60, 12):  # above DuckLake's inlining limit: each write is a Parquet file
        write_rows(lake, "responses", [response(j) for j in range(i, i + 12)])
    write_rows(lake, "responses", [response(99)])  # inlined in the catalog
    before = lake.read("SELECT * FROM responses ORDER BY response_id")
    assert data_files(lake, "responses") == 5
    assert lake.compact() == 6  # the five files and the file the inlined row was written out to
    assert data_files(lake, "responses") == 1
    assert lake.read("SELECT * FROM responses ORDER BY response_id") == before
    assert len(before) == 61
    on_disk = list((tmp_path / "lake" / "data").rglob("*.parquet"))
    assert len(on_disk) == sum(data_files(lake, t) for t in ("responses", "runs"))  # the replaced ones deleted
    # every snapshot stays readable until expired
    first = lake.read("SELECT min(snapshot_id) AS s FROM ducklake_snapshots('lake') WHERE snapshot_id > 1")[0]["s"]
    with lake.connect("responses", at=first) as con:
        assert query(con, "SELECT count(*) AS n FROM responses") == [{"n": 12}]
    before_expiry = lake.read("SELECT count(*) AS n FROM ducklake_snapshots('lake')")[0]["n"]
    lake.compact(expire_before=now_utc())
    assert lake.read("SELECT count(*) AS n FROM ducklake_snapshots('lake')")[0]["n"] < before_expiry


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_two_compactions_while_three_processes_write_lose_and_duplicate_nothing(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    assert_writers_and_compactors_lose_and_duplicate_nothing(
        lake, lambda: len(list((tmp_path / "lake" / "data" / "main" / "responses").rglob("*.parquet"))))


def assert_writers_and_compactors_lose_and_duplicate_nothing(lake: Lake, stored_files: Callable[[], int],
                                                             env: dict[str, str] | None = None) -> None:
    """Three processes write 10 chunks of 30 responses each to ``lake`` while two others compact
    it: every row is there once, and after one more compaction no file is left on storage
    (``stored_files()`` counts the responses' files there) but the listed ones and those of
    failed commit attempts."""
    lake.ensure()
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, lake.location, who, n, lake.catalog], cwd=REPO,
                              env=env, stderr=subprocess.PIPE, text=True)
             for who, n in [("w1", "10"), ("w2", "10"), ("w3", "10"), ("compactor1", "3"), ("compactor2", "3")]]
    for p in procs:
        assert p.wait(timeout=600) == 0, p.stderr.read()
    assert lake.read("SELECT count(*) AS n, count(DISTINCT response_id) AS d FROM responses") == [{"n": 900, "d": 900}]
    assert lake.read("SELECT run_id, count(*) AS n FROM responses GROUP BY ALL ORDER BY 1") == [
        {"run_id": "w1", "n": 300}, {"run_id": "w2", "n": 300}, {"run_id": "w3", "n": 300}]
    lake.compact(expire_before=now_utc())
    with lake.connect("") as con:
        assert query(con, "SELECT count(*) AS n FROM lake.responses")[0]["n"] == 900
        files = query(con, "SELECT count(*) AS n FROM ducklake_list_files('lake', 'responses')")[0]["n"]
        # Commits retried on a busy catalog may leave the file of their failed attempt, in no snapshot
        # (compact deletes those once an hour old); every other file stored is a listed one.
        aborted = len(query(con, "SELECT * FROM ducklake_delete_orphaned_files('lake', dry_run => true, cleanup_all => true)"))
    assert files == stored_files() - aborted  # compaction left none of the files it replaced


def test_the_compact_command_compacts_the_lake_and_shows_what_it_did(tmp_path):
    cfg = write_config(tmp_path / "c.toml", {"warehouse": {"path": str(tmp_path / "wh")}})
    lake = Lake(str(tmp_path / "wh" / "lake"))
    for i in range(0, 40, 20):
        write_rows(lake, "responses", [response(j) for j in range(i, i + 20)])
    done = run_cli("compact", "--config", str(cfg), "--expire-days", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "merged 2 file(s)" in done.stdout
    assert len(list((tmp_path / "wh" / "lake" / "data").rglob("*.parquet"))) == 1  # the two merged files deleted
    assert data_files(lake, "responses") == 1
    assert lake.read("SELECT count(*) AS n FROM responses") == [{"n": 40}]

    # An unusable lake is a configuration error: exit 2, nothing written.
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the warehouse folder should be", encoding="utf-8")
    bad = write_config(tmp_path / "bad.toml", {"warehouse": {"path": str(blocked / "wh")}})
    failed = run_cli("compact", "--config", str(bad))
    assert failed.returncode == 2, failed.stdout + failed.stderr
    assert "lake" in failed.stderr and os.path.isfile(blocked)
