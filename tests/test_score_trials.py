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
import threading
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


def expected_parses(lake: LakeBuilder, where: str = "TRUE", params: list | None = None) -> set[tuple]:
    """The parses of the ``ok`` responses of the ``run_requests`` rows (alias rr) that ``where``
    selects, read through the whole-lake views items and ledger."""
    rows = lake.query(f"""
        SELECT DISTINCT l.response_id, l.text, rr.step, i.answer_type, i.solver, i.steps
        FROM run_requests rr JOIN items i USING (item_id) JOIN ledger l ON l.request_id = rr.request_id
        WHERE l.status = 'ok' AND {where}""", params)
    out = set()
    for r in rows:
        answer_type = step_answer_type(r, r["step"])
        parsed = parsing.parse(answer_type, r["text"])
        out.add((r["response_id"], answer_type, parsing.parser_version(answer_type), parsed.status, parsed.value,
                 parsed.extracted, parsing.answer_key(answer_type, parsed.value)))
    return out


def expected_scores(lake: LakeBuilder, where: str = "TRUE", params: list | None = None) -> set[tuple]:
    """The scores of the trials of the ``run_requests`` rows (alias rr) that ``where`` selects,
    read through the whole-lake views items, ledger and latest_parses."""
    rows = lake.query(f"""
        WITH req AS (
            SELECT * FROM run_requests rr WHERE {where}
            QUALIFY row_number() OVER (PARTITION BY trial_id, step_index ORDER BY created_at DESC) = 1)
        SELECT req.trial_id, req.item_id, req.model, req.sample_idx, req.step_index, i.gold, i.answer_type,
               i.solver, i.steps, l.status AS response_status, l.response_id, p.status AS parse_status, p.value
        FROM req JOIN items i USING (item_id)
        LEFT JOIN ledger l ON l.request_id = req.request_id LEFT JOIN latest_parses p ON p.response_id = l.response_id
        ORDER BY req.trial_id, req.step_index""", params)
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


def written(lake: LakeBuilder, table: str, after) -> list[dict]:
    return lake.query(f"SELECT * FROM all_{table} WHERE created_at > ?", [after])


def test_a_chunk_reads_only_its_rows_and_gets_the_whole_lake_views_rows(tmp_path):
    """A sweep's chunk (a run, a model, some items) reads only its own rows of the lake (table
    macros items_of, ledger_of, latest_parses_of; its parses' and scores' anti-joins): it must
    write exactly what the whole-lake views give for it, with around it rows of other runs, models
    and items, an item written twice, requests answered error then ok then error and ok twice,
    parses of an older parser version and scores that already hold or no longer hold."""
    lake = LakeBuilder(tmp_path)
    mine = [lake.item(f"A{k}", gold="5") for k in range(4)]
    other_item = lake.item("B0", gold="5")
    for item in [*mine, other_item]:
        lake.answered(item, "m1", "Answer: 5", run_id="run-old")  # the same trials, an earlier run
        lake.answered(item, "m2", "Answer: 6", run_id="run-b")  # another model of the chunk's run
    # the chunk's run recorded the same requests again (answered from the ledger): the old responses count
    for request in [r for r in lake.rows["requests"] if r["run_id"] == "run-old" and r["item_id"] != other_item]:
        lake.rows["requests"].append(dict(request, run_id="run-b", created_at=lake.tick()))
    lake.answered(other_item, "m1", "Answer: 5", run_id="run-b", sample_idx=1)  # an item outside the chunk
    # mine[1] written again by a later run with another gold: the first row of an item counts
    lake.rows["items"].append(dict(next(r for r in lake.rows["items"] if r["item_id"] == mine[1]),
                                   gold="6", created_at=lake.tick()))
    responses = {(r["request_id"], r["status"]): r for r in lake.rows["responses"]}
    asked = {r["item_id"]: r["request_id"] for r in lake.rows["requests"] if r["run_id"] == "run-old"}
    # mine[2]: an error before its ok and one after; mine[3]: two oks, the first written counts
    first = responses[(asked[mine[2]], "ok")]
    lake.rows["responses"].remove(first)
    for status, text in (("error", None), ("ok", "Answer: 7"), ("error", None)):
        lake.rows["responses"].append(dict(first, response_id=f"r2-{lake.tick()}", status=status, text=text,
                                           created_at=lake.tick()))
    lake.rows["responses"].append(dict(responses[(asked[mine[3]], "ok")], response_id="r3-later", text="Answer: 9",
                                       created_at=lake.tick()))
    # an older parser version's parse of a chunk response, and one of a response outside it
    lake.parse(responses[(asked[mine[0]], "ok")]["response_id"], asked[mine[0]], "4")
    lake.parse(responses[(asked[other_item], "ok")]["response_id"], asked[other_item], "4")
    lake.flush()

    chunk = Selection(run_ids=("run-b",), models=("m1",), item_ids=tuple(mine))
    where = ("rr.run_id = 'run-b' AND rr.model = 'm1' AND rr.item_id IN (SELECT unnest(?::VARCHAR[]))", [mine])
    before = lake.query("SELECT max(created_at) AS t FROM all_parses")[0]["t"]
    assert parse_responses(lake.lake, chunk).written == 4
    got = {(r["response_id"], r["answer_type"], r["parser_version"], r["status"], r["value"], r["extracted"],
            r["canonical"]) for r in written(lake, "parses", before)}
    assert got == expected_parses(lake, *where) and len(got) == 4
    assert {g[4] for g in got} == {"5", "7"}  # mine[2]'s first ok, mine[3]'s first ok ("5", not the later "9")

    # a score that still holds (this scorer version, the same responses) is not written again;
    # one over other responses is
    trial = {r["item_id"]: r["trial_id"] for r in lake.query("SELECT item_id, trial_id FROM run_requests WHERE model = 'm1'")}
    ledger = {r["request_id"]: r["response_id"] for r in lake.query("SELECT * FROM ledger")}
    for item, ids in ((mine[0], [ledger[asked[mine[0]]]]), (mine[1], ["another-response"])):
        lake.score(trial[item], item, "m1", "correct", "5", run_id="run-b", scorer_version=scorer_version("integer"))
        lake.rows["scores"][-1]["response_ids"] = json.dumps(ids)
    lake.flush()
    before = lake.query("SELECT max(created_at) AS t FROM all_scores")[0]["t"]
    assert score_trials(lake.lake, chunk, "run-b").written == 3
    got = {(r["trial_id"], r["item_id"], r["model"], r["sample_idx"], r["scorer_version"], r["response_ids"],
            r["status"], r["correct"], r["lenient_correct"], r["predicted"]) for r in written(lake, "scores", before)}
    expected = {s for s in expected_scores(lake, *where) if s[0] != trial[mine[0]]}
    assert got == expected and len(got) == 3
    assert {(g[1], g[6]) for g in got} == {(mine[1], "correct"), (mine[2], "wrong"), (mine[3], "correct")}

    # the chunk's whole run (a known sweep's selection: requests picked by run alone) gives the
    # views' rows of the rest of the run: its other model and the item outside the chunk
    run = Selection(run_ids=("run-b",))
    before = lake.query("SELECT max(created_at) AS t FROM all_scores")[0]["t"]
    assert parse_responses(lake.lake, run).written == 6
    score_trials(lake.lake, run, "run-b")
    got = {(r["trial_id"], r["item_id"], r["model"], r["sample_idx"], r["scorer_version"], r["response_ids"],
            r["status"], r["correct"], r["lenient_correct"], r["predicted"]) for r in written(lake, "scores", before)}
    assert got == expected_scores(lake, "rr.run_id = 'run-b'") - expected_scores(lake, *where) and len(got) == 6


def finished_rows(lake: LakeBuilder) -> tuple[set[tuple], set[tuple]]:
    """Every parse and score row of the lake, without its time."""
    return tuple({tuple(v for k, v in sorted(r.items()) if k != "created_at")
                  for r in lake.query(f"SELECT * FROM all_{table}")} for table in ("parses", "scores"))


def test_a_finisher_finishes_a_model_s_chunks_together_with_the_rows_of_one_chunk_at_a_time(tmp_path):
    """The sweep's Finisher (flows.stages) parses and scores a model's waiting chunks in one
    parse and one score (each opens every data file of the lake, whatever its size): the rows
    written are those of each chunk finished alone; a chunk waits no longer than its ``wait``,
    a batch holds about ``items`` items, and closing finishes what waits."""
    from flows import stages

    alone, together = mixed_lake(tmp_path / "alone"), mixed_lake(tmp_path / "together")
    item_ids = sorted({r["item_id"] for r in alone.query("SELECT item_id FROM run_requests")})
    chunks = [[{"item_id": i} for i in item_ids[k:k + 3]] for k in range(0, len(item_ids), 3)]
    assert len(chunks) >= 4
    done: list[str] = []
    for builder, wait, items in ((alone, 0.0, 1), (together, 3600.0, 10**6)):
        finisher = stages.Finisher(builder.lake, RUN, chunks, done.append, wait=wait, items=items, ratio=0)
        for model in ("m1", "m2"):
            for index in range(len(chunks)):
                finisher.chunk_done(model, index)
        finisher.close()
    assert sorted(done) == sorted(["m1", "m2"] * len(chunks) * 2)
    assert finished_rows(together) == finished_rows(alone)
    assert all(len(rows) > 10 for rows in finished_rows(alone))


def test_a_finisher_s_batches_by_size_by_time_and_at_close(monkeypatch):
    """Chunks of one item: ``items`` 2 makes batches of two, the last one at close; a chunk
    finishes without close once its wait is over; the wait follows what the last batch took."""
    from flows import stages

    finished: list[tuple[str, list[str], str]] = []
    came = threading.Event()

    def finish(lake, rows, model, run_id, index):
        finished.append((model, [r["item_id"] for r in rows], index))
        came.set()

    monkeypatch.setattr(stages, "finish_unit", finish)
    chunks = [[{"item_id": f"i{k}"}] for k in range(5)]
    by_size = stages.Finisher(None, RUN, chunks, lambda model: None, wait=3600.0, items=2, ratio=0)
    for index in range(5):
        by_size.chunk_done("m", index)
    by_size.close()
    assert finished == [("m", ["i0", "i1"], "0-1"), ("m", ["i2", "i3"], "2-3"), ("m", ["i4"], "4")]

    finished.clear()
    came.clear()
    by_time = stages.Finisher(None, RUN, chunks, lambda model: None, wait=0.0, items=10, ratio=0)
    by_time.chunk_done("m", 2)
    assert came.wait(60)  # finished before close: its wait is over
    assert finished == [("m", ["i2"], "2")]
    by_time.close()

    # chunks finish in any order: a task run's name says which it holds
    assert [stages.chunk_label(c) for c in ([4], [1, 0], [9, 3, 4], [7, 5, 6, 2])] == ["4", "0-1", "3-4,9", "2,5-7"]

    # by default the first chunk waits for nothing, the next ones ten times what the last batch took
    adaptive = stages.Finisher(None, RUN, chunks, lambda model: None, wait=30.0)
    assert adaptive.pause == 0.0
    adaptive.took(0.5)
    assert adaptive.pause == 5.0
    adaptive.took(10.0)
    assert adaptive.pause == 30.0
    adaptive.close()
