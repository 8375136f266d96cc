"""The rescore flow (real Prefect, real lake): a changed parser flips exactly the affected trials,
and no model request is ever made."""

from __future__ import annotations

import re

import litellm
import pytest
from typer.testing import CliRunner

import tasks.models.embedded_worker
from conftest import write_config
from flows.cli import app
from flows.rescore import rescore
from lake_fixtures import LakeBuilder
from tasks.scoring.parse import Parsed, numeric

# (family, gold, response text): the current parser takes the Answer: line; the patched one below
# takes the first integer of the text, which changes the answer of B (6 → 4) and D (3 → 8) only.
RESPONSES = [
    ("A", "5", "Answer: 5"),
    ("B", "6", "I first thought 4, but no.\nAnswer: 6"),
    ("C", "8", "Answer: 9"),
    ("D", "8", "Maybe 8, or rather\nAnswer: 3"),
]


def first_integer(text: str) -> Parsed:
    match = re.search(r"-?\d+", text)
    return Parsed.ok(match.group(0)) if match else Parsed.unparsable()


@pytest.fixture
def no_model_calls(monkeypatch):
    """Every way out to a model raises, so a test fails on any outgoing request."""
    def refuse(*args, **kwargs):
        raise AssertionError("a model was called during re-scoring")

    async def refuse_async(*args, **kwargs):
        raise AssertionError("a model was called during re-scoring")

    monkeypatch.setattr(litellm, "completion", refuse)
    monkeypatch.setattr(litellm, "acompletion", refuse_async)
    monkeypatch.setattr(tasks.models.embedded_worker, "generate", refuse)


def stored_responses(tmp_path, models=("m1",)) -> tuple[LakeBuilder, dict[tuple[str, str], str], str]:
    """A lake with items, requests and responses only (no parses, no scores); returns the trial ids."""
    lake = LakeBuilder(tmp_path / "wh")
    trials = {}
    for model in models:
        for family, gold, text in RESPONSES:
            item = lake.item(family, gold=gold)
            trials[(model, family)] = lake.answered(item, model, text)[0]
    lake.flush()
    config = write_config(tmp_path / "invarbench.toml", {"warehouse": {"path": str(tmp_path / "wh")},
                                                         "sweep": {"models": ["local/smollm2"]}})
    return lake, trials, str(config)


def count(lake: LakeBuilder, table: str) -> int:
    return lake.query(f"SELECT count(*) AS n FROM {table}")[0]["n"]


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_rescore_with_a_changed_parser_flips_exactly_the_affected_trials(tmp_path, monkeypatch, no_model_calls):
    lake, trials, config = stored_responses(tmp_path)
    first = rescore(config)
    assert (first["parses_written"], first["scores_written"], first["changed"]) == (4, 4, [])
    statuses = {r["trial_id"]: r["status"] for r in lake.query("SELECT trial_id, status FROM latest_scores")}
    assert [statuses[trials[("m1", f)]] for f in "ABCD"] == ["correct", "correct", "wrong", "wrong"]

    monkeypatch.setattr(numeric, "VERSION", "test-2")
    monkeypatch.setattr(numeric, "parse", first_integer)
    second = rescore(config)
    assert (second["parses_written"], second["scores_written"]) == (4, 4)
    changes = lake.query("SELECT trial_id, previous_status, status, flipped, scorer_version FROM score_changes")
    assert sorted((c["trial_id"], c["previous_status"], c["status"], c["flipped"]) for c in changes) == sorted([
        (trials[("m1", "B")], "correct", "wrong", True),
        (trials[("m1", "D")], "wrong", "correct", True),
    ])
    assert {c["scorer_version"] for c in changes} == {"score/2+integer/test-2"}
    assert second["flipped"] == 2 and len(second["changed"]) == 2
    assert count(lake, "responses") == 4 and count(lake, "all_scores") == 8

    third = rescore(config)  # nothing new to do: same versions over the same responses
    assert (third["parses_written"], third["scores_written"]) == (0, 0)


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_rescore_makes_no_model_call_and_writes_no_response(tmp_path, no_model_calls):
    lake, _, config = stored_responses(tmp_path)
    before = count(lake, "responses"), count(lake, "requests")
    summary = rescore(config)
    assert summary["scores_written"] == 4
    assert (count(lake, "responses"), count(lake, "requests")) == before
    [run] = lake.query("SELECT kind, status, n_sent, message FROM runs WHERE run_id = ?", [summary["run_id"]])
    assert (run["kind"], run["status"], run["n_sent"]) == ("rescore", "completed", 0)


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_rescore_selection_by_model_through_the_cli(tmp_path, no_model_calls):
    lake, trials, config = stored_responses(tmp_path, models=("m1", "m2"))
    result = CliRunner().invoke(app, ["rescore", "--model", "m2", "--config", config])
    assert result.exit_code == 0, result.output
    scored = {r["trial_id"] for r in lake.query("SELECT trial_id FROM latest_scores")}
    assert scored == {trials[("m2", f)] for f in "ABCD"}
    assert "re-scored" in result.output


def test_rescore_rejects_a_bad_date(tmp_path):
    result = CliRunner().invoke(app, ["rescore", "--since", "yesterday"])
    assert result.exit_code == 2


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_rescore_moves_math_runs_from_rule_1_to_rule_2_without_a_call(tmp_path, no_model_calls):
    """Runs scored by math parser 1 (a decimal gold compared by equality) move to rule 2 on rescore."""
    lake = LakeBuilder(tmp_path / "wh")
    # family: (gold, reply, value parser 1 stored, status parser 1 gave, status under rule 2)
    stored = {
        "G1": ("54.74", "Answer: 54.7356", "54.7356", "wrong", "correct"),
        "G2": ("17.32", "Answer: 17.3205", "17.3205", "wrong", "correct"),
        "G3": ("3.162", "Answer: 3.16", "3.16", "wrong", "correct"),
        "G4": ("54.74", "Answer: 54.73", "54.73", "wrong", "wrong"),
        "G5": ("3.162", "Answer: sqrt(10)", "sqrt(10)", "correct", "correct"),
    }
    trials = {}
    for family, (gold, text, value, status, _) in stored.items():
        item = lake.item(family, gold=gold, suite="geometry", task="length", category="length", answer_type="math")
        trial_id, request_id, response_id = lake.answered(item, "m1", text)
        lake.parse(response_id, request_id, value, "math")
        lake.score(trial_id, item, "m1", status, value, answer_type="math")
        trials[trial_id] = family
    lake.flush()
    config = write_config(tmp_path / "invarbench.toml", {"warehouse": {"path": str(tmp_path / "wh")},
                                                         "sweep": {"models": ["local/smollm2"]}})
    summary = rescore(str(config))
    assert (summary["parses_written"], summary["scores_written"]) == (5, 5)
    now = {trials[r["trial_id"]]: (r["status"], r["scorer_version"]) for r in lake.query("SELECT * FROM latest_scores")}
    assert now == {f: (expected, "score/2+math/4") for f, (*_, expected) in stored.items()}
    flips = {trials[c["trial_id"]]: (c["previous_scorer_version"], c["previous_status"], c["status"])
             for c in lake.query("SELECT * FROM score_changes WHERE flipped")}
    assert flips == {f: ("score/1+math/1", "wrong", "correct") for f in ("G1", "G2", "G3")}
    assert {r["parser_version"] for r in lake.query("SELECT parser_version FROM latest_parses")} == {"math/4"}
    assert count(lake, "responses") == 5
