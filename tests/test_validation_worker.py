"""Great Expectations' worker process (tasks/items/ge_worker.py, tasks/items/validate.py): one per
process, started once and reused; a worker that died gives a clear error and the next validation
starts another; a worker ends with its parent, even one killed by SIGKILL.

The messages of failed expectations, now answered by the worker, are tested in
tests/test_distinct_problems.py and tests/test_sweep_rows.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tasks.items import validate

REPO = Path(__file__).resolve().parent.parent


def rows(n: int = 3) -> list[dict]:
    return [{"item_id": f"i{k}", "suite": "s", "task": "t", "family_id": f"f{k}", "prompt": f"p{k}", "gold": "3",
             "answer_type": "integer", "key_entities": 1, "bin_lo": 1, "bin_hi": 2} for k in range(n)]


def worker_pid() -> int:
    proc = validate._validator._proc
    assert proc is not None and proc.poll() is None
    return proc.pid


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie no one reaps has ended too)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_one_worker_serves_every_validation():
    assert validate.validate_items(rows(), batch_name="reused_0") == 3
    first = worker_pid()
    with pytest.raises(validate.ValidationFailed, match=r"expect_column_values_to_be_unique .*failed for 2 of 3 rows"):
        validate.validate_items([rows()[0]] * 2 + rows()[1:2], batch_name="reused_1")
    validate.prepare()  # started already: nothing new
    assert validate.validate_items(rows(), batch_name="reused_2") == 3
    assert worker_pid() == first


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_killed_worker_is_named_and_the_next_validation_starts_another():
    validate.validate_items(rows(), batch_name="before_kill")
    killed = worker_pid()
    os.kill(killed, signal.SIGKILL)
    with pytest.raises(validate.ValidatorCrashed, match=rf"killed_0 was not checked: the Great Expectations worker "
                                                       rf"process \(pid {killed}\) died with SIGKILL"):
        validate.validate_items(rows(), batch_name="killed_0")
    assert validate.validate_items(rows(), batch_name="killed_1") == 3
    assert worker_pid() != killed


PARENT = """
import sys, time
from tasks.items import validate
validate.prepare()
print(validate._validator._proc.pid, flush=True)
if sys.argv[1] == "validated":
    validate.validate_items([{"item_id": "i", "gold": "1", "prompt": "p", "family_id": "f", "key_entities": 1,
                              "bin_lo": 1, "bin_hi": 1, "answer_type": "integer"}])
    print("validated", flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("when", ["importing", "validated"])
def test_the_worker_ends_with_its_parent_killed(when):
    """SIGKILL leaves the parent no time to stop it: its stdin ends, which ends it whatever it is
    doing (still importing Great Expectations, or waiting for the next chunk)."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT, when], stdout=subprocess.PIPE, text=True, cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        pid = int(parent.stdout.readline())
        if when == "validated":
            assert parent.stdout.readline().strip() == "validated"
        else:
            assert not gone(pid)
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 60  # a guard against a hang, not a measure: it ends at once
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(pid)


def test_a_worker_prepared_with_an_idle_time_stops_after_its_last_validation():
    """A sweep validates every chunk first: its worker's memory is freed once the chunks are done."""
    validate.prepare(idle_s=0.5)
    assert validate.validate_items(rows(), batch_name="idle_0") == 3
    idle = worker_pid()
    deadline = time.monotonic() + 60  # a guard against a hang, not a measure
    # stop() lets go of the worker before it has exited: wait for both
    while not (validate._validator._proc is None and gone(idle)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert validate._validator._proc is None and gone(idle)
    assert validate.validate_items(rows(), batch_name="idle_1") == 3  # another, kept this time
    assert worker_pid() != idle and validate._validator.idle_s is None


DEFERRED = """
import sys
from tasks.items.ge_worker import defer_import
defer_import("scipy.stats")
from scipy import stats  # as Great Expectations imports it
loaded = "scipy.stats._stats_py" in sys.modules
print(loaded, stats.entropy([0.5, 0.5], [0.5, 0.5]), "scipy.stats._stats_py" in sys.modules)
"""


def test_a_deferred_module_runs_only_when_used():
    """The worker defers SciPy's statistics, which Great Expectations imports for expectations
    the sweep never runs: imported, it is not loaded; used, it is."""
    result = subprocess.run([sys.executable, "-c", DEFERRED], capture_output=True, text=True, cwd=REPO, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["False", "0.0", "True"]
