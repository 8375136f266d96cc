"""The chaos test's section of bench/results.md (:func:`markdown`), from bench/chaos.py's figures."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from typing import Any

from bench.run import commit

TITLE = "## Chaos test (issue #30): a sweep stopped at random moments and resumed"


def markdown(stops: list[Any], f: dict[str, Any], command: str, load: tuple[float, float], minutes: float) -> str:
    """The section for bench/results.md: when, what, the figures, the invariants, every stop."""
    kinds = Counter(s.kind for s in stops)
    lines = [TITLE, "", f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC on commit {commit()}, load average "
             f"{load[0]:.1f} at the start and {load[1]:.1f} at the end, {minutes:.1f} min (`{command}`). Stops: "
             + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) + ".", "", "| measure | value |", "|---|---:|"]
    lines += [f"| {name.replace('_', ' ')} | {f[name]} |" for name in (
        "expected_requests", "calls_paid", "distinct_requests_paid", "in_flight_at_stops", "unread_at_kills", "lake_requests",
        "answered_twice", "lost", "check_exit", "final_sweep_exit", "slowest_exit_s")]
    lines += [f"| requests paid twice, by the stop before their first payment | {f['paid_twice_by_stop'] or 0} |",
              f"| `invarbench check` findings | {f['check_found'] or 'none'} |",
              "", "| invariant | held |", "|---|---|"]
    lines += [f"| {name} | {'yes' if held else '**NO**'} |" for name, held in f["invariants"].items()]
    lines += ["", "| # | stop | moment (s after launch) | new calls before it | in flight | calls after it (new, > 1 s "
                  "after) | paid again later | unread at a kill | exit code | exit after (s) | processes left | run |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for i, s in enumerate(stops, 1):
        at, gone = ("–", "–") if s.at_s is None else (f"{s.at_s:.1f}", f"{s.exit_s:.1f}")
        lines.append(f"| {i} | {s.kind} | {at} | {s.calls_before} | {s.in_flight} | {s.calls_after} ({s.late_calls}) "
                     f"| {s.paid_again} | {s.unread} | {s.exit_code} | {gone} | {s.left_running} | {s.note.replace('|', '/')} |")
    kills = [(i, s.kill) for i, s in enumerate(stops, 1) if s.kill]
    lines += ["", "SIGKILLs, the server's log against what the killed sweep had taken in (spooled or stored; "
                  "bench/chaos_kills.py): answers written before the kill and not taken in (unread), and of the "
                  "requests paid again how many were unread, in flight at the server, or taken in (a bug).", "",
              "| # | unread | oldest unread (ms before the kill) | paid again: unread | in flight | taken in |",
              "|---|---:|---:|---:|---:|---:|"] if kills else []
    lines += [f"| {i} | {k['unread']} | {k['oldest_unread_ms']} | {k['again_unread']} | {k['again_in_flight']} "
              f"| {k['again_taken_in']} |" for i, k in kills]
    return "\n".join(lines) + "\n"
