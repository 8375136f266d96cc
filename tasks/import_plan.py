"""An import plan (everything an import writes, built and validated before anything is written)
and storing it as a run: items, requests and responses, then the usual parse and score stages.

Plans are built by :func:`tasks.imports.plan_import` (a file of responses) and
:func:`tasks.interop.plan_foreign` (Inspect logs, lm-evaluation-harness samples: one plan per
model); the import flows (:mod:`flows.imports`) store each with :func:`store_import`.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from tasks.lake.lake import Lake
from tasks.lake.writes import write_memberships, write_new_items, write_rows
from tasks.models.call import lookup_ledger, request_row
from tasks.records import Request, Response, canonical_json, now_utc
from tasks.scoring.score import parse_responses, score_trials
from tasks.scoring.selection import Selection


@dataclass
class ImportPlan:
    """Everything an import writes, built and validated before anything is written."""

    source: str
    model: str
    items: list[dict[str, Any]]
    requests: list[Request]
    texts: dict[str, str]  # request_id → reply
    answer_types: dict[str, str]
    ignored_columns: list[str] = field(default_factory=list)
    bins: dict[str, str] = field(default_factory=dict)  # bin as written → normalised label
    # request_id → Response fields the source recorded (finish reason; status, error, tokens, latency: tasks.interop)
    recorded: dict[str, dict[str, Any]] = field(default_factory=dict)


def run_config(plan: ImportPlan) -> str:
    """The ``config`` of an import's run: source file, model, answer types, ignored columns, bins."""
    return canonical_json({"source": plan.source, "model": plan.model, "answer_types": plan.answer_types,
                           "ignored_columns": plan.ignored_columns, "bins": plan.bins})


def store_import(plan: ImportPlan, lake: Lake, run_id: str) -> dict[str, Any]:
    """Write the plan as run ``run_id`` (items, requests, responses), then parse and score it;
    returns a summary. The run's own rows are the caller's (:func:`flows.imports.import_responses`)."""
    # Items are content-addressed: one already in the lake is the same item, and the items view keeps one.
    new_items = write_new_items(lake, plan.items)
    by_dataset: dict[str, list[str]] = {}
    for row in plan.items:
        by_dataset.setdefault(row["dataset_id"], []).append(row["item_id"])
    for dataset, item_ids in by_dataset.items():
        write_memberships(lake, dataset, item_ids)
    write_rows(lake, "requests", [request_row(run_id, req, 0) for req in plan.requests])
    ledger = lookup_ledger(lake, [req.request_id for req in plan.requests])
    fresh = [req for req in plan.requests if req.request_id not in ledger]
    unrecorded = {"status": "ok", "error": None, "latency_s": None, "prompt_tokens": None, "completion_tokens": None,
                  "finish_reason": None}
    write_rows(lake, "responses", [asdict(Response(
        response_id=uuid.uuid4().hex, request_id=req.request_id, run_id=run_id, model=plan.model,
        text=plan.texts[req.request_id], attempts=0, created_at=now_utc(),
        **{**unrecorded, **plan.recorded.get(req.request_id, {})})) for req in fresh])
    selection = Selection(run_ids=(run_id,))
    parsed = parse_responses(lake, selection)
    scored = score_trials(lake, selection, run_id)
    cached = len(plan.requests) - len(fresh)
    message = (f"imported {len(fresh)} response(s) from {plan.source}"
               + (f"; {cached} already in the ledger kept their stored response" if cached else "")
               + f"; items: {new_items} new, {len(plan.items) - new_items} already stored")
    return {"run_id": run_id, "items": len(plan.items), "new_items": new_items, "requests": len(plan.requests),
            "stored": len(fresh),
            "cached": cached, "parsed": parsed.written, "scored": scored.written, "answer_types": plan.answer_types,
            "ignored_columns": plan.ignored_columns, "bins": plan.bins, "message": message}
