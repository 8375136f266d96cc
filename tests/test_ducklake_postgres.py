"""A lake that several machines write: DuckLake with its catalog on a real PostgreSQL
(tests/postgres_server.py) and its data on the moto S3 server (tests/s3_server.py), and the
``[warehouse] catalog`` key that chooses the catalog."""

from __future__ import annotations

import os
import pwd
import socket

import pytest

import postgres_server
import s3_server
from conftest import running_s3_server, write_config
from tasks.config import Config, load_config
from tasks.errors import ConfigError
from tasks.lake.lake import Lake
from tasks.lake.writes import write_rows
from test_compact import assert_writers_and_compactors_lose_and_duplicate_nothing
from test_snapshots import responses


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """The module's S3 server, its credentials exported to this process."""
    with running_s3_server(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server


def shared_lake(postgres, s3: s3_server.S3Server, name: str) -> Lake:
    """A lake of its own, configured as users do (``[warehouse] catalog``, ``lake``, ``endpoint_url``):
    a new database on the session's PostgreSQL, the data under ``name/`` in the bucket."""
    cfg = Config.model_validate({"warehouse": {"catalog": f"postgres:{postgres.create_database(name)}",
                                               **s3.lake_config(name)}})
    return Lake.of(cfg)


# --- configuration: no server needed --------------------------------------------------------------

def test_the_catalog_key_resolves_to_the_string_the_lake_takes(tmp_path):
    cfg = write_config(tmp_path / "c.toml", {"warehouse": {"path": str(tmp_path / "wh")}})
    assert load_config(cfg, suites=False).lake_catalog is None  # the lake's own: a SQLite file in its folder
    assert Lake.of(load_config(cfg, suites=False)).catalog == f"sqlite:{tmp_path / 'wh' / 'lake' / 'catalog.sqlite'}"
    write_config(cfg, {"warehouse": {"path": str(tmp_path / "wh"), "lake": "s3://b/p/lake"}})
    assert load_config(cfg, suites=False).lake_catalog == f"sqlite:{tmp_path / 'wh' / 'lake-catalog.sqlite'}"
    write_config(cfg, {"warehouse": {"catalog": f"sqlite:{tmp_path}/elsewhere/c.sqlite"}})
    assert load_config(cfg, suites=False).lake_catalog == f"sqlite:{tmp_path}/elsewhere/c.sqlite"
    pg = "postgres:host=db.lan port=5433 dbname=lake user=invarbench application_name='invar bench'"
    write_config(cfg, {"warehouse": {"catalog": pg}})
    assert load_config(cfg, suites=False).lake_catalog == pg
    for bad, message in [
        ("mysql:host=x", "warehouse.catalog: 'mysql:host=x' is not a catalog"),
        ("sqlite:", "warehouse.catalog: 'sqlite:' is not a catalog"),
        ("sqlite:s3://b/c.sqlite", "is not a catalog"),
        ("postgres:", "a libpq connection string of key=value pairs"),
        ("postgres:db.lan", "a libpq connection string of key=value pairs"),
        ("postgres:host=db.lan password=hunter2", "warehouse.catalog: a password is never written in the configuration"),
    ]:
        write_config(cfg, {"warehouse": {"catalog": bad}})
        with pytest.raises(ConfigError, match=message):
            load_config(cfg, suites=False)


# --- PostgreSQL and S3 ----------------------------------------------------------------------------

@pytest.mark.slow
def test_the_test_postgres_runs_unprivileged_and_leaves_nothing_behind():
    server = postgres_server.start()
    pid = int((server.root / "data" / "postmaster.pid").read_text().split()[0])
    owner = pwd.getpwuid(os.stat(server.root / "data").st_uid).pw_name
    assert owner == ("nobody" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name)
    postgres_server.stop(server)
    assert not server.root.exists()
    assert not postgres_server.running(pid)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", server.port), timeout=5)


@pytest.mark.slow
def test_three_writers_and_two_compactors_on_postgres_and_s3_lose_and_duplicate_nothing(postgres, s3):
    lake = shared_lake(postgres, s3, "writers")
    assert lake.catalog.startswith("postgres:") and lake.data_path.startswith("s3://")
    assert_writers_and_compactors_lose_and_duplicate_nothing(
        lake, lambda: len([k for k in s3.keys("writers/data/main/responses/") if k.endswith(".parquet")]), env=s3.env())


@pytest.mark.slow
def test_a_read_only_reader_sees_each_new_snapshot(postgres, s3):
    writer = shared_lake(postgres, s3, "reader")
    reader = Lake(writer.location, read_only=True, catalog=writer.catalog)
    for i in range(1, 4):
        committed = write_rows(writer, "responses", responses(f"c{i}", f"c{i}"))
        assert reader.read("SELECT max(snapshot_id) AS s FROM ducklake_snapshots('lake')") == [{"s": committed}]
        # Reading rows (not only the catalog's count) fetches the new data file from the bucket.
        assert reader.read("SELECT count(DISTINCT response_id) AS n FROM responses") == [{"n": 100 * i}]
    with pytest.raises(RuntimeError, match="read-only"):
        write_rows(reader, "responses", responses("refused", "refused"))


@pytest.mark.slow
def test_a_reader_of_a_postgres_catalog_no_writer_created_yet_reads_empty_tables(postgres, tmp_path):
    """As a reader of a SQLite catalog not created yet does (the sweep command reads the ledger first)."""
    catalog = f"postgres:{postgres.create_database('unwritten')}"
    reader = Lake(str(tmp_path / "lake"), read_only=True, catalog=catalog)
    assert reader.read("SELECT count(*) AS n FROM responses") == [{"n": 0}]
    write_rows(Lake(str(tmp_path / "lake"), catalog=catalog), "responses", responses("w", "w"))
    assert reader.read("SELECT count(*) AS n FROM responses") == [{"n": 100}]
