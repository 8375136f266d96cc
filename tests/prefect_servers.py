"""The tests' Prefect servers: each a process of its own (its own session) on a loopback port, with
its own PREFECT_HOME and SQLite database, stopped by its process group.

Two kinds: the session's temporary server (``temporary_server``, started once for the whole test
session by tests/conftest.py and shared by every pytest-xdist worker), and the full server of
``make server`` (``full_server``), which tests/ops_server.py starts for the deployments and
workers of tests/test_ops.py.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from flows.cli.prefect_server import die_with_parent

PREFECT = str(Path(sys.executable).parent / "prefect")
# Seconds a server may take to answer its health check: it imports Prefect's server and migrates
# its database first (10-30 s on a loaded 2-core machine); the offline defaults' start-up timeout.
STARTUP_TIMEOUT_S = 120


@dataclass
class Server:
    """A Prefect server process, its API address and its log file."""

    proc: subprocess.Popen
    api: str
    log: Path


def home_settings(home: Path) -> dict[str, str]:
    """The environment variables that give a Prefect process the server in ``home``: its own
    PREFECT_HOME and database there, no analytics, no UI."""
    return {"PREFECT_HOME": str(home), "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_UI_ENABLED": "false",
            "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{home / 'prefect.db'}"}


def temporary_server(home: Path) -> Server:
    """Prefect's temporary server in ``home``, started and not waited for (``wait_up``).

    The command of Prefect's ``SubprocessASGIServer``, which ``prefect_test_harness`` starts and
    a sweep without ``PREFECT_API_URL`` starts (flows/cli/prefect_server.py): the API without the
    UI or the background services of a full server. Its socket is bound here and handed to
    uvicorn (``--fd``): the address is known, and the port held, before the server is up, so the
    workers of the session can be told it while it boots.
    """
    import prefect

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    log = home / "server.log"
    env = {**{k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}, **home_settings(home),
           "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
    try:
        proc = subprocess.Popen(
            # as the sweep's temporary server runs: under tasks.environment, its collector paced
            [sys.executable, "-m", "tasks.environment", "-m", "uvicorn", "--app-dir", str(prefect.__module_path__.parent),
             "--factory",
             "prefect.server.api.server:create_app", "--fd", str(sock.fileno()), "--log-level", "error",
             "--lifespan", "on"],
            env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, pass_fds=[sock.fileno()],
            start_new_session=True, preexec_fn=die_with_parent)
        return Server(proc, f"http://127.0.0.1:{sock.getsockname()[1]}/api", log)
    finally:
        sock.close()  # the server holds its own copy


def full_server(home: Path, port: int, env: dict[str, str]) -> Server:
    """``prefect server start`` on ``port`` with ``env`` (as ``make server`` runs it: the API and
    its background services), started and not waited for (``wait_up``)."""
    log = home / "server.log"
    proc = subprocess.Popen([PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)], env=env,
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
                            # a pytest worker killed mid-session (a timeout) leaves no server behind
                            preexec_fn=die_with_parent)
    return Server(proc, f"http://127.0.0.1:{port}/api", log)


def wait_up(api: str, log: Path, proc: subprocess.Popen | None = None) -> None:
    """Wait until the server at ``api`` answers its health check; fail with its log when it has
    not within STARTUP_TIMEOUT_S, or when its process (``proc``, if this process started it) ended."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while True:
        try:
            if httpx.get(f"{api}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if (proc is not None and proc.poll() is not None) or time.monotonic() > deadline:
            raise RuntimeError(f"the Prefect server at {api} did not come up:\n"
                               + log.read_text(errors="replace")[-4000:])
        time.sleep(0.2)


def stop(proc: subprocess.Popen, timeout: float = 20) -> None:
    """Stop a process started with its own session and every process of that session (its
    flow-run subprocesses; for `make worker`, the Prefect worker under make, which outlives make by
    seconds on SIGTERM and, left running, took the next test's units without its credentials):
    SIGTERM, then SIGKILL to whatever of the group is still there after ``timeout`` seconds."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        proc.poll()  # reap the leader, which would otherwise keep the group alive as a zombie
        time.sleep(0.2)
    if _group_alive(proc.pid):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
