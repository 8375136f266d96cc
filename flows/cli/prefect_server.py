"""Prefect's temporary API server, started early by the commands that run a flow, without importing
Prefect's server in this process."""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, ContextManager

from tasks.runs import stopping

# uvicorn's exit code when its port was taken between choosing it and binding it
_PORT_TAKEN = 3


def spawn_server() -> TemporaryServer | None:
    """Prefect's temporary server, spawned now, before this process imports Prefect (whose
    settings :func:`start_prefect_server` reads later, stopping it if they name a server of the
    user's own); None when Prefect is imported already or ``PREFECT_API_URL`` is in the
    environment. A command that may turn out not to need Prefect spawns it speculatively, and
    discards it then (:meth:`TemporaryServer.discard`)."""
    if "prefect" in sys.modules or os.environ.get("PREFECT_API_URL"):
        return None
    return TemporaryServer(forward_settings=False)


def start_prefect_server(early: TemporaryServer | None = None) -> Callable[[], ContextManager[object]]:
    """Start Prefect's temporary API server now, in its own process, when a flow would start one
    (no ``PREFECT_API_URL``); returns a function that waits until it is up and points this
    process's Prefect at it (a no-op otherwise), or raises ``Stopped`` once a stop is requested.
    What it returns is the settings to run the flow under (:func:`on_the_temporary_server` when
    the flow runs on this server, else no change). ``early``: the server :func:`spawn_server`
    started earlier, if any (else it is spawned here).

    A flow starts the same server (``SubprocessASGIServer``) only when it runs, then waits for it,
    and importing the class imports Prefect's whole server into the sweep's process first (3-5 s
    on 2 cores). Started here, by the same command, it boots while this process imports the
    flow's modules. A server that does not come up is stopped and left to the flow, which starts
    its own and reports Prefect's error.

    When this process has not imported Prefect yet, the server is spawned before Prefect's
    settings are read (importing them takes 0.7-1.4 s, which the server's boot, the longest part
    of a cold sweep's start-up, no longer waits for): its process reads the same settings from the
    same environment, profile and files. Should they name a server of the user's own
    (``PREFECT_API_URL`` in the profile) or turn the temporary server off, it is stopped again.
    """
    early = early or spawn_server()
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        if early is not None:
            early.stop()
        return contextlib.nullcontext
    server = early or TemporaryServer()

    def wait() -> ContextManager[object]:
        # a stop while the server boots ends the wait at once (stopping.raise_if_requested)
        if server.wait_up(stopping.raise_if_requested):
            server.use()
            return on_the_temporary_server()
        server.stop()
        return contextlib.nullcontext()

    return wait


def on_the_temporary_server() -> ContextManager[object]:
    """Prefect's settings for a flow run on the temporary server: no flow-run heartbeats, unless
    Prefect's own settings ask for them (``PREFECT_FLOWS_HEARTBEAT_FREQUENCY``, Prefect's way to
    turn them off too).

    A heartbeat tells a server that outlives the flow's process that the process still lives: an
    automation marks the flow run crashed when they stop. This server ends with this process
    (``atexit``, or ``PR_SET_PDEATHSIG`` when it is killed), so none is listening when they would
    stop, and the run's own end is recorded in the lake whatever happens (``runs``: a killed
    sweep's run is marked crashed by the next). Prefect's flow engine ends a flow run by joining
    its heartbeat thread, which sleeps in 1 s steps: 0-1 s idle at the end of every such run (0.8 s
    measured, bench/results.md "A cold sweep's boot"). A server of the user's own keeps them.
    """
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    return temporary_settings(set_defaults={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})


class TemporaryServer:
    """The command of Prefect's ``SubprocessASGIServer``, in a session of its own, run by
    ``python -m tasks.environment -m uvicorn``: its collector paced for its start-up
    (:func:`tasks.environment.pace_collector`, 0.4 s less CPU to boot).

    Ctrl-C reaches the terminal's whole process group: the server would shut down while the
    stopping sweep still records its flow run's end (and the sweep would then retry the API for
    minutes). In its own session it lives until ``atexit`` stops it, or gets SIGTERM from the
    kernel when the thread that started it ends (``PR_SET_PDEATHSIG``): started from the main
    thread, a SIGKILLed sweep leaves no server behind either.
    """

    def __init__(self, forward_settings: bool = True) -> None:
        self.port = _free_port()
        # Prefect's settings of this process, passed on as its SubprocessASGIServer does (they
        # may differ from what the environment says: temporary_settings); without them, the
        # server reads its own, and this process need not import Prefect first.
        self.forward_settings = forward_settings
        self.process: subprocess.Popen[bytes] | None = self._spawn()
        atexit.register(self.stop)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def _spawn(self) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
        if self.forward_settings:
            from prefect.settings import get_current_settings

            env.update(get_current_settings().to_environment_variables(exclude_unset=True))
        # Prefect's install folder, found without importing it (prefect.__module_path__.parent)
        app_dir = Path(importlib.util.find_spec("prefect").origin).parent.parent
        return subprocess.Popen(
            [sys.executable, "-m", "tasks.environment", "-m", "uvicorn", "--app-dir", str(app_dir), "--factory",
             "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(self.port),
             "--log-level", "error", "--lifespan", "on"],
            env=env, start_new_session=True, preexec_fn=die_with_parent)

    def wait_up(self, check: Callable[[], None]) -> bool:
        """Whether the server answers its health check within Prefect's start-up timeout; ``check``
        runs between attempts (and may raise)."""
        import httpx
        from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

        deadline = time.monotonic() + PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()
        with httpx.Client() as client:
            while time.monotonic() < deadline and self.process is not None:
                check()
                if self.process.poll() == _PORT_TAKEN:
                    self.port, self.process = _free_port(), self._spawn()
                elif self.process.poll() is not None:
                    return False
                try:
                    if client.get(f"{self.api_url}/health").status_code == 200:
                        return True
                except httpx.HTTPError:
                    pass
                time.sleep(0.05)
        return False

    def use(self) -> None:
        """Point this process's Prefect at the server, in every thread (Prefect's process-wide
        settings), without putting ``PREFECT_API_URL`` in the environment: there it means a
        server of the user's own (shared limits, dispatch: tasks.models.limits, flows.unit)."""
        from prefect.context import refresh_global_settings_context

        os.environ["PREFECT_API_URL"] = self.api_url
        try:
            refresh_global_settings_context()
        finally:
            del os.environ["PREFECT_API_URL"]

    def discard(self) -> None:
        """Ask the server's process to end, without waiting for it (a speculative server the
        command turned out not to need: it dies at once while it boots); ``atexit`` reaps it."""
        if self.process is not None:
            self.process.terminate()

    def stop(self) -> None:
        """End the server's process (at exit, or when it did not come up)."""
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def die_with_parent() -> None:
    """``preexec_fn`` of a child process that gets SIGTERM when the thread that started it ends,
    however that happens (a SIGKILL included): Linux's PR_SET_PDEATHSIG; elsewhere nothing."""
    # In the child between fork and exec: PR_SET_PDEATHSIG (1) = SIGTERM.
    import ctypes

    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass
