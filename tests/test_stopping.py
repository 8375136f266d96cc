"""Stopping a sweep: SIGTERM, Ctrl-C and a cancellation through the Prefect API end it cleanly.

A sweep in a real CLI subprocess calls the loopback fake provider (tests/fakes.py), whose answers
take a second, and is stopped while calls are in flight. Then: the calls in flight were answered
and stored (the provider saw no request the lake has no answer for), the run reads `cancelled`
and holds no live claim, the Prefect flow run is Cancelled, no process the sweep started is left,
and a second sweep sends exactly the requests that have no answer, so each is paid once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Callable

import pytest
from prefect.client.orchestration import get_client
from prefect.settings import PREFECT_API_URL
from prefect.states import Cancelling, Running
from typer.testing import CliRunner

from conftest import REPO, fake_model_config
from fakes import FakeProvider, FakeServer
from flows.cli import app
from flows.sweep import sweep
from tasks.lake.lake import Lake

N_ITEMS = 40  # closure n = 5, 10, ..., 200
STOP_AFTER = 6  # requests the provider has seen when the sweep is stopped (4 at once: some in flight)
WAIT_S = 300  # start-up of a CLI sweep on a busy machine; only a guard against hanging


def lake_query(tmp_path: Path, sql: str, params=None):
    return Lake(str(tmp_path / "wh" / "lake")).read(sql, params)


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended while listed
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    """True while process ``pid`` exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def start_sweep(cfg: Path, api_url: str | None = None) -> subprocess.Popen:
    """The CLI sweep in a session of its own (as a terminal's foreground job would be); with
    ``api_url`` on that Prefect server, else on the temporary server it starts itself."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("PREFECT_API_URL", None)
    if api_url:
        env["PREFECT_API_URL"] = api_url
    return subprocess.Popen([sys.executable, "-m", "flows.cli", "sweep", "--config", str(cfg)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_for_requests(proc: subprocess.Popen, state: FakeProvider, n: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while len(state.seen) < n:
        if proc.poll() is not None or time.monotonic() > deadline:
            out, err = proc.communicate()
            pytest.fail(f"the sweep never sent {n} requests (exit {proc.returncode}):\n{err[-3000:]}")
        time.sleep(0.1)


def finish(proc: subprocess.Popen) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"the stopped sweep did not end:\n{err[-3000:]}")


def config(tmp_path: Path, api_base: str) -> Path:
    return fake_model_config(tmp_path, api_base, n_max=5 * N_ITEMS, model_extra={"concurrency": 4, "shared_limits": False},
                             sweep_extra={"stop_grace_s": 5.0, "cancel_poll_s": 0.5})


def assert_cancelled_with_every_sent_request_answered(tmp_path: Path, state: FakeProvider) -> dict:
    """The run's last row is `cancelled`; each request the provider saw has its one `ok` answer."""
    [run] = lake_query(tmp_path, "SELECT run_id, status, message, flow_run_id, n_sent FROM runs")
    assert run["status"] == "cancelled", run
    sent = len(state.seen)
    assert 0 < sent < N_ITEMS, sent  # stopped part-way
    answered = lake_query(tmp_path, "SELECT count(*) AS n, count(DISTINCT request_id) AS d, "
                                    "count(*) FILTER (WHERE status = 'ok') AS ok FROM responses")[0]
    assert answered == {"n": sent, "d": sent, "ok": sent}, (answered, sent)  # the calls in flight were kept
    assert run["n_sent"] == sent
    assert lake_query(tmp_path, "SELECT count(*) AS n FROM live_claims") == [{"n": 0}]  # claims released
    return run


def assert_resumes_paying_each_request_once(tmp_path: Path, cfg: Path, state: FakeProvider) -> None:
    state.delay_s = 0.0  # the slow answers only had to keep calls in flight when the sweep was stopped
    result = CliRunner().invoke(app, ["sweep", "--config", str(cfg)])
    assert result.exit_code == 0, result.output
    contents = state.contents()
    assert len(contents) == N_ITEMS == len(set(contents))  # paid once each, none missing
    assert lake_query(tmp_path, "SELECT count(*) AS n FROM ledger WHERE status = 'ok'") == [{"n": N_ITEMS}]
    statuses = lake_query(tmp_path, "SELECT status FROM runs ORDER BY started_at")
    assert [r["status"] for r in statuses] == ["cancelled", "completed"]


@pytest.mark.slow  # a sweep in a process of its own
def test_sigterm_stops_a_sweep_cleanly_and_leaves_no_process(tmp_path):
    state = FakeProvider(delay_s=1.0)
    with FakeServer(state) as fake:
        cfg = config(tmp_path, fake.api_base)
        proc = start_sweep(cfg)
        wait_for_requests(proc, state, STOP_AFTER)
        started = children(proc.pid)  # the temporary Prefect server
        assert started, "the sweep started no Prefect server"
        proc.send_signal(signal.SIGTERM)
        out, err = finish(proc)
        assert proc.returncode == 143, err[-3000:]
        assert "sweep stopped (SIGTERM received)" in " ".join(err.split())
        assert [p for p in started if alive(p)] == []  # nothing it started outlives it
        run = assert_cancelled_with_every_sent_request_answered(tmp_path, state)
        assert run["message"].startswith("SIGTERM received")
        assert_resumes_paying_each_request_once(tmp_path, cfg, state)


def stop_a_sweep_on_the_session_server(tmp_path: Path, stop: Callable[[subprocess.Popen], None],
                                       returncode: int) -> dict:
    """A CLI sweep on the session's Prefect server, stopped by ``stop`` once it has sent
    STOP_AFTER requests: it exits with ``returncode``, its run is cancelled with every sent request
    answered, its flow run is Cancelled, and a second sweep pays each request once. Returns the run."""
    state = FakeProvider(delay_s=1.0)
    with FakeServer(state) as fake:
        cfg = config(tmp_path, fake.api_base)
        proc = start_sweep(cfg, api_url=PREFECT_API_URL.value())
        wait_for_requests(proc, state, STOP_AFTER)
        stop(proc)
        out, err = finish(proc)
        assert proc.returncode == returncode, err[-3000:]
        run = assert_cancelled_with_every_sent_request_answered(tmp_path, state)
        with get_client(sync_client=True) as client:
            flow_run = client.read_flow_run(uuid.UUID(run["flow_run_id"]))
        assert flow_run.state.is_cancelled(), flow_run.state
        assert_resumes_paying_each_request_once(tmp_path, cfg, state)
    return run


@pytest.mark.slow  # a sweep in a process of its own
def test_ctrl_c_to_the_process_group_stops_the_sweep_and_its_flow_run_is_cancelled(tmp_path):
    """Ctrl-C reaches the terminal's whole foreground group: the sweep and the processes it started."""
    run = stop_a_sweep_on_the_session_server(tmp_path, lambda proc: os.killpg(proc.pid, signal.SIGINT), 130)
    assert run["message"].startswith("SIGINT received")  # the run says what stopped it


@pytest.mark.slow  # a sweep in a process of its own
def test_a_cancellation_through_the_prefect_api_stops_a_cli_sweep(tmp_path):
    def cancel(proc: subprocess.Popen) -> None:
        [running] = lake_query(tmp_path, "SELECT flow_run_id FROM runs")
        with get_client(sync_client=True) as client:
            client.set_flow_run_state(uuid.UUID(running["flow_run_id"]), Cancelling(message="from the test"))

    run = stop_a_sweep_on_the_session_server(tmp_path, cancel, 143)
    assert run["message"].startswith("cancelled in Prefect")


@pytest.mark.slow  # sweeps in processes of their own
def test_a_second_signal_stops_at_once_and_a_sigkill_leaves_no_server(tmp_path):
    state = FakeProvider(delay_s=30.0)  # calls in flight would outlast any grace period
    with FakeServer(state) as fake:
        cfg = config(tmp_path, fake.api_base)
        # On the session's server: only the second sweep's own temporary server is under test here.
        proc = start_sweep(cfg, api_url=PREFECT_API_URL.value())
        wait_for_requests(proc, state, 4)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = finish(proc)
        assert proc.returncode == 130, err[-3000:]
        assert "second signal" in " ".join(err.split())
        [run] = lake_query(tmp_path, "SELECT status FROM runs")
        assert run["status"] == "cancelled"

        state.delay_s = 0.0
        proc = start_sweep(cfg)
        wait_for_requests(proc, state, 5)
        started = children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)  # the process alone, not its group: nothing can clean up
        # wait(), not communicate(): a server that outlived the sweep holds its stdout and stderr
        # open, and reading them to their end would hang until pytest's timeout, not fail here.
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        deadline = time.monotonic() + 30
        while [p for p in started if alive(p)] and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [p for p in started if alive(p)]
        for pid in left:  # a failure must not leave the server running for the rest of the suite
            os.kill(pid, signal.SIGKILL)
        assert left == []  # the temporary server died with it


def test_a_stop_before_the_run_begins_writes_nothing(tmp_path, monkeypatch):
    """In-process: a stop requested while the sweep generates (before its run begins) sends and
    writes nothing, and the flow run ends Cancelled (calling the flow raises CancelledRun)."""
    from prefect.exceptions import CancelledRun

    from tasks.runs import stopping

    state = FakeProvider()
    real = stopping.configure

    def configure_then_stop(grace_s: float, poll_s: float) -> None:
        real(grace_s, poll_s)
        stopping.request("asked by the test")

    monkeypatch.setattr(stopping, "configure", configure_then_stop)
    with FakeServer(state) as fake:
        cfg = config(tmp_path, fake.api_base)
        try:
            with pytest.raises(CancelledRun):
                sweep(str(cfg))
        finally:
            stopping.reset()
    assert state.seen == []
    for table in ("runs", "items", "requests", "responses"):
        assert lake_query(tmp_path, f"SELECT count(*) AS n FROM {table}") == [{"n": 0}], table



def test_the_call_stage_starts_no_new_call_and_keeps_those_in_flight(tmp_path):
    """In-process: a stop while 4 calls are in flight (each takes 1 s, the grace is 5 s) stores
    their 4 answers and sends nothing more; a stop with a grace shorter than the calls abandons them."""
    from tasks.config import load_config
    from tasks.items.generate import generate_task, item_row
    from tasks.models.stream import run_calls
    from tasks.runs import stopping

    state = FakeProvider(delay_s=1.0)
    defaults = stopping.GRACE_S, stopping.POLL_S

    def stop_when_sent(n: int) -> None:
        while len(state.seen) < n:
            time.sleep(0.01)
        stopping.request("asked by the test")

    with FakeServer(state) as fake:
        try:
            for grace_s, expect_stored in ((5.0, 4), (0.0, 0)):
                home = tmp_path / f"grace-{grace_s}"  # a lake each: no claim of the first holds the second back
                home.mkdir()
                cfg = load_config(config(home, fake.api_base))
                dataset, items = generate_task("symmetry", "closure", cfg.task_params("symmetry", "closure"), 0)
                rows = [item_row(i, dataset) for i in items]
                stopping.reset()
                stopping.configure(grace_s, 0.5)
                before = len(state.seen)
                stopper = threading.Thread(target=stop_when_sent, args=(before + 4,))
                stopper.start()
                stats = run_calls(rows, "fake", cfg.model("fake"), "r1", Lake.of(cfg), sweep=cfg.sweep)
                stopper.join()
                assert len(state.seen) - before == 4  # the 4 in flight; no new call after the stop
                stored = lake_query(home, "SELECT count(*) AS n FROM responses")[0]["n"]
                assert (stored, stats.sent, stats.unsent) == (expect_stored, expect_stored, len(rows) - expect_stored)
        finally:
            stopping.reset()
            stopping.configure(*defaults)


def test_the_cancellation_watch_keeps_one_prefect_client_for_its_polls(monkeypatch):
    """A sweep's cancellation watch reads its flow run's state every POLL_S for the sweep's whole
    life: one client made at the first poll, closed when the watch ends, never one per poll (each
    built an SSL context: about 20 ms of CPU every poll). A cancellation is still seen."""
    from tasks.runs import stopping

    made, closed, reads = [], [], []

    class Client:
        def __enter__(self):
            made.append(self)
            return self

        def __exit__(self, *exc):
            closed.append(self)

        def read_flow_run(self, flow_run_id):
            reads.append(flow_run_id)
            state = Cancelling() if len(reads) >= 4 else Running()
            return type("FlowRun", (), {"state": state})()

    monkeypatch.setattr(stopping, "_prefect_client", Client)
    defaults = stopping.GRACE_S, stopping.POLL_S
    stopping.reset()
    stopping.configure(defaults[0], 0.01)
    try:
        with stopping.watch_flow_run(str(uuid.uuid4())):
            deadline = time.monotonic() + 10
            while not stopping.requested() and time.monotonic() < deadline:
                time.sleep(0.01)
        assert stopping.requested() and len(reads) == 4
        assert len(made) == 1 and closed == made
    finally:
        stopping.configure(*defaults)
        stopping.reset()
