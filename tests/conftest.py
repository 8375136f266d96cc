"""Shared fixtures: a real (temporary) Prefect API for the session, configuration files, fake providers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.environment import apply_defaults

apply_defaults()  # the suite is an entry point: offline defaults before Prefect or litellm load

# Tests bring their own Prefect API (the session harness, or servers they start); an exported
# PREFECT_API_URL would point in-process sweeps at someone else's server and its limits.
os.environ.pop("PREFECT_API_URL", None)

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def prefect_api():
    """A real temporary Prefect server for the whole session (its own database, not ~/.prefect)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


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
    """
    return write_config(tmp_path / "invarbench.toml", {
        "warehouse": {"path": str(tmp_path / "wh")},
        "sweep": {"models": [name], "report": False, **(sweep_extra or {})},
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


def run_cli(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the installed ``invarbench`` CLI in a subprocess (its own Prefect ephemeral API)."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("PREFECT_API_URL", None)
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=REPO, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
