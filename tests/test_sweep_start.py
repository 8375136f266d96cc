"""A cold sweep's start-up (bench/results.md, "A cold sweep's boot"): the temporary Prefect server
(flows/cli/prefect_server.py) spawned before this process imports Prefect, and stopped again when
Prefect's settings name a server of the user's own; a new warehouse not opened to look for answers
before the server is spawned; on a new warehouse the server spawned before the items are
collected, on another once no earlier run answers the sweep, and discarded when the ledger does.

The server tests run in a fresh interpreter (the test process has imported Prefect long ago), with
``subprocess.Popen`` wrapped to record, for each process started, whether Prefect was imported
at that moment; the servers are stopped before they finish booting.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import fake_model_config
from prefect import flow
from prefect.flow_engine import FlowRunEngine
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
from typer.testing import CliRunner

import flows.cli.sweep as sweep_cli
from flows.cli.application import app
from flows.cli.prefect_server import on_the_temporary_server
from flows.cli.sweep import answered_already
from flows.sweep_run import collect_items
from tasks.config import load_config
from tasks.items.compact import items_table
from tasks.lake.lake import Lake

REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, subprocess, sys
spawned = []
_Popen = subprocess.Popen

class Recording(_Popen):
    def __init__(self, *args, **kwargs):
        spawned.append({"prefect_imported": "prefect" in sys.modules})
        super().__init__(*args, **kwargs)
        spawned[-1]["process"] = self

subprocess.Popen = Recording
from flows.cli.prefect_server import start_prefect_server

wait = start_prefect_server()
print(json.dumps({"prefect_imported_at_spawn": [s["prefect_imported"] for s in spawned],
                  "running_after_start": [s["process"].poll() is None for s in spawned],
                  "waits": wait.__name__,
                  # what a flow runs under when no temporary server is waited for (a user's server)
                  "flow_settings": None if wait.__name__ == "wait" else type(wait()).__name__}))
for s in spawned:  # not waited for: the test is about its start
    s["process"].terminate()
    s["process"].wait()
"""


def started(tmp_path: Path, **env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    result = subprocess.run([sys.executable, "-c", CHILD], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={**clean, "PYTHONPATH": str(REPO), "PREFECT_HOME": str(tmp_path / "home"), **env})
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_server_is_spawned_before_prefect_is_imported(tmp_path):
    """Its boot, the longest part of a cold sweep's start-up, does not wait for the 0.7-1.4 s of
    importing Prefect's settings."""
    seen = started(tmp_path)
    assert seen["prefect_imported_at_spawn"] == [False]
    assert seen["running_after_start"] == [True]
    assert seen["waits"] == "wait"


def test_a_profile_naming_a_server_of_its_own_stops_the_early_one(tmp_path):
    """``PREFECT_API_URL`` in the active profile, not in the environment: the server spawned
    before the settings were read is stopped, and the flow uses the profile's server."""
    profiles = tmp_path / "profiles.toml"
    profiles.write_text('active = "own"\n\n[profiles.own]\nPREFECT_API_URL = "http://127.0.0.1:9/api"\n')
    seen = started(tmp_path, PREFECT_PROFILES_PATH=str(profiles))
    assert seen["prefect_imported_at_spawn"] == [False]
    assert seen["running_after_start"] == [False]
    assert seen["waits"] == seen["flow_settings"] == "nullcontext"  # the user's server: Prefect's settings as they are


def test_an_api_url_in_the_environment_starts_no_server(tmp_path):
    seen = started(tmp_path, PREFECT_API_URL="http://127.0.0.1:9/api")
    assert seen["prefect_imported_at_spawn"] == []
    assert seen["waits"] == seen["flow_settings"] == "nullcontext"


def test_a_new_warehouse_is_not_opened_to_find_its_answers(tmp_path):
    """It holds none: the sweep calls, and no DuckDB is opened before Prefect's server is spawned."""
    cfg = load_config(fake_model_config(tmp_path, "http://127.0.0.1:9/v1"))
    rows = collect_items(cfg)[0]
    assert rows
    assert answered_already(cfg, rows) is False
    assert Lake.of(cfg, read_only=True)._reader is None


@flow
def a_flow() -> None:
    pass


def test_a_flow_run_on_the_temporary_server_sends_no_heartbeats():
    """Prefect's engine joins its heartbeat thread at every flow run's end (0-1 s idle); the temporary
    server ends with the sweep, so nothing listens for them. Prefect's own setting still rules."""
    engine = FlowRunEngine(flow=a_flow)
    assert engine.heartbeat_seconds is not None  # Prefect's default: heartbeats
    with on_the_temporary_server():
        assert engine.heartbeat_seconds is None
    assert engine.heartbeat_seconds is not None
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: 60}), on_the_temporary_server():
        assert engine.heartbeat_seconds == 60


class FakeServer:
    def __init__(self, seen: list) -> None:
        self.seen = seen
        seen.append("spawned")

    def discard(self) -> None:
        self.seen.append("discarded")


def sweep_steps(tmp_path: Path, monkeypatch, *, known: bool = False, answered: bool = False) -> list:
    """The order in which ``invarbench sweep`` spawns the server, checks for a known sweep, collects
    the items, asks the ledger and runs, with each of those steps faked."""
    seen: list = []
    monkeypatch.setattr(sweep_cli, "spawn_server", lambda: FakeServer(seen))

    def step(name, result):
        def fake(*args, **kwargs):
            seen.append(name)
            return result
        return fake

    monkeypatch.setattr(sweep_cli, "_start_validation", step("validator", None))
    monkeypatch.setattr(sweep_cli, "_known_sweep", step("known?", {"known": True} if known else None))
    monkeypatch.setattr(sweep_cli, "check_sweep", step("items", (items_table([]), 0, [])))
    monkeypatch.setattr(sweep_cli, "answered_already", step("ledger?", answered))
    monkeypatch.setattr(sweep_cli, "_print_summary", lambda summary: None)

    def run(*args):
        seen.append(("run", "early server" if isinstance(args[-1], FakeServer) else args[-1]))
        return {}

    monkeypatch.setattr(sweep_cli, "_run_sweep", run)
    cfg = fake_model_config(tmp_path, "http://127.0.0.1:9/v1")
    result = CliRunner().invoke(app, ["sweep", "--config", str(cfg)])
    assert result.exit_code == 0, result.output
    return seen


def test_on_a_new_warehouse_the_server_is_spawned_before_the_items_are_collected(tmp_path, monkeypatch):
    """Its boot, a cold sweep's critical path, starts before the known-sweep check and the items,
    and so does Great Expectations' worker (the new warehouse holds none of the items)."""
    assert sweep_steps(tmp_path, monkeypatch) == ["spawned", "validator", "known?", "items", "ledger?",
                                                  ("run", "early server")]


def test_on_a_warehouse_with_a_lake_the_server_waits_for_the_known_sweep_check(tmp_path, monkeypatch):
    """A sweep recorded before (most of a cached sweep's runs) spawns no server at all; one the
    ledger answers discards it and runs without Prefect."""
    (tmp_path / "wh" / "lake").mkdir(parents=True)
    assert sweep_steps(tmp_path, monkeypatch, known=True) == ["known?"]
    assert sweep_steps(tmp_path, monkeypatch, answered=True) == [
        "known?", "spawned", "items", "ledger?", "discarded", ("run", None)]
    assert sweep_steps(tmp_path, monkeypatch) == ["known?", "spawned", "items", "ledger?", ("run", "early server")]


def test_a_discarded_server_ends_at_once(tmp_path):
    """Spawned, then not needed: SIGTERM while it boots ends it (no graceful shutdown to wait for)."""
    code = ("import time; from flows.cli.prefect_server import spawn_server; s = spawn_server(); "
            "t = time.monotonic(); s.discard(); s.process.wait(timeout=10); "
            "print(s.process.returncode, round(time.monotonic() - t, 1))")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                            env={**clean, "PYTHONPATH": str(REPO), "PREFECT_HOME": str(tmp_path / "home")})
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[0] == "-15"  # SIGTERM


def test_great_expectations_starts_before_prefect_is_started_when_the_lake_lacks_items(monkeypatch):
    """On a lake that holds every item nothing is validated: no worker; else it is started before
    this process starts Prefect's server (and imports Prefect), and preload leaves it out."""
    for lacks, steps in ((True, ["lacks?", "validator", "server", ("preload", True)]),
                         (False, ["lacks?", "server", ("preload", False)])):
        seen: list = []
        monkeypatch.setattr(sweep_cli, "_lacks_items", lambda cfg, ids, lacks=lacks: seen.append("lacks?") or lacks)
        monkeypatch.setattr(sweep_cli, "_start_validation", lambda: seen.append("validator"))
        monkeypatch.setattr(sweep_cli, "start_prefect_server", lambda early: seen.append("server") or contextlib.nullcontext)
        monkeypatch.setattr(sweep_cli, "preload", lambda cfg, validating: seen.append(("preload", validating)))
        monkeypatch.setattr(sweep_cli, "_performed", lambda run: {})
        sweep_cli._run_sweep(None, {}, {}, object(), None, ["i1"], False)
        assert seen == steps
