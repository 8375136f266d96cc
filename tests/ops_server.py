"""A real Prefect server, the deployments of deploy/prefect.yaml and two process workers, for tests/test_ops.py.

One server (``prefect server start`` on a free loopback port, its own PREFECT_HOME:
tests/prefect_servers.py) and two process workers on the ``invarbench`` pool serve every test that
asks for the ``ops`` fixture. It is not the session's temporary server (tests/conftest.py): this
one is the full server of ``make server``, with its background services, and holds the
deployments, the work pool and the limits of ``make deploy``. Those tests all live in
tests/test_ops.py and the fixture is scoped to that module: started once there, because the
start-up (server, ``make deploy SERVER=...`` as the README writes it, workers, the S3 server whose
bucket the workers share) takes 20-30 s, and stopped when the module ends, because the idle stack
(workers polling, the server's services) burns about 3 s of CPU a minute, which the rest of the
session would pay on the worker that ran it. Every process started here is stopped by
its process group id. Registered as a plugin by tests/conftest.py."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import s3_server
from conftest import REPO, fake_model_config
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect_servers import PREFECT, full_server, home_settings, stop, wait_up
from s3_server import free_port

from flows.cli.prefect_server import die_with_parent

# The schedule's timezone in the deployments registered here (tests/test_ops.py checks it).
TIMEZONE = "Europe/Berlin"
# Seconds between a worker's looks for flow runs to start (Prefect's default: 10). Each look costs
# the server too: the idle stack (server and two workers) took 8.0 CPU s in 90 s looking every
# second and 4.1 every 3 s (side by side, load 23); a dispatched run waits at most 3 s for a worker.
QUERY_SECONDS = "3"


# Relative to the checkout when inside it, as a user's `make` sees it: make cannot name a target
# whose path has a space, and the checkout's own path may have one.
VENV = Path(sys.prefix).relative_to(REPO) if Path(sys.prefix).is_relative_to(REPO) else Path(sys.prefix)


def make(*args: str) -> list[str]:
    """``make`` in this checkout with this interpreter's environment, never reinstalling it.

    ``-o`` the install stamp: the targets depend on ``install``, whose stamp may be older than a
    freshly edited Makefile; the environment running the tests is the one to use as it is.
    """
    return ["make", "--no-print-directory", "-C", str(REPO), "-o", str(VENV / ".installed"), f"VENV={VENV}", *args]


def make_env(folder: Path) -> dict[str, str]:
    """This process's environment for ``make`` with ``SERVER=`` on its command line, as a user's
    shell: no PREFECT_API_* (the server must come from the command line), a PREFECT_HOME of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(folder / "prefect-home"), DO_NOT_TRACK="1")
    return env


@dataclass
class Ops:
    """The session's server, the log files of its two workers, and the bucket they share."""

    api: str
    workers: list[Path]
    home: Path
    s3: s3_server.S3Server
    config: Path  # the configuration file the deployments were made with

    def settings(self):
        """Point this process at the server (the session's test harness is another one)."""
        return temporary_settings(updates={PREFECT_API_URL: self.api})

    def client(self):
        """A sync client; use inside ``settings()``."""
        return get_client(sync_client=True)


def child_runs(ops: Ops, parent_id):
    """The batch flow runs a dispatched sweep created (its subflow runs)."""
    with ops.settings(), ops.client() as client:
        return client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[parent_id])))


def worker_logs(ops: Ops) -> str:
    """The end of each worker's log, for a failure message."""
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}" for p in ops.workers)


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    """A Prefect server, the deployments of deploy/prefect.yaml, two process workers and an S3 server.

    The workers hold the bucket's credentials in their environment, as a worker machine would.
    """
    s3 = s3_server.start(tmp_path_factory.mktemp("moto") / "moto.log")
    home = tmp_path_factory.mktemp("prefect-home")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {**s3.env(), **home_settings(home), "PREFECT_API_URL": api, "PREFECT_WORKER_QUERY_SECONDS": QUERY_SECONDS,
           "INVARBENCH_HOME": str(REPO),
           # Worker logs are read while the workers run (which flow runs each submitted): INFO
           # level whatever an earlier in-process CLI call set, and no block buffering.
           "PREFECT_LOGGING_LEVEL": "INFO", "PYTHONUNBUFFERED": "1"}
    procs: list[subprocess.Popen] = []
    logs: list[Path] = []

    def start(name: str, *args: str) -> subprocess.Popen:
        log = home / f"{name}.log"
        logs.append(log)
        proc = subprocess.Popen([PREFECT, *args], cwd=REPO, env=env, stdout=log.open("wb"),
                                stderr=subprocess.STDOUT, start_new_session=True,
                                # a worker killed mid-session (a timeout) leaves no server behind
                                preexec_fn=die_with_parent)
        procs.append(proc)
        return proc

    try:
        server = full_server(home, port, env)
        procs.append(server.proc)
        wait_up(api, server.log, server.proc)

        base = tmp_path_factory.mktemp("deploy")
        cfg = fake_model_config(base, "http://127.0.0.1:9/v1", model_extra={"concurrency": 3})
        with cfg.open("a") as f:
            f.write(f'\n[prefect]\ntimezone = "{TIMEZONE}"\n')
        # `make deploy` as the README writes it for several machines (tests/test_ops.py checks it)
        deployed = subprocess.run(make("deploy", f"SERVER={api}", f"CONFIG={cfg}"), env=make_env(base),
                                  capture_output=True, text=True, timeout=300)
        assert deployed.returncode == 0, deployed.stdout + deployed.stderr
        workers = [home / f"worker-{i}.log" for i in range(2)]
        for i in range(2):
            start(f"worker-{i}", "worker", "start", "--pool", "invarbench", "--type", "process", "--limit", "2",
                  "--name", f"worker-{i}")
        yield Ops(api=api, workers=workers, home=home, s3=s3, config=cfg)
    finally:
        for proc in reversed(procs):
            stop(proc)
        s3_server.stop(s3)
