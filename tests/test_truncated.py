"""Responses cut at the token limit: the finish reason is stored, and one without a stated answer
is ``truncated`` (scored, never correct, counted apart), whatever number its cut-off text ends with."""

from __future__ import annotations

import pytest

from conftest import fake_model_config, write_config
from fakes import FakeProvider, FakeServer, count_ones_responder
from flows.rescore import rescore
from flows.sweep import sweep
from lake_fixtures import LakeBuilder
from tasks.import_plan import store_import
from tasks.imports import plan_import
from tasks.lake.lake import Lake
from tasks.scoring.parse import parse
from tasks.scoring.score import judge, parse_responses, score_trials
from tasks.scoring.selection import Selection

REPEATED = "Let me add them: " + "1+" * 60 + "1"  # the reply, cut mid-sum; its last number is 1

# (answer type, response, finish reason, parse status, value)
CASES = [
    ("integer", REPEATED, "length", "truncated", None),
    ("integer", REPEATED, "stop", "ok", "1"),  # a finished reply keeps the last-number rule
    ("integer", REPEATED, None, "ok", "1"),  # unknown (older rows, imports): as before
    ("integer", "1+1+1 = 3\nAnswer: 3\nLet me double-check: 1+1+", "length", "ok", "3"),  # stated, then cut
    ("integer", "The answer is 12", "length", "ok", "12"),
    ("integer", "Hmm, let me think about", "length", "truncated", None),  # nothing at all: still truncated
    ("math", "The side is sqrt(9 + 16) = 5, and the area is 1", "length", "truncated", None),
    ("math", "Answer: 2√5 ≈ 4.47 because the sides are 2, 4 and", "length", "ok", "2*sqrt(5)"),
    ("math", "so \\boxed{8} is the area, since 2·4 = 8 and", "length", "ok", "8"),
    ('math', 'Reasoning... {"numeric_answer": "3/2", "reason', "length", "ok", "3/2"),
    ("text", "a b c d e f", "length", "truncated", None),  # a lone line without the marker
    ("text", "Output: a b c", "length", "ok", "a b c"),  # a truncated reply that states its answer keeps it
    ("text", "a b c", "stop", "ok", "a b c"),
]


@pytest.mark.parametrize("answer_type, text, finish, status, value", CASES)
def test_a_cut_reply_without_a_stated_answer_is_truncated(answer_type, text, finish, status, value):
    parsed = parse(answer_type, text, finish)
    assert (parsed.status, parsed.value) == (status, value)


def test_a_truncated_final_step_scores_truncated_not_wrong():
    verdict = judge("integer", "1", 1, [{"response_status": "ok", "parse_status": "truncated", "value": None}])
    assert verdict == {"status": "truncated", "correct": None, "lenient_correct": None, "predicted": None}
    stopped = judge("integer", "1", 3, [{"response_status": "ok", "parse_status": "truncated", "value": None}])
    assert stopped["status"] == "truncated"  # a chain stopped on it is not an error


def _gold(body: dict) -> int:
    return int(count_ones_responder(body).rsplit(" ", 1)[1])


def _responder(body: dict) -> str:
    """n = 10 and 20 state the answer before the cut; the rest repeat "1+" and end on the gold."""
    value = _gold(body)
    if value % 10 == 0:
        return f"Answer: {value}\nNow let me verify: " + "1+" * 30
    return "Adding: " + "1+" * 30 + str(value)


def _finish(body: dict) -> str:
    """n = 25 finished; every other reply was cut at the token limit."""
    return "stop" if _gold(body) == 25 else "length"


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_a_sweep_stores_the_finish_reason_and_counts_truncated_trials(tmp_path):
    state = FakeProvider(responder=_responder, finish_reason=_finish)
    with FakeServer(state) as server:
        summary = sweep(str(fake_model_config(tmp_path, server.api_base)))
    assert summary["requests"] == 5
    lake = Lake(str(tmp_path / "wh" / "lake"))
    rows = lake.read("""
        SELECT i.gold, r.finish_reason, p.status AS parse_status, s.status
        FROM responses r JOIN requests q USING (request_id) JOIN items i USING (item_id)
        JOIN latest_parses p USING (response_id) JOIN latest_scores s ON s.trial_id = q.trial_id
        ORDER BY CAST(i.gold AS INTEGER)""")
    assert [(r["gold"], r["finish_reason"], r["parse_status"], r["status"]) for r in rows] == [
        ("5", "length", "truncated", "truncated"),  # ends on its gold, but was cut before an answer
        ("10", "length", "ok", "correct"),  # cut after its Answer: line
        ("15", "length", "truncated", "truncated"),
        ("20", "length", "ok", "correct"),
        ("25", "stop", "ok", "correct"),  # finished: the last number is its answer, as before
    ]
    counts = lake.read("""SELECT sum(n_scored) AS n_scored, sum(n_correct) AS n_correct,
                                  sum(n_unparsable) AS n_unparsable, sum(n_truncated) AS n_truncated
                           FROM accuracy_by_bin""")
    assert counts == [{"n_scored": 5, "n_correct": 3, "n_unparsable": 0, "n_truncated": 2}]
    outcomes = lake.read("SELECT n_truncated, n_scored FROM outcomes_by_task")
    assert outcomes == [{"n_truncated": 2, "n_scored": 5}]


def test_an_old_lake_without_the_column_reads_it_as_unknown(tmp_path):
    """Responses written before finish_reason existed (imported from an old lake, or committed by
    an older release) hold no value for it."""
    builder = LakeBuilder(tmp_path / "wh")
    item = builder.item("A", gold="1")
    trial_id, _, _ = builder.answered(item, "m1", REPEATED)
    for row in builder.rows["responses"]:
        row.pop("finish_reason", None)
    builder.flush()
    lake = builder.lake
    assert lake.read("SELECT count(*) AS n FROM raw_responses WHERE finish_reason IS NULL") == [{"n": 1}]
    assert lake.read("SELECT finish_reason FROM ledger") == [{"finish_reason": None}]
    selection = Selection(run_ids=())
    parse_responses(lake, selection)
    score_trials(lake, selection, "rescore")
    # unknown is not a cut: the old rule stands, and the trial is scored
    assert lake.read("SELECT status, predicted FROM latest_scores WHERE trial_id = ?", [trial_id]) == [
        {"status": "correct", "predicted": "1"}]


@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_rescore_turns_old_correct_scores_of_cut_replies_into_truncated(tmp_path):
    """Scored by the old versions (the last number of a cut reply was its answer); rescore re-parses."""
    builder = LakeBuilder(tmp_path / "wh")
    item = builder.item("A", gold="1")
    trial_id, request_id, response_id = builder.answered(item, "m1", REPEATED)
    builder.rows["responses"][-1]["finish_reason"] = "length"
    builder.parse(response_id, request_id, "1")
    builder.score(trial_id, item, "m1", "correct", "1")
    builder.flush()
    config = write_config(tmp_path / "invarbench.toml", {"warehouse": {"path": str(tmp_path / "wh")},
                                                         "sweep": {"models": ["local/smollm2"]}})
    summary = rescore(str(config))
    assert (summary["parses_written"], summary["scores_written"]) == (1, 1)
    changes = builder.query("SELECT previous_status, status, scorer_version FROM score_changes")
    assert changes == [{"previous_status": "correct", "status": "truncated", "scorer_version": "score/2+integer/2"}]


def test_an_import_carries_the_finish_reason_of_its_file(tmp_path):
    source = tmp_path / "results with spaces.csv"
    source.write_text("prompt,target,prediction,finish_reason\n"
                      f"What is 1?,1,{REPEATED},length\n"
                      "What is 2?,2,Answer: 2,length\n"
                      f"What is 3?,1,{REPEATED},\n", encoding="utf-8")
    lake = Lake(str(tmp_path / "wh" / "lake"))
    store_import(plan_import(source, "other-lab"), lake, "import-run")
    rows = lake.read("""SELECT i.gold, r.finish_reason, s.status FROM responses r JOIN requests q USING (request_id)
                         JOIN items i USING (item_id) JOIN latest_scores s ON s.trial_id = q.trial_id ORDER BY i.prompt""")
    assert [(r["gold"], r["finish_reason"], r["status"]) for r in rows] == [
        ("1", "length", "truncated"), ("2", "length", "correct"), ("1", None, "correct")]


@pytest.mark.slow  # the real embedded model
def test_the_embedded_worker_returns_llama_cpps_finish_reason():
    from tasks.models.embedded_worker import generate

    messages = [{"role": "user", "content": "Count from one to one hundred, in words, one per line."}]
    *_, cut = generate("smollm2", messages, {"max_tokens": 3})
    *_, finished = generate("smollm2", [{"role": "user", "content": "Say OK."}], {"max_tokens": 200})
    assert cut == "length"
    assert finished == "stop"
