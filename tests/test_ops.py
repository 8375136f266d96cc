"""Operations against a real Prefect server: deployments, workers, shared limits.

The server, two process workers on the ``invarbench`` pool and the deployments that ``make
deploy SERVER=...`` registers are the ``ops`` fixture (tests/ops_server.py), started once for this
module, which holds every test that needs it: also a dispatched sweep cancelled through the API
(stopping, with test_stopping.py's helpers) and one on a PostgreSQL catalog beside a sweep here.
Each dispatched sweep costs a flow-run process for the sweep and one per unit (8-12 CPU s of
imports each), so each scenario is one dispatched sweep that shows all it can. The fake
OpenAI-compatible server (tests/fakes.py) stands in for a paid API.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path

import pytest
from conftest import fake_model_config, run_cli
from fakes import FakeProvider, FakeServer
from ops_server import TIMEZONE, Ops, child_runs, make, make_env, worker_logs
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
from prefect.states import Cancelling
from prefect_servers import stop
from test_stopping import (
    N_ITEMS,
    WAIT_S,
    assert_cancelled_with_every_sent_request_answered,
)

from flows.sweep import sweep
from tasks.config import load_config
from tasks.errors import ConfigError
from tasks.lake.lake import Lake
from tasks.models.limits import (
    LimitSpec,
    SharedLimiter,
    SharedLimitError,
    ensure_limits,
    limit_slug,
    limit_specs,
)

RUN_TIMEOUT_S = 300


# --- pure parts: no server ---------------------------------------------------------------------

def test_limit_specs_follow_the_model_config(tmp_path):
    cfg = load_config(fake_model_config(tmp_path, "http://127.0.0.1:9/v1", model_extra={
        "concurrency": 8, "requests_per_minute": 120, "tokens_per_minute": 6000}))
    specs = limit_specs("fake", cfg.model("fake"))
    assert [(s.name, s.limit, s.slot_decay_per_second) for s in specs] == [
        ("invarbench-fake-concurrency", 8, 0.0), ("invarbench-fake-rpm", 120, 2.0), ("invarbench-fake-tpm", 6000, 100.0)]
    # A call occupies one request slot and its tokens, never more than the bucket holds.
    assert specs[1].slots(500) == 1 and specs[2].slots(500) == 500 and specs[2].slots(10**6) == 6000
    # Names Prefect refuses ("/") are escaped; the hash keeps "a/b" and "a-b" apart.
    assert limit_slug("gpt-4o-mini") == "gpt-4o-mini"
    assert limit_slug("openai/gpt") != limit_slug("openai-gpt") and "/" not in limit_slug("openai/gpt")


def test_prefect_section_is_validated(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[prefect]\ntimezone = "Europe/Berlin"\n')
    assert load_config(cfg).prefect.timezone == "Europe/Berlin"
    cfg.write_text('[prefect]\ntimezone = "Mars/Olympus"\n')
    with pytest.raises(ConfigError, match="prefect.timezone: unknown timezone 'Mars/Olympus'"):
        load_config(cfg)
    cfg.write_text('[prefect]\ntimezon = "UTC"\n')
    with pytest.raises(ConfigError, match="prefect.timezon: unknown key"):
        load_config(cfg)


def test_dispatch_without_a_server_is_refused(tmp_path, monkeypatch):
    from flows.sweep import sweep

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with FakeServer() as fake:
        cfg = fake_model_config(tmp_path, fake.api_base)
        with pytest.raises(ConfigError, match="PREFECT_API_URL is not set"):
            sweep(str(cfg), dispatch=True)
        assert fake.state.seen == []


# --- a real server and real workers (tests/ops_server.py) ---------------------------------------

def run_and_wait(ops: Ops, deployment: str, parameters: dict):
    """Trigger a deployment run and wait until it is final; returns the flow run."""
    return wait_for(ops, start_run(ops, deployment, parameters))


def start_run(ops: Ops, deployment: str, parameters: dict):
    """Trigger a deployment run; returns the flow run, scheduled."""
    with ops.settings(), ops.client() as client:
        return client.create_flow_run_from_deployment(client.read_deployment_by_name(deployment).id,
                                                      parameters=parameters)


def wait_for(ops: Ops, run):
    """Wait until the flow run is final and check that it completed; returns it."""
    with ops.settings(), ops.client() as client:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while True:
            run = client.read_flow_run(run.id)
            if run.state.is_final():
                break
            if time.monotonic() > deadline:
                pytest.fail(f"flow run {run.name} not final after {RUN_TIMEOUT_S} s:\n" + worker_logs(ops))
            time.sleep(1)
        assert run.state.is_completed(), f"{run.state}\n" + worker_logs(ops)
        return run


def with_warehouse_keys(cfg: Path, keys: dict[str, str]) -> None:
    """Add ``keys`` to the ``[warehouse]`` section of the configuration file ``cfg``."""
    text = cfg.read_text(encoding="utf-8")
    extra = "".join(f'{k} = "{v}"\n' for k, v in keys.items())
    cfg.write_text(text.replace("[warehouse]\n", "[warehouse]\n" + extra, 1), encoding="utf-8")


def lake_query(warehouse: Path, sql: str, params=None):
    return Lake(str(warehouse / "lake")).read(sql, params)


def assert_one_ok_response_per_request(lake: Lake, run_id: str) -> int:
    """Every request of the run has exactly one response, and it is ok; returns the request count."""
    rows = lake.read("""
        SELECT r.request_id, count(s.response_id) AS n, count(*) FILTER (WHERE s.status = 'ok') AS ok
        FROM (SELECT DISTINCT request_id FROM run_requests WHERE run_id = ?) r
        LEFT JOIN responses s USING (request_id) GROUP BY r.request_id""", [run_id])
    assert rows and all(r["n"] == 1 and r["ok"] == 1 for r in rows), [r for r in rows if r["n"] != 1 or r["ok"] != 1]
    return len(rows)


def assert_deployments_registered(ops: Ops) -> None:
    """What ``make deploy`` registered: the pool, the limits, the three deployments."""
    with ops.settings(), ops.client() as client:
        nightly = client.read_deployment_by_name("sweep/nightly-sweep")
        assert [(s.schedule.cron, s.schedule.timezone, s.active) for s in nightly.schedules] == [("0 2 * * *", TIMEZONE, True)]
        assert nightly.work_pool_name == "invarbench" and nightly.parameters["dispatch"] is True
        assert nightly.pull_steps == [{"prefect.deployments.steps.set_working_directory": {"directory": "{{ $INVARBENCH_HOME }}"}}]
        assert client.read_deployment_by_name("rescore/rescore").entrypoint == "flows/rescore.py:rescore"
        assert client.read_deployment_by_name("sweep-unit/unit").entrypoint == "flows/unit.py:sweep_unit"
        assert client.read_work_pool("invarbench").type == "process"
        assert client.read_global_concurrency_limit_by_name("invarbench-fake-concurrency").limit == 3


@pytest.mark.slow
def test_two_workers_run_the_nightly_sweep_on_one_bucket_under_one_global_limit(ops, tmp_path, monkeypatch):
    """The deployments as ``make deploy`` registers them, and the nightly sweep run by the workers:
    its flow run on one, its units (subflow runs) on both. The lake in an S3-compatible bucket,
    concurrency 16 in each process and 2 in the shared limit: both workers write the bucket, each
    request is answered once, the provider never sees 3 at once, the run is recorded with its
    flow run and its progress and summary artifacts, and ``invarbench runs`` lists it.
    One dispatched sweep for all of it: each costs a flow-run process for the sweep and one per
    unit (8-12 CPU s each)."""
    assert_deployments_registered(ops)
    shared = 2
    with ops.settings():  # a model of its own, so the limit does not depend on the other tests
        ensure_limits([LimitSpec("invarbench-shared-fake-concurrency", shared)])
    s3 = ops.s3
    for key, value in s3.env().items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)
    state = FakeProvider(delay_s=0.5)
    with FakeServer(state) as fake:
        cfg = fake_model_config(tmp_path, fake.api_base, name="shared-fake", n_max=60,
                                model_extra={"concurrency": 16}, sweep_extra={"batch_size": 4})
        with_warehouse_keys(cfg, s3.lake_config("dispatched/lake"))
        run = run_and_wait(ops, "sweep/nightly-sweep", {"config_path": str(cfg)})
    children = child_runs(ops, run.id)
    assert len(children) == 3 and all(c.state.is_completed() for c in children)  # 12 items in batches of 4
    # Both workers ran units of this sweep: each takes at most 2 flow runs at once, and the sweep's
    # own flow run holds one of them, so the 3 units, made at once, do not fit in one worker.
    logs = [p.read_text(errors="replace") for p in ops.workers]
    assert all(any(str(c.id) in log for c in children) for log in logs), worker_logs(ops)

    lake = Lake.of(load_config(cfg))  # the data in the bucket, its DuckLake catalog in the warehouse folder
    [row] = lake.read("SELECT * FROM runs")
    assert (row["kind"], row["status"], row["flow_run_id"]) == ("sweep", "completed", str(run.id))
    assert (row["n_items"], row["n_requests"], row["n_sent"], row["n_errors"]) == (12, 12, 12, 0)
    assert assert_one_ok_response_per_request(lake, row["run_id"]) == 12
    assert len(state.seen) == 12 and len(set(state.contents())) == 12  # sent once each, none missing
    assert state.max_in_flight == shared, state.max_in_flight  # reached, never exceeded
    assert lake.read("SELECT status, count(*) AS n FROM latest_scores GROUP BY ALL") == [{"status": "correct", "n": 12}]
    assert not (tmp_path / "wh" / "lake").exists()  # every worker wrote to the bucket, none locally

    with ops.settings(), ops.client() as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(
            any_=[run.id] + [c.id for c in children])))
    by_type = {a.type: a for a in artifacts if a.flow_run_id == run.id}
    assert by_type["progress"].data == 100.0 and by_type["progress"].key == "progress-shared-fake"  # one per model
    assert row["run_id"] in by_type["markdown"].data
    # The bucket's secret reached neither the Prefect artifacts nor the workers' logs.
    assert artifacts and all(s3.secret not in json.dumps(a.data, default=str) for a in artifacts)
    assert all(s3.secret not in log for log in logs)

    listed = run_cli("runs", "--format", "json", "--config", str(cfg))
    assert listed.returncode == 0, listed.stderr
    [shown] = json.loads(listed.stdout)
    assert {k: shown[k] for k in ("flow_run_id", "status", "models", "n_items", "n_requests", "n_errors")} == {
        "flow_run_id": str(run.id), "status": "completed", "models": '["shared-fake"]', "n_items": 12,
        "n_requests": 12, "n_errors": 0}


@pytest.mark.slow
def test_a_missing_shared_limit_stops_the_call_stage(ops, tmp_path, monkeypatch):
    """strict=True: a model whose limits were never created sends nothing instead of running unlimited."""
    from tasks.items.generate import generate_task, item_row
    from tasks.models.routes import RateLimiter
    from tasks.models.stream import run_calls

    monkeypatch.setenv("PREFECT_API_URL", ops.api)
    with FakeServer() as fake, ops.settings():
        cfg = load_config(fake_model_config(tmp_path, fake.api_base, name="never-deployed"))
        dataset, items = generate_task("symmetry", "closure", cfg.task_params("symmetry", "closure"), 0)
        rows = [item_row(i, dataset) for i in items]
        with pytest.raises(SharedLimitError, match="invarbench-never-deployed-concurrency"):
            run_calls(rows, "never-deployed", cfg.model("never-deployed"), "r1", Lake.of(cfg))
        assert fake.state.seen == []

        # The acquisition itself is strict too (a limit deleted after the batch started).
        called = []

        async def call():
            called.append(1)

        limiter = SharedLimiter(RateLimiter(cfg.model("never-deployed")),
                                limit_specs("never-deployed", cfg.model("never-deployed")))
        with pytest.raises(SharedLimitError, match="must be created before acquiring slots"):
            asyncio.run(limiter.run(10, call))
        assert called == []
    assert lake_query(tmp_path / "wh", "SELECT count(*) AS n FROM responses") == [{"n": 0}]


# --- the README's several-machines commands ------------------------------------------------------

@pytest.mark.slow
def test_make_deploy_and_worker_take_the_server_from_the_command_line(ops, tmp_path):
    """`make deploy SERVER=…` (how the ``ops`` fixture deployed, with no PREFECT_API_* in its
    environment) and `make worker SERVER=…` as the README writes them, on a non-default port."""
    assert not ops.api.startswith("http://127.0.0.1:4200")
    with ops.settings(), ops.client() as client:  # the configuration named on make's command line
        assert client.read_global_concurrency_limit_by_name("invarbench-fake-concurrency").limit == 3
        assert client.read_deployment_by_name("sweep/nightly-sweep").parameters["config_path"] == str(ops.config)
        before = {w.name for w in client.read_workers_for_work_pool("invarbench")}

    log = tmp_path / "make-worker.log"
    worker = subprocess.Popen(make("worker", f"SERVER={ops.api}", "WORKER_LIMIT=2"), env=make_env(tmp_path),
                              stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            with ops.settings(), ops.client() as client:
                new = {w.name for w in client.read_workers_for_work_pool("invarbench")} - before
            if new:
                break
            assert worker.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(1)
    finally:
        stop(worker)
    assert "SettingsError" not in log.read_text()


# --- a dispatched sweep cancelled through the API (issue #30; helpers of test_stopping.py) -------


def wait_final(ops, flow_run_id, what: str):
    deadline = time.monotonic() + WAIT_S
    with ops.settings(), ops.client() as client:
        while True:
            run = client.read_flow_run(flow_run_id)
            if run.state.is_final():
                return run
            if time.monotonic() > deadline:
                pytest.fail(f"{what} not final after {WAIT_S} s ({run.state}):\n" + worker_logs(ops))
            time.sleep(0.5)


@pytest.mark.slow
def test_a_deployment_run_cancelled_through_the_api_stops_its_workers_cleanly(ops, tmp_path):
    """The nightly sweep on the workers, its units as flow runs: cancelling it (as the UI does)
    stops every unit, keeps what they answered, and the next sweep resumes paying each request once."""
    state = FakeProvider(delay_s=1.0)
    with FakeServer(state) as fake:
        cfg = fake_model_config(tmp_path, fake.api_base, n_max=5 * N_ITEMS,
                                # A call's answer is kept once its shared slot is released too: an API
                                # call to a server that is busy cancelling every unit at that moment.
                                sweep_extra={"batch_size": 20, "stop_grace_s": 20.0, "cancel_poll_s": 0.5})
        with ops.settings(), ops.client() as client:
            deployment = client.read_deployment_by_name("sweep/nightly-sweep")
            parent = client.create_flow_run_from_deployment(deployment.id, parameters={"config_path": str(cfg)})
            deadline = time.monotonic() + WAIT_S
            while len(state.seen) < 4:
                assert time.monotonic() < deadline, "no unit ever called the provider:\n" + worker_logs(ops)
                time.sleep(0.2)
            client.set_flow_run_state(parent.id, Cancelling(message="cancelled by the test"))
        parent = wait_final(ops, parent.id, "the cancelled sweep")
        assert parent.state.is_cancelled(), f"{parent.state}\n" + worker_logs(ops)
        units = child_runs(ops, parent.id)
        for unit in units:
            unit = wait_final(ops, unit.id, unit.name)
            assert unit.state.is_cancelled() or unit.state.is_completed(), f"{unit.name}: {unit.state}"
        assert any(wait_final(ops, u.id, u.name).state.is_cancelled() for u in units)
        run = assert_cancelled_with_every_sent_request_answered(tmp_path, state)
        assert run["flow_run_id"] == str(parent.id)

        # The next sweep resumes in this process: what it must show is in the lake (each request
        # paid once), and a second dispatched run would cost a flow-run process per unit again.
        state.delay_s = 0.0  # the resumed run's calls need not take a second each
        again = sweep(str(cfg))
        assert again["sent"] == N_ITEMS - run["n_sent"], (again, run)
    contents = state.contents()
    assert len(contents) == N_ITEMS == len(set(contents))  # paid once each, none missing
    statuses = lake_query(tmp_path / "wh", "SELECT status FROM runs ORDER BY started_at")
    assert [r["status"] for r in statuses] == ["cancelled", "completed"]


# --- a dispatched sweep on a PostgreSQL catalog and the workers' bucket (test_ducklake_postgres.py) ---

@pytest.mark.slow
def test_a_sweep_on_two_workers_and_the_same_sweep_here_share_a_postgres_and_s3_lake(ops, postgres, tmp_path,
                                                                                     monkeypatch):
    """The nightly sweep dispatched to the two Prefect workers of ``ops`` (each unit a flow-run
    process) and the same sweep run here at the same time, on one lake: its catalog on
    PostgreSQL, its data in the workers' bucket. Nothing is lost or duplicated and the provider
    is paid once per request: the claims hold across every process."""
    for key, value in ops.s3.env().items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)
    state = FakeProvider(delay_s=0.2)
    with FakeServer(state) as fake:
        cfg = fake_model_config(tmp_path, fake.api_base, n_max=40, sweep_extra={"batch_size": 4})
        with_warehouse_keys(cfg, {"catalog": f"postgres:{postgres.create_database('two_workers')}",
                                  **ops.s3.lake_config("two-workers/lake")})
        dispatched = start_run(ops, "sweep/nightly-sweep", {"config_path": str(cfg)})
        here = run_cli("sweep", "--config", str(cfg))
        assert here.returncode == 0, here.stderr
        dispatched = wait_for(ops, dispatched)
    assert all(c.state.is_completed() for c in child_runs(ops, dispatched.id))

    lake = Lake.of(load_config(cfg))
    assert lake.catalog.startswith("postgres:") and lake.data_path.startswith("s3://")
    runs = lake.read("SELECT run_id, status, flow_run_id FROM runs")
    assert sorted((r["flow_run_id"] == str(dispatched.id), r["status"]) for r in runs) == [
        (False, "completed"), (True, "completed")]
    for run in runs:  # each run's requests answered once, ok
        assert assert_one_ok_response_per_request(lake, run["run_id"]) == 8
    assert lake.read("SELECT count(*) AS n, count(DISTINCT request_id) AS d FROM responses") == [{"n": 8, "d": 8}]
    assert len(state.seen) == 8 and len(set(state.contents())) == 8  # sent once each, none missing
    assert not (tmp_path / "wh" / "lake").exists()  # the data went to the bucket
