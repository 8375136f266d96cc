"""Importing any module of the packages, first and alone, makes no network attempt.

A ``sitecustomize`` on PYTHONPATH blocks the network before anything else is imported: every
``socket.getaddrinfo`` and ``connect`` to anything but this machine (a Unix socket, a loopback
address or ``localhost``) raises, and is recorded in a file first (a library that swallows the
error, as litellm does when its price-map download fails, is still caught). The Inspect round trip
runs Inspect under the same guard (tests/test_interop_inspect.py). Each module is imported in a
process of its own, forked from a parent that holds the guard, the standard library and the
libraries the modules import at top level (Prefect, DuckDB, pyarrow, ...: loading them once instead
of in each child is most of the test's time), so no module benefits from another's imports.
litellm is never among them: its import is what goes online, so every module that loads it loads it
itself; litellm's own dependencies are preloaded. A library that goes online when preloaded is
recorded too (as ``preload NAME``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO
from test_imports import package_modules, third_party

from tasks.environment import DEFAULTS

GUARD = textwrap.dedent('''
    import os, socket

    _LOG = os.environ["INVARBENCH_NETWORK_LOG"]

    def _blocked(what):
        with open(_LOG, "a", encoding="utf-8") as f:
            f.write(f"{os.environ.get('INVARBENCH_IMPORTING', '?')}\\t{what}\\n")
        raise OSError(f"network blocked by the test: {what}")

    _getaddrinfo, _connect, _connect_ex = socket.getaddrinfo, socket.socket.connect, socket.socket.connect_ex

    def _local(host):
        if isinstance(host, bytes):
            host = host.decode("ascii", "replace")
        return isinstance(host, str) and (host.startswith("127.") or host in ("::1", "localhost"))

    def getaddrinfo(host, *args, **kwargs):
        if _local(host):
            return _getaddrinfo(host, *args, **kwargs)
        _blocked(f"getaddrinfo {host!r}")

    def connect(self, address):
        if self.family == socket.AF_UNIX or _local(address[0]):
            return _connect(self, address)
        _blocked(f"connect {address!r}")

    def connect_ex(self, address):
        if self.family == socket.AF_UNIX or _local(address[0]):
            return _connect_ex(self, address)
        _blocked(f"connect {address!r}")

    socket.getaddrinfo, socket.socket.connect, socket.socket.connect_ex = getaddrinfo, connect, connect_ex
''')

# Imports the libraries of argv[1], then forks one child per module of argv[2]; each child imports
# its module and exits with 0, or 1 on an error.
PARENT = textwrap.dedent('''
    import importlib, json, os, sys, traceback
    for name in json.loads(sys.argv[1]):
        os.environ["INVARBENCH_IMPORTING"] = f"preload {name}"
        importlib.import_module(name)
    if "litellm" in sys.modules:
        sys.exit("a preloaded library imported litellm: its import would no longer be tested")
    failed = {}
    for name in json.loads(sys.argv[2]):
        os.environ["INVARBENCH_IMPORTING"] = name
        pid = os.fork()
        if pid == 0:
            try:
                importlib.import_module(name)
            except BaseException:
                traceback.print_exc()
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if status:
            failed[name] = status
    print(json.dumps(failed))
''')


# litellm's largest dependencies: loaded by the parent too, while litellm itself stays unloaded.
LITELLM_DEPENDENCIES = ["openai", "aiohttp", "tiktoken", "jinja2"]


def preloaded() -> list[str]:
    """What the parent imports before it forks: the libraries the packages' modules import at top
    level and litellm's largest dependencies, never litellm."""
    libraries = third_party(package_modules(), top_level=True) + LITELLM_DEPENDENCIES
    return [name for name in libraries if name.split(".")[0] != "litellm"]


def run_guarded(tmp_path: Path, modules: list[str]) -> tuple[dict, list[str], str]:
    """Import each of ``modules`` first in a forked child under the guard, without the offline
    defaults in the environment; (failed imports, recorded attempts, stderr)."""
    guard_dir = tmp_path / "guard dir"
    guard_dir.mkdir()
    (guard_dir / "sitecustomize.py").write_text(GUARD, encoding="utf-8")
    log = tmp_path / "attempts.log"
    log.touch()
    env = {k: v for k, v in os.environ.items() if k not in DEFAULTS}
    env.update(PYTHONPATH=os.pathsep.join([str(guard_dir), str(REPO)]), INVARBENCH_NETWORK_LOG=str(log))
    result = subprocess.run([sys.executable, "-c", PARENT, json.dumps(preloaded()), json.dumps(modules)], cwd=REPO,
                            env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    failed = json.loads(result.stdout.strip().splitlines()[-1])
    return failed, log.read_text(encoding="utf-8").splitlines(), result.stderr


@pytest.mark.slow  # litellm imported in a process of its own
def test_the_guard_records_a_network_attempt(tmp_path):
    # litellm imported bare, as a module outside the packages would: it tries to download its price map
    failed, attempts, _ = run_guarded(tmp_path, ["litellm"])
    assert failed == {}
    assert attempts and all(line.startswith("litellm\t") for line in attempts), attempts


@pytest.mark.slow  # every module imported in processes of their own
def test_no_module_touches_the_network_on_import(tmp_path):
    modules = sorted(package_modules())
    failed, attempts, stderr = run_guarded(tmp_path, modules)
    assert failed == {}, stderr[-3000:]
    assert attempts == []
