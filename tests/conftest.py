"""Shared fixtures: one real (temporary) Prefect API for the whole session, configuration files, fake providers."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import pytest

from tasks.environment import apply_defaults, pace_collector
from tasks.models import litellm_facts

if TYPE_CHECKING:
    import postgres_server
    import s3_server

apply_defaults()  # the suite is an entry point: offline defaults before Prefect or litellm load
# ... and its processes import as much as a sweep: the collector paced as the command's (8% less
# CPU for tests/test_refresh.py's in-process tests); nothing frozen when a test runs a sweep here.
pace_collector(freeze_at_run=False)

# Tests bring their own Prefect API (the session's server, or servers they start); an exported
# PREFECT_API_URL would point in-process sweeps at someone else's server and its limits.
os.environ.pop("PREFECT_API_URL", None)

# One llama.cpp thread per embedded-model call: the suite runs on several workers on few cores,
# where llama.cpp's threads, spinning while they wait for one another, stall whenever one of them
# loses its core (a two-thread test took 1,126 s at a load of 35).
os.environ.setdefault("INVARBENCH_EMBEDDED_THREADS", "1")
# One DuckDB thread per database, for the same reason: the tests' lakes are small, and DuckDB's
# threads only add their coordination (the property test of test_refresh.py: 62 CPU s on 2 threads,
# 45 on 1). tests/test_bounded_memory.py checks the setting itself.
os.environ.setdefault("INVARBENCH_DUCKDB_THREADS", "1")

# The Prefect server with deployments and process workers of tests/test_ops.py (the `ops` fixture).
pytest_plugins = ["ops_server"]

REPO = Path(__file__).resolve().parent.parent
# Seconds between writing claims and re-reading them in the tests' sweeps (users: sweep.claim_settle_s).
TEST_CLAIM_SETTLE_S = 0.1


# The Prefect profile that points a separate process at the session's server (session_api_env).
_SESSION_PROFILES: list[Path] = []
# Where the pytest process that hands out the tests keeps the session's Prefect server.
_SESSION_SERVER = pytest.StashKey["prefect_servers.Server"]()


def pytest_configure(config: pytest.Config) -> None:
    """Start the session's Prefect server, once for the whole session: in the pytest process that
    hands out the tests (with pytest-xdist, the controller; without it, the only one), not in each
    worker. Not waited for here: it boots while the workers start and collect (``prefect_api``)."""
    if hasattr(config, "workerinput") or config.option.collectonly or config.option.help:
        return
    import prefect_servers

    config.stash[_SESSION_SERVER] = prefect_servers.temporary_server(Path(tempfile.mkdtemp(prefix="prefect-session-")))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """Hand each pytest-xdist worker the session server's address and log (it inherits nothing else)."""
    server = node.config.stash.get(_SESSION_SERVER, None)
    if server is not None:
        node.workerinput["prefect_api"], node.workerinput["prefect_log"] = server.api, str(server.log)


# The files that take longest (wall, bench/results.md "Test suite"), handed out first: with
# --dist loadfile a file runs whole on one worker, and a long file handed out last (as alphabetical
# order did with test_refresh.py) keeps one worker busy after the others have finished.
LONGEST_FIRST = ("test_refresh.py", "test_ops.py", "test_pipeline.py", "test_crash_isolation.py",
                 "test_stopping.py", "test_object_store.py", "test_quarantine.py", "test_claims.py",
                 "test_stream.py", "test_disk_full.py", "test_batch_api.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the tests of :data:`LONGEST_FIRST` first, in that order (the rest keep theirs)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the session's Prefect server (after every worker has ended) and remove its folder."""
    server = config.stash.get(_SESSION_SERVER, None)
    if server is not None:
        import prefect_servers

        prefect_servers.stop(server.proc)
        shutil.rmtree(server.log.parent, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def litellm_answers_cache(tmp_path_factory) -> Iterator[None]:
    """litellm's kept answers (tasks/models/litellm_facts.py) in the session's own directory: the
    tests' loopback servers each take a new port, and each would otherwise add an answer to the
    developer's ~/.cache/invarbench."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(litellm_facts.CACHE_ENV, str(tmp_path_factory.mktemp("litellm-answers")))
        yield


@pytest.fixture(scope="session", autouse=True)
def prefect_api(request, tmp_path_factory):
    """The session's real temporary Prefect server (its own database, not ~/.prefect; one for every
    worker: ``pytest_configure``), for in-process flows and, through a profile, for the CLI
    processes the tests start. Waits until it is up (the first tests of each worker)."""
    import prefect.context
    import prefect_servers
    from prefect.settings import PREFECT_API_URL, temporary_settings

    if hasattr(request.config, "workerinput"):
        api, log = request.config.workerinput["prefect_api"], Path(request.config.workerinput["prefect_log"])
        prefect_servers.wait_up(api, log)
    else:
        server = request.config.stash[_SESSION_SERVER]
        api, log = server.api, server.log
        prefect_servers.wait_up(api, log, server.proc)
    # As prefect_test_harness points a process at its server: the settings, and the same settings
    # as the process-wide context, for threads whose context was copied before this.
    with temporary_settings(updates={PREFECT_API_URL: api}), \
            prefect.context._temporary_global_settings_context(prefect.context.get_settings_context()):
        profiles = tmp_path_factory.mktemp("prefect") / "profiles.toml"
        profiles.write_text(f'active = "session"\n[profiles.session]\nPREFECT_API_URL = "{api}"\n', encoding="utf-8")
        _SESSION_PROFILES.append(profiles)
        yield
        _SESSION_PROFILES.clear()
        _drain_prefect_workers()


def _drain_prefect_workers() -> None:
    """Send the logs and events this process still holds before the server stops (as
    prefect_test_harness does), so that none is sent to a server that is gone."""
    import inspect

    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def drain() -> None:
        try:
            result = APILogWorker.instance().drain()
            if inspect.isawaitable(result):
                await result
        except RuntimeError:  # never started
            pass
        result = EventsWorker.drain_all()
        if inspect.isawaitable(result):
            await result

    run_coro_as_sync(drain())


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return repr(value)


def write_config(path: Path, sections: dict) -> Path:
    """Write a TOML configuration: ``{"sweep": {...}, "models.fake": {...}, ...}``."""
    lines = []
    for section, values in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in values.items()]
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def fake_model_config(tmp_path: Path, api_base: str, *, n_max: int = 25, name: str = "fake",
                      model_extra: dict | None = None, sweep_extra: dict | None = None) -> Path:
    """A sweep of closure items (integers, direct) on a fake OpenAI-compatible model.

    The report is off: its statistics and figures are tested on their own (tests/test_report.py).
    The claim settle pause is short: claim files land on a local disk in milliseconds, and the
    users' one second would be paid by every sweep of the suite (tests/test_claims.py races two).
    """
    return write_config(tmp_path / "invarbench.toml", {
        "warehouse": {"path": str(tmp_path / "wh")},
        "sweep": {"models": [name], "report": False, "claim_settle_s": TEST_CLAIM_SETTLE_S, **(sweep_extra or {})},
        f'models."{name}"': {"model": "openai/fake-model", "api_base": api_base, "retries": 1,
                              "backoff_s": 0.05, "timeout_s": 10.0, **(model_extra or {})},
        "suites.symmetry": {"tasks": ["closure"]},
        "suites.symmetry.params.closure": {"n_min": 5, "n_max": n_max, "n_step": 5,
                                           "groups": ["integers"], "prompt_styles": ["direct"]},
    })


def lake_files(warehouse: Path) -> list[Path]:
    """Every file under the warehouse's lake (empty when it does not exist)."""
    lake = warehouse / "lake"
    return sorted(p for p in lake.rglob("*") if p.is_file()) if lake.exists() else []


def open_catalog_file(warehouse: Path):
    """The warehouse's catalog file opened read-only by plain DuckDB, as a user would: its lake
    attached first by the ``attach.sql`` written beside it (the views read ``lake``)."""
    import duckdb

    con = duckdb.connect(str(warehouse / "invarbench.duckdb"), read_only=True)
    con.execute((warehouse / "attach.sql").read_text(encoding="utf-8"))
    return con


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the ``invarbench`` CLI in this process through its entry function (``flows.cli.main``).

    Returns what a subprocess would: the exit code, stdout and stderr. ``env`` overrides
    environment variables for the call only (a value of None unsets one). The session's Prefect
    server runs its flows; the working directory is the repository, as for the installed command.
    An exception the CLI does not handle is exit code 1 with its traceback on stderr, as Python's.
    """
    from click.testing import CliRunner

    from flows.cli import main

    # Restored afterwards: the sweep command sets this one for its own process.
    overrides = {"PREFECT_LOGGING_LEVEL": os.environ.get("PREFECT_LOGGING_LEVEL"), **(env or {})}
    overrides.pop("PREFECT_API_URL", None)
    runner = CliRunner()
    cwd, argv = os.getcwd(), sys.argv
    with runner.isolation(env=overrides) as (out, errors, _):
        sys.argv = ["invarbench", *args]
        os.chdir(REPO)
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:  # noqa: BLE001 - an unhandled error, reported as the interpreter would
            traceback.print_exc(file=sys.stderr)
            code = 1
        finally:
            os.chdir(cwd)
            sys.argv = argv
            sys.stdout.flush()
            sys.stderr.flush()
        return subprocess.CompletedProcess(["invarbench", *args], code, out.getvalue().decode(),
                                           errors.getvalue().decode())


def session_api_env() -> dict[str, str]:
    """Environment for a separate process that points it at the session's Prefect server.

    Through a profile, not ``PREFECT_API_URL``: the variable also switches on the shared limits of
    hosted models (tasks.models.limits), which would change what the process does; the profile
    only saves it booting a Prefect server of its own (seconds, on a loaded machine).
    """
    return {"PREFECT_PROFILES_PATH": str(_SESSION_PROFILES[-1])} if _SESSION_PROFILES else {}


def process_env(env: dict | None = None) -> dict[str, str]:
    """The environment of a separate CLI process: this one's, ``env`` on top, no PREFECT_API_URL,
    and the session's Prefect server as its profile's API."""
    full_env = {**os.environ, **session_api_env(), **(env or {})}
    full_env.pop("PREFECT_API_URL", None)
    return full_env


def run_cli_process(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the CLI as a separate process (``python -m flows.cli``), for the tests whose point is a
    process of its own (its environment, a kill, the interpreter's exit)."""
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=REPO, env=process_env(env),
                          capture_output=True, text=True, timeout=timeout)


def sigkill_sweep_when(cfg: Path, env: dict[str, str], ready: Callable[[], bool], not_ready: str) -> None:
    """Start the CLI sweep of ``cfg`` as a separate process with ``env``, wait until ``ready()``
    holds, then SIGKILL it and all it started (its own session, so the kill reaches them all).

    Fails the test with ``not_ready`` when ``ready()`` has not held within 240 s, and when the
    sweep ends before it could be killed.
    """
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "sweep", "--config", str(cfg)], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:
            if ready():
                break
            assert proc.poll() is None, "the sweep ended before it could be killed"
            time.sleep(0.2)
        else:
            pytest.fail(not_ready)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@contextlib.contextmanager
def running_s3_server(log: Path) -> Iterator[s3_server.S3Server]:
    """A real S3 server (tests/s3_server.py, its log at ``log``) whose credentials are this
    process's only ``AWS_*`` variables while it runs, for in-process reads and writes; a
    developer's own AWS variables are back, and the server stopped, on exit."""
    import s3_server  # boto3 and the server: only for the tests of a bucket

    server = s3_server.start(log)
    with pytest.MonkeyPatch.context() as mp:
        for key, value in server.env().items():
            if key.startswith("AWS_"):
                mp.setenv(key, value)
        for key in [k for k in os.environ if k.startswith("AWS_") and k not in server.env()]:
            mp.delenv(key)
        try:
            yield server
        finally:
            s3_server.stop(server)


@pytest.fixture(scope="session")
def postgres() -> Iterator[postgres_server.PostgresServer]:
    """A real PostgreSQL (tests/postgres_server.py) for the session, started on first use and
    stopped at its end; a test takes a database of its own with ``create_database``."""
    import postgres_server

    server = postgres_server.start()
    try:
        yield server
    finally:
        postgres_server.stop(server)
