"""What every figure of the harness shares: scales, timed child processes, configurations, results.

The pipeline is only used through its public entry points (the CLI, ``flows.sweep.sweep``,
``flows.rescore``, ``tasks.lake.writes``, ``tasks.report.html.build_report``), each in a child process so
that start-up, imports and peak memory are measured the way a user meets them.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import httpx

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


@dataclass(frozen=True)
class Scale:
    """How big each figure's workload is; ``small`` is the 1/100 development variant."""

    name: str
    factor: float  # 1.0 full, 0.01 small

    def n(self, full: int, minimum: int = 1) -> int:
        """``full`` scaled down, at least ``minimum``."""
        return max(minimum, int(round(full * self.factor)))


SCALES = {"full": Scale("full", 1.0), "small": Scale("small", 0.01)}


@dataclass
class Figure:
    """One measured figure: every run's value, the median, its target and whether it is met."""

    number: int
    name: str
    unit: str
    values: list[float]
    target: str = ""
    # ``met`` compares the median with a bound: ("<", 1.5) or (">=", 0.9); None when untargeted.
    bound: tuple[str, float] | None = None
    note: str = ""
    command: str = ""
    # CPU seconds (user + system) of each run's process tree: steadier than wall time on a
    # shared machine, and the wall-to-CPU gap shows waiting (start-up sleeps, model latency).
    cpu: list[float] = field(default_factory=list)

    @property
    def median(self) -> float | None:
        """The median of the runs; None when no run completed (JSON has no NaN)."""
        return statistics.median(self.values) if self.values else None

    @property
    def met(self) -> bool | None:
        if self.bound is None or not self.values:
            return None
        op, limit = self.bound
        return self.median < limit if op == "<" else self.median >= limit


@dataclass
class Run:
    """One finished child process: wall time, exit code, output, peak memory."""

    seconds: float
    returncode: int
    stdout: str
    stderr: str
    cpu_s: float  # user + system seconds of the child and the descendants it waited for
    max_rss_mb: float  # largest single process (the child or a descendant it waited for)
    tree_rss_mb: float  # largest sum over the process tree, polled every 0.2 s

    def check(self, what: str) -> "Run":
        """Raise with the child's stderr when it failed: a figure of a failed run means nothing."""
        if self.returncode != 0:
            raise RuntimeError(f"{what} exited with {self.returncode}:\n{self.stderr[-4000:]}")
        return self


def env(workdir: Path, **extra: str) -> dict[str, str]:
    """The environment of every child: this checkout first on the path, a Prefect home of its own.

    A private PREFECT_HOME keeps thousands of benchmark flow runs out of the user's ~/.prefect,
    and no PREFECT_API_URL: each sweep starts Prefect's ephemeral API, as ``invarbench sweep`` does
    for a user.
    """
    out = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    out["PYTHONPATH"] = os.pathsep.join([str(ROOT), out.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out["PREFECT_HOME"] = str(workdir / "prefect-home")
    out["PREFECT_LOGGING_LEVEL"] = "WARNING"
    out.update(extra)
    return out


def cli(*args: str) -> list[str]:
    """The ``invarbench`` command of this checkout (``python -m flows.cli``, not an installed script)."""
    return [sys.executable, "-m", "flows.cli", *args]


def bench_script(name: str, *args: str) -> list[str]:
    """A script of bench/ run as a child."""
    return [sys.executable, str(BENCH / name), *args]


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``: its children, theirs, and so on."""
    found, stack = [], [pid]
    while stack:
        p = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                kids = Path(f"/proc/{p}/task/{t}/children").read_text().split()
            except OSError:
                continue
            for k in kids:
                found.append(int(k))
                stack.append(int(k))
    return found


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run(cmd: Sequence[str], workdir: Path, *, timeout: float = 7200, extra_env: dict[str, str] | None = None,
        cwd: Path | None = None) -> Run:
    """Run ``cmd`` to completion; wall time, exit code, output and peak resident memory."""
    out_path = workdir / "last-stdout.txt"
    err_path = workdir / "last-stderr.txt"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        started = time.perf_counter()
        # A session of its own, so an interrupted benchmark stops the child's whole tree (the
        # ephemeral Prefect server of a sweep included) and nothing else.
        proc = subprocess.Popen(list(cmd), cwd=cwd or ROOT, env=env(workdir, **(extra_env or {})),
                                stdout=out, stderr=err, start_new_session=True)
        peak_tree = 0.0
        stop = threading.Event()

        def poll() -> None:
            nonlocal peak_tree
            while not stop.is_set():
                total = sum(_rss_mb(p) for p in [proc.pid, *descendants(proc.pid)])
                peak_tree = max(peak_tree, total)
                stop.wait(0.2)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        killer = threading.Timer(timeout, os.killpg, (proc.pid, signal.SIGKILL))
        killer.start()
        try:
            # wait4 gives this child's own rusage (ru_maxrss in KiB on Linux), which Popen.wait drops.
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            os.killpg(proc.pid, signal.SIGTERM)
            raise
        finally:
            killer.cancel()
        seconds = time.perf_counter() - started
        stop.set()
        poller.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(seconds=seconds, returncode=proc.returncode, stdout=out_path.read_text(errors="replace"),
               stderr=err_path.read_text(errors="replace"), cpu_s=usage.ru_utime + usage.ru_stime, max_rss_mb=usage.ru_maxrss / 1024,
               tree_rss_mb=max(peak_tree, usage.ru_maxrss / 1024))


def stop_on_sigterm() -> None:
    """Make SIGTERM (``timeout``, ``kill``, a cancelled CI job) end the harness as Ctrl-C does, by
    raising, so that `run` stops the measured child's tree instead of leaving it running."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def start_prefect_server(workdir: Path) -> tuple[subprocess.Popen, str]:
    """``prefect server start`` on a free loopback port, its home under ``workdir`` (as :func:`env`'s);
    the process (a session of its own: end it with :func:`stop_group`) and its API URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    api = f"http://127.0.0.1:{port}/api"
    with (workdir / "prefect-server.log").open("wb") as log:
        proc = subprocess.Popen([str(Path(sys.executable).parent / "prefect"), "server", "start", "--host", "127.0.0.1",
                                 "--port", str(port)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                env=env(workdir, PREFECT_UI_ENABLED="false", PREFECT_SERVER_ANALYTICS_ENABLED="false"),
                                start_new_session=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{api}/health", timeout=2).status_code == 200:
                return proc, api
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    stop_group(proc)
    raise RuntimeError(f"the Prefect server did not start:\n{(workdir / 'prefect-server.log').read_text()[-3000:]}")


def stop_group(proc: subprocess.Popen, grace_s: float = 30) -> None:
    """End a process started here in a session of its own, and its children: SIGTERM, then after
    ``grace_s`` SIGKILL."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
        if proc.poll() is not None:
            return
        os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue


def alive(pid: int) -> bool:
    """True while process ``pid`` exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# What a figure measures: a commit that changes none of these leaves its earlier runs valid.
CODE_PATHS = ["flows", "tasks", "sql", "bench/*.py", "pyproject.toml", "constraints.txt"]


def code_version(root: Path = ROOT) -> str | None:
    """The last commit that changed the measured code; None when that code has uncommitted changes
    (or no git), so that nothing measured on it is ever resumed."""
    try:
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS],
                               cwd=root, capture_output=True, text=True, check=True).stdout
        last = subprocess.run(["git", "log", "-1", "--format=%H", "--", *CODE_PATHS],
                              cwd=root, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return last if last and not dirty.strip() else None


class Journal:
    """The runs of a long figure measured so far, in a JSON file beside its work, so that a harness
    stopped midway (the 200,000-item sweeps of figure 2 take hours) resumes with the run it was in.

    Entries count only for the code and scale they were measured on (``key``); a journal of other
    code starts empty, and a ``key`` of None (uncommitted code) keeps nothing across harness runs.
    """

    def __init__(self, path: Path, key: str | None):
        self.path, self.key = path, key
        stored: dict[str, Any] = {}
        if key is not None and path.exists():
            try:
                stored = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                stored = {}  # a journal cut short by a kill mid-write: measure again
        self.runs: dict[str, dict[str, Any]] = stored.get("runs", {}) if stored.get("key") == key else {}

    def get(self, name: str) -> dict[str, Any] | None:
        """The stored values of run ``name``, or None when it has still to be measured."""
        return self.runs.get(name)

    def once(self, name: str, measure: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The stored values of run ``name``; when there are none, ``measure()``'s, journaled first."""
        done = self.runs.get(name)
        if done is None:
            done = measure()
            self.put(name, done)
        return done

    def forget(self, name: str) -> None:
        """Measure run ``name`` again (what a later run needs of it is gone)."""
        self.runs.pop(name, None)

    def put(self, name: str, values: dict[str, Any]) -> None:
        """Record run ``name``; the file is replaced whole, so a kill leaves the old or the new one."""
        self.runs[name] = values
        if self.key is None:
            return
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"key": self.key, "runs": self.runs}, indent=1), encoding="utf-8")
        os.replace(tmp, self.path)


def last_json(text: str) -> dict[str, Any]:
    """The last line of ``text`` that is a JSON object (how bench scripts report to the harness)."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError(f"no JSON line in output:\n{text[-2000:]}")


def toml_value(value: Any) -> str:
    """A TOML literal for a str, bool, number or list."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return repr(value)


def write_config(path: Path, sections: dict[str, dict[str, Any]]) -> Path:
    """Write an invarbench configuration: ``{"sweep": {...}, 'models."x"': {...}}``."""
    lines = []
    for section, values in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in values.items()]
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


# The workload of the sweep figures: the five Lissard tasks whose generators run at thousands of
# items per second (logic grids and list intersection are solver-bound and would measure the
# generator, not the pipeline). Four bins each, so ``items_per_bin = n / 20``.
LISSARD_MIX = ["object_counting", "dyck", "last_letter_concat", "repeat_copy_logic", "vowel_grouping"]


def lissard_suites(n_items: int) -> dict[str, dict[str, Any]]:
    """Configuration sections generating about ``n_items`` distinct Lissard items."""
    per_bin = max(1, n_items // (len(LISSARD_MIX) * 4))
    sections: dict[str, dict[str, Any]] = {"suites.lissard": {"preset": "full", "tasks": LISSARD_MIX}}
    for task in LISSARD_MIX:
        sections[f"suites.lissard.params.{task}"] = {"items_per_bin": per_bin}
    return sections


def sweep_config(path: Path, warehouse: Path, n_items: int, model: dict[str, Any], *,
                 name: str = "bench", report: bool = False) -> Path:
    """A sweep of about ``n_items`` Lissard items on one model, the report off unless asked."""
    return write_config(path, {
        "warehouse": {"path": str(warehouse)},
        "sweep": {"models": [name], "report": report},
        f'models."{name}"': model,
        **lissard_suites(n_items),
    })


def fmt(value: float | None) -> str:
    """A figure value with 3 significant digits (integers above 1000 unabbreviated); a dash for
    none (a figure whose every run failed) or NaN."""
    if value is None or value != value:
        return "–"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"
