"""The parse and score stages work in DuckDB and parse or judge each distinct input once; this
checks them against the plain definition: every stored response parsed on its own, and
``judge`` called on every trial's own steps, read row by row.

The lake mixes what the set-based path could get wrong: answers repeated across trials (one
parse, one verdict, many rows), chains answered in full, stopped on an unparsable step or on an
error, a trial asked twice (the latest request counts), a request without a response, a step
whose answer type differs from its item's, lenient text scores and errors.
"""

from __future__ import annotations

import json
from collections import defaultdict

from lake_fixtures import RUN, LakeBuilder
from tasks.records import step_answer_type
from tasks.scoring import parse as parsing
from tasks.scoring.score import judge, parse_responses, score_trials, scorer_version
from tasks.scoring.selection import Selection

CHAIN = [{"name": "first", "template": "t", "answer_type": "integer"},
         {"name": "second", "template": "t", "answer_type": "text"}]


def mixed_lake(tmp_path) -> LakeBuilder:
    lake = LakeBuilder(tmp_path)
    for k, text in enumerate(["Answer: 5", "Answer: 5", "Answer: 6", "five", "no idea", "Answer: 5"]):
        item = lake.item(f"I{k % 3}", gold=str(5 + k % 2))
        for model in ("m1", "m2"):
            lake.answered(item, model, text, sample_idx=k)
    lake.answered(lake.item("E"), "m1", None, status="error")
    for k, text in enumerate(["Output: a b c", "Output: c b a", "Output: A, B, C", "nothing\nhere", "Output: a b c"]):
        lake.answered(lake.item(f"T{k}", suite="lissard", task="repeat", gold="a b c", answer_type="text"), "m1", text)
    for k, (first, second, first_status) in enumerate([("Answer: 2", "Output: x", "ok"), ("no number", None, "ok"),
                                                       (None, None, "error"), ("Answer: 2", "Output: y", "ok")]):
        item = lake.item(f"C{k}", suite="chains", task="two", gold="x", answer_type="text", steps=CHAIN)
        trial_id, _, _ = lake.answered(item, "m1", first, step="first", step_index=0, status=first_status)
        if second is not None:
            lake.answered(item, "m1", second, step="second", step_index=1, trial_id=trial_id)
    again = lake.item("R")
    lake.answered(again, "m1", "Answer: 4")
    # the same trial and step asked again later (another request id): its answer counts
    lake.rows["requests"].append(dict(lake.rows["requests"][-1], request_id="again", created_at=lake.tick()))
    lake.rows["responses"].append(dict(lake.rows["responses"][-1], response_id="again-response", request_id="again",
                                       text="Answer: 5", created_at=lake.tick()))
    lake.answered(lake.item("N"), "m1", "Answer: 5")
    lake.rows["responses"].pop()  # a request whose response never came
    return lake.flush()


def expected_parses(lake: LakeBuilder) -> set[tuple]:
    rows = lake.query("""
        SELECT DISTINCT l.response_id, l.text, rr.step, i.answer_type, i.solver, i.steps
        FROM run_requests rr JOIN items i USING (item_id) JOIN ledger l ON l.request_id = rr.request_id
        WHERE l.status = 'ok'""")
    out = set()
    for r in rows:
        answer_type = step_answer_type(r, r["step"])
        parsed = parsing.parse(answer_type, r["text"])
        out.add((r["response_id"], answer_type, parsing.parser_version(answer_type), parsed.status, parsed.value,
                 parsed.extracted, parsing.answer_key(answer_type, parsed.value)))
    return out


def expected_scores(lake: LakeBuilder) -> set[tuple]:
    rows = lake.query("""
        WITH req AS (
            SELECT * FROM run_requests
            QUALIFY row_number() OVER (PARTITION BY trial_id, step_index ORDER BY created_at DESC) = 1)
        SELECT req.trial_id, req.item_id, req.model, req.sample_idx, req.step_index, i.gold, i.answer_type,
               i.solver, i.steps, l.status AS response_status, l.response_id, p.status AS parse_status, p.value
        FROM req JOIN items i USING (item_id)
        LEFT JOIN ledger l ON l.request_id = req.request_id LEFT JOIN latest_parses p ON p.response_id = l.response_id
        ORDER BY req.trial_id, req.step_index""")
    trials = defaultdict(list)
    for r in rows:
        trials[r["trial_id"]].append(r)
    out = set()
    for trial_id, steps in trials.items():
        first = steps[0]
        n_steps = len(json.loads(first["steps"])) if first["solver"] == "chain" else 1
        verdict = judge(first["answer_type"], first["gold"], n_steps, steps)
        out.add((trial_id, first["item_id"], first["model"], first["sample_idx"], scorer_version(first["answer_type"]),
                 json.dumps([s["response_id"] for s in steps]), verdict["status"], verdict["correct"],
                 verdict["lenient_correct"], verdict["predicted"]))
    return out


def test_set_based_parse_and_score_agree_with_the_row_by_row_definition(tmp_path):
    lake = mixed_lake(tmp_path)
    parsed = parse_responses(lake.lake, Selection())
    assert (parsed.examined, parsed.written) == (24, 24)
    stored = {(r["response_id"], r["answer_type"], r["parser_version"], r["status"], r["value"], r["extracted"],
               r["canonical"]) for r in lake.query("SELECT * FROM latest_parses")}
    assert stored == expected_parses(lake)
    assert {s[3] for s in stored} == {"ok", "unparsable"}

    scored = score_trials(lake.lake, Selection(), RUN)
    assert (scored.examined, scored.written) == (24, 24)
    stored = {(r["trial_id"], r["item_id"], r["model"], r["sample_idx"], r["scorer_version"], r["response_ids"],
               r["status"], r["correct"], r["lenient_correct"], r["predicted"])
              for r in lake.query("SELECT * FROM latest_scores")}
    assert stored == expected_scores(lake)
    assert {s[6] for s in stored} == {"correct", "wrong", "unparsable", "error"}
    assert any(s[8] is True and s[7] is False for s in stored)  # a lenient-only match
    assert any(s[5] == "[null]" for s in stored)  # the request without a response

    # nothing new: the same versions over the same responses are not written again
    again = parse_responses(lake.lake, Selection()), score_trials(lake.lake, Selection(), RUN)
    assert [s.written for s in again] == [0, 0]
