"""bench/run.py's results file survives what a long benchmark run leaves in it.

A figure at 10,000,000 rows may fail in every run (out of memory): it has no median. The results
file must stay valid JSON (no NaN, which strict readers such as jq reject), and the next run must
read it back and render it beside its new figures, since ``--only`` keeps every section it does
not re-measure.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import Figure  # noqa: E402
from bench.run import as_dicts, load, store  # noqa: E402


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
