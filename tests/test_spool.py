"""Answers are durable as they arrive (tasks.models.spool): a sweep killed outright (SIGKILL) pays
again at most the calls it had in flight, never an answer it had received."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import time
import uuid

import pytest
from conftest import fake_model_config
from fakes import FakeProvider, FakeServer
from test_stopping import N_ITEMS, finish, lake_query, start_sweep
from typer.testing import CliRunner

from flows.cli import app
from tasks.lake.lake import Lake
from tasks.lake.writes import write_rows
from tasks.models.spool import ResponseWriter, Spool, replay, spool_dir
from tasks.records import Response
from tasks.runs.config import SweepConfig

# One call at a time: a worker takes its next call only after it spooled the answer of its last
# (ModelStream._worker), so the server seeing the second call means the first answer is on disk.
# With several calls at once, answers the server sent but the killed process had not read yet
# would be paid again too, and the server cannot tell those from the answers it received.
KILL_AFTER = 1


def response(request_id: str, status: str = "ok") -> dict:
    return {"response_id": uuid.uuid4().hex, "request_id": request_id, "run_id": "r1", "model": "m",
            "status": status, "text": "7" if status == "ok" else None, "error": None if status == "ok" else "500",
            "attempts": 1, "latency_s": 0.1, "prompt_tokens": 3, "completion_tokens": 1,
            "created_at": dt.datetime.now(dt.timezone.utc), "cost_usd": None, "finish_reason": "stop"}


def test_replay_stores_the_answers_of_segments_no_live_writer_holds_once(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    lake.ensure()
    write_rows(lake, "responses", [response("answered")])  # answered by another sweep meanwhile
    segment = Spool(lake)
    rows = [response("a"), response("b", "error"), response("answered")]
    for row in rows:
        segment.add(row)
    segment.sync()
    assert replay(lake) == 0  # held: its writer is alive
    segment.close(keep=True)  # as a killed writer's: the kernel released its lock
    with (spool_dir(lake) / "torn.jsonl").open("w") as torn:  # killed mid-line: that answer was never whole
        torn.write('{"response_id": "x", "request_id"')
    assert replay(lake) == 2
    assert replay(lake) == 0
    assert list(spool_dir(lake).iterdir()) == []
    stored = lake.read("SELECT request_id, status FROM responses ORDER BY request_id, status")
    assert stored == [{"request_id": "a", "status": "ok"}, {"request_id": "answered", "status": "ok"},
                      {"request_id": "b", "status": "error"}]


def test_object_store_lakes_at_one_url_with_other_catalogs_keep_their_own_spools(tmp_path):
    # Two lakes at one bucket path (two S3 endpoints, or a lake made again there): the answers a
    # killed sweep of one received must not be replayed into the other, whose requests lack them.
    url = "s3://bucket/lake"
    first, second = (Lake(url, catalog=f"sqlite:{tmp_path / name}.sqlite") for name in ("a", "b"))
    assert spool_dir(first) != spool_dir(second)
    assert spool_dir(first) == spool_dir(Lake(url + "/", catalog=f"sqlite:{tmp_path / 'a'}.sqlite"))


def test_a_segment_is_deleted_once_its_batch_is_in_the_lake(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    lake.ensure()

    async def write() -> None:
        writer = ResponseWriter(lake, SweepConfig().flush_s)
        writer.add(Response(**response("a")))
        assert len(list(spool_dir(lake).glob("*.jsonl"))) == 1
        await writer.drain()

    asyncio.run(write())
    assert list(spool_dir(lake).glob("*.jsonl")) == []
    assert lake.read("SELECT count(*) AS n FROM responses") == [{"n": 1}]


@pytest.mark.parametrize("flush_s, files", [(0.2, 1), (30.0, 0)])
def test_buffered_answers_reach_the_lake_after_flush_s(tmp_path, flush_s, files):
    """Between a group's drains a writer puts its buffer in the lake every ``[sweep] flush_s``
    seconds (one file), and not before: the spool holds the answers meanwhile."""
    lake = Lake(str(tmp_path / "lake"))
    lake.ensure()

    async def wait_a_second() -> None:
        writer = ResponseWriter(lake, flush_s=flush_s)
        ticking = asyncio.ensure_future(writer.tick())
        writer.add(Response(**response("a")))
        await asyncio.sleep(1.0)
        ticking.cancel()
        await asyncio.gather(*writer.writes)

    asyncio.run(wait_a_second())
    assert lake.read("SELECT count(*) AS n FROM responses") == [{"n": files}]
    assert len(list(spool_dir(lake).glob("*.jsonl"))) == 1 - files


@pytest.mark.slow  # a sweep in a process of its own, SIGKILLed
def test_a_sigkilled_sweep_pays_again_only_the_calls_it_had_in_flight(tmp_path):
    """Killed as soon as the worker took a second call, so just after it spooled its first answer
    (well within the call stage's 2 s batch), then resumed: each request is paid once, but for
    the call in flight at the kill."""
    state = FakeProvider(delay_s=0.5)
    with FakeServer(state) as fake:
        cfg = fake_model_config(tmp_path, fake.api_base, n_max=5 * N_ITEMS,
                                model_extra={"concurrency": 1, "shared_limits": False})
        proc = start_sweep(cfg)
        deadline = time.monotonic() + 300
        while len(state.seen) <= KILL_AFTER and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGKILL)
        in_flight = state.in_flight  # sent and still unanswered: those alone may be paid again
        finish(proc)
        assert KILL_AFTER < len(state.seen) < N_ITEMS, len(state.seen)
        state.delay_s = 0.0
        result = CliRunner().invoke(app, ["sweep", "--config", str(cfg)])
        assert result.exit_code == 0, result.output
    contents = state.contents()
    assert len(set(contents)) == N_ITEMS
    assert len(contents) - N_ITEMS <= in_flight, (len(contents), in_flight)
    assert lake_query(tmp_path, "SELECT count(*) AS n, count(DISTINCT request_id) AS d FROM responses "
                                "WHERE status = 'ok'") == [{"n": N_ITEMS, "d": N_ITEMS}]


def test_a_buffered_and_spooled_response_row_is_asdict_of_the_response(tmp_path):
    # Response.row() stands in for dataclasses.asdict in the stream's per-response path: the same
    # keys in the same order (the spool's JSON lines) and the same values, every field set.
    from dataclasses import asdict, fields

    values = response("q1", "error") | {"text": "partial", "cost_usd": 0.25, "finish_reason": "length"}
    resp = Response(**values)
    assert all(getattr(resp, f.name) is not None for f in fields(Response))
    row = resp.row()
    assert list(row.items()) == list(asdict(resp).items())
    row["text"] = "changed"
    assert resp.text == "partial"  # a row of its own: the writer's buffer never aliases the response
    lake = Lake(str(tmp_path / "lake"))
    writer = ResponseWriter(lake, SweepConfig().flush_s)
    writer.add(resp)
    assert writer.buffer == [asdict(resp)]
    assert writer.segment is not None
    writer.segment.close(keep=True)
    line = writer.segment.path.read_text()
    assert line.startswith('{"response_id": "' + values["response_id"] + '", "request_id": "q1"')
