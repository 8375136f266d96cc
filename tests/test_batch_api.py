"""Batch models: ledger misses as provider batch jobs, against a files/batches server on loopback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

from conftest import REPO, fake_model_config, process_env
from fake_batches import FakeBatches, FakeBatchServer
from flows.sweep import sweep
from tasks.lake.lake import Lake

BATCH = {"model": "openai/gpt-4o-mini", "batch": True, "batch_poll_s": 0.2}


def lake_query(tmp_path, sql, params=None):
    return Lake(str(tmp_path / "wh" / "lake")).read(sql, params)


def one_response_per_ok_request(tmp_path) -> int:
    """Every request of the lake has exactly one ok response; returns how many requests."""
    counts = lake_query(tmp_path, """SELECT request_id, count(*) FILTER (WHERE status = 'ok') AS n_ok
                                     FROM requests LEFT JOIN responses USING (request_id) GROUP BY ALL""")
    assert {c["n_ok"] for c in counts} == {1}, counts
    return len(counts)


@pytest.mark.slow  # a sweep in a process of its own
def test_a_sweep_killed_while_waiting_resumes_its_job_and_later_direct_sweeps_use_the_ledger(tmp_path):
    plans = {0: (None, "missing"), 1: (3, "ok")}  # job 0 held until released, then two lines short
    state = FakeBatches(plan=lambda n: plans[n])
    with FakeBatchServer(state) as server:
        cfg = fake_model_config(tmp_path, server.api_base, n_max=50, model_extra=BATCH)
        doomed = subprocess.Popen([sys.executable, "-m", "flows.cli", "sweep", "--config", str(cfg)], cwd=REPO,
                                  env=process_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        deadline = time.monotonic() + 300
        while not state.jobs or state.jobs["batch_0"].polls < 2:
            assert doomed.poll() is None and time.monotonic() < deadline, "the sweep never waited on a job"
            time.sleep(0.2)
        os.killpg(doomed.pid, signal.SIGKILL)
        doomed.wait()
        [job] = lake_query(tmp_path, "SELECT * FROM batch_jobs")
        assert job["batch_id"] == "batch_0" and len(job["request_ids"]) == 10  # recorded before waiting
        assert lake_query(tmp_path, "SELECT count(*) AS n FROM responses") == [{"n": 0}]
        state.release("batch_0")

        resumed = sweep(str(cfg))  # collects batch_0 instead of submitting again
        assert len(state.jobs) == 1 and resumed["sent"] == 10 and resumed["errors"] == 2
        errors = lake_query(tmp_path, "SELECT error FROM responses WHERE status = 'error'")
        assert all("without a line for this request" in e["error"] for e in errors) and len(errors) == 2

        again = sweep(str(cfg))  # only the two missing lines go out, in a new job taking several polls
        assert len(state.jobs) == 2 and len(state.jobs["batch_1"].lines) == 2 and state.jobs["batch_1"].polls >= 4
        assert again["sent"] == 2 and again["errors"] == 0 and again["cached"] == 8
        assert sorted(state.paid) == sorted(set(state.paid)) and len(state.paid) == 10, "no line paid twice"
        assert one_response_per_ok_request(tmp_path) == 10
        priced = lake_query(tmp_path, "SELECT count(*) AS n FROM responses WHERE status = 'ok' AND cost_usd > 0")
        assert priced == [{"n": 10}]

        direct = fake_model_config(tmp_path, server.api_base, n_max=50,
                                   model_extra={**BATCH, "batch": False})
        answered = sweep(str(direct))
        assert answered["sent"] == 0 and answered["cached"] == 10 and state.chat_calls == 0

    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(like_="batch-job-")))
    assert {a.key for a in artifacts} >= {"batch-job-batch-0", "batch-job-batch-1"}
    assert any("stored" in (a.data or "") for a in artifacts)


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_a_failed_job_is_sent_again_and_a_run_that_stops_waiting_ends_waiting(tmp_path):
    plans = {0: (1, "fail"), 1: (None, "error_line")}
    state = FakeBatches(plan=lambda n: plans[n])
    with FakeBatchServer(state) as server:
        cfg = fake_model_config(tmp_path, server.api_base, n_max=50, model_extra=BATCH)
        failed = sweep(str(cfg))
        assert failed["errors"] == 10 and len(state.jobs) == 1
        errors = lake_query(tmp_path, "SELECT DISTINCT error FROM responses")
        assert len(errors) == 1 and "failed: the fake failed this job" in errors[0]["error"]

        # Job 1 is held: the run stops waiting at its deadline (0.36 s after its start: past
        # once the job is submitted, so it polls once and ends `waiting`).
        cfg = fake_model_config(tmp_path, server.api_base, n_max=50, model_extra={**BATCH, "batch_max_wait_h": 0.0001})
        waiting = sweep(str(cfg))
        assert state.jobs["batch_1"].polls >= 1
        assert waiting["waiting"] == 10 and waiting["sent"] == 0
        [run] = lake_query(tmp_path, "SELECT status, message FROM runs WHERE run_id = ?", [waiting["run_id"]])
        assert run["status"] == "waiting" and "next sweep collects" in run["message"]

        state.release("batch_1")
        collected = sweep(str(cfg))
        assert len(state.jobs) == 2 and collected["sent"] == 10 and collected["errors"] == 1
        line_error = lake_query(tmp_path, "SELECT error FROM responses WHERE run_id = ? AND status = 'error'",
                                [collected["run_id"]])
        assert "HTTP 500" in line_error[0]["error"] and "overloaded" in line_error[0]["error"]
    assert len(state.paid) == 9
    assert lake_query(tmp_path, "SELECT count(*) AS n FROM ledger WHERE status = 'ok'") == [{"n": 9}]


@pytest.mark.slow  # two whole sweeps, the first waiting on its job's polls
def test_a_stopped_sweep_leaves_its_job_to_the_provider_and_the_next_sweep_collects_it(tmp_path):
    """In-process: a stop while the sweep waits on a held job ends the run `cancelled` at once (no
    poll after the stop but one under way; with the wait's deadline 36 s off, a sweep that ignored
    the stop would go on polling until it), the job is neither cancelled nor sent again, and the
    next sweep collects it: each line paid once (issue #30)."""
    from prefect.exceptions import CancelledRun

    from tasks.runs import stopping

    state = FakeBatches(plan=lambda n: (None, "ok"))  # job 0 held until released
    asked: list[int] = []

    def stop_when_polled() -> None:
        deadline = time.monotonic() + 300  # only a guard against hanging
        while (not state.jobs or state.jobs["batch_0"].polls < 2) and time.monotonic() < deadline:
            time.sleep(0.05)
        asked.append(state.jobs["batch_0"].polls if state.jobs else 0)
        stopping.request("asked by the test")

    with FakeBatchServer(state) as server:
        cfg = fake_model_config(tmp_path, server.api_base, n_max=50, model_extra={**BATCH, "batch_max_wait_h": 0.01})
        stopper = threading.Thread(target=stop_when_polled)
        stopper.start()
        try:
            with pytest.raises(CancelledRun):
                sweep(str(cfg))
        finally:
            stopper.join()
            stopping.reset()
        assert asked and asked[0] >= 2, "the sweep never waited on its job"
        assert state.jobs["batch_0"].polls <= asked[0] + 1  # no poll began after the stop
        [run] = lake_query(tmp_path, "SELECT status, message FROM runs")
        assert run["status"] == "cancelled" and run["message"].startswith("asked by the test"), run
        [job] = lake_query(tmp_path, "SELECT batch_id, status FROM batch_jobs ORDER BY updated_at DESC LIMIT 1")
        assert job["batch_id"] == "batch_0" and job["status"] not in ("cancelled", "cancelling", "stored"), job
        assert state.jobs["batch_0"].status not in ("cancelled", "cancelling")  # left running at the provider
        assert lake_query(tmp_path, "SELECT count(*) AS n FROM responses") == [{"n": 0}]

        state.release("batch_0")
        collected = sweep(str(cfg))
    assert len(state.jobs) == 1 and collected["sent"] == 10  # batch_0 collected, nothing submitted again
    assert sorted(state.paid) == sorted(set(state.paid)) and len(state.paid) == 10
    assert one_response_per_ok_request(tmp_path) == 10
