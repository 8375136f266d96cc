"""The lake as DuckLake tables (issue #31 stage 2, work in progress): import of an old Parquet
lake with the same marts, concurrent commits with compaction running, time travel."""

from __future__ import annotations

import datetime as dt
import inspect
import json
import shutil
import subprocess
import sys
from typing import Callable

import pyarrow as pa

from conftest import REPO
from tasks.lake.ducklake import DuckLakeStore, commit, compact, create_views, import_parquet_lake, snapshot
from tasks.lake.lake import Lake
from tasks.lake.schemas import SCHEMAS
from tasks.lake.views import query
from test_duckdb_pin import FIXTURE, assert_same_marts


def responses(prefix: str, n: int = 100) -> pa.Table:
    """``n`` responses with ids of their own (``<prefix>-<j>``), the other columns empty."""
    ids = [f"{prefix}-{j}" for j in range(n)]
    rows = {name: [None] * n for name in SCHEMAS["responses"].names}
    rows.update(response_id=ids, request_id=ids, status=["ok"] * n,
                created_at=[dt.datetime.now(dt.timezone.utc)] * n)
    return pa.table(rows, schema=SCHEMAS["responses"])


# A writer process: the chunk builder above, then a store from argv and its commits (or compactions).
WRITER = "import datetime as dt, json, sys\nimport pyarrow as pa\n" \
    "from tasks.lake.schemas import SCHEMAS\n" + inspect.getsource(responses) + """
from tasks.lake.ducklake import DuckLakeStore, commit, compact
from tasks.lake.engine import s3_secret
spec, who, n = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
s3 = spec.pop("s3", None)  # (endpoint, region): the secret from this process's AWS_* variables
store = DuckLakeStore(**spec, secret=s3_secret(*s3) if s3 else {})
con = store.connect()
for i in range(n):
    if who == "compactor":
        compact(con)
    else:
        commit(con, "responses", responses(f"{who}-{i}"), f"{who} chunk {i}")
"""


def run_writers(spec: dict, env: dict[str, str] | None = None) -> None:
    """Three processes committing 8 chunks of 100 responses each to the lake of ``spec``
    (DuckLakeStore's fields; ``s3``: endpoint and region of its secret) while a fourth compacts it."""
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, json.dumps(spec), who, n], cwd=REPO, env=env,
                              stderr=subprocess.PIPE, text=True)
             for who, n in [("w1", "8"), ("w2", "8"), ("w3", "8"), ("compactor", "4")]]
    for p in procs:
        assert p.wait(timeout=600) == 0, p.stderr.read()


def assert_every_row_once_after_compaction(con, stored_files: Callable[[], int]) -> None:
    """After :func:`run_writers`: 2,400 distinct responses, before and after one more compaction,
    and no file left on storage (``stored_files()`` counts them) beyond the listed ones and those
    of failed commit attempts."""
    assert query(con, "SELECT count(*) AS n, count(DISTINCT response_id) AS d FROM lake.responses") == [{"n": 2400, "d": 2400}]
    first = query(con, "SELECT min(snapshot_id) AS s FROM ducklake_snapshots('lake') WHERE commit_message = 'w1 chunk 0'")
    if first[0]["s"] is not None:  # not yet expired by a compaction
        at = query(con, f"SELECT count(*) AS n FROM lake.responses AT (VERSION => {first[0]['s']})")[0]["n"]
        assert at < 2400
    compact(con)
    assert query(con, "SELECT count(*) AS n FROM lake.responses")[0]["n"] == 2400
    files = query(con, "SELECT count(*) AS n FROM ducklake_list_files('lake', 'responses')")[0]["n"]
    # Commits retried on a busy catalog may leave the file of their failed attempt, in no snapshot
    # (compact deletes those once an hour old); every other file stored is a listed one.
    aborted = len(query(con, "SELECT * FROM ducklake_delete_orphaned_files('lake', dry_run => true, cleanup_all => true)"))
    assert files == stored_files() - aborted  # compaction left none of the files it replaced


def test_an_old_parquet_lake_imports_with_the_same_marts(tmp_path):
    old_lake = tmp_path / "old lake"
    shutil.copytree(FIXTURE / "warehouse" / "lake", old_lake)
    con = DuckLakeStore.local(tmp_path / "new warehouse").connect()
    copied = import_parquet_lake(con, Lake(str(old_lake)))
    assert copied["responses"] == 36 and copied["items"] == 18 and copied["claims"] == 0
    create_views(con)
    marts = json.loads((FIXTURE / "marts.json").read_text())["marts"]
    assert_same_marts(con, marts)


def test_three_writers_and_a_compactor_lose_and_duplicate_nothing(tmp_path):
    warehouse = tmp_path / "wh"
    store = DuckLakeStore.local(warehouse)
    store.connect().close()
    run_writers({"catalog": store.catalog, "data_path": store.data_path})
    assert_every_row_once_after_compaction(store.connect(),
                                           lambda: len(list((warehouse / "lake-data").rglob("*.parquet"))))


def test_a_run_can_read_the_lake_as_of_a_snapshot(tmp_path):
    con = DuckLakeStore.local(tmp_path / "wh").connect()
    row = {name: None for name in SCHEMAS["runs"].names}
    first = commit(con, "runs", pa.Table.from_pylist([{**row, "run_id": "r1", "status": "completed",
                                                          "started_at": dt.datetime.now(dt.timezone.utc)}],
                                                        schema=SCHEMAS["runs"]), "r1")
    commit(con, "runs", pa.Table.from_pylist([{**row, "run_id": "r2"}], schema=SCHEMAS["runs"]), "r2")
    assert snapshot(con) > first
    assert query(con, f"SELECT run_id FROM lake.runs AT (VERSION => {first})") == [{"run_id": "r1"}]
    assert query(con, "SELECT count(*) AS n FROM lake.runs")[0]["n"] == 2
