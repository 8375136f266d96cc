"""A native crash of an embedded model, and a run whose process vanished.

The embedded model is the real SmolLM2 in its real worker process, killed by a real signal in
the middle of a batch (SIGKILL as the OOM killer sends it, SIGSEGV as a fault in llama.cpp
raises it). Runs, the ledger and Prefect flow-run states are read back from a real lake and the
session's real Prefect API.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
from typer.testing import CliRunner

from conftest import REPO, TEST_CLAIM_SETTLE_S, run_cli, write_config
from fakes import FakeServer
from flows.cli import app
from flows.sweep import sweep
from tasks.lake.lake import Lake
from tasks.lake.writes import write_rows
from tasks.models import config as model_config
from tasks.models import embedded
from tasks.runs import lifecycle

WAIT_S = 300  # a deadline for waiting on the model, never a timing assertion


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def crash_config(tmp_path, api_base: str):
    """8 closure items in 2 batches of 4, on the embedded SmolLM2 (short answers) and then on a fake provider."""
    return write_config(tmp_path / "invarbench.toml", {
        "warehouse": {"path": str(tmp_path / "wh")},
        "sweep": {"models": ["local/smollm2", "fake"], "batch_size": 4, "report": False,
                  "claim_settle_s": TEST_CLAIM_SETTLE_S},
        'models."local/smollm2"': {"model": "local/smollm2", "max_tokens": 16, "concurrency": 1},
        "models.fake": {"model": "openai/fake-model", "api_base": api_base, "retries": 0, "timeout_s": 10.0},
        "suites.symmetry": {"tasks": ["closure"]},
        "suites.symmetry.params.closure": {"n_min": 5, "n_max": 40, "n_step": 5, "groups": ["integers"],
                                           "prompt_styles": ["direct"]},
    })


class Killer(threading.Thread):
    """Sends ``sig`` to SmolLM2's worker once it has answered one request (so: mid-batch)."""

    def __init__(self, sig: signal.Signals):
        super().__init__(daemon=True)
        self.sig, self.killed, self.pids = sig, None, set()
        self._done = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + WAIT_S
        while not self._done.is_set() and time.monotonic() < deadline:
            w = embedded.worker("smollm2")
            pid = w.pid
            if pid:
                self.pids.add(pid)
                if self.killed is None and w.served >= 1:
                    os.kill(pid, self.sig)
                    self.killed = pid
            time.sleep(0.005)

    def stop(self) -> None:
        self._done.set()
        self.join()


def invoke_sweep(cfg) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["sweep", "--config", str(cfg)])
    return result.exit_code, result.output


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV], ids=["SIGKILL", "SIGSEGV"])
def test_worker_killed_mid_batch(tmp_path, sig):
    """Error rows naming the signal, a restart for the next chunk, the other model goes on, the run
    fails with exit 1, and the next sweep sends only the unanswered requests."""
    lake = Lake(str(tmp_path / "wh" / "lake"))
    with FakeServer() as server:
        cfg = crash_config(tmp_path, server.api_base)
        killer = Killer(sig)
        killer.start()
        try:
            code, output = invoke_sweep(cfg)
        finally:
            killer.stop()
        died = f"embedded model local/smollm2: worker process died with {sig.name}"
        assert killer.killed, "the worker was never seen answering"
        assert code == 1, output
        assert died in output, output

        # A chunk's requests are all answered before the next chunk starts.
        rows = lake.read("""SELECT status, error, attempts FROM responses WHERE model = 'local/smollm2'
                             ORDER BY created_at""")
        first, second = rows[:4], rows[4:]
        errors = [r for r in first if r["status"] == "error"]
        # Every request got exactly one response; the one in flight names the signal, the rest of
        # the chunk was not sent; nothing is retried within the chunk.
        assert len(first) == 4 and 1 <= len(errors) <= 3, first
        assert all(died in r["error"] and r["attempts"] == 1 for r in errors), errors
        assert sum("not sent" not in r["error"] for r in errors) == 1, errors
        # The worker was started again for the next chunk: all of it is answered.
        assert [r["status"] for r in second] == ["ok"] * 4, second
        assert len(killer.pids) >= 2 and not any(alive(p) for p in killer.pids), "workers must stop with the sweep"
        # The other model ran all its items after the crash.
        fake = lake.read("SELECT status, count(*) AS n FROM responses WHERE model = 'fake' GROUP BY status")
        assert fake == [{"status": "ok", "n": 8}]
        assert len(server.state.seen) == 8

        run = [r for r in lifecycle.list_runs(lake, 5) if r["kind"] == "sweep"][0]
        assert run["status"] == "failed" and died in run["message"], run

        code, output = invoke_sweep(cfg)
        assert code == 0, output
        assert re.search(rf"16 requests: {len(errors)} sent, {16 - len(errors)} from the ledger, 0 errors", output), output
    duplicates = lake.read("SELECT request_id FROM responses WHERE status = 'ok' GROUP BY request_id HAVING count(*) > 1")
    assert duplicates == []
    missing = lake.read("""SELECT count(*) AS n FROM (SELECT DISTINCT request_id FROM run_requests) q
                            ANTI JOIN (SELECT request_id FROM ledger WHERE status = 'ok') l USING (request_id)""")
    assert missing == [{"n": 0}]
    assert lifecycle.list_runs(lake, 1)[0]["status"] == "completed"


@pytest.mark.slow
def test_worker_restarts_at_most_max_restarts_times():
    worker = embedded.Worker("smollm2")
    messages = [{"role": "user", "content": "Say hello."}]
    try:
        for restart in range(embedded.MAX_RESTARTS + 1):
            worker.begin_chunk()
            worker.generate(messages, {"max_tokens": 4})
            os.kill(worker.pid, signal.SIGKILL)
            with pytest.raises(embedded.EmbeddedModelCrashed, match="worker process died with SIGKILL$"):
                worker.generate(messages, {"max_tokens": 4})
            assert worker.restarts == restart
        worker.begin_chunk()
        with pytest.raises(embedded.EmbeddedModelCrashed, match=f"not restarted after {embedded.MAX_RESTARTS} restarts"):
            worker.generate(messages, {"max_tokens": 4})
        assert worker.pid is None
    finally:
        worker.stop()


# The parent also starts a process that holds the worker's pipes open (the holder): when the parent
# dies the worker then neither reads EOF nor fails to write its answer, whether it is still
# generating (the model may end the long answer early) or idle again, so only its watch for being
# re-parented can end it.
WORKER_OF_A_PARENT = """
import subprocess
import sys
from tasks.models import config as model_config
from tasks.models import embedded
w = embedded.worker("smollm2")
w.generate([{"role": "user", "content": "Hi"}], {"max_tokens": 2})
holder = subprocess.Popen(["sleep", "600"], pass_fds=[w._proc.stdin.fileno(), w._proc.stdout.fileno()])
print(w.pid, holder.pid, flush=True)
w.generate([{"role": "user", "content": "Count from one to a thousand in words."}], {"max_tokens": 4000})
"""


@pytest.mark.slow
def test_worker_does_not_outlive_a_killed_parent():
    # The parent is killed while its worker is busy generating (not reading its stdin).
    parent = subprocess.Popen([sys.executable, "-c", WORKER_OF_A_PARENT], cwd=REPO, stdout=subprocess.PIPE, text=True)
    holder = None
    try:
        child, holder = (int(pid) for pid in parent.stdout.readline().split())
        assert alive(child)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 60
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        survived = alive(child)
        if survived:  # a failure must not leave the worker running
            os.kill(child, signal.SIGKILL)
        assert not survived, "the worker outlived its parent"
    finally:
        parent.kill()
        parent.wait()
        if holder is not None:
            os.kill(holder, signal.SIGKILL)


def test_heartbeat_rows_and_final_state(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    run = lifecycle.Run(lake, "r1", "sweep", config="{}", models="[]", heartbeat_s=0.05).start(n_items=3)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        beats = lake.read("SELECT count(*) AS n FROM raw_runs WHERE run_id = 'r1' AND status = 'running'")[0]["n"]
        if beats >= 3:
            break
        time.sleep(0.05)
    assert beats >= 3, "the heartbeat thread wrote no rows"
    run.finish(n_requests=7)
    rows = lake.read("SELECT status, n_items, n_requests, updated_at FROM raw_runs ORDER BY updated_at")
    # The final row is the last one ever written: no heartbeat after it.
    time.sleep(0.2)
    assert lake.read("SELECT count(*) AS n FROM raw_runs")[0]["n"] == len(rows)
    assert rows[-1]["status"] == "completed" and rows[-1]["n_items"] == 3 and rows[-1]["n_requests"] == 7
    assert lifecycle.list_runs(lake, 5)[0]["status"] == "completed"


def running_flow_run() -> str:
    """A flow run in the session's Prefect API left in state Running, as a killed process leaves it."""
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.states import Running

    @flow(name="vanished")
    def vanished() -> None:
        """Stands for the flow of a process that was killed."""

    with get_client(sync_client=True) as client:
        return str(client.create_flow_run(vanished, state=Running()).id)


def flow_run_state(flow_run_id: str) -> str:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(uuid.UUID(flow_run_id)).state.type.value


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_stale_running_run_is_crashed(tmp_path):
    """`invarbench runs` shows a run without a heartbeat for too long as crashed; the next sweep
    writes that in the runs table and marks its Prefect flow run Crashed."""
    lake = Lake(str(tmp_path / "wh" / "lake"))
    now = dt.datetime.now(dt.timezone.utc)
    old = now - lifecycle.STALE_AFTER - dt.timedelta(minutes=1)
    stale_flow_run = running_flow_run()

    def row(run_id, kind, updated, flow_run_id=""):
        return {"run_id": run_id, "flow_run_id": flow_run_id, "kind": kind, "status": "running",
                "started_at": old - dt.timedelta(hours=1), "updated_at": updated, "config": "{}",
                "models": "[]", "n_items": 5}

    lake.ensure()  # as every run does before its first write: `runs` reads the lake read-only
    write_rows(lake, "runs", [row("vanished", "sweep", old, stale_flow_run), row("alive", "sweep", now),
                              row("rescoring", "rescore", old)])
    with FakeServer() as server:
        cfg = write_config(tmp_path / "invarbench.toml", {
            "warehouse": {"path": str(tmp_path / "wh")},
            "sweep": {"models": ["fake"], "report": False, "claim_settle_s": TEST_CLAIM_SETTLE_S},
            "models.fake": {"model": "openai/fake-model", "api_base": server.api_base},
            "suites.symmetry": {"tasks": ["closure"]},
            "suites.symmetry.params.closure": {"n_min": 5, "n_max": 5, "groups": ["integers"],
                                               "prompt_styles": ["direct"]},
        })
        listed = run_cli("runs", "--format", "json", "--config", str(cfg))
        assert listed.returncode == 0, listed.stderr
        status = {r["run_id"]: r["status"] for r in json.loads(listed.stdout)}
        # Only a kind that heartbeats is judged by its age.
        assert status == {"vanished": "crashed", "alive": "running", "rescoring": "running"}
        assert lake.read("SELECT status FROM runs WHERE run_id = 'vanished'") == [{"status": "running"}]

        summary = sweep(str(cfg))

    stored = {r["run_id"]: r for r in lake.read("SELECT run_id, status, message, n_items FROM runs")}
    assert stored["vanished"]["status"] == "crashed" and stored["vanished"]["n_items"] == 5
    assert "no heartbeat since" in stored["vanished"]["message"]
    assert stored["alive"]["status"] == "running" and stored["rescoring"]["status"] == "running"
    assert stored[summary["run_id"]]["status"] == "completed"
    # One crashed row; the other runs were left as they were.
    written = lake.read("SELECT run_id, count(*) AS n FROM raw_runs GROUP BY run_id")
    assert {r["run_id"]: r["n"] for r in written if r["run_id"] != summary["run_id"]} == {
        "vanished": 2, "alive": 1, "rescoring": 1}
    assert flow_run_state(stale_flow_run) == "CRASHED"
    # A flow run that is no longer Running is left alone; an unknown id is no error.
    assert lifecycle.mark_flow_run_crashed(stale_flow_run, "again") is False
    assert lifecycle.mark_flow_run_crashed(str(uuid.uuid4()), "unknown") is False


@pytest.mark.parametrize("value", ["0", "two", "-1", "1.5", "²"])
def test_a_bad_thread_count_is_named_and_starts_no_worker(monkeypatch, value):
    monkeypatch.setenv(model_config.THREADS_ENV, value)
    worker = embedded.Worker("smollm2")
    with pytest.raises(ValueError, match=f"INVARBENCH_EMBEDDED_THREADS must be a whole number of threads, 1 or more, not '{value}'"):
        worker.generate([{"role": "user", "content": "Hi"}], {"max_tokens": 2})
    assert worker.pid is None


def test_the_thread_count_is_the_variable_or_every_cpu_this_process_may_use(monkeypatch):
    for written, meant in (("3", 3), (" 2 ", 2), ("02", 2)):
        monkeypatch.setenv(model_config.THREADS_ENV, written)
        assert model_config.threads() == meant
    monkeypatch.delenv(model_config.THREADS_ENV)
    assert model_config.threads() == len(os.sched_getaffinity(0))


def test_a_sweep_with_a_bad_thread_count_stops_before_anything_is_written(tmp_path):
    cfg = crash_config(tmp_path, "http://127.0.0.1:9/v1")  # nothing may be sent: no server needed
    done = run_cli("sweep", "--config", str(cfg), env={model_config.THREADS_ENV: "two"})
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: INVARBENCH_EMBEDDED_THREADS must be a whole number of threads, 1 or more, not 'two'")
    assert not (tmp_path / "wh").exists()
