"""The lake is DuckLake (issue #31 stage 2): an old Parquet lake is imported once with the same
marts, a lake of the first DuckLake release opens with the same marts, a run's commits carry its
id, and the lake reads as of a snapshot (concurrent commits and compactions: tests/test_compact.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import REPO
from tasks.lake import ducklake
from tasks.lake.lake import Lake
from tasks.lake.old_layout import PRE_DUCKLAKE
from tasks.lake.views import query
from tasks.lake.writes import write_rows
from tasks.records import now_utc
from test_duckdb_pin import FIXTURE, assert_same_marts

DUCKLAKE_FIXTURE = FIXTURE.parent / "ducklake_warehouse"


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_an_old_parquet_lake_imports_once_with_the_same_marts(tmp_path):
    old_lake = tmp_path / "old lake"
    shutil.copytree(FIXTURE / "warehouse" / "lake", old_lake)
    lake = Lake(str(old_lake))
    assert lake.read("SELECT count(*) AS n FROM responses") == [{"n": 36}]
    assert lake.read("SELECT count(*) AS n FROM items") == [{"n": 18}]
    assert lake.read("SELECT count(*) AS n FROM claims") == [{"n": 0}]
    assert not lake.made_empty_here  # its runs were imported: a sweep reads them for crashed ones (flows.sweep_run.start_run)
    # the old folders are set aside, never deleted; only DuckLake's catalog and data remain
    assert sorted(p.name for p in old_lake.iterdir() if not p.name.startswith("catalog.sqlite")) == [PRE_DUCKLAKE, "data"]
    assert (old_lake / PRE_DUCKLAKE / "responses").is_dir()
    marts = json.loads((FIXTURE / "marts.json").read_text())["marts"]
    with lake.connect() as con:
        assert_same_marts(con, marts)
    # a new process opens it without importing again
    again = subprocess.run([sys.executable, "-c", "import sys; from tasks.lake.lake import Lake; "
                            "print(Lake(sys.argv[1]).read('SELECT count(*) AS n FROM responses')[0]['n'])", str(old_lake)],
                           cwd=REPO, capture_output=True, text=True, timeout=300)
    assert again.stdout.strip() == "36", again.stderr


def test_a_lake_written_by_the_first_ducklake_release_opens_with_the_same_marts(tmp_path):
    shutil.copytree(DUCKLAKE_FIXTURE / "warehouse", tmp_path / "moved warehouse")  # its data path is elsewhere
    lake = Lake(str(tmp_path / "moved warehouse" / "lake"), read_only=True)
    marts = json.loads((DUCKLAKE_FIXTURE / "marts.json").read_text())["marts"]
    assert sum(map(len, marts.values())) > 100
    with lake.connect() as con:
        assert_same_marts(con, marts)
    assert lake.read("SELECT status FROM runs") == [{"status": "completed"}]


def run_row(run_id: str, status: str) -> dict:
    return {"run_id": run_id, "kind": "sweep", "status": status, "started_at": now_utc(), "updated_at": now_utc()}


def test_a_runs_commits_carry_its_id_and_the_lake_reads_as_of_a_snapshot(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    first = write_rows(lake, "runs", [run_row("r1", "completed")])
    second = write_rows(lake, "runs", [run_row("r2", "running")])
    write_rows(lake, "items", [{"item_id": "i1", "created_at": now_utc()}])  # no run_id column
    assert second > first
    marks = lake.read("SELECT snapshot_id, commit_extra_info FROM ducklake_snapshots('lake') WHERE snapshot_id >= ? "
                      "ORDER BY 1", [first])
    assert [json.loads(m["commit_extra_info"]) if m["commit_extra_info"] else None for m in marks] == [
        {"run_id": "r1"}, {"run_id": "r2"}, None]
    with lake.connect("runs", at=first) as con:
        assert query(con, "SELECT run_id FROM runs") == [{"run_id": "r1"}]
    assert {r["run_id"] for r in lake.read("SELECT run_id FROM runs")} == {"r1", "r2"}




def test_a_commit_returns_its_own_snapshot_when_another_writer_commits_right_after(tmp_path, monkeypatch):
    mine = Lake(str(tmp_path / "lake"))
    # Another writer: a Lake of its own (the catalog spelt out) is another DuckDB, as in another process.
    other = Lake(mine.location, catalog=mine.catalog)
    assert other is not mine
    transaction = ducklake.in_transaction
    returned: dict[str, list[int]] = {"mine": [], "other": []}

    inside_the_others = []

    def then_the_other_commits(con, statements):
        transaction(con, statements)
        if not inside_the_others:  # my commit: the other writer commits before my snapshot id is read
            inside_the_others.append(True)
            returned["other"].append(write_rows(other, "responses", [{"response_id": f"o{len(returned['other'])}",
                                                                       "run_id": "other"}]))
            inside_the_others.clear()

    other.ensure()
    monkeypatch.setattr(ducklake, "in_transaction", then_the_other_commits)
    for i in range(3):
        returned["mine"].append(write_rows(mine, "responses", [{"response_id": f"m{i}", "run_id": "mine"}]))
    marks = {r["snapshot_id"]: json.loads(r["commit_extra_info"])["run_id"] for r in mine.read(
        "SELECT snapshot_id, commit_extra_info FROM ducklake_snapshots('lake') WHERE commit_extra_info IS NOT NULL")}
    assert {who: [marks[s] for s in ids] for who, ids in returned.items()} == {"mine": ["mine"] * 3,
                                                                               "other": ["other"] * 3}
