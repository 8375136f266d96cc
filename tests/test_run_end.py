"""The end of a run (tasks.runs.lifecycle.rebuild_catalog): the materialised views refreshed
reading the lake's tables once, then the catalog built over the lake's tables and currency read
once, on the lake the refresh made (the lake's shared DuckDB, which another thread may hold, not taken)."""

from __future__ import annotations

import pytest

from tasks.config import load_config
from tasks.lake import catalog as catalog_module
from tasks.lake import refresh as refresh_module
from tasks.lake.engine import connect
from tasks.lake.lake import Lake
from tasks.lake.refresh import refresh
from tasks.runs.lifecycle import Run, new_run_id


@pytest.fixture
def cfg(tmp_path):
    cfg = load_config(None, {"warehouse": {"path": str(tmp_path / "wh")}})
    run = Run(Lake.of(cfg), new_run_id(), "sweep", config="{}", models="[]", heartbeat_s=3600)
    run.start(n_items=1)
    run.finish()
    return cfg


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
