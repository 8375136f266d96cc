"""Damage is contained (tasks.lake.quarantine): a data file that does not read is moved to the
lake's quarantine folder with a warning naming it, its rows leave the table, queries and sweeps go
on without it, and ``invarbench check`` lists it."""

from __future__ import annotations

import logging

import duckdb
import pytest
from fakes import FakeProvider, FakeServer
from test_spool import response
from test_stopping import N_ITEMS, config, finish, lake_query, start_sweep
from typer.testing import CliRunner

from flows.cli import app
from tasks.lake.lake import Lake
from tasks.lake.quarantine import FOLDER, quarantined
from tasks.lake.writes import write_rows
from tasks.check import check_lake, data_files

ROWS = 1000  # per commit: enough for a data file of its own (DuckLake inlines small inserts in the catalog)


def corrupt(path: str) -> None:
    with open(path, "r+b") as f:  # the footer overwritten, as a torn write or a bad disk leaves it
        f.seek(-64, 2)
        f.write(b"\0" * 64)


def test_an_unreadable_file_is_quarantined_and_queries_go_on_without_it(tmp_path, caplog):
    lake = Lake(str(tmp_path / "lake"))
    lake.ensure()
    for batch in ("a", "b"):
        write_rows(lake, "responses", [response(f"{batch}{i}") for i in range(ROWS)])
    files = data_files(lake)
    assert len(files) == 2
    corrupt(files[1])
    with pytest.raises(duckdb.Error):  # a read-only command writes nothing: it fails, naming the file
        Lake(str(tmp_path / "lake"), read_only=True).read("SELECT sum(latency_s) AS s FROM responses")
    with caplog.at_level(logging.WARNING, logger="tasks.lake.quarantine"):
        assert lake.read("SELECT count(text) AS n FROM responses") == [{"n": ROWS}]
    assert files[1] in caplog.text and "quarantined" in caplog.text
    assert data_files(lake) == files[:1]
    [aside] = quarantined(lake.root)
    assert aside["table"] == "responses" and aside["file"].startswith(str(tmp_path / "lake" / FOLDER))
    report = check_lake(Lake(str(tmp_path / "lake"), read_only=True))
    found = {f.check: f.count for f in report.findings if f.found}
    # (the responses have no requests here: response_without_request counts them)
    assert found["quarantined_files"] == 1 and "unreadable_files" not in found and report.damaged


def test_a_sweep_goes_on_past_an_unreadable_file_and_sends_its_answers_again(tmp_path):
    state = FakeProvider()
    with FakeServer(state) as fake:
        cfg = config(tmp_path, fake.api_base)
        runner = CliRunner()
        assert runner.invoke(app, ["sweep", "--config", str(cfg)]).exit_code == 0
        lake = Lake(str(tmp_path / "wh" / "lake"))
        [responses] = [f for f in data_files(lake) if "/responses/" in f]
        corrupt(responses)
        # In a process of its own, as a next sweep is (this one's DuckDB still caches the file).
        proc = start_sweep(cfg)
        out, err = finish(proc)
        assert proc.returncode == 0, err[-3000:]
        assert "quarantined the unreadable data file" in " ".join(err.split())
    assert len(state.seen) == 2 * N_ITEMS  # the answers set aside were asked again, the others not
    assert lake_query(tmp_path, "SELECT count(*) AS n FROM ledger WHERE status = 'ok'") == [{"n": N_ITEMS}]
    assert [f["table"] for f in quarantined(lake.root)] == ["responses"]
