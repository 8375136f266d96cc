"""Consistency@k from canonical answers stored with the parses: complete right after parsing and
scoring (no statistics step), symbolic for math, and readable on lakes written before the column.

Responses go through the real parse and score stages into a real lake; every expected count is
worked out by hand from the designed answers.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from lake_fixtures import RUN, LakeBuilder
from tasks.analysis import stats
from tasks.lake.writes import write_table
from tasks.scoring.score import parse_responses, score_trials
from tasks.scoring.selection import Selection

GEO = ["euclid", "coord", "vector"]

# family: (gold, answers on euclid, coord, vector)
FAMILIES = {
    "A": ("3/2", ["Answer: 3/2", "Answer: 1.5", "Answer: \\frac{6}{4}"]),  # all correct: consistent
    "B": ("3/2", ["Answer: 1.4", "Answer: 7/5", "Answer: 1.40"]),  # all wrong, one value: consistent
    "C": ("3/2", ["Answer: sqrt(20)", "Answer: 2√5", "Answer: 4.47"]),  # wrong; 4.47 is a rounding of 2√5, not it
    "D": ("54.74", ["Answer: 54.7356", "Answer: 54.74", "Answer: 54.74°"]),  # decimal gold, all correct: consistent
    "E": ("54.74", ["Answer: 54.7356", "Answer: 54.73", "Answer: 54.7356"]),  # one unit off: not consistent
    "F": ("54.74", ["Answer: 54.74", "Answer: 54.74", "I cannot tell."]),  # unparsable: not consistent
}


def parsed_and_scored(tmp_path) -> LakeBuilder:
    lake = LakeBuilder(tmp_path)
    for family, (gold, texts) in FAMILIES.items():
        for variant, text in zip(GEO, texts):
            item = lake.item(family, variant, suite="geometry", task="ratio", category="ratio", gold=gold,
                             answer_type="math")
            lake.answered(item, "m1", text)
    lake.flush()
    selection = Selection(run_ids=(RUN,))
    parse_responses(lake.lake, selection)
    score_trials(lake.lake, selection, RUN)
    return lake


def test_consistency_is_complete_right_after_scoring(tmp_path):
    lake = parsed_and_scored(tmp_path)
    [row] = lake.query("SELECT * FROM invariance")
    assert "n_consistency_pending" not in row
    # invariant: A, D; consistent: A, B, D
    assert (row["n_complete"], row["n_invariant"], row["n_consistent"]) == (6, 2, 3)
    assert row["invariance_at_k"] == pytest.approx(2 / 6) and row["consistency_at_k"] == pytest.approx(3 / 6)
    flags = {r["family_id"]: r["consistent"] for r in lake.query("SELECT family_id, consistent FROM family_units_over()")}
    assert flags == {"A": True, "B": True, "C": False, "D": True, "E": False, "F": False}
    keys = {(r["family_id"], r["variant"]): r["answer_key"] for r in lake.query(
        "SELECT family_id, variant, answer_key FROM family_trials WHERE family_id IN ('B', 'C', 'F')")}
    assert [keys[("B", v)] for v in GEO] == ["1.4", "1.4", "1.4"]
    assert [keys[("C", v)] for v in GEO] == ["2*sqrt(5)", "2*sqrt(5)", "4.47"]
    assert keys[("F", "vector")] is None


def test_canonical_answer_is_stored_with_each_parse(tmp_path):
    lake = parsed_and_scored(tmp_path)
    stored = {(r["value"], r["canonical"]) for r in lake.query("SELECT value, canonical FROM latest_parses")}
    assert {("3/2", "1.5"), ("1.5", "1.5"), ("1.40", "1.4"), ("7/5", "1.4"), ("2*sqrt(5)", "2*sqrt(5)"),
            ("54.7356", "54.7356"), (None, None)} <= stored


def test_bootstrap_resamples_the_stored_consistency(tmp_path):
    lake = parsed_and_scored(tmp_path)
    summary = stats.compute_stats(lake.lake, resamples=50, seed=0)
    assert "equivalence_rows" not in summary
    [boot] = lake.query("SELECT estimate FROM computed_bootstrap WHERE metric = 'consistency' AND task = 'ratio'")
    assert boot["estimate"] == pytest.approx(3 / 6)


def test_parse_files_without_the_canonical_column_stay_readable(tmp_path):
    """Parses written before the column (imported from an old lake, or committed by an older
    release) have no canonical answer; integer values are their own keys."""
    lake = LakeBuilder(tmp_path)
    old_parses = []
    for family, answers in {"P": ["7", "7"], "Q": ["7", "8"]}.items():
        for variant, value in zip(["end", "begin"], answers):
            item = lake.item(family, variant, task="identity", gold="5")
            trial_id, request_id, response_id = lake.answered(item, "m1", f"Answer: {value}")
            old_parses.append({"response_id": response_id, "request_id": request_id, "answer_type": "integer",
                               "parser_version": "integer/1", "status": "ok", "value": value, "extracted": value,
                               "created_at": lake.tick()})
            lake.score(trial_id, item, "m1", "wrong", value)
            lake.rows["scores"][-1]["response_ids"] = json.dumps([response_id])
    lake.flush()
    old = pa.Table.from_pylist(old_parses)
    assert "canonical" not in old.column_names
    write_table(lake.lake, "parses", old)  # the missing column is stored as nulls
    assert lake.query("SELECT count(*) AS n FROM all_parses WHERE canonical IS NULL") == [{"n": 4}]
    [row] = lake.query("SELECT n_complete, n_consistent FROM invariance")
    assert (row["n_complete"], row["n_consistent"]) == (2, 1)  # P (7, 7) consistent, Q (7, 8) not
