"""Every DuckDB the product opens is bounded (issue #27): the ``[warehouse]`` memory limit and a
spill folder of its own, on each path that opens one, and a query bigger than the limit spills
there instead of failing."""

from __future__ import annotations

import subprocess

import duckdb
import pytest

from conftest import run_cli, write_config
from tasks.config import load_config
from tasks.errors import ConfigError
from tasks.lake.catalog import build_catalog, open_catalog
from tasks.lake.config import DUCKDB_THREADS_ENV
from tasks.lake.engine import Limits, connect, shell_binary, shell_command
from tasks.lake.lake import Lake

LIMIT = "300MB"
SETTINGS = "SELECT current_setting('memory_limit'), current_setting('temp_directory')"
# The limit in bytes, from DuckDB's own report of it (such as '18.8 GiB').
_IN_BYTES = """SELECT CAST(split_part(v, ' ', 1) AS DOUBLE) * CASE split_part(v, ' ', 2) WHEN 'KiB' THEN 1024
               WHEN 'MiB' THEN 1024 ^ 2 WHEN 'GiB' THEN 1024 ^ 3 WHEN 'TiB' THEN 1024 ^ 4 ELSE 1 END
               FROM (SELECT current_setting('memory_limit') AS v)"""


def _reported(limit: str) -> str:
    # DuckDB reports the limit in its own units (300MB: 286.1 MiB)
    with duckdb.connect(config={"memory_limit": limit}) as con:
        return con.execute("SELECT current_setting('memory_limit')").fetchone()[0]


def _assert_bounded(con: duckdb.DuckDBPyConnection, spill) -> None:
    memory, folder = con.execute(SETTINGS).fetchone()
    assert memory == _reported(LIMIT)
    assert folder.startswith(str(spill.resolve()) + "/duckdb-")


@pytest.fixture
def cfg(tmp_path):
    path = write_config(tmp_path / "invarbench.toml", {"warehouse": {
        "path": str(tmp_path / "wh"), "memory_limit": LIMIT, "spill_dir": str(tmp_path / "spill")}})
    return load_config(path, suites=False)


def test_every_connection_of_the_lake_and_catalog_is_bounded(cfg, tmp_path):
    spill = tmp_path / "spill"
    lake = Lake.of(cfg)
    with lake.connect("runs") as con:  # the shared reader of a local lake
        _assert_bounded(con, spill)
    with Lake.of(cfg, read_only=True).connect("runs") as con:  # a connection of its own
        _assert_bounded(con, spill)
    build_catalog(cfg.catalog_path, lake)
    with open_catalog(cfg.catalog_path, lake) as con:
        _assert_bounded(con, spill)
    assert Lake(cfg.lake_path).limits == Limits(LIMIT, str(spill))  # the one object of the process


def test_the_ducklake_connections_are_bounded(cfg, tmp_path):
    spill = tmp_path / "spill"
    lake = Lake.of(cfg)
    lake.ensure()
    with lake.connect("") as con:  # the DuckDB the lake is attached to, which commits and compacts too
        _assert_bounded(con, spill)
        assert con.execute("SELECT count(*) FROM duckdb_databases() WHERE database_name = 'lake'").fetchone() == (1,)


def test_the_shell_is_bounded(cfg, tmp_path):
    if shell_binary() is None:
        pytest.skip("the DuckDB shell (duckdb-cli) is not installed")
    duckdb.connect(str(tmp_path / "c.duckdb")).close()
    command = shell_command(tmp_path / "c.duckdb", Limits.of(cfg.warehouse))
    out = subprocess.run(command, input=f"{SETTINGS};", capture_output=True, text=True, timeout=60, check=True)
    assert _reported(LIMIT) in out.stdout
    assert str((tmp_path / "spill").resolve()) + "/duckdb-" in out.stdout


# An aggregate of 2,000,000 groups: about 0.8 s, and more than 100MB of hash table.
BIG = "SELECT count(*), sum(h) FROM (SELECT i % 2000000 AS k, max(hash(i)) AS h FROM range(4000000) t(i) GROUP BY k)"


def test_a_query_beyond_the_limit_spills_into_the_spill_folder(tmp_path):
    with connect(limits=Limits("100MB", str(tmp_path))) as con:
        con.execute("SET threads = 1")  # the same plan on any machine
        assert con.execute(BIG).fetchone()[0] == 2_000_000
        folder = con.execute("SELECT current_setting('temp_directory')").fetchone()[0]
        assert [p.name for p in tmp_path.iterdir()] == [folder.rsplit("/", 1)[1]]  # made by its spill
    with duckdb.connect(config={"memory_limit": "100MB", "temp_directory": ""}) as con:
        con.execute("SET threads = 1")
        with pytest.raises(duckdb.OutOfMemoryException):  # what the spill folder saves it from
            con.execute(BIG)


@pytest.mark.parametrize("key, value, message", [
    ("memory_limit", "lots", "warehouse.memory_limit: 'lots' is not a size"),
    ("memory_limit", "2 GiBs", "is not a size"),
    ("memory_limit", "10MB", "below 64MB"),
    ("memory_limit", "0%", "between 0% and 100%"),
    ("memory_limit", "150%", "between 0% and 100%"),
    ("spill_dir", "s3://bucket/spill", "warehouse.spill_dir: 's3://bucket/spill' is a URL"),
])
def test_bad_limits_are_configuration_errors(tmp_path, key, value, message):
    path = write_config(tmp_path / "invarbench.toml", {"warehouse": {key: value}})
    with pytest.raises(ConfigError, match=message):
        load_config(path, suites=False)


def test_the_default_is_duckdbs_own_share_of_memory_in_the_system_temp_dir(tmp_path):
    cfg = load_config(write_config(tmp_path / "invarbench.toml", {"warehouse": {"path": str(tmp_path)}}), suites=False)
    assert Limits.of(cfg.warehouse) == Limits() == Limits("80%", "")
    with duckdb.connect() as con:  # DuckDB's own default: 80% of the memory it sees
        duckdb_default = con.execute(_IN_BYTES).fetchone()[0]
    with connect() as con:
        folder = con.execute(SETTINGS).fetchone()[1]
        assert con.execute(_IN_BYTES).fetchone()[0] == pytest.approx(duckdb_default, rel=0.02)  # reported to 0.1 GiB, cut
    assert "/invarbench-spill/duckdb-" in folder
    with connect(limits=Limits("40%")) as con:
        assert con.execute(_IN_BYTES).fetchone()[0] == pytest.approx(duckdb_default / 2, rel=0.02)


def test_a_query_beyond_the_limit_names_the_setting_to_raise(tmp_path):
    # A list aggregate cannot spill: beyond the limit it stops, and the user is told which key to raise.
    path = write_config(tmp_path / "invarbench.toml", {"warehouse": {"path": str(tmp_path / "wh"), "memory_limit": "64MB"}})
    done = run_cli("sql", "SELECT length(list(i)) AS n FROM range(20000000) t(i)", "--config", str(path))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Out of Memory" in done.stderr, done.stderr
    assert f"warehouse.memory_limit (64MB) allows; raise it in {path}" in done.stderr
    assert run_cli("sql", "SELECT count(*) AS n FROM range(1000)", "--config", str(path)).returncode == 0


def test_duckdbs_threads_come_from_the_environment_and_default_to_duckdbs_own(monkeypatch):
    monkeypatch.setenv(DUCKDB_THREADS_ENV, " 3 ")
    with connect() as con:
        assert con.execute("SELECT current_setting('threads')").fetchone() == (3,)
    monkeypatch.delenv(DUCKDB_THREADS_ENV)
    with duckdb.connect() as plain, connect() as con:
        assert con.execute("SELECT current_setting('threads')").fetchone() == plain.execute(
            "SELECT current_setting('threads')").fetchone()


@pytest.mark.parametrize("value", ["0", "two", "1.5", "-2"])
def test_a_bad_duckdb_thread_count_stops_a_command_before_it_reads_or_writes(tmp_path, value):
    path = write_config(tmp_path / "invarbench.toml", {"warehouse": {"path": str(tmp_path / "wh")}})
    done = run_cli("sweep", "--config", str(path), env={DUCKDB_THREADS_ENV: value})
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: INVARBENCH_DUCKDB_THREADS must be a whole number of threads, 1 or more, not '{value}'")
    assert not (tmp_path / "wh").exists()
