"""The end of a run (tasks.runs.lifecycle.rebuilding_catalog): the materialised views refreshed,
then the catalog checked and rebuilt in a thread while the run reads its summary; its error raised
when the block ends; the catalog built over the lake's tables and currency read once, and on the
lake the refresh made (the lake's shared DuckDB, which another thread may hold, not taken)."""

from __future__ import annotations

import logging
import threading

import duckdb
import pytest
from conftest import open_catalog_file

from tasks.config import load_config
from tasks.lake import catalog as catalog_module
from tasks.lake import refresh as refresh_module
from tasks.lake.engine import connect
from tasks.lake.lake import Lake
from tasks.lake.refresh import refresh
from tasks.runs import lifecycle
from tasks.runs.lifecycle import Run, new_run_id


@pytest.fixture
def cfg(tmp_path):
    cfg = load_config(None, {"warehouse": {"path": str(tmp_path / "wh")}})
    run = Run(Lake.of(cfg), new_run_id(), "sweep", config="{}", models="[]", heartbeat_s=3600)
    run.start(n_items=1)
    run.finish()
    return cfg


def test_the_catalog_is_rebuilt_while_the_block_reads_the_refreshed_lake(cfg, monkeypatch):
    real, seen = catalog_module.ensure_catalog, {}
    block_ran = threading.Event()

    def ensure_catalog(catalog, lake, con=None):
        # The block runs meanwhile: done one after the other, this would wait in vain.
        seen["during the block"] = block_ran.wait(timeout=30)
        seen["thread"] = threading.current_thread()
        real(catalog, lake, con)

    monkeypatch.setattr(lifecycle, "ensure_catalog", ensure_catalog)
    with lifecycle.rebuilding_catalog(cfg) as catalog:
        try:  # the refresh is done: its mark is in the lake
            assert Lake.of(cfg).read("SELECT count(*) AS n FROM lake.main.refreshes") == [{"n": 1}]
        finally:
            block_ran.set()
    assert seen["during the block"] and seen["thread"] is not threading.main_thread()
    assert catalog == cfg.catalog_path
    con = open_catalog_file(cfg.warehouse_path)  # done when the block ends, and opens as a user's shell does
    try:
        assert con.execute("SELECT status FROM runs").fetchall() == [("completed",)]
    finally:
        con.close()


def test_the_catalog_s_error_is_raised_when_the_block_ends_and_the_block_s_own_first(cfg, monkeypatch, caplog):
    def broken(catalog, lake, con=None):
        raise duckdb.BinderException("a view that does not bind")

    monkeypatch.setattr(lifecycle, "ensure_catalog", broken)
    ran = []
    with pytest.raises(duckdb.BinderException, match="does not bind"):
        with lifecycle.rebuilding_catalog(cfg):
            ran.append(1)
    assert ran == [1]
    with pytest.raises(RuntimeError, match="the block's"):
        with lifecycle.rebuilding_catalog(cfg):
            raise RuntimeError("the block's")

    def held(catalog, lake, con=None):
        raise duckdb.IOException("Could not set lock on file: held by a user's shell")

    monkeypatch.setattr(lifecycle, "ensure_catalog", held)
    with caplog.at_level(logging.WARNING, logger="tasks.runs.lifecycle"):
        assert lifecycle.rebuild_catalog(cfg) == cfg.catalog_path  # the run is not failed by it
    assert "not rebuilt" in caplog.text


def test_the_catalog_is_built_on_the_refreshed_lake_reading_its_tables_and_currency_once(cfg, monkeypatch):
    lake = Lake.of(cfg)
    con = connect(limits=lake.limits)
    try:
        refresh(lake, con=con)
        calls = {"absent_tables": 0, "is_current": 0}

        def counted(name, fn):
            def wrapper(*args, **kwargs):
                calls[name] += 1
                return fn(*args, **kwargs)
            return wrapper

        monkeypatch.setattr(Lake, "absent_tables", counted("absent_tables", Lake.absent_tables))
        monkeypatch.setattr(catalog_module, "is_current", counted("is_current", catalog_module.is_current))

        def taken(self):
            raise AssertionError("the lake's shared DuckDB taken: another thread may hold it")

        monkeypatch.setattr(Lake, "ensure", taken)
        catalog_module.ensure_catalog(cfg.catalog_path, lake, con)
        assert calls == {"absent_tables": 1, "is_current": 1}
        # stamped as built: current at once, rebuilt no more
        assert catalog_module._catalog_is_current(cfg.catalog_path, lake, con)
    finally:
        con.close()


def test_a_refresh_reads_the_lake_s_tables_from_its_catalog_once(tmp_path, monkeypatch):
    """The tables a refresh began with tell which are absent: no further catalog read (10-20 ms each)."""
    lake = Lake(str(tmp_path / "lake"))
    lake.ensure()
    read = []
    real = refresh_module.ducklake.lake_tables

    def lake_tables(con):
        read.append(1)
        return real(con)

    monkeypatch.setattr(refresh_module.ducklake, "lake_tables", lake_tables)
    monkeypatch.setattr("tasks.lake.lake.ducklake.lake_tables", lake_tables)
    assert refresh(lake)["full"]  # a new lake's first refresh
    assert len(read) == 1


class _Recording:
    """A DuckDB connection whose ``execute`` first runs ``before(sql)``."""

    def __init__(self, con, before):
        self._con, self._before = con, before

    def execute(self, sql, *args, **kwargs):
        self._before(sql)
        return self._con.execute(sql, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._con, name)


def test_a_first_build_computes_each_table_from_the_tables_built_before_it(cfg):
    """Each materialised table of a new lake's first refresh is computed from the tables built
    before it in the transaction (as the general path's are), not from their definitions over the
    raw lake again: the views of those names read their tables when it is built, and only then."""
    from tasks.lake.materialised import materialised_names

    lake = Lake.of(cfg)
    con = connect(limits=lake.limits)
    seen = {}

    def before(sql):
        if sql.startswith("CREATE OR REPLACE TABLE lake.main."):
            name = sql.split()[4].removeprefix("lake.main.")
            seen[name] = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal").fetchall()}

    try:
        assert refresh(lake, con=_Recording(con, before))["full"]
        names = materialised_names()
        assert seen == {name: set(names[:i]) for i, name in enumerate(names)}
        assert not con.execute("SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal").fetchall()  # dropped after
    finally:
        con.close()


def test_a_sweep_on_a_lake_it_made_reads_no_stale_runs_until_anything_is_written(tmp_path, monkeypatch):
    """A run begun on a lake its own process has just made and not written to (no earlier run can
    be there) does not read the runs to mark the crashed ones (a query of 50-80 ms); once anything
    is written (a later sweep of the same process: a worker's) or on a lake made elsewhere (another
    process: a Lake of its own) it does, and marks a run whose process is gone."""
    from flows.sweep_run import start_run

    checked = []
    real = lifecycle.mark_stale_crashed
    monkeypatch.setattr(lifecycle, "mark_stale_crashed", lambda lake: checked.append(lake) or real(lake))
    monkeypatch.setattr(Lake, "_OPEN", {})
    cfg = load_config(None, {"warehouse": {"path": str(tmp_path / "wh")}})
    start_run(cfg, new_run_id(), 1, {}).finish()
    assert checked == [] and not Lake.of(cfg).made_empty_here  # its rows are written
    start_run(cfg, new_run_id(), 1, {}).finish()
    assert len(checked) == 1

    lost = Run(Lake.of(cfg), new_run_id(), "sweep", config="{}", models="[]", heartbeat_s=3600).start()
    lost._stop.set()  # its process is gone: no heartbeat
    monkeypatch.setattr(Lake, "_OPEN", {})  # another process: the lake is made already
    monkeypatch.setattr(lifecycle, "process_gone", lambda pid: True)
    start_run(cfg, new_run_id(), 1, {}).finish()
    assert len(checked) == 2
    assert {r["status"] for r in Lake.of(cfg).read(f"SELECT status FROM runs WHERE run_id = '{lost.run_id}'")} == {"crashed"}
