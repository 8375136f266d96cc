"""The call stage's vocabulary: trials, their steps and requests, the ledger look-up, CallStats.

A *trial* is one item attempted by one model configuration with one ``sample_idx``. Items with
the ``generate`` solver make one request per trial; ``chain`` items make one request per step,
in waves: the requests of step k are built only when step k-1 is answered, from that answer's
parsed value (``{step.value}``) or raw text (``{step.text}``). Every request is recorded for the
run before it is sent; responses are written to the lake in small chunks as they arrive, so a
crash loses at most the chunk in flight, and the next sweep sends exactly the requests without an
``ok`` response. The engine that sends them, every model at once, is :mod:`tasks.models.stream`.

Ledger misses are first claimed (:mod:`tasks.models.claims`), so a sweep running at the same time on
the same lake never sends them too; each one is sent only while the budget (:mod:`tasks.models.cost`)
allows, directly or, for ``batch = true`` models, inside a provider batch job
(:mod:`tasks.models.batch_jobs`).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

from tasks.lake.lake import Lake
from tasks.models.config import ModelConfig
from tasks.models.routes import route_for
from tasks.records import Request, Route, content_hash, now_utc, step_plan

_REF = re.compile(r"\{([A-Za-z0-9_]+)\.(value|text)\}")


class StepUnavailable(Exception):
    """A later step needs an earlier step's answer, which is an error, unparsable or truncated."""


def trial_id(item_id: str, route: dict[str, Any], sampling: dict[str, Any], sample_idx: int) -> str:
    """Content hash of one attempt: the item, the route, the sampling parameters and sample_idx."""
    return content_hash({"item": item_id, "route": route, "sampling": sampling, "sample_idx": sample_idx}, length=0)


def fill_template(template: str, answers: dict[str, dict[str, Any]]) -> str:
    """Substitute ``{step.value}`` / ``{step.text}`` from earlier steps' answers.

    Raises StepUnavailable when a referenced step has no usable value (error, unparsable, or cut at
    the token limit before it stated one), so the trial stops there and is scored as such rather
    than sending a request built from nothing.
    """

    def sub(m: re.Match[str]) -> str:
        step, kind = m.group(1), m.group(2)
        got = answers.get(step, {}).get(kind)
        if got is None:
            raise StepUnavailable(step)
        return str(got)

    return _REF.sub(sub, template)


def step_messages(row: dict[str, Any], step: dict[str, str], answers: dict[str, dict[str, Any]]) -> tuple[tuple[str, str], ...]:
    """The messages of one step's request."""
    if row["solver"] != "chain":
        return tuple((m["role"], m["content"]) for m in json.loads(row["messages"]))
    messages = []
    if step.get("system"):
        messages.append(("system", step["system"]))
    messages.append(("user", fill_template(step["template"], answers)))
    return tuple(messages)


@dataclass
class CallStats:
    """What one call-stage chunk did, and summed (:meth:`add`), what a model or a run did.

    ``requests`` counts the requests recorded for the run: ``cached`` (answered in the ledger
    already, or meanwhile by another sweep), ``sent`` (a response of this run, ``errors`` among
    them), ``waiting`` (in provider batch jobs that had not finished when the stage stopped
    waiting). ``unsent`` counts the requests a budget (``budget`` says which) or a stop kept back.
    ``concurrency`` holds, per model, the smallest and the final adaptive concurrency and the
    number of throttled (429 / Retry-After) attempts. The stream counts them as it calls; a run
    whose calls ran elsewhere reads them back from the lake (:func:`run_totals`).
    """

    trials: int = 0
    requests: int = 0
    cached: int = 0
    sent: int = 0
    errors: int = 0
    stopped: int = 0
    elapsed_s: float = 0.0
    waiting: int = 0
    unsent: int = 0
    budget: str = ""
    concurrency: dict[str, dict[str, int]] = field(default_factory=dict)

    @classmethod
    def total(cls, parts: Iterable["CallStats"]) -> "CallStats":
        """The sum of ``parts`` (:meth:`add`): a run's totals from its models'."""
        summed = cls()
        for part in parts:
            summed.add(part)
        return summed

    def add(self, other: "CallStats") -> None:
        for f in ("trials", "requests", "cached", "sent", "errors", "stopped", "elapsed_s", "waiting", "unsent"):
            setattr(self, f, getattr(self, f) + getattr(other, f))
        self.budget = self.budget or other.budget
        for model, got in other.concurrency.items():
            mine = self.concurrency.setdefault(model, dict(got, throttled=0))
            mine["min"] = min(mine["min"], got["min"])
            mine["final"] = got["final"]
            mine["throttled"] += got["throttled"]


def run_totals(lake: Lake, run_id: str) -> dict[str, CallStats]:
    """A run's :class:`CallStats` per model, read back from the lake: requests recorded, responses
    of the run (errors among them), requests still waiting in batch jobs the run submitted, and the
    rest as cached. The lake does not tell an unsent request from a cached one (neither has a
    response of the run), so ``unsent`` stays 0 and such requests count as cached; the times and
    concurrency stay with the processes that called."""
    rows = lake.read("""
        WITH req AS (SELECT model, count(*) AS requests FROM run_requests WHERE run_id = $1 GROUP BY model),
             got AS (SELECT model, count(*) AS sent, count(*) FILTER (WHERE status = 'error') AS errors
                     FROM responses WHERE run_id = $1 GROUP BY model),
             -- 'stored': a job whose lines are in the ledger (tasks.models.batch_jobs.STORED)
             wait AS (SELECT model, count(*) AS waiting FROM batch_jobs, unnest(request_ids) AS t(request_id)
                      WHERE run_id = $1 AND status <> 'stored' GROUP BY model)
        SELECT model, requests, coalesce(sent, 0) AS sent, coalesce(errors, 0) AS errors,
               coalesce(waiting, 0) AS waiting
        FROM req LEFT JOIN got USING (model) LEFT JOIN wait USING (model)""",
               [run_id])
    return {r["model"]: CallStats(requests=r["requests"], sent=r["sent"], errors=r["errors"], waiting=r["waiting"],
                                  cached=r["requests"] - r["sent"] - r["waiting"]) for r in rows}


@dataclass
class _Trial:
    row: dict[str, Any]
    sample_idx: int
    trial_id: str
    steps: list[dict[str, str]]
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    stopped: bool = False


def request_row(run_id: str, req: Request, step_index: int) -> dict[str, Any]:
    """The lake row recording that run ``run_id`` made ``req`` (as step ``step_index`` of its trial)."""
    return {
        "run_id": run_id,
        "request_id": req.request_id,
        "trial_id": req.trial_id,
        "item_id": req.item_id,
        "model": req.model,
        "step": req.step,
        "step_index": step_index,
        "provider": req.route.provider,
        "route_model": req.route.model,
        "api_base": req.route.api_base,
        "sampling": json.dumps(req.sampling, sort_keys=True),
        "sample_idx": req.sample_idx,
        "messages": json.dumps([{"role": r, "content": c} for r, c in req.messages], ensure_ascii=False),
        "created_at": now_utc(),
    }


def request_from_row(row: dict[str, Any]) -> Request:
    """The request a lake row written by :func:`request_row` records (its inverse), so that the
    row's ``request_id`` can be checked against its content (``tasks.check``)."""
    return Request(trial_id=row["trial_id"], item_id=row["item_id"], model=row["model"], step=row["step"],
                   route=Route(row["provider"], row["route_model"], row["api_base"]),
                   messages=tuple((m["role"], m["content"]) for m in json.loads(row["messages"])),
                   sampling=json.loads(row["sampling"]), sample_idx=row["sample_idx"])


# The one rule for "this request is answered": its ledger row is ``ok``. Every stage that asks
# (the ledger look-up, claims, provider batch jobs) reads these rows, for the request ids in $1.
# The ``ok`` rows of the view ``ledger`` for those requests, through the table macro ``ledger_of``
# (sql/intermediate/ledger_of.sql), which picks the requests before ranking their responses: the
# view would rank every response of the lake for each look-up (a sweep makes three per chunk of
# 1,000, and at 200,000 responses that ranking was a third of each look-up's CPU; bench/results.md, "fig2").
USABLE_LEDGER_ROWS = ("WITH asked_ids AS (SELECT unnest($1::VARCHAR[]) AS request_id) "
                      "SELECT request_id, response_id, text, finish_reason FROM ledger_of('asked_ids') "
                      "WHERE status = 'ok'")


def lookup_ledger(lake: Lake, request_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The usable (``ok``) ledger rows (request_id → response_id, text, finish_reason) for ``request_ids``."""
    if not request_ids:
        return {}
    return {r["request_id"]: r for r in lake.read(USABLE_LEDGER_ROWS, [list(request_ids)])}



# The trials of $1 (trial ids), $2 (their first request's id) and $3 (their number of steps) that
# need a call. A trial is answered when its first request is (a usable ledger row, as in
# USABLE_LEDGER_ROWS) and, for a chain, so is each of its steps among the requests recorded for
# the trial: a later step's request is built from the earlier answer, so only a recorded one can be
# looked up. Read from run_requests, not requests: a request id hashes what is sent, not the trial,
# so one request may serve steps of several trials, and requests keeps one trial per request id.
UNANSWERED_TRIALS = """
    WITH want AS (SELECT unnest($1::VARCHAR[]) AS trial_id, unnest($2::VARCHAR[]) AS request_id,
                         unnest($3::INTEGER[]) AS n_steps),
         ok AS MATERIALIZED (SELECT request_id FROM ledger WHERE status = 'ok'),
         chains AS (SELECT trial_id, count(DISTINCT step) AS answered FROM run_requests SEMI JOIN ok USING (request_id)
                    WHERE trial_id IN (SELECT trial_id FROM want WHERE n_steps > 1) GROUP BY trial_id)
    SELECT count(*) AS n FROM want LEFT JOIN chains USING (trial_id)
    WHERE request_id NOT IN (SELECT request_id FROM ok) OR (n_steps > 1 AND coalesce(answered, 0) < n_steps)"""


def unanswered_trials(lake: Lake, rows: Sequence[dict[str, Any]], model: str, cfg: ModelConfig, samples: int) -> int:
    """How many trials of ``rows`` × ``samples`` on ``model`` need a call: one anti-join against
    the ledger in DuckDB (UNANSWERED_TRIALS), Python only hashing; 0 when every answer is there."""
    route, sampling = route_for(cfg), cfg.sampling()
    trial_ids, request_ids, n_steps = [], [], []
    for row in rows:
        steps = step_plan(row)
        messages = step_messages(row, steps[0], {})  # a first step refers to no earlier answer
        for s in range(samples):
            trial = trial_id(row["item_id"], asdict(route), sampling, s)
            trial_ids.append(trial)
            request_ids.append(Request(trial_id=trial, item_id=row["item_id"], model=model, step=steps[0]["name"],
                                       route=route, messages=messages, sampling=sampling, sample_idx=s).request_id)
            n_steps.append(len(steps))
    if not trial_ids:
        return 0
    return lake.read(UNANSWERED_TRIALS, [trial_ids, request_ids, n_steps])[0]["n"]
