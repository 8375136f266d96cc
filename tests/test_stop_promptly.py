"""A stop is prompt (tasks.runs.stopping): no call starts once it is requested, even one that was
waiting for its slot or its pace, and start-up ends at the signal instead of finishing first."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from conftest import fake_model_config
from fakes import FakeProvider, FakeServer
from test_stopping import config, lake_query

from tasks.config import load_config
from tasks.items.generate import generate_task, item_row
from tasks.lake.lake import Lake
from tasks.models.stream import run_calls
from tasks.runs import stopping


@pytest.fixture
def clean_stop():
    defaults = stopping.GRACE_S, stopping.POLL_S
    stopping.reset()
    yield
    stopping.reset()
    stopping.configure(*defaults)


def test_calls_waiting_for_their_pace_do_not_start_after_a_stop(tmp_path, clean_stop):
    """One call a second (requests_per_minute = 60) and 4 workers: 3 workers wait in the limiter's
    pacing, past the stream's own check, when the stop comes; none of them may send."""
    state = FakeProvider(delay_s=0.2)
    with FakeServer(state) as fake:
        cfg = load_config(fake_model_config(tmp_path, fake.api_base, n_max=100, model_extra={
            "concurrency": 4, "requests_per_minute": 60, "shared_limits": False, "adaptive_concurrency": False}))
        dataset, items = generate_task("symmetry", "closure", cfg.task_params("symmetry", "closure"), 0)
        rows = [item_row(i, dataset) for i in items]
        stopping.configure(5.0, 0.5)

        def stop_after_first_call() -> None:
            while not state.seen:
                time.sleep(0.01)
            stopping.request("asked by the test")

        stopper = threading.Thread(target=stop_after_first_call)
        stopper.start()
        stats = run_calls(rows, "fake", cfg.model("fake"), "r1", Lake.of(cfg), sweep=cfg.sweep)
        stopper.join()
    assert len(state.seen) == 1  # the paced ones never left
    assert (stats.sent, stats.unsent) == (1, len(rows) - 1)
    assert lake_query(tmp_path, "SELECT count(*) AS n FROM responses") == [{"n": 1}]


def test_a_signal_ends_an_interruptible_wait_at_once_even_through_except_exception(clean_stop):
    """Start-up (imports, the temporary server's boot) runs under stopping.interruptible: a signal
    raises there at once, also where the code on the way catches every Exception."""
    reached = []
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM))
    with stopping.on_signals():
        timer.start()
        with pytest.raises(stopping.Stopped, match="SIGTERM received"):
            with stopping.interruptible():
                try:
                    threading.Event().wait(60)  # a server that takes long to boot
                except Exception:  # noqa: BLE001 - as Prefect's plugin loader does
                    pass
                reached.append("after the wait")
    assert reached == []
    assert stopping.requested()


def test_a_stop_requested_before_an_interruptible_block_raises_on_entry(clean_stop):
    stopping.request("asked by the test")
    with pytest.raises(stopping.Stopped):
        with stopping.interruptible():
            pytest.fail("the block ran after a stop")


def test_a_flow_started_inside_the_cli_handlers_keeps_a_stop_that_came_meanwhile(tmp_path, clean_stop):
    """A signal that reaches the CLI while Prefect starts the flow run is that run's: the flow
    does not forget it (it forgets only what an earlier flow run of the process was asked)."""
    from prefect.exceptions import CancelledRun

    from flows.sweep import sweep

    state = FakeProvider()
    with FakeServer(state) as fake:
        cfg = config(tmp_path, fake.api_base)
        with stopping.on_signals():
            stopping.request("SIGTERM received")
            with pytest.raises(CancelledRun):
                sweep(str(cfg))
    assert state.seen == []
    assert lake_query(tmp_path, "SELECT count(*) AS n FROM runs") == [{"n": 0}]
