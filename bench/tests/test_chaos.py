"""bench/chaos.py at its smallest: a sweep stopped twice and resumed pays each request once.

Two stops on 40 items (80 requests), a SIGKILL (the calls in flight are lost and paid again) and a
cancellation through the Prefect API (they are kept), then a last sweep: the script's invariants
hold and it says so in its exit code, its figures and its section of the results file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench import chaos, chaos_report  # noqa: E402
from bench.run import HAND_WRITTEN  # noqa: E402


def test_a_sweep_stopped_twice_and_resumed_pays_each_request_once(tmp_path, capsys):
    out, results = tmp_path / "chaos.md", tmp_path / "results.md"
    results.write_text(f"# Benchmark results\n\nfigures\n\n{HAND_WRITTEN}\n\n## Test suite\n\nkept\n", encoding="utf-8")
    code = chaos.main(["--stops", "2", "--items", "40", "--latency", "0.5", "--kinds", "SIGKILL,cancel",
                       "--workdir", str(tmp_path / "work"), "--out", str(out), "--results", str(results)])
    printed = capsys.readouterr().out
    figures = json.loads(printed.strip().splitlines()[-1])
    assert code == 0, printed[-4000:]
    assert all(figures["invariants"].values()), figures
    assert len(figures["stops"]) == 2 and figures["expected_requests"] == figures["lake_requests"] == 80
    # a SIGKILL also cuts off the answers the server had written but the sweep had not yet read (bench/chaos_kills.py)
    assert figures["calls_paid"] <= (figures["distinct_requests_paid"] + figures["in_flight_at_stops"]
                                     + figures["unread_at_kills"])
    assert (figures["lost"], figures["answered_twice"], figures["check_exit"]) == (0, 0, 0)
    assert all(s["paid_again"] <= s["in_flight"] + s["unread"] for s in figures["stops"]), figures["stops"]
    assert not any(s["kill"].get("again_taken_in") for s in figures["stops"]), figures["stops"]  # none spooled paid again
    assert figures["runs"][-1] == "completed"
    assert {s["kind"] for s in figures["stops"]} == {"SIGKILL", "cancel"}
    section = out.read_text(encoding="utf-8")
    assert section.startswith(chaos_report.TITLE) and "**NO**" not in section
    text = results.read_text(encoding="utf-8")
    assert text.index(HAND_WRITTEN) < text.index("## Test suite\n\nkept\n") < text.index(section)
