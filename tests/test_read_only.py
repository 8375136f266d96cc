"""``sql``, ``runs`` and ``models`` only read (issue #32): no lake file is written, locally or on
object storage (a real S3 server on 127.0.0.1, tests/s3_server.py), not even a table the lake does
not have yet (a lake an earlier release wrote, before ``dataset_items``): its catalog is attached
read-only.

The CLI runs in-process (typer's runner).
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import s3_server
from conftest import running_s3_server, write_config
from flows.cli import app
from tasks.items.generate import generate_task, item_row
from tasks.lake.lake import Lake
from tasks.lake.writes import write_rows

READS = [["sql", "SELECT count(*) AS n FROM items", "--format", "json"],
         ["sql", "SELECT count(*) AS n FROM dataset_items", "--format", "json"], ["runs"], ["models"]]


def items() -> list[dict]:
    _, generated = generate_task("symmetry", "identity", {}, 0)
    return [item_row(i, "olddataset") for i in generated]


def run_reads(cfg) -> list[str]:
    outputs = []
    for args in READS:
        result = CliRunner().invoke(app, [*args, "--config", str(cfg)])
        assert result.exit_code == 0, result.output
        outputs.append(result.stdout)
    return outputs


def local_files(root) -> dict[str, tuple[int, int]]:
    # SQLite's WAL index (-shm) and an empty log (-wal) appear whenever a WAL database is read, and
    # hold no data: the catalog file itself and every data file must stay as they were.
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")
            if p.is_file() and not p.name.endswith(("-shm", "-wal"))}


def test_reads_write_nothing_to_a_local_lake_of_an_earlier_release(tmp_path):
    lake = tmp_path / "wh" / "lake"
    rows = items()
    write_rows(Lake(str(lake)), "items", rows)
    with Lake(str(lake)).connect("") as con:
        con.execute("DROP TABLE lake.main.dataset_items")  # written before the table existed
    cfg = write_config(tmp_path / "cfg.toml", {"warehouse": {"path": str(tmp_path / "wh")}})
    before = local_files(lake)
    outputs = run_reads(cfg)
    assert local_files(lake) == before
    # the old items still name their dataset
    assert f'"n": {len(rows)}' in outputs[0] and f'"n": {len(rows)}' in outputs[1]


def test_reads_of_a_warehouse_never_written_create_no_lake(tmp_path):
    cfg = write_config(tmp_path / "cfg.toml", {"warehouse": {"path": str(tmp_path / "wh")}})
    outputs = run_reads(cfg)
    assert '"n": 0' in outputs[0] and "(no rows)" in outputs[2]
    assert not (tmp_path / "wh" / "lake").exists()


def test_a_write_inside_read_only_raises(tmp_path):
    with pytest.raises(RuntimeError, match="read-only"):
        write_rows(Lake(str(tmp_path / "lake"), read_only=True), "items", items())
    assert not (tmp_path / "lake").exists()


@pytest.fixture
def s3(tmp_path):
    with running_s3_server(tmp_path / "moto.log") as server:
        yield server


def objects(s3: s3_server.S3Server) -> dict[str, tuple[str, object]]:
    """Every object of the bucket with its ETag and time of last write: a PutObject changes one."""
    pages = s3.client().get_paginator("list_objects_v2").paginate(Bucket=s3_server.BUCKET)
    return {o["Key"]: (o["ETag"], o["LastModified"]) for page in pages for o in page.get("Contents", [])}


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_reads_issue_no_put_on_an_object_store_lake(s3, tmp_path):
    lake = Lake(s3.lake("old/lake"), catalog=f"sqlite:{tmp_path / 'wh' / 'lake-catalog.sqlite'}")
    rows = items()
    write_rows(lake, "items", rows)
    with lake.connect("") as con:
        con.execute("DROP TABLE lake.main.dataset_items")  # written before the table existed
    cfg = write_config(tmp_path / "cfg.toml", {"warehouse": {"path": str(tmp_path / "wh"), **s3.lake_config("old/lake")}})
    before = objects(s3)
    outputs = run_reads(cfg)
    assert objects(s3) == before
    assert f'"n": {len(rows)}' in outputs[0] and f'"n": {len(rows)}' in outputs[1]
