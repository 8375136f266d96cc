"""bench/run.py's results file survives what a long benchmark run leaves in it.

A figure at 10,000,000 rows may fail in every run (out of memory): it has no median. The results
file must stay valid JSON (no NaN, which strict readers such as jq reject), and the next run must
read it back and render it beside its new figures, since ``--only`` keeps every section it does
not re-measure.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.common import Figure, Journal, code_version  # noqa: E402
from bench.run import HAND_WRITTEN, as_dicts, bounds, load, merge_section, render, store  # noqa: E402


def _strict_json(text: str) -> dict:
    def refuse(token: str) -> None:
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def test_a_figure_without_runs_round_trips_as_valid_json(tmp_path):
    out = tmp_path / "results.md"
    failed = Figure(5, "10000000 rows: mcnemar_pairs", "s", [], target="", note="failed: OutOfMemoryException")
    measured = Figure(5, "1000000 rows: invariance", "s", [5.0, 4.0, 6.0], target="< 1", bound=("<", 1.0))
    meta = {"date": "2026-12-01 21:00 UTC", "commit": "abc", "load": 0.2, "minutes": 3.0, "command": "x"}
    header = {"command": "python bench/run.py --only 5", "scale": "full (1 of the issue's sizes)", "machine": "m"}
    store(out, {"figures": as_dicts([failed, measured]), "failures": {}, "sections": {5: meta}, "hot_paths": []}, header)

    stored = _strict_json(out.with_suffix(".json").read_text(encoding="utf-8"))
    by_name = {f["name"]: f for f in stored["figures"]}
    assert by_name[failed.name]["median"] is None and by_name[failed.name]["met"] is None
    assert by_name[measured.name]["median"] == 5.0 and by_name[measured.name]["met"] is False

    # The next run reads the file back and renders it again, with a figure of its own.
    record = load(out.with_suffix(".json"), "full")
    record["figures"] += as_dicts([Figure(7, "invarbench --help", "s", [0.5, 0.6, 0.55], target="< 1.5",
                                          bound=("<", 1.5))])
    store(out, record, header)
    text = out.read_text(encoding="utf-8")
    assert "| 10000000 rows: mcnemar_pairs | – | s |" in text
    assert "failed: OutOfMemoryException" in text
    assert "| 1000000 rows: invariance | 5 | s | 5, 4, 6 | < 1 | **not met** |" in text
    assert "| invarbench --help | 0.55 | s |" in text
    _strict_json(out.with_suffix(".json").read_text(encoding="utf-8"))


def test_the_hand_written_end_of_the_results_survives_a_new_run(tmp_path):
    """The test suite's timings are written by hand below the marker; storing figures keeps them."""
    out = tmp_path / "results.md"
    out.write_text(f"# Benchmark results\n\nold figures\n\n{HAND_WRITTEN}\n\n## Test suite\n\n| 600 s |\n",
                   encoding="utf-8")
    header = {"command": "python bench/run.py --only 7", "scale": "full", "machine": "m"}
    figure = Figure(7, "invarbench --help", "s", [0.5], target="< 1.5", bound=("<", 1.5))
    store(out, {"figures": as_dicts([figure]), "failures": {}, "sections": {}, "hot_paths": []}, header)
    text = out.read_text(encoding="utf-8")
    assert "old figures" not in text and "| invarbench --help | 0.5 | s |" in text
    assert text.endswith(f"{HAND_WRITTEN}\n\n## Test suite\n\n| 600 s |\n")
    assert text.index("invarbench --help") < text.index(HAND_WRITTEN)


def test_a_script_s_section_goes_below_the_marker_and_replaces_its_earlier_self(tmp_path):
    """Scripts outside run.py (bench/chaos.py) put their figures in the hand-written end, which
    run.py keeps; measuring again replaces their section and leaves every other one alone."""
    out = tmp_path / "results.md"
    out.write_text(f"# Benchmark results\n\nfigures\n\n{HAND_WRITTEN}\n\n## Test suite\n\n| 600 s |\n",
                   encoding="utf-8")
    merge_section(out, "## Chaos", "## Chaos\n\nfirst\n")
    merge_section(out, "## Other", "## Other\n\nkept\n")
    merge_section(out, "## Chaos", "## Chaos\n\nsecond\n")
    assert out.read_text(encoding="utf-8") == (f"# Benchmark results\n\nfigures\n\n{HAND_WRITTEN}\n\n"
                                               "## Test suite\n\n| 600 s |\n\n## Chaos\n\nsecond\n\n"
                                               "## Other\n\nkept\n")


def test_the_journal_of_a_long_figure_resumes_only_on_the_code_it_was_measured_on(tmp_path):
    """Figures 2-3 take hours: their runs are journaled so that a stopped harness goes on, but a
    run measured on other code, or on uncommitted code, is never reused."""
    path = tmp_path / "journal.json"
    first = Journal(path, "abc full")
    first.put("fig2 rep 0: sweep of 20000", {"seconds": 300.5, "items": 19980})
    assert Journal(path, "abc full").get("fig2 rep 0: sweep of 20000") == {"seconds": 300.5, "items": 19980}
    assert Journal(path, "abc small").runs == {} and Journal(path, "def full").runs == {}
    assert Journal(path, None).runs == {}
    Journal(path, None).put("fig2 rep 1: sweep of 20000", {"seconds": 1.0})  # kept in memory only
    assert "fig2 rep 1: sweep of 20000" not in Journal(path, "abc full").runs
    measured = []
    again = Journal(path, "abc full").once("fig2 rep 0: sweep of 20000", lambda: measured.append(1) or {})
    assert again == {"seconds": 300.5, "items": 19980} and measured == []  # journaled: not measured again
    assert Journal(path, "abc full").once("fig2 rep 0: bare loop", lambda: {"ms_per_call": 5.5}) == {"ms_per_call": 5.5}
    assert Journal(path, "abc full").get("fig2 rep 0: bare loop") == {"ms_per_call": 5.5}
    path.write_text('{"key": "abc full", "runs": {"fig2 rep 0', encoding="utf-8")  # killed mid-write
    assert Journal(path, "abc full").runs == {}


def test_the_code_version_changes_with_the_measured_code_only(tmp_path):
    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path,
                              check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "call.py").write_text("x = 1\n")
    (tmp_path / "README.md").write_text("one\n")
    git("add", ".")
    git("commit", "-q", "-m", "code")
    measured = git("rev-parse", "HEAD")
    assert code_version(tmp_path) == measured
    (tmp_path / "README.md").write_text("two\n")
    assert code_version(tmp_path) == measured  # documentation is not what a figure measures
    git("commit", "-q", "-am", "docs")
    assert code_version(tmp_path) == measured
    (tmp_path / "tasks" / "call.py").write_text("x = 2\n")
    assert code_version(tmp_path) is None  # uncommitted code: nothing measured on it is resumed
    git("commit", "-q", "-am", "code again")
    assert code_version(tmp_path) == git("rev-parse", "HEAD") != measured


def test_a_missed_target_is_rendered_with_what_bounds_it_from_the_profile():
    profile = ("### Figure 4\n\n**What bounds figure 4**: start-up of\nPrefect and sympy.\n\nMore text.\n\n"
               "**What bounds figure 5**: every query derives the views anew.\n")
    assert bounds(profile) == {4: "start-up of Prefect and sympy.", 5: "every query derives the views anew."}
    missed = Figure(4, "rescore of 1000000 responses", "s", [33.0, 34.0, 35.0], target="< 30", bound=("<", 30.0))
    met = Figure(7, "invarbench --help", "s", [0.5, 0.6, 0.7], target="< 1.5", bound=("<", 1.5))
    unprofiled = Figure(6, "report", "s", [29.0, 30.0, 31.0], target="< 10", bound=("<", 10.0))
    text = render(as_dicts([missed, met, unprofiled]), {}, {}, [], {"command": "x"}, bounds(profile))
    sections = {part.split("\n", 1)[0]: part for part in text.split("\n## ")[1:]}
    assert "**what bounds it** (bench/PROFILE.md): start-up of Prefect and sympy." in sections["4. Re-scoring"]
    assert "what bounds it" not in sections["7. CLI start"]
    assert "**what bounds it** (bench/PROFILE.md): not profiled yet" in sections["6. Report"]


def test_every_missed_target_of_the_committed_results_has_its_bound_in_the_profile():
    """bench/results.md must say what bounds each missed target: bench/PROFILE.md has to hold a
    'What bounds figure N' paragraph for every figure the committed results miss."""
    record = json.loads((REPO / "bench" / "results.json").read_text(encoding="utf-8"))
    missed = {f["number"] for f in record["figures"] if f["met"] is False}
    profiled = bounds((REPO / "bench" / "PROFILE.md").read_text(encoding="utf-8"))
    assert missed and missed <= set(profiled), f"no bound for figure(s) {sorted(missed - set(profiled))}"


def _running(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status  # a zombie has stopped; its reaper may be slow


def test_a_terminated_harness_stops_the_run_it_measures(tmp_path):
    # `timeout`, `kill` or a cancelled CI job send SIGTERM; the measured sweep runs in a session
    # of its own, so without the harness passing the signal on it would go on running unseen.
    pidfile = tmp_path / "child.pid"
    child = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    script = tmp_path / "harness.py"
    script.write_text("\n".join([
        "import sys",
        f"sys.path.insert(0, {str(REPO)!r})",
        "from pathlib import Path",
        "from bench.common import run, stop_on_sigterm",
        "stop_on_sigterm()",
        f"run([sys.executable, '-c', {child!r}], Path({str(tmp_path)!r}))",
    ]))
    harness = subprocess.Popen([sys.executable, str(script)])
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    pid = int(pidfile.read_text())
    harness.send_signal(signal.SIGTERM)
    assert harness.wait(timeout=30) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 10
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(pid)


def test_an_unknown_figure_is_refused_before_anything_is_written(tmp_path):
    work = tmp_path / "work dir"
    r = subprocess.run([sys.executable, str(REPO / "bench" / "run.py"), "--only", "2,12,two", "--workdir", str(work),
                        "--out", str(tmp_path / "results.md")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "--only: no figure 12, two" in r.stderr
    assert not work.exists() and not (tmp_path / "results.md").exists()
