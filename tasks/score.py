"""Parsing and scoring: derived, versioned rows computed from stored responses only.

Neither calls a model, which is what makes re-scoring free: ``parse_responses`` parses every
``ok`` response of the selection that has no parse of the current parser version yet (storing
its canonical answer, so consistency is known as soon as the parse is), and
``score_trials`` scores every trial of the selection that has no score of the current scorer
version over the same responses.

Trial-level rule (``SCORER_VERSION`` 1):
- a step without a response, or whose response is an error after retries → ``error``;
- a chain stopped because a step's answer needed by the next one was unparsable → ``unparsable``;
- the final step's parse unparsable → ``unparsable``;
- otherwise ``correct`` or ``wrong`` by the answer type's ``matches``; where the parser module
  defines ``lenient``, its result is stored as ``lenient_correct`` (a separately labelled score).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from tasks import parse as parsing
from tasks.selection import Selection
from tasks.store import now_utc, query, reader, write_rows

SCORER_VERSION = "1"


def scorer_version(answer_type: str) -> str:
    """The version stamped on score rows: the trial rule's and the answer type's parser version."""
    return f"score/{SCORER_VERSION}+{parsing.parser_version(answer_type)}"


@dataclass
class StageStats:
    """Rows a derived stage examined and wrote."""

    examined: int = 0
    written: int = 0


def parse_responses(lake: str, selection: Selection) -> StageStats:
    """Parse the selection's ``ok`` responses that lack a parse of the current parser version."""
    where, params = selection.where()
    with reader(lake) as con:
        rows = query(
            con,
            f"""
            SELECT DISTINCT l.response_id, l.request_id, l.text, rr.step, i.answer_type, i.steps
            FROM run_requests rr
            JOIN items i ON i.item_id = rr.item_id
            JOIN ledger l ON l.request_id = rr.request_id AND l.status = 'ok'
            WHERE {where}
            """,
            params,
        )
        done = {
            (r["response_id"], r["parser_version"])
            for r in query(
                con,
                "SELECT response_id, parser_version FROM all_parses WHERE response_id IN (SELECT unnest(?::VARCHAR[]))",
                [[r["response_id"] for r in rows]],
            )
        }
    out, now = [], now_utc()
    for r in rows:
        answer_type = parsing.step_answer_type(r["answer_type"], r["steps"], r["step"])
        version = parsing.parser_version(answer_type)
        if (r["response_id"], version) in done:
            continue
        done.add((r["response_id"], version))
        parsed = parsing.parse(answer_type, r["text"])
        out.append({
            "response_id": r["response_id"], "request_id": r["request_id"], "answer_type": answer_type,
            "parser_version": version, "status": parsed.status, "value": parsed.value,
            "extracted": parsed.extracted, "canonical": parsing.answer_key(answer_type, parsed.value),
            "created_at": now,
        })
    write_rows(lake, "parses", out)
    return StageStats(examined=len(rows), written=len(out))


def judge(answer_type: str, gold: str, n_steps: int, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Score one trial from its steps (ordered; each with response status, parse status and value)."""
    if any(s["response_status"] != "ok" for s in steps):
        return {"status": "error", "correct": None, "lenient_correct": None, "predicted": None}
    if len(steps) < n_steps:
        stopped_on_parse = any(s["parse_status"] == "unparsable" for s in steps)
        status = "unparsable" if stopped_on_parse else "error"
        return {"status": status, "correct": None, "lenient_correct": None, "predicted": None}
    final = steps[-1]
    if final["parse_status"] != "ok":
        return {"status": "unparsable", "correct": None, "lenient_correct": None, "predicted": None}
    module = parsing.parser_for(answer_type)
    correct = bool(module.matches(final["value"], gold))
    lenient = bool(module.lenient(final["value"], gold)) if hasattr(module, "lenient") else None
    return {"status": "correct" if correct else "wrong", "correct": correct,
            "lenient_correct": lenient, "predicted": final["value"]}


def score_trials(lake: str, selection: Selection, run_id: str) -> StageStats:
    """Score the selection's trials that lack a score of the current version over the same responses."""
    where, params = selection.where()
    with reader(lake) as con:
        rows = query(
            con,
            f"""
            WITH req AS (
                SELECT rr.trial_id, rr.item_id, rr.model, rr.sample_idx, rr.step_index, rr.request_id
                FROM run_requests rr JOIN items i ON i.item_id = rr.item_id
                WHERE {where}
                -- the latest request per trial and step among those selected (sql/macros/requests.sql)
                QUALIFY request_recency(rr.trial_id, rr.step_index, rr.created_at) = 1
            )
            SELECT req.*, i.gold, i.answer_type, i.solver, i.steps,
                   l.status AS response_status, l.response_id,
                   p.status AS parse_status, p.value
            FROM req
            JOIN items i ON i.item_id = req.item_id
            LEFT JOIN ledger l ON l.request_id = req.request_id
            LEFT JOIN parses p ON p.response_id = l.response_id
            ORDER BY req.trial_id, req.step_index
            """,
            params,
        )
        trials: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            trials[r["trial_id"]].append(r)
        existing = {
            (r["trial_id"], r["scorer_version"], r["response_ids"])
            for r in query(
                con,
                "SELECT trial_id, scorer_version, response_ids FROM all_scores WHERE trial_id IN (SELECT unnest(?::VARCHAR[]))",
                [list(trials)],
            )
        }
    out, now = [], now_utc()
    for tid, steps in trials.items():
        first = steps[0]
        n_steps = len(json.loads(first["steps"] or "[]")) if first["solver"] == "chain" else 1
        version = scorer_version(first["answer_type"])
        response_ids = json.dumps([s["response_id"] for s in steps])
        if (tid, version, response_ids) in existing:
            continue
        verdict = judge(first["answer_type"], first["gold"], n_steps, steps)
        out.append({
            "trial_id": tid, "run_id": run_id, "item_id": first["item_id"], "model": first["model"],
            "sample_idx": first["sample_idx"], "scorer_version": version, "response_ids": response_ids,
            "created_at": now, **verdict,
        })
    write_rows(lake, "scores", out)
    return StageStats(examined=len(trials), written=len(out))
