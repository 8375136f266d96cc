"""Damage is contained (tasks.lake.quarantine): a data file that does not read is moved to the
lake's quarantine folder with a warning naming it, its rows leave the table, queries and sweeps go
on without it, and ``invarbench check`` lists it."""

from __future__ import annotations

import contextlib
import json
import logging
from pathlib import Path
from typing import Callable, Iterator

import duckdb
import pytest
import s3_server
from conftest import run_cli, running_s3_server
from fakes import FakeProvider, FakeServer
from test_ops import with_warehouse_keys
from test_spool import response
from test_stopping import N_ITEMS, config

from tasks.check import check_lake, data_files, quarantined_files
from tasks.config import load_config
from tasks.lake.lake import Lake
from tasks.lake.quarantine import FOLDER, read_error
from tasks.lake.writes import write_rows

ROWS = 1000  # per commit: enough for a data file of its own (DuckLake inlines small inserts in the catalog)
INLINED = 3  # rows of a commit DuckLake inlines in the catalog (10 rows or fewer): no file to set aside


def corrupt(path: str) -> None:
    with open(path, "r+b") as f:  # the footer overwritten, as a torn write or a bad disk leaves it
        f.seek(-64, 2)
        f.write(b"\0" * 64)


@contextlib.contextmanager
def bucket(tmp_path: Path) -> Iterator[tuple[s3_server.S3Server, Callable[[str], None]]]:
    """The moto S3 server of the test and how to corrupt one of its objects (``s3://…`` URL),
    overwritten through boto3 as :func:`corrupt` overwrites a local file."""
    with running_s3_server(tmp_path / "moto.log") as s3:
        def corrupt_object(url: str) -> None:
            key = url.split(f"{s3_server.BUCKET}/", 1)[1]
            body = s3.client().get_object(Bucket=s3_server.BUCKET, Key=key)["Body"].read()
            s3.client().put_object(Bucket=s3_server.BUCKET, Key=key, Body=body[:-64] + b"\0" * 64)
        yield s3, corrupt_object


@contextlib.contextmanager
def stored(kind: str, tmp_path: Path, request) -> Iterator[tuple[str, str | None, Callable[[str], None]]]:
    """A lake's location and catalog and how to corrupt one of its data files, for ``kind``
    "<data>-<catalog>": the data in a local folder or the moto S3 server's bucket (:func:`bucket`),
    the catalog the default SQLite file (a local one beside an object-store lake) or a database of
    the session's PostgreSQL."""
    data, catalog = kind.split("-")
    if catalog == "postgres":
        catalog = f"postgres:{request.getfixturevalue('postgres').create_database(f'quarantine_{tmp_path.name}')}"
    if data == "local":
        yield str(tmp_path / "lake"), None if catalog == "sqlite" else catalog, corrupt
        return
    with bucket(tmp_path) as (s3, corrupt_object):
        yield s3.lake("quarantine"), f"sqlite:{tmp_path / 'catalog.sqlite'}" if catalog == "sqlite" else catalog, corrupt_object


@pytest.mark.parametrize("kind", ["local-sqlite", *(pytest.param(k, marks=pytest.mark.slow)
                                                    for k in ("local-postgres", "s3-sqlite", "s3-postgres"))])
def test_an_unreadable_file_is_quarantined_and_queries_go_on_without_it(kind, tmp_path, caplog, request):
    with stored(kind, tmp_path, request) as (location, catalog, damage):
        lake = Lake(location, catalog=catalog)
        lake.ensure()
        for batch in ("a", "b"):
            write_rows(lake, "responses", [response(f"{batch}{i}") for i in range(ROWS)])
        write_rows(lake, "responses", [response(f"c{i}") for i in range(INLINED)])
        files = data_files(lake)
        assert len(files) == 2
        damage(files[1])
        with pytest.raises(duckdb.Error):  # a read-only command writes nothing: it fails, naming the file
            Lake(location, read_only=True, catalog=catalog).read("SELECT sum(latency_s) AS s FROM responses")
        with caplog.at_level(logging.WARNING, logger="tasks.lake.quarantine"):
            assert lake.read("SELECT count(text) AS n FROM responses") == [{"n": ROWS + INLINED}]  # the inlined kept
        assert files[1] in caplog.text and "quarantined" in caplog.text
        assert data_files(lake) == files[:1]
        [aside] = quarantined_files(lake)
        root = location.split("?", 1)[0]
        assert aside["table"] == "responses" and aside["file"] == f"{root}/{FOLDER}/responses/{Path(files[1]).name}"
        with lake.connect("") as con:
            assert read_error(con, aside["file"]) is not None  # the damaged file itself, moved whole
            folder = files[1].rsplit("/", 1)[0]  # the damaged file is gone from it:
            assert [f for (f,) in con.execute("SELECT file FROM glob(?) ORDER BY file", [f"{folder}/*"]).fetchall()] == files[:1]
        report = check_lake(Lake(location, read_only=True, catalog=catalog))
        found = {f.check: f.count for f in report.findings if f.found}
        # (the responses have no requests here: response_without_request counts them)
        assert found["quarantined_files"] == 1 and "unreadable_files" not in found and report.damaged


@contextlib.contextmanager
def swept(kind: str, tmp_path: Path, api_base: str, request) -> Iterator[tuple[Path, Callable[[str], None]]]:
    """The configuration of test_stopping's sweep on ``api_base`` and how to corrupt a data file of
    its lake, for ``kind`` "<data>-<catalog>" as in :func:`stored`: the data in the warehouse folder
    or a prefix of the moto S3 server's bucket (its credentials in this process's environment), the
    catalog the default SQLite file or a database of the session's PostgreSQL."""
    data, catalog = kind.split("-")
    cfg = config(tmp_path, api_base)
    if catalog == "postgres":
        database = request.getfixturevalue("postgres").create_database(f"swept_{tmp_path.name}")
        with_warehouse_keys(cfg, {"catalog": f"postgres:{database}"})
    if data == "local":
        yield cfg, corrupt
        return
    with bucket(tmp_path) as (s3, corrupt_object):
        with_warehouse_keys(cfg, s3.lake_config("swept/lake"))
        yield cfg, corrupt_object


@pytest.mark.slow  # whole sweeps, on the S3 server and PostgreSQL for two of them (seconds of CPU)
@pytest.mark.parametrize("kind", ["local-sqlite", "s3-sqlite", "s3-postgres"])
def test_a_sweep_goes_on_past_an_unreadable_file_and_sends_its_answers_again(kind, tmp_path, caplog, monkeypatch,
                                                                             request):
    state = FakeProvider()
    with FakeServer(state) as fake, swept(kind, tmp_path, fake.api_base, request) as (cfg, damage):
        first = run_cli("sweep", "--config", str(cfg))
        assert first.returncode == 0, first.stderr[-3000:]
        lake = Lake.of(load_config(cfg))
        # one of the files its answers were written in (one write, or more when the call stage
        # flushed before the end), and how many answers it holds (rows inlined in the catalog have no file)
        responses = sorted(f for f in data_files(lake) if "/responses/" in f)[0]
        with lake.connect("") as con:
            [(in_file,)] = con.execute("SELECT record_count FROM __ducklake_metadata_lake.ducklake_data_file "
                                       "WHERE parse_filename(path) = ?", [Path(responses).name]).fetchall()
        assert 0 < in_file <= N_ITEMS
        damage(responses)
        # The next sweep opens the lake afresh, as a process of its own does: this process's DuckDB
        # would read the file from its cache (DuckDB's external file cache keeps what it read).
        monkeypatch.setattr(Lake, "_OPEN", {})
        with caplog.at_level(logging.WARNING, logger="tasks.lake.quarantine"):
            second = run_cli("sweep", "--config", str(cfg))
        assert second.returncode == 0, second.stderr[-3000:]
        assert responses in caplog.text and "quarantined the unreadable data file" in caplog.text
        assert len(state.seen) == N_ITEMS + in_file  # the answers set aside were asked again, the others not
        lake = Lake.of(load_config(cfg))
        assert lake.read("SELECT count(*) AS n FROM ledger WHERE status = 'ok'") == [{"n": N_ITEMS}]
        [aside] = quarantined_files(lake)
        assert aside == {**aside, "table": "responses",
                         "file": f"{lake.root}/{FOLDER}/responses/{Path(responses).name}"}
        checked = run_cli("check", "--config", str(cfg), "--json")
        assert checked.returncode == 1, checked.stdout[-3000:]  # damage: a file in quarantine, listed
        [found] = [c for c in json.loads(checked.stdout)["checks"] if c["check"] == "quarantined_files"]
        assert found["count"] == 1 and aside["file"] in json.dumps(found)
