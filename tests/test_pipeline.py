"""The sweep pipeline end to end against a real HTTP provider on loopback, and the real local model.

Prefect runs for real (a temporary API server for the session); DuckDB and Parquet are real
files under tmp_path. The fake provider (tests/fakes.py) stands in for a paid API only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from conftest import (REPO, TEST_CLAIM_SETTLE_S, fake_model_config, lake_files, open_catalog_file, process_env, run_cli,
                      run_cli_process, write_config)
from fakes import FakeProvider, FakeServer
from lake_fixtures import spooled_ok
from flows.sweep import sweep
from tasks.lake.lake import Lake


def lake_query(warehouse, sql, params=None):
    return Lake(str(warehouse / "lake")).read(sql, params)


def test_ledger_is_the_cache(tmp_path):
    """First sweep sends N, an identical one 0; a new temperature or api_base sends N again."""
    with FakeServer() as server, FakeServer() as other:
        cfg = fake_model_config(tmp_path, server.api_base)
        first = sweep(str(cfg))
        n = first["requests"]
        assert n == 5 and first["sent"] == 5 and len(server.state.seen) == 5

        second = sweep(str(cfg))
        assert second["sent"] == 0 and second["cached"] == 5
        assert len(server.state.seen) == 5

        hotter = fake_model_config(tmp_path, server.api_base, model_extra={"temperature": 0.7})
        third = sweep(str(hotter))
        assert third["sent"] == 5 and len(server.state.seen) == 10

        moved = fake_model_config(tmp_path, other.api_base)
        fourth = sweep(str(moved))
        assert fourth["sent"] == 5 and len(other.state.seen) == 5

    scores = lake_query(tmp_path / "wh", "SELECT status, count(*) AS n FROM latest_scores GROUP BY status")
    # The fake provider answers correctly, so every distinct trial (3 routes x 5 items) is correct.
    assert scores == [{"status": "correct", "n": 15}]


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_a_sweep_with_every_answer_stored_runs_without_prefect_and_stores_the_same_rows(tmp_path):
    """`invarbench sweep` sends what is missing in a flow run; the same sweep again, every answer in
    the ledger, has no flow run and stores what the flow stores for such a sweep (docs/operations.md,
    "A sweep that calls nothing"): the flow in three chunks of at most 2 items, the sweep without
    Prefect in one."""
    with FakeServer() as server:
        cfg = fake_model_config(tmp_path, server.api_base, sweep_extra={"batch_size": 2})
        first = run_cli("sweep", "--config", str(cfg))
        assert first.returncode == 0, first.stderr
        assert "prefect flow run: none" not in first.stdout and len(server.state.seen) == 5
        second = run_cli("sweep", "--config", str(cfg))
        assert second.returncode == 0, second.stderr
        assert "prefect flow run: none (every answer was in the ledger)" in second.stdout
        in_flow = sweep(str(cfg))  # the same cached sweep as a flow run, to compare its rows
        assert len(server.state.seen) == 5 and in_flow["sent"] == 0

    wh = tmp_path / "wh"
    runs = lake_query(wh, "SELECT run_id, coalesce(flow_run_id, '') AS flow_run_id, n_requests, n_sent, n_cached "
                          "FROM runs WHERE status = 'completed' ORDER BY started_at")  # run ids sort by the second only
    assert [(r["n_requests"], r["n_sent"], r["n_cached"]) for r in runs] == [(5, 5, 0), (5, 0, 5), (5, 0, 5)]
    assert runs[0]["flow_run_id"] != "" and runs[1]["flow_run_id"] == "" and runs[2]["flow_run_id"] != ""
    without, within = runs[1]["run_id"], runs[2]["run_id"]
    assert in_flow["run_id"] == within

    def stored(sql):
        return [lake_query(wh, sql, [run_id]) for run_id in (without, within)]

    requests = stored("SELECT request_id, trial_id, step, step_index, sampling, messages FROM run_requests "
                      "WHERE run_id = ? ORDER BY request_id")
    assert len(requests[0]) == 5 and requests[0] == requests[1]
    scores = stored("SELECT trial_id, scorer_version, status, correct, predicted, response_ids FROM all_scores "
                    "WHERE run_id = ? ORDER BY trial_id")
    assert scores[0] == scores[1] == []  # the first run scored every trial: neither cached run scores again
    headline = stored("SELECT * EXCLUDE (run_id) FROM run_accuracy_by_bin WHERE run_id = ? ORDER BY ALL")
    assert headline[0] == headline[1] and sum(r["n_correct"] for r in headline[0]) == 5


def _kind(content: str) -> int:
    """Fault kind of a closure prompt, from its n (5, 10, ... → 1, 2, 3, 4, 0, 1, ...)."""
    return content.count("1") // 5 % 5


def _fault_for(content: str, attempt: int) -> str | None:
    """Deterministic faults by prompt: some recover on retry, one kind never does."""
    kind = _kind(content)
    if kind == 0:
        return "500"  # permanent: every attempt fails
    if attempt == 1:
        return {1: "429", 2: "stall", 3: "malformed"}.get(kind)
    return None


@pytest.mark.slow  # waits out a stall and a Retry-After in real time
def test_faults_end_in_one_response_each_and_errors_are_resent(tmp_path):
    state = FakeProvider(fault=_fault_for, stall_s=3.0)
    with FakeServer(state) as server:
        cfg = fake_model_config(tmp_path, server.api_base, n_max=60,
                                model_extra={"retries": 2, "timeout_s": 1.0, "concurrency": 4})
        first = sweep(str(cfg))
        kinds = {c: _kind(c) for c in set(state.contents())}
        assert set(kinds.values()) >= {0, 1, 2, 3}, "the fixture must exercise every fault kind"
        permanent = {c for c, k in kinds.items() if k == 0}

        rows = lake_query(tmp_path / "wh", """
            SELECT request_id, count(*) FILTER (WHERE status = 'ok') AS ok,
                   count(*) FILTER (WHERE status = 'error') AS err
            FROM responses GROUP BY request_id""")
        assert len(rows) == first["requests"] == 12
        assert all((r["ok"], r["err"]) in ((1, 0), (0, 1)) for r in rows)
        assert sum(r["err"] for r in rows) == len(permanent) == first["errors"]

        # Retry-After: the retry of a 429 came at least a second after the first attempt.
        for content, kind in kinds.items():
            if kind == 1:
                times = [s.at for s in state.seen if s.content == content]
                assert len(times) == 2 and times[1] - times[0] >= 0.95

        errors = lake_query(tmp_path / "wh", "SELECT count(*) AS n FROM latest_scores WHERE status = 'error'")
        assert errors[0]["n"] == len(permanent)

        before = len(state.seen)
        second = sweep(str(cfg))
        resent = {s.content for s in state.seen[before:]}
        assert resent == permanent
        assert second["sent"] == len(permanent)


@pytest.mark.slow  # waits out a rate limit in real time (one start per 0.5 s)
def test_requests_per_minute_and_concurrency_limits(tmp_path):
    state = FakeProvider()
    with FakeServer(state) as server:
        cfg = fake_model_config(tmp_path, server.api_base, n_max=30,
                                model_extra={"requests_per_minute": 120, "concurrency": 4})
        sweep(str(cfg))
    times = sorted(s.at for s in state.seen)
    assert len(times) == 6
    gaps = [b - a for a, b in zip(times, times[1:])]
    # 120/min = one start per 0.5 s (unlimited would be ~0 s apart); the slack absorbs loopback
    # jitter on a loaded machine, while the overall rate is held to the limit itself.
    assert min(gaps) >= 0.35, gaps
    assert (len(times) - 1) / (times[-1] - times[0]) <= 120 / 60 * 1.05

    slow = FakeProvider(delay_s=0.4)
    with FakeServer(slow) as server:
        (tmp_path / "c").mkdir()
        cfg = fake_model_config(tmp_path / "c", server.api_base, n_max=60, model_extra={"concurrency": 3})
        sweep(str(cfg))
    assert len(slow.seen) == 12
    assert 2 <= slow.max_in_flight <= 3


@pytest.mark.slow  # a sweep in a process of its own
def test_sigkill_mid_sweep_then_resume(tmp_path):
    """Kill -9 a sweep after some responses are stored; the rerun completes with no duplicates."""
    state = FakeProvider(delay_s=0.5)
    with FakeServer(state) as server:
        cfg = fake_model_config(tmp_path, server.api_base, n_max=150, model_extra={"concurrency": 1})
        # A process of its own to kill; a session of its own, so the kill reaches all it started.
        proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "sweep", "--config", str(cfg)],
                                cwd=REPO, env=process_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        lake = Lake(str(tmp_path / "wh" / "lake"), read_only=True)
        deadline = time.monotonic() + 240
        try:
            while time.monotonic() < deadline:
                # the provider's count first: reading the lake ten times a second costs CPU s
                if len(state.seen) >= 12 and lake.read("SELECT count(*) AS n FROM responses")[0]["n"]:
                    break
                assert proc.poll() is None, "the sweep ended before it could be killed"
                time.sleep(0.1)
            else:
                pytest.fail("no responses were written in time")
            # The warehouse answers SQL while the sweep is writing to it.
            live = run_cli("sql", "--format", "json", "--config", str(cfg),
                           "SELECT count(*) AS n FROM responses WHERE status = 'ok'")
            assert live.returncode == 0, live.stderr
            assert json.loads(live.stdout)[0]["n"] >= 1
            assert proc.poll() is None, "the sweep must still be running"
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        sent_before = len(state.seen)
        assert sent_before < 30, "the kill came after the sweep was done"
        stored = lake_query(tmp_path / "wh", "SELECT count(*) AS n FROM responses WHERE status = 'ok'")[0]["n"]
        assert stored >= 1
        # answers received but not yet in a file are in the spool: the rerun stores them, not sends them
        stored += sum(spooled_ok(Lake(str(tmp_path / "wh" / "lake"))).values())

        state.delay_s = 0.0  # the slow answers only had to keep the killed sweep busy
        summary = sweep(str(cfg))
    # What the killed run stored is not sent again; everything else (in flight included) is.
    assert summary["requests"] == 30
    assert summary["cached"] == stored and summary["sent"] == 30 - stored

    parquet = [p for p in lake_files(tmp_path / "wh") if p.suffix == ".parquet"]
    assert parquet
    for path in parquet:
        pq.read_table(path)  # every data file is whole: a killed commit leaves no half file in the lake
    dup = lake_query(tmp_path / "wh", """
        SELECT request_id, count(*) AS n FROM responses WHERE status = 'ok' GROUP BY request_id HAVING n > 1""")
    assert dup == []
    missing = lake_query(tmp_path / "wh", """
        SELECT count(*) AS n FROM (SELECT DISTINCT request_id FROM run_requests) r
        ANTI JOIN (SELECT request_id FROM ledger WHERE status = 'ok') l USING (request_id)""")
    assert missing[0]["n"] == 0


def test_bad_configuration_exits_2_and_writes_nothing(tmp_path):
    cases = {
        "unknown key": ({"sweep": {"modles": ["local/smollm2"]}}, "sweep.modles: unknown key"),
        "unknown model": ({"sweep": {"models": ["nope/none"]}}, "unknown model 'nope/none'"),
        "bad value": ({"sweep": {"batch_size": 0}}, "sweep.batch_size"),
        "unknown task": ({"suites.symmetry": {"tasks": ["closur"]}}, "unknown task 'closur'"),
        "unknown parameter": ({"suites.symmetry.params.closure": {"n_maxx": 3}}, "n_maxx"),
    }
    for name, (sections, expected) in cases.items():
        wh = tmp_path / name.replace(" ", "_")
        cfg = write_config(tmp_path / f"{name.replace(' ', '_')}.toml", {"warehouse": {"path": str(wh)}, **sections})
        result = run_cli("sweep", "--config", str(cfg))
        assert result.returncode == 2, (name, result.stdout, result.stderr)
        assert expected in result.stderr, (name, result.stderr)
        assert lake_files(wh) == [], name


def test_failing_expectation_stops_before_any_call(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import flows.stages as stages_module
    from flows.cli import app
    from tasks.items.generate import generate_task as real_generate

    def broken(suite, task, params, seed):
        dataset, items = real_generate(suite, task, params, seed)
        import dataclasses
        return dataset, [dataclasses.replace(items[0], gold="")] + items[1:]

    monkeypatch.setattr(stages_module, "generate_task", broken)
    with FakeServer() as server:
        cfg = fake_model_config(tmp_path, server.api_base)
        result = CliRunner().invoke(app, ["sweep", "--config", str(cfg)])
        assert result.exit_code == 1
        assert "expect_column_value_lengths_to_be_between" in result.output
        assert "gold" in result.output and "1 of 5 rows" in result.output
        assert server.state.seen == []
    assert lake_files(tmp_path / "wh") == []


@pytest.mark.slow  # a sweep in a process of its own
def test_api_key_never_reaches_lake_or_logs(tmp_path):
    secret = "sk-invarbench-test-" + "Q7x" * 10
    state = FakeProvider(fault=lambda content, attempt: "500" if "1+1+1+1+1+1+1+1+1+1 " in content + " " else None)
    with FakeServer(state) as server:
        cfg = fake_model_config(tmp_path, server.api_base, model_extra={"api_key_env": "FAKE_PROVIDER_KEY", "retries": 0})
        # A process of its own: its logging is set up at DEBUG from the start, as a user's would be.
        result = run_cli_process("sweep", "--config", str(cfg),
                                 env={"FAKE_PROVIDER_KEY": secret, "PREFECT_LOGGING_LEVEL": "DEBUG"})
        assert result.returncode == 0, result.stderr
        runs = run_cli("runs", "--config", str(cfg))
    assert any(s.headers.get("authorization") == f"Bearer {secret}" for s in state.seen), "the key must be used"
    assert secret not in result.stdout + result.stderr + runs.stdout + runs.stderr
    for path in lake_files(tmp_path / "wh"):
        assert secret.encode() not in path.read_bytes()
        if path.suffix == ".parquet":
            for column in pq.read_table(path).to_pylist():
                assert secret not in repr(column)
    catalog = open_catalog_file(tmp_path / "wh")
    try:
        assert catalog.execute("SELECT count(*) FROM responses WHERE contains(coalesce(text, '') || coalesce(error, ''), ?)",
                               [secret]).fetchall() == [(0,)]
    finally:
        catalog.close()


@pytest.mark.slow
def test_local_model_answers_closure_through_the_flow(tmp_path):
    """The real embedded SmolLM2 answers through Prefect; rows are readable with `invarbench sql`."""
    cfg = write_config(tmp_path / "local.toml", {
        "warehouse": {"path": str(tmp_path / "wh")},
        "sweep": {"models": ["local/smollm2"], "claim_settle_s": TEST_CLAIM_SETTLE_S},
        "suites.symmetry": {"tasks": ["closure"]},
        "suites.symmetry.params.closure": {"n_min": 5, "n_max": 15, "n_step": 5, "groups": ["integers"],
                                           "prompt_styles": ["direct"]},
    })
    result = run_cli("sweep", "--config", str(cfg))
    assert result.returncode == 0, result.stderr
    assert "accuracy per task and bin" in result.stdout and str(tmp_path / "wh") in result.stdout
    report = [line.split(None, 1)[1] for line in result.stdout.splitlines() if line.startswith("report:")]
    assert report and report[0].endswith("report.html") and os.path.exists(report[0]), result.stdout

    counts = run_cli("sql", "--format", "json", "--config", str(cfg), """
        SELECT (SELECT count(*) FROM responses WHERE status = 'ok' AND model = 'local/smollm2') AS responses,
               (SELECT count(*) FROM latest_parses) AS parses,
               (SELECT count(*) FROM latest_scores WHERE status <> 'error') AS scores""")
    assert counts.returncode == 0, counts.stderr
    assert json.loads(counts.stdout) == [{"responses": 3, "parses": 3, "scores": 3}], counts.stdout

    again = run_cli("sweep", "--config", str(cfg))
    assert again.returncode == 0 and "0 sent, 3 from the ledger" in again.stdout
