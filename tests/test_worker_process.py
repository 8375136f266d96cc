"""What the worker processes share (tasks/worker_process.py), where their own tests do not reach:
the cause of a death for every kind of exit status, and a worker that does not exit when asked.

The workers themselves, started, killed and named, are tested in tests/test_validation_worker.py
and tests/test_crash_isolation.py.
"""

from __future__ import annotations

import signal
import subprocess

from tasks import worker_process


def test_exit_cause_names_a_signal_else_the_exit_code():
    assert worker_process.exit_cause(-signal.SIGKILL) == "SIGKILL"
    assert worker_process.exit_cause(-signal.SIGSEGV) == "SIGSEGV"
    assert worker_process.exit_cause(-(signal.SIGRTMIN + 6)) == f"signal {signal.SIGRTMIN + 6}"  # a number, no name
    assert worker_process.exit_cause(0) == "exit code 0"
    assert worker_process.exit_cause(3) == "exit code 3"


def test_a_worker_that_ignores_its_stdin_ending_is_killed():
    # `sleep` never reads its stdin: closing it asks nothing of it, so only the kill ends it.
    proc = subprocess.Popen(["sleep", "60"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert worker_process.stop(proc, timeout=0.1) == -signal.SIGKILL
    assert proc.stdin.closed and proc.stdout.closed
