"""Overlapping sweeps on one warehouse: claims make each request paid once; a dead sweep's claims
are freed (at once on its own machine, at expiry elsewhere)."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO, fake_model_config, process_env
from fakes import FakeProvider, FakeServer
from flows.sweep import sweep
from tasks.lake.lake import Lake
from tasks.lake.writes import write_rows
from tasks.models import claims as claims_module
from tasks.models.call import USABLE_LEDGER_ROWS, lookup_ledger
from tasks.models.claims import Claims
from tasks.records import now_utc


def lake_query(tmp_path, sql, params=None):
    return Lake(str(tmp_path / "wh" / "lake")).read(sql, params)


def start_sweep(cfg) -> subprocess.Popen:
    """A sweep in a process of its own: two at once, or one to kill."""
    return subprocess.Popen([sys.executable, "-m", "flows.cli", "sweep", "--config", str(cfg)], cwd=REPO,
                            env=process_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def test_simultaneous_claims_have_exactly_one_winner(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    a, b = Claims(lake, "run-b", 60, 0.0), Claims(lake, "run-a", 60, 0.0)
    # Both write before either re-reads (as two sweeps claiming at the same moment would).
    a._write(["r1", "r2"])
    b._write(["r1", "r2"])
    got_a, got_b = a.claim(["r1", "r2"]), b.claim(["r1", "r2"])
    assert got_a.mine == ["r1", "r2"] and got_b.mine == [] and got_b.others == ["r1", "r2"]  # the earlier claim wins
    # The same instant: the lower run id wins, whoever asks.
    now = now_utc()
    write_rows(lake, "claims", [{"request_id": "r3", "run_id": run, "claimed_at": now,
                                 "expires_at": now + dt.timedelta(minutes=1)} for run in ("run-y", "run-x")])
    assert Claims(lake, "run-y", 60, 0.0).claim(["r3"]).others == ["r3"]
    assert Claims(lake, "run-x", 60, 0.0).claim(["r3"]).mine == ["r3"]


def running(lake: Lake, *run_ids: str) -> None:
    """``running`` rows of ``run_ids`` (as each sweep writes before it claims anything)."""
    now = now_utc()
    write_rows(lake, "runs", [{"run_id": r, "kind": "sweep", "status": "running", "started_at": now, "updated_at": now,
                               "host": "this-machine", "pid": 1} for r in run_ids])


class OnAStore:
    """A local lake as Claims sees an object store's (``s3://``): its written files may be late to read."""

    is_url = True

    def __init__(self, lake: Lake):
        self.lake = lake

    def __getattr__(self, name):
        return getattr(self.lake, name)


def pauses(monkeypatch) -> list[float]:
    """The settle pauses Claims takes from now on (recorded, not slept)."""
    slept: list[float] = []
    monkeypatch.setattr(claims_module.time, "sleep", slept.append)
    return slept


def test_a_sweep_alone_on_a_local_lake_claims_without_the_settle_pause(tmp_path, monkeypatch):
    lake = Lake(str(tmp_path / "lake"))
    running(lake, "run-a")
    slept = pauses(monkeypatch)
    got = Claims(lake, "run-a", 60, 3600.0).claim(["r1", "r2"])
    assert got.mine == ["r1", "r2"] and slept == []  # no other run is running: nobody else can be claiming
    # Another run running (a sweep that may be claiming the same requests right now): the pause is kept.
    running(lake, "run-b")
    got = Claims(lake, "run-a", 60, 3600.0).claim(["r3"])
    assert got.mine == ["r3"] and len(slept) == 1 and 3590 < slept[0] <= 3600
    # Claims of runs that ended do not keep it: they claim nothing any more.
    now = now_utc()
    write_rows(lake, "runs", [{"run_id": "run-b", "kind": "sweep", "status": "completed", "started_at": now,
                               "updated_at": now + dt.timedelta(seconds=1), "host": "this-machine", "pid": 1}])
    assert Claims(lake, "run-a", 60, 3600.0).claim(["r4"]).mine == ["r4"] and len(slept) == 1


def test_a_sweep_on_an_object_store_keeps_the_settle_pause(tmp_path, monkeypatch):
    lake = Lake(str(tmp_path / "lake"))
    running(lake, "run-a")
    slept = pauses(monkeypatch)
    got = Claims(OnAStore(lake), "run-a", 60, 3600.0).claim(["r1"])
    assert got.mine == ["r1"] and len(slept) == 1 and 3590 < slept[0] <= 3600


def test_a_claim_made_while_another_sweep_starts_is_left_to_the_first(tmp_path, monkeypatch):
    """The case the skipped pause rests on: the second sweep's run begins after the first sweep's
    check, so its first read of the claims sees the first sweep's and it sends none of them."""
    lake = Lake(str(tmp_path / "lake"))
    running(lake, "run-b")
    slept = pauses(monkeypatch)
    assert Claims(lake, "run-b", 60, 3600.0).claim(["r1", "r2"]).mine == ["r1", "r2"] and slept == []
    running(lake, "run-a")  # the later sweep's run; "run-a" would win a tie of claim times
    got = Claims(lake, "run-a", 60, 3600.0).claim(["r1", "r2", "r3"])
    assert got.others == ["r1", "r2"] and got.mine == ["r3"]
    assert len(slept) == 1  # run-b is running: the second sweep pauses before taking r3


@pytest.mark.slow  # a sweep in a process of its own
def test_two_sweeps_started_together_send_each_request_once(tmp_path):
    state = FakeProvider(delay_s=0.3)
    with FakeServer(state) as server:
        cfg = fake_model_config(tmp_path, server.api_base, n_max=50, model_extra={"concurrency": 2})
        first, second = start_sweep(cfg), start_sweep(cfg)
        outs = [p.communicate(timeout=600) for p in (first, second)]
    assert first.returncode == 0 and second.returncode == 0, outs
    contents = state.contents()
    assert len(contents) == 10 == len(set(contents)), "every request answered (200) exactly once"
    runs = lake_query(tmp_path, "SELECT run_id, status FROM runs ORDER BY run_id")
    assert [r["status"] for r in runs] == ["completed", "completed"]
    assert lake_query(tmp_path, "SELECT count(*) AS n FROM responses") == [{"n": 10}]
    # Both runs hold every trial: the one that did not send took the answers from the ledger.
    assert lake_query(tmp_path, "SELECT count(DISTINCT run_id) AS n FROM run_trials") == [{"n": 2}]


@pytest.mark.slow  # a sweep in a process of its own
def test_a_sweep_killed_on_this_machine_frees_its_claims_at_once(tmp_path):
    state = FakeProvider(delay_s=60.0)  # the first sweep's requests hang until it is killed
    with FakeServer(state) as server:
        # A lease far longer than the test may wait: the takeover cannot come from its expiry.
        cfg = fake_model_config(tmp_path, server.api_base, n_max=50, model_extra={"concurrency": 2},
                                sweep_extra={"claim_lease_s": 3600.0})
        doomed = start_sweep(cfg)
        deadline = time.monotonic() + 300
        while len(state.seen) < 2:
            assert doomed.poll() is None and time.monotonic() < deadline, "the first sweep never sent"
            time.sleep(0.2)
        os.killpg(doomed.pid, signal.SIGKILL)
        doomed.wait()
        state.delay_s = 0.0
        [dead] = lake_query(tmp_path, "SELECT run_id, status, pid FROM runs")
        assert dead["status"] == "running" and dead["pid"] == doomed.pid  # SIGKILL: it never wrote its end
        claimed = lake_query(tmp_path, "SELECT count(*) AS n, max(expires_at) AS expires FROM claims WHERE run_id = ?",
                             [dead["run_id"]])[0]
        assert claimed["n"] == 10
        survivor = sweep(str(cfg))
    assert survivor["sent"] == 10 and survivor["errors"] == 0
    rows = lake_query(tmp_path, "SELECT run_id, created_at FROM responses")
    assert len(rows) == 10 and dead["run_id"] not in {r["run_id"] for r in rows}
    assert max(r["created_at"] for r in rows) < claimed["expires"]
    [crashed] = lake_query(tmp_path, "SELECT status, message FROM runs WHERE run_id = ?", [dead["run_id"]])
    assert crashed["status"] == "crashed" and f"pid {doomed.pid} on this machine" in crashed["message"]
    assert lake_query(tmp_path, "SELECT count(*) AS n FROM ledger WHERE status = 'ok'") == [{"n": 10}]


@pytest.mark.slow  # waits out a claim's expiry in real time (8 s)
def test_claims_of_a_live_run_elsewhere_hold_until_they_expire(tmp_path):
    """A run on another machine cannot be checked for its process: its claims hold until they expire."""
    with FakeServer() as server:
        learn = tmp_path / "learn"
        learn.mkdir()
        cfg = fake_model_config(learn, server.api_base, n_max=50)
        assert sweep(str(cfg))["sent"] == 10
        ids = [r["request_id"] for r in lake_query(learn, "SELECT request_id FROM responses")]
        assert len(ids) == 10
        # A short lease of its own makes the waiter look again every 0.5 s (a tenth of it).
        cfg = fake_model_config(tmp_path, server.api_base, n_max=50, sweep_extra={"claim_lease_s": 5.0})
        now = now_utc()
        # Live long enough for the waiter to start its run first on a loaded machine (8 s was not,
        # at a load of 35), which is all this test waits for.
        expires = now + dt.timedelta(seconds=25)
        lake = Lake(str(tmp_path / "wh" / "lake"))
        write_rows(lake, "runs", [{"run_id": "elsewhere", "kind": "sweep", "status": "running", "started_at": now,
                                   "updated_at": now, "host": "another-machine/boot/1", "pid": 1}])
        write_rows(lake, "claims", [{"request_id": rid, "run_id": "elsewhere", "claimed_at": now, "expires_at": expires}
                                    for rid in ids])
        waiter = sweep(str(cfg))
    assert waiter["sent"] == 10 and waiter["errors"] == 0
    # The waiter started while the claims were live, so it did wait for them to expire.
    [started] = lake_query(tmp_path, "SELECT started_at FROM runs WHERE run_id = ?", [waiter["run_id"]])
    assert started["started_at"] < expires, "the waiter started after the claims expired: nothing was tested"
    rows = lake_query(tmp_path, "SELECT created_at FROM responses")
    assert len(rows) == 10 and min(r["created_at"] for r in rows) >= expires
    assert lake_query(tmp_path, "SELECT status FROM runs WHERE run_id = 'elsewhere'") == [{"status": "running"}]


def test_the_ledger_look_up_answers_as_the_ledger_view(tmp_path):
    """The look-up that the stream and claims make for a chunk's request ids picks those requests
    before ranking their responses (tasks.models.call.USABLE_LEDGER_ROWS); its rows must stay the
    ``ok`` rows of the view ``ledger``: the first ok response, never one after an error that came
    later, none for a request whose latest answer is an error."""
    lake = Lake(str(tmp_path / "lake"))
    t0 = now_utc()

    def response(rid: str, request: str, status: str, seconds: int) -> dict:
        return {"response_id": rid, "request_id": request, "run_id": "run", "model": "m", "status": status,
                "text": f"answer {rid}" if status == "ok" else None, "created_at": t0 + dt.timedelta(seconds=seconds)}

    write_rows(lake, "responses", [
        response("a1", "errors-then-ok", "error", 0), response("a2", "errors-then-ok", "ok", 1),
        response("a3", "errors-then-ok", "error", 2),
        response("b1", "two-oks", "ok", 5), response("b2", "two-oks", "ok", 3),
        response("c1", "only-errors", "error", 0),
        response("d1", "not-asked", "ok", 0),
    ])
    asked = ["errors-then-ok", "two-oks", "only-errors", "never-sent"]
    rows = sorted(lake.read(USABLE_LEDGER_ROWS, [asked]), key=lambda r: r["request_id"])
    view = lake.read("SELECT request_id, response_id, text, finish_reason FROM ledger WHERE status = 'ok' "
                     "AND request_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY request_id", [asked])
    assert rows == view
    assert {k: v["response_id"] for k, v in lookup_ledger(lake, asked).items()} == {"errors-then-ok": "a2",
                                                                                   "two-oks": "b2"}
    # Claims read the same rule: a request answered ok is answered, not claimable.
    assert Claims(lake, "run-2", 60, 0.0).claim(asked).answered == ["errors-then-ok", "two-oks"]


# live_claims as first written (a view over the view claims, at now()): the reference the macro
# live_claims_of, which reads less of a grown lake, must answer as.
REFERENCE_LIVE_CLAIMS = """
    SELECT c.request_id, c.run_id, c.claimed_at, c.expires_at FROM claims c
    WHERE c.expires_at > now()
      AND NOT EXISTS (SELECT 1 FROM responses r
                      WHERE r.request_id = c.request_id AND r.run_id = c.run_id AND r.created_at >= c.claimed_at)
      AND NOT EXISTS (SELECT 1 FROM runs u WHERE u.run_id = c.run_id AND u.status <> 'running')"""


def test_live_claims_of_answers_as_the_view_it_replaced(tmp_path):
    """Expired, answered and ended-run claims are not live; a claim answered before it was made, or
    by another run, or renewed after an expired row (its claimed_at the first row's) still is."""
    lake = Lake(str(tmp_path / "lake"))
    t0 = now_utc()

    def at(seconds: float) -> dt.datetime:
        return t0 + dt.timedelta(seconds=seconds)

    def claim(rid: str, run: str, claimed: float, expires: float) -> dict:
        return {"request_id": rid, "run_id": run, "claimed_at": at(claimed), "expires_at": at(expires)}

    running(lake, "live-run", "ended-run")
    write_rows(lake, "runs", [{"run_id": "ended-run", "kind": "sweep", "status": "completed", "started_at": t0,
                               "updated_at": at(1), "host": "this-machine", "pid": 1}])
    write_rows(lake, "claims", [claim("expired", "live-run", -100, -50), claim("renewed", "live-run", -100, -50)])
    write_rows(lake, "claims", [
        claim("live", "live-run", -10, 600), claim("renewed", "live-run", -5, 600),
        claim("answered", "live-run", -10, 600), claim("answered-before", "live-run", -10, 600),
        claim("answered-by-other", "live-run", -10, 600), claim("ended", "ended-run", -10, 600),
        claim("no-run-row", "unknown-run", -10, 600), claim("not-asked", "live-run", -10, 600)])
    write_rows(lake, "responses", [
        {"response_id": f"x{i}", "request_id": rid, "run_id": run, "model": "m", "status": "ok", "text": "a",
         "created_at": at(seconds)}
        for i, (rid, run, seconds) in enumerate([("answered", "live-run", -1), ("answered-before", "live-run", -20),
                                                  ("answered-by-other", "other-run", -1)])])
    expected = {("live", "live-run", at(-10)), ("renewed", "live-run", at(-100)),
                ("answered-before", "live-run", at(-10)), ("answered-by-other", "live-run", at(-10)),
                ("no-run-row", "unknown-run", at(-10))}
    asked = sorted({rid for rid, _, _ in expected} | {"expired", "answered", "ended", "never-claimed"})
    _, live, others_running = Claims(lake, "observer", 60, 0.0)._state(asked)
    assert {(rid, run, claimed) for rid, rows in live.items() for claimed, run in rows} == expected
    assert others_running  # live-run; ended-run's latest row is not running
    reference = {tuple(r.values()) for r in lake.read(REFERENCE_LIVE_CLAIMS)}
    assert {(rid, run, claimed) for rid, run, claimed, _ in reference} == expected | {("not-asked", "live-run", at(-10))}
    assert {tuple(r.values()) for r in lake.read("SELECT * FROM live_claims")} == reference
    assert {tuple(r.values()) for r in lake.read("SELECT * FROM live_claims_of(?::VARCHAR[], now())", [asked])} == {
        r for r in reference if r[0] in asked}


class LedgerReads:
    """A lake whose reads of the ledger (``ledger_of``) and of the other runs ``running`` are counted."""

    def __init__(self, lake: Lake):
        self.lake, self.ledger_reads, self.running_reads = lake, 0, 0

    def read(self, sql, params=None):
        self.ledger_reads += "ledger_of" in sql
        self.running_reads += "FROM runs WHERE status = 'running'" in sql
        return self.lake.read(sql, params)

    def __getattr__(self, name):
        return getattr(self.lake, name)


def test_a_claim_after_the_stream_s_look_up_reads_the_ledger_once_and_still_sees_an_answer_made_meanwhile(tmp_path):
    """The stream claims the misses of the look-up it has just made (looked_up): the first read of
    the claims skips the ledger, and the read after the claims' commit still finds a request
    answered since the look-up, which is then not this run's to send."""
    lake = Lake(str(tmp_path / "lake"))
    running(lake, "run-a")
    # r1 was a miss of the look-up; its answer (another sweep's) is committed before the claim.
    write_rows(lake, "responses", [{"response_id": "x1", "request_id": "r1", "run_id": "run-z", "model": "m",
                                    "status": "ok", "text": "7", "created_at": now_utc()}])
    counted = LedgerReads(lake)
    got = Claims(counted, "run-a", 60, 0.0).claim(["r1", "r2"], looked_up=True)
    assert got.answered == ["r1"] and got.mine == ["r2"] and got.others == []
    assert counted.ledger_reads == 1
    # Only the read after the claims' commit asks whether another run is running (whether to
    # settle): the first read's answer to that was never used, and `runs` costs a read ~6 ms.
    assert counted.running_reads == 1
    # Not after a look-up (a later round of the same requests): both reads ask the ledger, and an
    # answered request is neither claimed nor sent.
    counted = LedgerReads(lake)
    got = Claims(counted, "run-a", 60, 0.0).claim(["r1", "r3"])
    assert got.answered == ["r1"] and got.mine == ["r3"] and counted.ledger_reads == 2
    assert lake.read("SELECT count(*) AS n FROM claims WHERE request_id = 'r1' AND run_id = 'run-a'")[0]["n"] == 1
