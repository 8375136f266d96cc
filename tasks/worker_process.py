"""A worker process of this code: a Python module run apart, spoken to over its stdin and stdout.

Code that may crash or is slow to import runs in a worker process of its own: an embedded model
(:mod:`tasks.models.embedded`, JSON lines) and Great Expectations (:mod:`tasks.items.validate`,
pickles). Each keeps its own protocol; this module holds what they share: starting the worker
(:func:`spawn`), stopping it, a live one or one already dying (:func:`stop`), and naming why a
dead one ended (:func:`exit_cause`). It imports only the standard library, as the sweep imports it
on its start-up path.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

# The directory holding the ``tasks`` package: the worker must run this very code, whatever the
# caller's working directory and whether or not the package is installed.
ROOT = Path(__file__).resolve().parents[1]
# How long a worker asked to stop (stdin closed) may take before it is killed: the workers exit
# on their stdin's end at once, whatever they are doing.
STOP_TIMEOUT_S = 10.0


def spawn(module: str, *args: str) -> subprocess.Popen[bytes]:
    """Start ``python -m module args...`` from :data:`ROOT` (prepended to ``PYTHONPATH``), with
    this interpreter, its stdin and stdout as pipes to this process (binary)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.Popen([sys.executable, "-m", module, *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=ROOT)


def stop(proc: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT_S) -> int:
    """Stop the worker: its pipes closed (it exits on its stdin's end), killed if it has not
    exited within ``timeout`` seconds; returns its exit status (that of a worker already dying too)."""
    for pipe in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError):  # a pipe whose reader died: nothing left to flush
            if pipe is not None:
                pipe.close()
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def exit_cause(returncode: int) -> str:
    """Why a process with this exit status ended, as a message says it: the signal that killed
    it by name ("SIGSEGV"; "signal 40" for one without a name), else "exit code N"."""
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"
