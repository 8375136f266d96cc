"""One DuckDB version for the library, the shell and the extensions (issue #31).

The warehouse opens in the installed shell exactly as the README says (its lake attached by
``warehouse/attach.sql``), `invarbench shell` opens it for the user, a catalog written by DuckDB
2.0 (the release before the pin) is rebuilt over the imported lake with the same marts, and a part
of another version is named at start-up. A DuckDB of another version opens the catalog file but
needs its own DuckLake extension (``INSTALL``, a download: offline it fails there, and only there).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import s3_server
from conftest import REPO, write_config
from lake_fixtures import LakeBuilder
from tasks.lake import engine
from tasks.lake.catalog import open_catalog
from tasks.lake.lake import Lake
from tasks.lake.views import query

FIXTURE = Path(__file__).parent / "fixtures" / "old_warehouse"
SHELL = Path(sys.executable).parent / "duckdb"  # what `make install` puts in .venv/bin
README_COMMAND = """.venv/bin/duckdb -readonly -cmd ".read warehouse/attach.sql" warehouse/invarbench.duckdb"""
# What the README tells the user of a DuckDB of another version to run in it, after opening the catalog.
README_OTHER_VERSION = "INSTALL ducklake; INSTALL sqlite;"
# An older DuckDB 1.x library that `make install` puts beside Python (.venv/duckdb-1x), pinned in
# constraints-duckdb-1x.txt, outside the main environment's site-packages.
DUCKDB_1X = Path(sys.executable).parent.parent / "duckdb-1x"
# The newest DuckDB shell on PyPI, newer than SHELL (.venv/duckdb-cli-newest, same constraints file).
NEWEST_SHELL = Path(sys.executable).parent.parent / "duckdb-cli-newest" / "duckdb_cli" / "duckdb"
# The views of the catalog as another DuckDB library lists them, and what a query of one says
# before the lake is attached (in `python -S -I`: no site-packages, no PYTHONPATH, so only the
# folder it is given).
VIEWS_OF_THE_CATALOG = """
import json, sys
sys.path.insert(0, sys.argv[1])
import duckdb
con = duckdb.connect(sys.argv[2], read_only=True)
views = [r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()]
try:
    con.execute("SELECT count(*) FROM runs").fetchall()
    error = ""
except duckdb.Error as exc:
    error = str(exc)
print(json.dumps({"version": duckdb.__version__, "file": duckdb.__file__, "views": views, "error": error}))
"""


@pytest.fixture
def old_warehouse(tmp_path) -> Path:
    """A copy of the old release's warehouse in a folder whose name has a space, with its config."""
    home = tmp_path / "old release"
    shutil.copytree(FIXTURE / "warehouse", home / "warehouse")
    write_config(home / "invarbench.toml", {"warehouse": {"path": str(home / "warehouse")}})
    return home


def _normalised(rows: list[dict]) -> list[str]:
    # JSON as the fixture stores it; doubles to 9 significant digits (a different summation order
    # changes the last bits); sorted, since a view's row order is not part of its definition
    def norm(value):
        return float(f"{value:.9g}") if isinstance(value, float) else value
    plain = json.loads(json.dumps(rows, default=str))
    return sorted(json.dumps({k: norm(v) for k, v in row.items()}, sort_keys=True) for row in plain)


def assert_same_marts(con: duckdb.DuckDBPyConnection, marts: dict[str, list[dict]]) -> None:
    """Every mart of ``marts`` (rows an earlier release computed) gives the same rows on ``con``.

    Columns a later release added (counts of a status the old release did not have, such as
    n_truncated) must be zero on a lake written before them; every other column is as it was.
    """
    for name, rows in marts.items():
        now = query(con, f"SELECT * FROM {name}")
        columns = set(rows[0]) if rows else set()
        added = {c for row in now for c in row} - columns
        assert {row[c] for row in now for c in added} <= {0, None}, (name, added)
        assert _normalised([{c: row[c] for c in columns} for row in now]) == _normalised(rows), name


def _views(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r["view_name"] for r in query(con, "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1")]


def test_library_shell_and_extensions_are_one_version():
    assert engine.version_problems() == []
    engine.check_versions()
    binary = engine.shell_binary()
    assert engine.shell_version(binary) == duckdb.__version__
    command = engine.shell_command(Path("c.duckdb"), engine.Limits())  # the product's limits first (-cmd)
    assert [c for c in command if not c.startswith("SET ")] == [str(binary), "-readonly", "-cmd", "c.duckdb"]
    with_init = engine.shell_command(Path("c.duckdb"), engine.Limits(), Path("attach.sql"))
    assert with_init[-3:] == ["-cmd", ".read 'attach.sql'", "c.duckdb"]
    # Loaded by path, with autoinstall and autoload off: nothing can come from the network.
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    for name in engine.EXTENSIONS:
        engine.load_extension(con, name)
    loaded = {r[0] for r in con.execute("SELECT extension_name FROM duckdb_extensions() WHERE loaded").fetchall()}
    assert set(engine.EXTENSIONS) <= loaded
    con.execute("ATTACH 'ducklake:sqlite::memory:' AS probe (DATA_PATH '/nonexistent/')")


def test_an_extension_built_for_another_duckdb_stops_every_command_at_start_up(tmp_path):
    # A wheel of another version ahead on the path, as a stale environment would have it.
    real = engine.extension_file("httpfs").read_bytes()
    footer = bytearray(real[-512:])
    field = engine._VERSION_FIELD * engine._FIELD
    footer[field:field + engine._FIELD] = b"v1.4.9".ljust(engine._FIELD, b"\0")
    stale = tmp_path / "site" / "duckdb_extension_httpfs"
    (stale / "extensions" / "v1.4.9").mkdir(parents=True)
    (stale / "__init__.py").write_text("")
    (stale / "extensions" / "v1.4.9" / "httpfs.duckdb_extension").write_bytes(real[:-512] + bytes(footer))
    warehouse = tmp_path / "wh"
    cfg = write_config(tmp_path / "c.toml", {"warehouse": {"path": str(warehouse)}})
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{REPO}"}
    done = subprocess.run([sys.executable, "-m", "flows.cli", "runs", "--config", str(cfg)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    assert f"DuckDB versions disagree: the library is {duckdb.__version__}" in message
    assert "httpfs extension" in message and "built for DuckDB 1.4.9" in message and "make install" in message
    assert "ducklake" not in message  # the parts that agree are not named
    assert not warehouse.exists()


def test_an_extension_whose_signature_does_not_match_is_refused_though_connections_skip_the_check(tmp_path, monkeypatch):
    # The product's connections allow unsigned extensions because load_sql has DuckDB check each
    # file's signature once per process: a file altered after signing must still be refused.
    real = engine.extension_file("httpfs").read_bytes()
    tampered = tmp_path / "httpfs.duckdb_extension"
    tampered.write_bytes(real[:100] + bytes([real[100] ^ 0xFF]) + real[101:])  # code, not the footer
    monkeypatch.setattr(engine, "extension_file", lambda name: tampered if name == "httpfs" else None)
    with pytest.raises(duckdb.Error, match="signature"):
        engine.load_sql("httpfs")
    con = engine.connect()
    assert con.execute("SELECT current_setting('allow_unsigned_extensions')").fetchone()[0] is True
    con.close()


def _built_catalog(home: Path) -> tuple[Path, dict[str, list[str]]]:
    """The catalog of the warehouse under ``home``, built by this DuckDB, and the rows of each of its
    views (as :data:`ROWS_OF_EVERY_VIEW` gives them)."""
    catalog = home / "warehouse" / "invarbench.duckdb"
    con = open_catalog(catalog, Lake(str(home / "warehouse" / "lake")))  # the old lake imported first
    try:
        rows = {v: [r[0] for r in con.execute(f'SELECT to_json(v)::VARCHAR FROM "{v}" AS v').fetchall()]
                for v in _views(con)}
    finally:
        con.close()
    assert len(rows) > 40 and {"accuracy_by_bin", "paired_tests", "runs"} <= set(rows)
    return catalog, rows


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_the_readme_command_opens_the_warehouse_in_the_installed_shell_with_every_view(old_warehouse):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert README_COMMAND in readme
    _every_view_counted_by(SHELL, old_warehouse)


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_the_newest_duckdb_shell_on_pypi_opens_the_catalog_and_needs_only_its_own_ducklake(old_warehouse):
    pinned = re.search(r"^duckdb-cli==(\S+)$", (REPO / "constraints-duckdb-1x.txt").read_text(encoding="utf-8"), re.M)[1]
    assert NEWEST_SHELL.is_file(), f"{NEWEST_SHELL} is missing: run `make install`"
    version = subprocess.run([str(NEWEST_SHELL), "-version"], capture_output=True, text=True, timeout=60).stdout
    assert version.startswith(f"v{pinned}") and pinned != duckdb.__version__, version
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert README_OTHER_VERSION in readme
    _, rows = _built_catalog(old_warehouse)
    argv = shlex.split(README_COMMAND)
    # This installation's attach.sql loads extensions built for the pinned DuckDB only: refused.
    done = subprocess.run([str(NEWEST_SHELL), *argv[1:]], cwd=old_warehouse, capture_output=True, text=True,
                          timeout=300, input="SELECT count(*) FROM duckdb_views() WHERE NOT internal;\n")
    assert "can only be loaded with that version of DuckDB" in done.stderr, done.stderr
    # The catalog file itself opens, every view listed; the README's lines for another version
    # fail at their download and nowhere before it (offline here).
    done = subprocess.run([str(NEWEST_SHELL), "-readonly", "-csv", "-noheader", argv[-1]], cwd=old_warehouse,
                          capture_output=True, text=True, timeout=300,
                          input=f"SELECT count(*) FROM duckdb_views() WHERE NOT internal;\n{README_OTHER_VERSION}\n")
    assert done.stdout.split() == [str(len(rows))], done.stdout + done.stderr
    assert done.stderr.startswith('IO Error: Failed to download extension "ducklake"'), done.stderr
    assert "Could not establish connection" in done.stderr


def _every_view_counted_by(shell: Path, old_warehouse: Path) -> None:
    """The README's command, run with ``shell``, counts the rows of every view as Python's DuckDB does."""
    _, rows = _built_catalog(old_warehouse)
    views, expected = sorted(rows), {v: len(r) for v, r in rows.items()}
    script = ".mode csv\n.headers off\n" + "".join(f"SELECT '{v}', count(*) FROM {v};\n" for v in views)
    argv = shlex.split(README_COMMAND)
    done = subprocess.run([str(shell), *argv[1:]], cwd=old_warehouse, input=script, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and not done.stderr, done.stderr
    counts = {name: int(n) for name, n in csv.reader(io.StringIO(done.stdout))}
    assert counts == expected
    assert sum(counts.values()) > 100


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_an_older_duckdb_1x_library_opens_the_catalog_and_needs_the_lake_attached(old_warehouse):
    pinned = re.search(r"^duckdb==(\S+)$", (REPO / "constraints-duckdb-1x.txt").read_text(encoding="utf-8"), re.M)[1]
    assert pinned.startswith("1.") and pinned != duckdb.__version__
    assert (DUCKDB_1X / "duckdb").is_dir(), f"{DUCKDB_1X} is missing: run `make install`"
    catalog, expected = _built_catalog(old_warehouse)
    done = subprocess.run([sys.executable, "-S", "-I", "-c", VIEWS_OF_THE_CATALOG, str(DUCKDB_1X), str(catalog)],
                          cwd=old_warehouse, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["version"] == pinned and Path(got["file"]).is_relative_to(DUCKDB_1X)
    assert set(got["views"]) == set(expected)
    # its own DuckLake extension (INSTALL ducklake: a download) must attach the lake first
    assert 'Catalog "lake" does not exist' in got["error"], got["error"]


def test_invarbench_shell_reads_a_piped_query(old_warehouse):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "flows.cli", "shell", "--config", str(old_warehouse / "invarbench.toml")],
                          cwd=old_warehouse, env=env, capture_output=True, text=True, timeout=300,
                          input=".mode csv\nSELECT model, sum(n_correct) AS correct FROM accuracy_by_bin GROUP BY 1 ORDER BY 1;\n"
                                "CREATE TABLE t AS SELECT 1;\n")
    assert done.returncode != 0  # read-only: the write is refused, the query before it answered
    assert re.search(r"read-only", done.stderr), done.stderr
    marts = json.loads((FIXTURE / "marts.json").read_text())["marts"]["accuracy_by_bin"]
    for model in ("fake/a", "fake/b"):
        assert f"{model},{sum(r['n_correct'] for r in marts if r['model'] == model)}" in done.stdout.splitlines()


def test_a_catalog_written_by_duckdb_2_is_rebuilt_from_the_lake_with_the_same_marts(old_warehouse):
    catalog = old_warehouse / "warehouse" / "invarbench.duckdb"
    with pytest.raises(duckdb.IOException, match="newer version"):
        duckdb.connect(str(catalog), read_only=True)
    old = json.loads((FIXTURE / "marts.json").read_text())
    assert old["duckdb"].startswith("2.")
    con = open_catalog(catalog, Lake(str(old_warehouse / "warehouse" / "lake")))  # the old lake imported first
    try:
        assert set(old["marts"]) <= set(_views(con))
        assert_same_marts(con, old["marts"])
    finally:
        con.close()
    assert sum(map(len, old["marts"].values())) > 100
    duckdb.connect(str(catalog), read_only=True).close()  # now in a format this DuckDB reads


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_invarbench_shell_reads_an_object_store_lake_with_the_credentials_of_the_environment(tmp_path, monkeypatch):
    server = s3_server.start(tmp_path / "moto.log")
    try:
        for key, value in server.env().items():
            if key.startswith("AWS_"):
                monkeypatch.setenv(key, value)
        lake = LakeBuilder(tmp_path)
        lake.lake = Lake(server.lake("shell/lake"), catalog=f"sqlite:{tmp_path / 'wh' / 'lake-catalog.sqlite'}")
        for n, status in enumerate(("correct", "wrong", "correct")):
            lake.trial(lake.item(f"fam{n}"), "fake/a", status, "5" if status == "correct" else "6")
        lake.flush()
        cfg = write_config(tmp_path / "c.toml", {"warehouse": {"path": str(tmp_path / "wh"),
                                                               **server.lake_config("shell/lake")}})
        shell = [sys.executable, "-m", "flows.cli", "shell", "--config", str(cfg)]
        query_text = ".mode csv\nSELECT n_scored, n_correct FROM accuracy_by_bin;\n"
        env = {**server.env(), "PYTHONPATH": str(REPO)}
        done = subprocess.run(shell, cwd=tmp_path, env=env, input=query_text, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == "3,2"
        without = {k: v for k, v in env.items() if k != "AWS_SECRET_ACCESS_KEY"}
        refused = subprocess.run(shell, cwd=tmp_path, env=without, input=query_text, capture_output=True,
                                 text=True, timeout=300)
        assert refused.returncode == 2
        assert "is read and written with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in " ".join(refused.stderr.split())
    finally:
        s3_server.stop(server)
