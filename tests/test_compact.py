"""Compaction (tasks/lake/compact.py): a process's small files become one merged file per table and day,
the views never show a row twice or lose one (not even when a compaction is killed half-way), and
``invarbench compact`` finishes what killed processes left."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.lake import compact
from tasks.lake.lake import Lake
from tasks.lake.schemas import REPLACES_KEY, SCHEMAS
from tasks.lake.writes import write_rows
from tasks.records import now_utc
from tasks.runs import lifecycle
from conftest import run_cli, write_config


def response(i: int, run_id: str = "r1") -> dict:
    return {"response_id": f"resp-{i}", "request_id": f"req-{i}", "run_id": run_id, "model": "m",
            "status": "ok", "text": f"answer {i}", "attempts": 1, "created_at": now_utc()}


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.parquet"))


def today_folder(lake: Path, table: str) -> Path:
    return lake / table / f"day={now_utc():%Y-%m-%d}"


def response_ids(lake: Lake) -> list[str]:
    return [r["response_id"] for r in lake.read("SELECT response_id FROM responses ORDER BY response_id")]


@pytest.fixture
def lake(tmp_path):
    path = tmp_path / "lake"
    Lake(str(path)).ensure()
    Lake(str(path)).take_written()
    yield path
    Lake(str(path)).take_written()


def test_a_run_ends_with_one_file_per_table_and_day_holding_every_row(lake):
    run = lifecycle.Run(Lake(str(lake)), "r1", "sweep", config="{}", models="[]", heartbeat_s=3600)
    run.start()
    for i in range(0, 30, 3):
        write_rows(Lake(str(lake)), "responses", [response(i), response(i + 1), response(i + 2)])
    before = Lake(str(lake)).read("SELECT * FROM responses ORDER BY response_id")
    assert len(files(today_folder(lake, "responses"))) == 10
    run.finish()

    # responses: ten files became one; runs: the running and completed rows, one file
    for table in ("responses", "runs"):
        names = files(today_folder(lake, table))
        assert len(names) == 1 and names[0].startswith("merged-"), names
    assert Lake(str(lake)).read("SELECT * FROM responses ORDER BY response_id") == before
    assert [r["status"] for r in Lake(str(lake)).read("SELECT status FROM runs")] == ["completed"]
    merged = pq.read_schema(next(today_folder(lake, "responses").glob("merged-*.parquet")))
    assert len(merged.metadata[REPLACES_KEY].decode().split("\n")) == 10
    assert Lake(str(lake)).take_written() == []  # handed out once


def test_units_of_a_run_merge_their_files_as_they_end_and_the_run_merges_the_units(lake):
    run = lifecycle.Run(Lake(str(lake)), "r1", "sweep", config="{}", models="[]", heartbeat_s=3600)
    run.start()
    folder = today_folder(lake, "responses")
    seen = []
    for unit in range(3):
        for i in range(unit * 10, unit * 10 + 10, 2):
            write_rows(Lake(str(lake)), "responses", [response(i), response(i + 1)])
        compact.compact_written(Lake(str(lake)), final=False)
        seen.append(len(files(folder)))
        # every row stays visible once while the run goes on
        assert response_ids(Lake(str(lake))) == sorted(f"resp-{i}" for i in range((unit + 1) * 10))
    assert seen == [1, 2, 3]  # one file per unit, not five
    # more units than a folder may keep: their files are merged again, every row still once
    for unit in range(3, 3 + compact._KEPT_MAX):
        write_rows(Lake(str(lake)), "responses", [response(2 * unit + 100), response(2 * unit + 101)])
        compact.compact_written(Lake(str(lake)), final=False)
        assert len(files(folder)) <= compact._KEPT_MAX
    assert len(response_ids(Lake(str(lake)))) == 30 + 2 * compact._KEPT_MAX
    run.finish()

    names = files(folder)
    assert len(names) == 1 and names[0].startswith("merged-"), names
    extra = [f"resp-{i}" for u in range(3, 3 + compact._KEPT_MAX) for i in (2 * u + 100, 2 * u + 101)]
    assert response_ids(Lake(str(lake))) == sorted([f"resp-{i}" for i in range(30)] + extra)
    # the run's file names every small file, through the units' files it replaced
    replaced = pq.read_schema(folder / names[0]).metadata[REPLACES_KEY].decode().split("\n")
    assert sum(not n.startswith("merged-") for n in replaced) == 15 + compact._KEPT_MAX
    assert Lake(str(lake)).kept == []  # nothing kept aside after the run's end


def test_a_unit_merge_that_fails_leaves_the_earlier_units_files_to_the_runs_final_merge(lake, monkeypatch):
    run = lifecycle.Run(Lake(str(lake)), "r1", "sweep", config="{}", models="[]", heartbeat_s=3600)
    run.start()
    folder = today_folder(lake, "responses")
    for unit in range(2):  # two units, each merged into one file kept aside for the run's end
        write_rows(Lake(str(lake)), "responses", [response(2 * unit), response(2 * unit + 1)])
        compact.compact_written(Lake(str(lake)), final=False)
    kept = set(Lake(str(lake)).kept)
    assert len(kept) >= 2

    def refuse(lake_, paths):
        raise OSError("disk full")

    write_rows(Lake(str(lake)), "responses", [response(10), response(11)])
    with monkeypatch.context() as m:
        m.setattr(compact, "compact_files", refuse)
        assert compact.compact_written(Lake(str(lake)), final=False).written == 0  # logged, not raised
    assert kept <= set(Lake(str(lake)).kept)  # still set aside for the final merge
    run.finish()

    names = files(folder)
    assert sum(n.startswith("merged-") for n in names) == 1, names
    replaced = set(pq.read_schema(folder / next(n for n in names if n.startswith("merged-")))
                   .metadata[REPLACES_KEY].decode().split("\n"))
    assert {Path(k).name for k in kept if "/responses/" in k} <= replaced
    assert response_ids(Lake(str(lake))) == sorted(f"resp-{i}" for i in (0, 1, 2, 3, 10, 11))


def test_a_compaction_killed_before_it_deleted_the_small_files_shows_each_row_once(lake, monkeypatch):
    for i in range(6):
        write_rows(Lake(str(lake)), "responses", [response(i)])
    paths = Lake(str(lake)).take_written()
    # Killed after writing the merged file, before deleting anything.
    monkeypatch.setattr(compact, "_delete", lambda fs, paths: 0)
    compact.compact_files(Lake(str(lake)), paths)
    folder = today_folder(lake, "responses")
    assert len(files(folder)) == 7  # six small files and the merged file that names them
    assert response_ids(Lake(str(lake))) == [f"resp-{i}" for i in range(6)]
    assert Lake(str(lake)).read("SELECT count(*) AS n FROM raw_responses") == [{"n": 6}]

    # `invarbench compact` deletes what a merged file names (today's folder included with --before).
    monkeypatch.undo()
    stats = compact.compact_lake(Lake(str(lake)), before=now_utc().date() + dt.timedelta(days=1))
    assert stats.deleted == 6 and stats.written == 0
    assert len(files(folder)) == 1
    assert response_ids(Lake(str(lake))) == [f"resp-{i}" for i in range(6)]


def test_a_compaction_killed_while_writing_the_merged_file_changes_nothing(lake, monkeypatch):
    for i in range(4):
        write_rows(Lake(str(lake)), "responses", [response(i)])
    paths = Lake(str(lake)).take_written()

    read = compact._read

    def killed_at_the_third(fs, file):
        if file.path == sorted(paths)[2]:
            raise KeyboardInterrupt("killed mid-write")
        return read(fs, file)

    monkeypatch.setattr(compact, "_read", killed_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        compact.compact_files(Lake(str(lake)), paths)
    folder = today_folder(lake, "responses")
    # the merged file was half written: nothing of it is left, the small files stand
    assert len(files(folder)) == 4 and not [p for p in folder.iterdir() if p.name.startswith(".tmp-")]
    assert response_ids(Lake(str(lake))) == [f"resp-{i}" for i in range(4)]


def test_a_merged_file_merged_again_keeps_every_row_once_and_hands_on_what_it_replaced(lake, monkeypatch):
    for i in range(3):
        write_rows(Lake(str(lake)), "responses", [response(i)])
    monkeypatch.setattr(compact, "_delete", lambda fs, paths: 0)  # the first compaction leaves its sources
    compact.compact_files(Lake(str(lake)), Lake(str(lake)).take_written())
    monkeypatch.undo()
    for i in range(3, 5):
        write_rows(Lake(str(lake)), "responses", [response(i)])
    Lake(str(lake)).take_written()
    folder = today_folder(lake, "responses")
    stats = compact.compact_lake(Lake(str(lake)), before=now_utc().date() + dt.timedelta(days=1))
    # the three leftovers deleted; the merged file and the two new files merged into one
    assert (stats.deleted, stats.merged, stats.written) == (3 + 3, 3, 1)
    [name] = files(folder)
    replaced = set(pq.read_schema(folder / name).metadata[REPLACES_KEY].decode().split("\n"))
    assert len(replaced) == 6  # its three sources, the first merged file and the first merge's three
    assert response_ids(Lake(str(lake))) == [f"resp-{i}" for i in range(5)]


def test_files_from_before_a_column_existed_are_merged_with_it_as_null(lake):
    old_schema = pa.schema([f for f in SCHEMAS["responses"] if f.name != "cost_usd"])
    folder = lake / "responses" / "day=2024-01-01"
    folder.mkdir(parents=True)
    for i in range(3):
        row = {k: v for k, v in response(i).items()}
        pq.write_table(pa.Table.from_pylist([row], schema=old_schema), folder / f"part-old-{i}.parquet")
    write_rows(Lake(str(lake)), "responses", [{**response(9), "cost_usd": 0.25}])
    stats = compact.compact_lake(Lake(str(lake)))  # today's folder is not touched: before yesterday only
    assert (stats.merged, stats.written) == (3, 1)
    assert len(files(folder)) == 1 and len(files(today_folder(lake, "responses"))) == 1
    rows = Lake(str(lake)).read("SELECT response_id, cost_usd, day FROM raw_responses ORDER BY response_id")
    assert rows == [{"response_id": f"resp-{i}", "cost_usd": None, "day": dt.date(2024, 1, 1)} for i in range(3)] \
        + [{"response_id": "resp-9", "cost_usd": 0.25, "day": now_utc().date()}]


def test_a_file_with_a_column_the_table_no_longer_has_is_left_as_it_is(lake):
    folder = lake / "responses" / "day=2024-01-01"
    folder.mkdir(parents=True)
    for i in range(2):
        pq.write_table(pa.table({"response_id": [f"resp-{i}"], "retired_column": [1]}), folder / f"part-{i}.parquet")
    assert compact.compact_lake(Lake(str(lake))).written == 0
    assert len(files(folder)) == 2


def test_files_written_by_another_tool_merge_when_their_values_convert_and_stay_when_not(lake):
    # pandas' conventions: int32 counts, latencies as text; one folder converts, the other has "1,5"
    for day, latencies in (("2024-03-01", ["1.5", "2.25"]), ("2024-03-02", ["1.5", "1,5"])):
        folder = lake / "responses" / f"day={day}"
        folder.mkdir(parents=True)
        for i, latency in enumerate(latencies):
            pq.write_table(pa.table({"response_id": [f"{day}-{i}"], "status": ["ok"],
                                     "attempts": pa.array([i + 1], pa.int32()), "latency_s": [latency]}),
                           folder / f"export-{i}.parquet")
    stats = compact.compact_lake(Lake(str(lake)))
    assert (stats.merged, stats.written) == (2, 1)
    assert len(files(lake / "responses" / "day=2024-03-01")) == 1
    assert len(files(lake / "responses" / "day=2024-03-02")) == 2
    rows = pq.read_table(next((lake / "responses" / "day=2024-03-01").glob("merged-*.parquet"))).to_pylist()
    assert [(r["attempts"], r["latency_s"]) for r in rows] == [(1, 1.5), (2, 2.25)]


def test_the_compact_command_merges_old_folders_and_shows_what_it_did(tmp_path):
    cfg = write_config(tmp_path / "c.toml", {"warehouse": {"path": str(tmp_path / "wh")}})
    lake = tmp_path / "wh" / "lake"
    Lake(str(lake)).ensure()
    for day in ("2024-01-01", "2024-01-02"):
        folder = lake / "responses" / f"day={day}"
        folder.mkdir(parents=True)
        for i in range(5):
            pq.write_table(pa.Table.from_pylist([response(i, run_id=day)], schema=SCHEMAS["responses"]),
                           folder / f"part-{i}.parquet")
    done = run_cli("compact", "--config", str(cfg))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "merged 10 file(s) into 2" in done.stdout
    assert [len(files(lake / "responses" / f"day={d}")) for d in ("2024-01-01", "2024-01-02")] == [1, 1]
    assert Lake(str(lake)).read("SELECT count(*) AS n FROM responses") == [{"n": 10}]

    # An unusable lake is a configuration error: exit 2, nothing written.
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the warehouse folder should be", encoding="utf-8")
    bad = write_config(tmp_path / "bad.toml", {"warehouse": {"path": str(blocked / "wh")}})
    failed = run_cli("compact", "--config", str(bad))
    assert failed.returncode == 2, failed.stdout + failed.stderr
    assert "lake" in failed.stderr and os.path.isfile(blocked)
