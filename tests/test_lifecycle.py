"""One run lifecycle: every kind of run (sweep, rescore, both imports) is a Prefect flow run
recorded in ``runs`` with its flow-run id, one run-id format, a final row, and a rebuilt catalog."""

from __future__ import annotations

import logging
import re
import uuid

import duckdb
import pytest
from prefect.client.orchestration import get_client

from conftest import fake_model_config, open_catalog_file, run_cli
from fakes import FakeProvider, FakeServer
from flows.imports import import_families, import_responses
from flows.rescore import rescore
from flows.sweep import sweep
from tasks.lake.lake import Lake
from tasks.runs.lifecycle import new_run_id

RUN_ID = re.compile(r"\d{8}T\d{6}-[0-9a-f]{8}")

FAMILIES = """id,category,euclid,coord,vector,answer
p1,length,"A square has side 1. Find its diagonal.","Find the distance from (0, 0) to (1, 1).","Find |u| for u = (1, 1).",sqrt(2)
"""


def test_new_run_ids_have_one_format_and_differ():
    ids = {new_run_id() for _ in range(50)}
    assert len(ids) == 50 and all(RUN_ID.fullmatch(i) for i in ids)


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_every_kind_of_run_has_its_flow_run_one_id_format_and_a_catalog(tmp_path):
    wh = tmp_path / "wh"
    responses = tmp_path / "responses.csv"
    responses.write_text("prompt,target,prediction\nWhat is 2+3?,5,Answer: 5\nWhat is 2+2?,4,Answer: 5\n",
                         encoding="utf-8")
    families = tmp_path / "families.csv"
    families.write_text(FAMILIES, encoding="utf-8")
    with FakeServer(FakeProvider(responder=lambda body: "Answer: 5")) as server:
        cfg = fake_model_config(tmp_path, server.api_base, n_max=10)
        summaries = {
            "sweep": sweep(str(cfg)),
            "import": import_responses(str(responses), "ext-model", str(cfg)),
            "import-families": import_families(str(families), ["direct"], str(cfg)),
        }
    summaries["rescore"] = rescore(str(cfg))
    runs = {r["kind"]: r for r in Lake(str(wh / "lake")).read("SELECT run_id, kind, status, flow_run_id FROM runs")}
    assert set(runs) == set(summaries)
    with get_client(sync_client=True) as client:
        for kind, summary in summaries.items():
            run = runs[kind]
            assert (run["run_id"], run["status"]) == (summary["run_id"], "completed"), kind
            assert RUN_ID.fullmatch(run["run_id"]), (kind, run["run_id"])
            assert run["flow_run_id"] == summary["flow_run_id"] != "", kind
            flow_run = client.read_flow_run(uuid.UUID(run["flow_run_id"]))
            assert flow_run.state.is_completed(), kind
    # The last run (rescore) rebuilt the catalog, which shows every run once the lake is attached.
    con = open_catalog_file(wh)
    try:
        assert {r[0] for r in con.execute("SELECT kind FROM runs").fetchall()} == set(summaries)
    finally:
        con.close()


def test_a_run_that_raises_ends_failed_with_its_message(tmp_path):
    from tasks.runs.lifecycle import Run

    lake = Lake(str(tmp_path / "lake"))
    try:
        with Run(lake, new_run_id(), "rescore", config="{}", models="[]").start(n_items=3):
            raise RuntimeError("the disk is full")
    except RuntimeError:
        pass
    [row] = lake.read("SELECT status, message, n_items FROM runs")
    assert row == {"status": "failed", "message": "RuntimeError: the disk is full", "n_items": 3}


@pytest.mark.slow  # three whole sweeps
def test_a_run_ends_completed_while_another_duckdb_of_this_process_holds_the_catalog(tmp_path, caplog):
    """The end of a run reads the catalog's stamp beside the lake its refresh attached. Another
    DuckDB of the same process holding the catalog file (a user's read-only query; a writable
    attach, under which it cannot be rebuilt) never fails the run: the first is read beside, the
    second is left as it is with a warning."""
    with FakeServer() as server:
        first = fake_model_config(tmp_path, server.api_base, n_max=10)
        assert run_cli("sweep", "--config", str(first)).returncode == 0
        wh = tmp_path / "wh"
        reader = open_catalog_file(wh)
        try:
            more = fake_model_config(tmp_path, server.api_base, n_max=15)  # one item more: a flow run with calls
            result = run_cli("sweep", "--config", str(more))
            assert result.returncode == 0, result.stderr
            assert reader.execute("SELECT count(*) FROM runs WHERE status = 'completed'").fetchall() == [(2,)]
        finally:
            reader.close()
        writer = duckdb.connect()
        writer.execute(f"ATTACH '{wh / 'invarbench.duckdb'}' AS held")
        try:
            with caplog.at_level(logging.WARNING, logger="tasks.runs.lifecycle"):
                result = run_cli("sweep", "--config", str(more))  # every answer in the ledger: no Prefect
            assert result.returncode == 0, result.stderr
            assert "0 sent" in result.stdout and "not rebuilt" in caplog.text, caplog.text
        finally:
            writer.close()
    statuses = [r["status"] for r in Lake(str(wh / "lake")).read("SELECT status FROM runs ORDER BY started_at")]
    assert statuses == ["completed"] * 3
