"""Chaos test (issue #30): a sweep stopped at random moments and resumed, each request paid once.

A loopback OpenAI-compatible fault server (tests/fakes.py; ``--latency``; a 429 or 500 on the first
call of one prompt in twenty) answers two hosted models. ``invarbench sweep`` runs in a child
process and is stopped ``--stops`` times at a random moment (seeded: ``--seed``) by SIGKILL,
SIGTERM, SIGINT (to its process group, as Ctrl-C) or a cancellation of its flow run through the
Prefect API, and resumed by the next sweep; a last sweep runs to the end. A moment is a number of
new calls seen by the server (then part of a call's latency) or, one time in five, seconds after launch.

The server counts what is paid (each call it answers 200) and the calls in flight at each stop;
the lake is read through the CLI only (``sql``, ``check``). Invariants (exit 1 when one fails):
calls paid ≤ distinct requests + calls in flight at the stops, and so stop by stop; none answered
twice; none lost; ``invarbench check`` clean; each stopped sweep ended as documented (130/143 and
run ``cancelled`` after SIGINT/SIGTERM/a cancellation, ``crashed`` after SIGKILL, no new call
after a signal, no process left).

The sweeps share a ``prefect server start`` of the script's (their flow runs are cancelled through
its API); ``--temporary-server``: each starts its own, as a user's does, and only signals stop it.
Figures: ``--out`` (bench/results/chaos.md), a section at the end of ``--results`` (bench/results.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import httpx  # noqa: E402
from fakes import FakeProvider, FakeServer, count_ones_responder  # noqa: E402

from bench import chaos_kills, common  # noqa: E402
from bench.chaos_report import TITLE, markdown  # noqa: E402
from bench.run import merge_section  # noqa: E402

KINDS = ("SIGKILL", "SIGTERM", "SIGINT", "cancel")
EXIT_CODES = {"SIGKILL": -9, "SIGTERM": 143, "SIGINT": 130, "cancel": 143}
RUN_STATUSES = {"SIGKILL": ("crashed", "failed"), **dict.fromkeys(("SIGTERM", "SIGINT", "cancel"), ("cancelled",))}
MODELS = ("chaos-a", "chaos-b")
WAIT_S = 600  # a guard against a sweep that hangs, not a measure
LATE_S = 1.0  # a call the sweep began to send before a signal may reach the server this long after it


class PayingProvider:
    """The fault server's behaviour, and what it was paid: one entry per call answered 200, with
    the sweep (``segment``) it came from, the request (its whole body) and the moment it was
    answered (``time.monotonic``, as the answer is written)."""

    def __init__(self, latency_s: float):
        self.segment = 0
        self.paid: list[tuple[int, str, float]] = []
        self.state = FakeProvider(responder=self._answer, fault=self._fault, delay_s=latency_s)

    def _answer(self, body: dict) -> str:
        with self.state.lock:
            self.paid.append((self.segment, json.dumps(body, sort_keys=True), time.monotonic()))
        return count_ones_responder(body)

    @staticmethod
    def _fault(content: str, attempt: int) -> str | None:
        # The first call of one prompt in twenty fails (its retry succeeds): retries are not answers.
        draw = int(hashlib.sha256(content.encode()).hexdigest(), 16) % 40
        return {0: "429", 1: "500"}.get(draw) if attempt == 1 else None


@dataclass
class Stop:
    """One stop: what is sent and when (planned), then what happened (measured)."""

    kind: str
    after_s: float | None  # seconds after launch, or None: after a number of new calls
    share: float  # of the calls left per stop, which decides that number
    jitter_s: float  # after that call arrives
    calls_before: int = 0  # new calls seen when the stop was sent
    at_s: float | None = None  # seconds after launch
    in_flight: int = 0  # calls in flight at the server at that moment
    calls_after: int = 0  # calls the server saw from the stop to the sweep's exit
    late_calls: int = 0  # of those, new ones (no retry of a call sent before) more than LATE_S after it
    paid_again: int = 0  # requests first paid while this sweep ran and paid again by a later one
    # a SIGKILL's answers written by the server before it but not taken in (bench/chaos_kills.py)
    unread: int = 0
    kill: dict[str, float] = field(default_factory=dict)  # chaos_kills.explain's figures
    exit_code: int | None = None
    exit_s: float | None = None  # from the stop to the sweep's exit
    left_running: int = 0  # processes the sweep started, alive 30 s after it ended
    pid: int = 0
    note: str = ""


def plan(seed: int, n: int, kinds: list[str], latency_s: float) -> list[Stop]:
    """``n`` stops, the kinds in equal shares in a seeded random order."""
    rng = random.Random(seed)
    order = (kinds * (n // len(kinds) + 1))[:n]
    rng.shuffle(order)
    return [Stop(kind, rng.uniform(0.5, 15.0) if rng.random() < 0.2 else None, rng.random(),
                 rng.uniform(0.0, latency_s)) for kind in order]


@dataclass
class Chaos:
    """Everything one chaos run works with."""

    workdir: Path
    config: Path
    provider: PayingProvider
    api: str | None  # the shared Prefect server's API, or None: each sweep starts its own
    concurrency: int = 8  # per model
    expected: int = 0  # requests the sweep makes: items × models
    stops: list[Stop] = field(default_factory=list)
    kills: dict[int, chaos_kills.Kill] = field(default_factory=dict)  # by stop: what a SIGKILL cut off

    def env(self) -> dict[str, str]:
        return common.env(self.workdir, **({"PREFECT_API_URL": self.api} if self.api else {}))

    def invarbench(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """An ``invarbench`` command on the chaos configuration, to completion."""
        done = subprocess.run(common.cli(*args, "--config", str(self.config)), cwd=ROOT, env=self.env(),
                              capture_output=True, text=True, timeout=WAIT_S)
        if check and done.returncode != 0:
            raise RuntimeError(f"invarbench {args[0]} exited with {done.returncode}:\n{done.stderr[-3000:]}")
        return done

    def sql(self, query: str) -> list[dict[str, Any]]:
        return json.loads(self.invarbench("sql", query, "--format", "json").stdout)


def write_sweep_config(workdir: Path, api_base: str, items: int, concurrency: int) -> Path:
    """Two hosted models on the fault server, ``items`` symmetry closure items each, report off."""
    model = {"api_base": api_base, "concurrency": concurrency, "retries": 3, "backoff_s": 0.05, "timeout_s": 30.0,
             "shared_limits": False}
    return common.write_config(workdir / "chaos.toml", {
        "warehouse": {"path": str(workdir / "wh")},
        "sweep": {"models": list(MODELS), "report": False},
        **{f'models."{m}"': {"model": f"openai/{m}", **model} for m in MODELS},
        "suites.symmetry": {"tasks": ["closure"]},
        "suites.symmetry.params.closure": {"n_min": 5, "n_max": 5 * items, "n_step": 5, "groups": ["integers"],
                                           "prompt_styles": ["direct"]},
    })


def running_flow_run(api: str, launched: datetime) -> str:
    """The sweep's flow run: the newest running one started after ``launched`` (waits for it)."""
    query = {"flow_runs": {"state": {"type": {"any_": ["RUNNING"]}}, "start_time": {"after_": launched.isoformat()}},
             "sort": "START_TIME_DESC", "limit": 1}
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = httpx.post(f"{api}/flow_runs/filter", json=query, timeout=30).raise_for_status().json()
        if found:
            return found[0]["id"]
        time.sleep(0.1)
    raise RuntimeError("the sweep's flow run never ran")


def send(chaos: Chaos, stop: Stop, proc: subprocess.Popen, flow_run: str | None) -> None:
    """Send the stop: a signal, or the flow run set Cancelling (as ``prefect flow-run cancel`` does)."""
    if stop.kind == "cancel":
        state = {"type": "CANCELLING", "name": "Cancelling", "message": "cancelled by bench/chaos.py"}
        httpx.post(f"{chaos.api}/flow_runs/{flow_run}/set_state", json={"state": state}, timeout=30).raise_for_status()
    elif stop.kind == "SIGINT":
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the terminal's whole foreground group
    else:
        os.kill(proc.pid, getattr(signal, stop.kind))


def launch(chaos: Chaos, segment: int) -> subprocess.Popen:
    """A sweep in a child process of its own session (as a terminal's foreground job is)."""
    chaos.provider.segment = segment
    with (chaos.workdir / f"sweep-{segment:02d}.log").open("w") as log:
        return subprocess.Popen(common.cli("sweep", "--config", str(chaos.config)), cwd=ROOT, env=chaos.env(),
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def wait_for_moment(chaos: Chaos, stop: Stop, proc: subprocess.Popen, started: float, stops_left: int) -> bool:
    """Wait for the stop's moment (``stops_left`` counts it); False when the sweep ended first."""
    state = chaos.provider.state
    seen = len(state.seen)
    left = max(0, chaos.expected - len({key for _, key, _ in chaos.provider.paid}))
    # an equal share of what is left less the calls in flight: the later stops find calls to cut too
    calls = 1 + int(stop.share * max(0, left // stops_left - 2 * chaos.concurrency * len(MODELS)))
    while proc.poll() is None:
        if time.monotonic() - started > WAIT_S:
            raise RuntimeError(f"stop {stop.kind}: the sweep never reached its moment")
        if stop.after_s is not None and time.monotonic() - started >= stop.after_s:
            return True
        if stop.after_s is None and len(state.seen) - seen >= calls:
            time.sleep(stop.jitter_s)
            return proc.poll() is None
        time.sleep(0.01)
    return False


def stop_sweep(chaos: Chaos, stop: Stop, segment: int) -> None:
    """Launch a sweep, stop it at its moment, wait for it to end; the stop's measures filled in."""
    launched_at = datetime.now(timezone.utc)
    started = time.monotonic()
    seen = len(chaos.provider.state.seen)
    proc = launch(chaos, segment)
    stop.pid = proc.pid
    if wait_for_moment(chaos, stop, proc, started, len(chaos.stops) - segment):
        flow_run = running_flow_run(chaos.api, launched_at) if stop.kind == "cancel" else None
        children = common.descendants(proc.pid)
        stop.in_flight = chaos.provider.state.in_flight
        stop.at_s = time.monotonic() - started
        stop.calls_before = len(chaos.provider.state.seen) - seen
        stopped = time.monotonic()
        send(chaos, stop, proc, flow_run)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            stop.note = "did not end within 120 s of the stop; killed"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        stop.exit_s = time.monotonic() - started - stop.at_s
        if stop.kind == "SIGKILL":  # before the next sweep replays its spool
            chaos.kills[segment] = chaos_kills.after_kill(chaos.workdir / "wh" / "lake", stopped, chaos.sql)
        calls = chaos.provider.state.seen[seen:]
        sent = {json.dumps(c.body, sort_keys=True) for c in calls[:stop.calls_before]}  # their retries go on
        stop.calls_after = len(calls) - stop.calls_before
        stop.late_calls = sum(c.at - stopped > LATE_S and json.dumps(c.body, sort_keys=True) not in sent
                              for c in calls[stop.calls_before:])
        deadline = time.monotonic() + 30
        while any(common.alive(p) for p in children) and time.monotonic() < deadline:
            time.sleep(0.2)
        stop.left_running = sum(common.alive(p) for p in children)
    else:
        stop.note = "the sweep ended before its moment"
    stop.exit_code = proc.returncode
    settle(chaos)


def settle(chaos: Chaos) -> None:
    """Let the calls a stopped sweep left at the server end, so each paid call is counted with its sweep."""
    deadline = time.monotonic() + 60
    while chaos.provider.state.in_flight and time.monotonic() < deadline:
        time.sleep(0.05)


def final_sweep(chaos: Chaos) -> int:
    """The last sweep, to the end; its exit code."""
    proc = launch(chaos, len(chaos.stops))
    try:
        return proc.wait(timeout=WAIT_S)
    finally:
        common.stop_group(proc)


def outcome(chaos: Chaos, final_exit: int) -> dict[str, Any]:
    """The figures and the invariants, from the server's counts and the lake (through the CLI)."""
    paid = chaos.provider.paid
    keys = Counter(key for _, key, _ in paid)
    first_paid: dict[str, int] = {}
    for segment, key, _ in paid:
        first_paid.setdefault(key, segment)
    kinds = [s.kind for s in chaos.stops] + ["the last sweep"]
    twice = Counter(kinds[first_paid[k]] for k, n in keys.items() if n > 1)
    for segment, n in Counter(first_paid[k] for k, n in keys.items() if n > 1).items():
        if segment < len(chaos.stops):
            chaos.stops[segment].paid_again = n
    for segment, kill in chaos.kills.items():
        again = {chaos_kills.request_of(json.loads(k)) for k, n in keys.items() if n > 1 and first_paid[k] == segment}
        answered = [(chaos_kills.request_of(json.loads(k)), at) for s, k, at in paid if s == segment]
        chaos.stops[segment].kill = chaos_kills.explain(kill, answered, again)
        chaos.stops[segment].unread = int(chaos.stops[segment].kill["unread"])
    [lake] = chaos.sql("""
        SELECT (SELECT count(DISTINCT request_id) FROM run_requests) AS requests,
               (SELECT count(DISTINCT request_id) FROM run_requests q WHERE NOT EXISTS (
                    SELECT 1 FROM ledger l WHERE l.request_id = q.request_id AND l.status = 'ok')) AS lost,
               (SELECT count(*) FROM (SELECT request_id FROM responses WHERE status = 'ok'
                                      GROUP BY request_id HAVING count(*) > 1)) AS answered_twice""")
    checked = chaos.invarbench("check", "--json", check=False)
    found = {f["check"]: f["count"] for f in common.last_json(checked.stdout)["checks"] if f["count"] or f["error"]}
    runs = chaos.sql("SELECT pid, status, message FROM runs ORDER BY started_at")
    by_pid = {r["pid"]: r for r in runs}
    for stop in chaos.stops:
        run = by_pid.get(stop.pid)
        stop.note = stop.note or (f"run {run['status']}: {run['message'] or ''}".strip(": ") if run else "no run yet")
    figures = {"stops": [asdict(s) for s in chaos.stops], "expected_requests": chaos.expected, "calls_paid": len(paid),
               "distinct_requests_paid": len(keys), "in_flight_at_stops": sum(s.in_flight for s in chaos.stops),
               "unread_at_kills": sum(s.unread for s in chaos.stops),
               "paid_twice_by_stop": dict(twice), "lake_requests": lake["requests"], "lost": lake["lost"],
               "answered_twice": lake["answered_twice"], "check_exit": checked.returncode,
               "check_found": found, "final_sweep_exit": final_exit, "runs": [r["status"] for r in runs],
               "slowest_exit_s": round(max((s.exit_s or 0 for s in chaos.stops), default=0), 1)}
    figures["invariants"] = invariants(chaos, figures, by_pid)
    return figures


def ended_as_documented(stop: Stop, run: dict | None) -> bool:
    """Whether a stopped sweep exited with its stop's code, left no process, started no call after
    a signal, and its run (if it had begun) reads as documented. A stop that came when nothing was
    left to send (a cancellation is seen every ``cancel_poll_s``) may find it completing: exit 0.
    The time it took is reported, not judged here: on a loaded machine it says little."""
    if stop.at_s is None:
        return True  # it ended before its moment: nothing was stopped
    status = run["status"] if run else None
    none_late = stop.kind == "cancel" or stop.late_calls == 0
    return stop.left_running == 0 and none_late and ((stop.exit_code == 0 and status == "completed") or (
        stop.exit_code == EXIT_CODES[stop.kind] and status in (None, *RUN_STATUSES[stop.kind])))


def invariants(chaos: Chaos, f: dict[str, Any], by_pid: dict[int, dict]) -> dict[str, bool]:
    """Each invariant by name: held or not."""
    return {"calls paid ≤ distinct requests + in flight at the stops + unread at the kills":
                f["calls_paid"] <= f["distinct_requests_paid"] + f["in_flight_at_stops"] + f["unread_at_kills"],
            "each stop: requests paid again ≤ its calls in flight (a SIGKILL's: and its answers unread)":
                all(s.paid_again <= s.in_flight + s.unread for s in chaos.stops),
            "no answer a killed sweep had spooled or stored paid again":
                not any(s.kill.get("again_taken_in") for s in chaos.stops),
            "no request answered twice": f["answered_twice"] == 0 and "answered_twice" not in f["check_found"],
            "none lost": f["lost"] == 0 and f["lake_requests"] == f["expected_requests"] == f["distinct_requests_paid"],
            "invarbench check clean": f["check_exit"] == 0,
            "the last sweep completed": f["final_sweep_exit"] == 0,
            "each stopped sweep ended as documented": all(ended_as_documented(s, by_pid.get(s.pid))
                                                          for s in chaos.stops)}


def main(argv: list[str] | None = None) -> int:
    """Run the chaos test; exit code 1 when an invariant fails."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stops", type=int, default=20, help="how many times a sweep is stopped (20)")
    p.add_argument("--seed", type=int, default=0, help="decides the kinds, their order and the moments (0)")
    p.add_argument("--items", type=int, default=400, help="symmetry closure items; each model answers all (400)")
    p.add_argument("--latency", type=float, default=0.15, help="seconds the server takes per call (0.15)")
    p.add_argument("--concurrency", type=int, default=8, help="calls in flight per model (8)")
    p.add_argument("--kinds", default=",".join(KINDS), help="the stops to mix (all; --temporary-server drops cancel)")
    p.add_argument("--temporary-server", action="store_true",
                   help="each sweep on the temporary Prefect server it starts (a user's default); signals only")
    p.add_argument("--workdir", type=Path, default=ROOT / "bench" / "work" / "chaos",
                   help="emptied first: warehouse, Prefect home, each sweep's log (bench/work/chaos)")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "chaos.md", help="the figures")
    p.add_argument("--results", default=str(ROOT / "bench" / "results.md"),
                   help="the results file whose hand-written end gets the figures; '' for none")
    args = p.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if not (args.temporary_server and k == "cancel")]
    if not kinds or not set(kinds) <= set(KINDS):
        p.error(f"--kinds takes {', '.join(KINDS)}")
    load = os.getloadavg()[0]
    began = time.monotonic()
    chaos, figures = run(args, kinds)
    command = shlex.join(["python", "bench/chaos.py", *(sys.argv[1:] if argv is None else argv)])
    section = markdown(chaos.stops, figures, command.strip(), (load, os.getloadavg()[0]), (time.monotonic() - began) / 60)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(section, encoding="utf-8")
    if args.results:
        merge_section(Path(args.results), TITLE, section)
    print(section)
    print(json.dumps(figures, default=str))
    return 0 if all(figures["invariants"].values()) else 1


def run(args: argparse.Namespace, kinds: list[str]) -> tuple[Chaos, dict[str, Any]]:
    """Every stop and the last sweep against one fault server; the chaos run and its figures."""
    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    provider = PayingProvider(args.latency)
    with FakeServer(provider.state) as fake, ExitStack() as stack:
        fake.httpd.handle_error = lambda request, address: None  # a killed sweep resets its connections
        api = None
        if not args.temporary_server:
            server, api = common.start_prefect_server(args.workdir)
            stack.callback(common.stop_group, server)
        config = write_sweep_config(args.workdir, fake.api_base, args.items, args.concurrency)
        chaos = Chaos(args.workdir, config, provider, api, args.concurrency,
                      stops=plan(args.seed, args.stops, kinds, args.latency))
        items = args.workdir / "items.jsonl"  # the sweep's requests: its items × models
        chaos.invarbench("generate", "--suite", "symmetry", "--out", str(items))
        chaos.expected = len(items.read_text().splitlines()) * len(MODELS)
        for i, stop in enumerate(chaos.stops):
            stop_sweep(chaos, stop, i)
            print(f"stop {i + 1}/{len(chaos.stops)}: {json.dumps(asdict(stop))}", flush=True)
        return chaos, outcome(chaos, final_sweep(chaos))


if __name__ == "__main__":
    sys.exit(main())
