"""The call stage: trials → requests → ledger anti-join → litellm for the misses → responses.

A *trial* is one item attempted by one model configuration with one ``sample_idx``. Items with
the ``generate`` solver make one request per trial; ``chain`` items make one request per step,
in waves: the requests of step k are built only when step k-1 is answered, from that answer's
parsed value (``{step.value}``) or raw text (``{step.text}``). Every request is recorded for the
run before it is sent; responses are written to the lake in small chunks as they arrive, so a
crash loses at most the chunk in flight, and the next sweep sends exactly the requests without an
``ok`` response.

Ledger misses are first claimed (:mod:`tasks.models.claims`), so a sweep running at the same time on
the same lake never sends them too; each one is sent only while the budget (:mod:`tasks.models.cost`)
allows, directly or, for ``batch = true`` models, inside a provider batch job
(:mod:`tasks.models.batch_jobs`).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from tasks.config import ModelConfig, SweepConfig
from tasks.lake.store import now_utc, read, write_rows
from tasks.models.batch_jobs import run_batch
from tasks.models.claims import Claims
from tasks.models.cost import Budget, estimate_cost
from tasks.models.routes import Caller, route_for
from tasks.records import Request, Response, content_hash
from tasks.runs import stopping
from tasks.runs.lifecycle import mark_stale_crashed
from tasks.scoring import parse as parsing

_REF = re.compile(r"\{([A-Za-z0-9_]+)\.(value|text)\}")

FLUSH_EVERY = 10
FLUSH_SECONDS = 5.0


class StepUnavailable(Exception):
    """A later step needs an earlier step's answer, which is an error or unparsable."""


def trial_id(item_id: str, route: dict[str, Any], sampling: dict[str, Any], sample_idx: int) -> str:
    """Content hash of one attempt: the item, the route, the sampling parameters and sample_idx."""
    return content_hash({"item": item_id, "route": route, "sampling": sampling, "sample_idx": sample_idx}, length=0)


def fill_template(template: str, answers: dict[str, dict[str, Any]]) -> str:
    """Substitute ``{step.value}`` / ``{step.text}`` from earlier steps' answers.

    Raises StepUnavailable when a referenced step has no usable value (error or unparsable), so
    the trial stops there and is scored as such rather than sending a request built from nothing.
    """

    def sub(m: re.Match[str]) -> str:
        step, kind = m.group(1), m.group(2)
        got = answers.get(step, {}).get(kind)
        if got is None:
            raise StepUnavailable(step)
        return str(got)

    return _REF.sub(sub, template)


def step_plan(row: dict[str, Any]) -> list[dict[str, str]]:
    """The steps of an item row: one ``main`` step for ``generate``, the stored steps for ``chain``."""
    if row["solver"] == "chain":
        return json.loads(row["steps"])
    return [{"name": "main", "template": "", "answer_type": row["answer_type"], "system": ""}]


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
    """What one call-stage batch did.

    ``waiting`` counts requests in provider batch jobs that had not finished when the stage stopped
    waiting; ``unsent`` those a budget kept from being sent (``budget`` says which budget).
    ``concurrency`` holds, per model, the smallest and the final adaptive concurrency and the
    number of throttled (429 / Retry-After) attempts.
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

    def add(self, other: "CallStats") -> None:
        for f in ("trials", "requests", "cached", "sent", "errors", "stopped", "elapsed_s", "waiting", "unsent"):
            setattr(self, f, getattr(self, f) + getattr(other, f))
        self.budget = self.budget or other.budget
        for model, got in other.concurrency.items():
            mine = self.concurrency.setdefault(model, dict(got, throttled=0))
            mine["min"] = min(mine["min"], got["min"])
            mine["final"] = got["final"]
            mine["throttled"] += got["throttled"]


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


def lookup_ledger(lake: str, request_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The ``ok`` ledger rows (request_id → response_id, text) for ``request_ids``."""
    if not request_ids:
        return {}
    rows = read(
        lake,
        "SELECT request_id, response_id, text FROM ledger WHERE status = 'ok' "
        "AND request_id IN (SELECT unnest(?::VARCHAR[]))",
        [list(request_ids)],
    )
    return {r["request_id"]: r for r in rows}


async def _send_all(caller: Caller, requests: list[Request], lake: str, budget: Budget,
                    on_response: Callable[[Response], None]) -> list[Response]:
    pending: list[Response] = []
    done: list[Response] = []
    last_flush = time.monotonic()
    queue = list(reversed(requests))

    def flush() -> None:
        nonlocal pending, last_flush
        write_rows(lake, "responses", [asdict(r) for r in pending])
        pending = []
        last_flush = time.monotonic()

    async def worker() -> None:
        # A pool of `concurrency` workers, not one task per request: the budget's in-flight sum
        # then covers the requests actually in flight, not every request still queued.
        while queue and not stopping.requested():
            req = queue.pop()
            estimate = estimate_cost(caller.price, caller.messages(req), caller.cfg.max_tokens)
            if not budget.reserve(estimate):
                continue
            resp = await caller.call(req)
            budget.settle(estimate, resp.cost_usd if resp.status == "ok" else 0.0)
            pending.append(resp)
            done.append(resp)
            on_response(resp)
            if len(pending) >= FLUSH_EVERY or time.monotonic() - last_flush >= FLUSH_SECONDS:
                flush()

    workers = [asyncio.ensure_future(worker()) for _ in range(min(caller.cfg.concurrency, len(requests)))]
    try:
        # A stop lets the calls in flight finish (their answers are flushed below), then abandons them.
        await stopping.wait_with_grace(workers)
    finally:
        if pending:
            flush()
        for w in workers:
            w.cancel()
    return done


@dataclass
class _Answered:
    fresh: list[Response] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)  # answered by another sweep meanwhile
    waiting: list[str] = field(default_factory=list)


async def _answer(caller: Caller, misses: list[Request], lake: str, budget: Budget, claims: Claims,
                  progress: Callable[[int], None]) -> _Answered:
    """Claim the misses, send what this run won (directly or as a batch job), wait for the rest."""
    out = _Answered()
    by_id = {r.request_id: r for r in misses}
    outstanding: set[str] = set()

    async def renew() -> None:
        while True:
            await asyncio.sleep(claims.lease_s / 3)
            claims.renew(sorted(outstanding))

    def answered(resp: Response) -> None:
        outstanding.discard(resp.request_id)
        progress(1)

    renewer = asyncio.ensure_future(renew())
    try:
        pending = list(by_id)
        while pending and not budget.stopped and not stopping.requested():
            got = claims.claim(pending)
            out.elsewhere += got.answered
            progress(len(got.answered))
            mine = [by_id[rid] for rid in got.mine]
            outstanding.update(got.mine)
            if mine and caller.cfg.batch:
                result = await run_batch(caller, lake, mine, budget)
                for resp in result.responses:
                    if resp.request_id in by_id:
                        answered(resp)
                out.fresh += [r for r in result.responses if r.request_id in by_id]
                out.waiting += [rid for rid in result.waiting if rid in by_id]
            elif mine:
                out.fresh += await _send_all(caller, mine, lake, budget, answered)
            pending = got.others
            if pending:
                # A claiming sweep that died on this machine frees its claims now, not at expiry.
                mark_stale_crashed(lake)
                await stopping.sleep(claims.poll_s)
    finally:
        renewer.cancel()
    return out


def run_calls(rows: Sequence[dict[str, Any]], model_name: str, cfg: ModelConfig, run_id: str, lake: str,
              samples: int = 1, on_progress: Callable[[int], None] | None = None,
              sweep: SweepConfig | None = None) -> CallStats:
    """Run every trial of ``rows`` × ``samples`` on one model; write requests and responses to the lake.

    ``sweep`` supplies the sweep's budget and claim settings (the defaults when None). A budget that
    stops sending leaves the rest unsent and says so in ``CallStats.budget``; it never raises here,
    so what was answered is parsed and scored before the caller ends the run.
    """
    started = time.monotonic()
    progress = on_progress or (lambda n: None)
    sweep = sweep or SweepConfig()
    route = route_for(cfg)
    sampling = cfg.sampling()
    caller = Caller.create(model_name, cfg, run_id)
    throttled_before = caller.local.throttled
    budget = Budget.for_run(lake, run_id, model_name, sweep.max_cost_usd, cfg.max_cost_usd)
    claims = Claims(lake, run_id, sweep.claim_lease_s, sweep.claim_settle_s)
    trials = [
        _Trial(row=row, sample_idx=s, trial_id=trial_id(row["item_id"], asdict(route), sampling, s), steps=step_plan(row))
        for row in rows
        for s in range(samples)
    ]
    stats = CallStats(trials=len(trials))
    for wave in range(max((len(t.steps) for t in trials), default=0)):
        if stopping.requested():
            break
        batch: list[tuple[_Trial, Request]] = []
        for t in trials:
            if t.stopped or wave >= len(t.steps):
                continue
            step = t.steps[wave]
            try:
                messages = step_messages(t.row, step, t.answers)
            except StepUnavailable:
                t.stopped = True
                stats.stopped += 1
                progress(len(t.steps) - wave)
                continue
            req = Request(
                trial_id=t.trial_id, item_id=t.row["item_id"], model=model_name, step=step["name"],
                route=route, messages=messages, sampling=sampling, sample_idx=t.sample_idx,
            )
            batch.append((t, req))
        if not batch:
            continue
        write_rows(lake, "requests", [request_row(run_id, req, wave) for _, req in batch])
        stats.requests += len(batch)
        ledger = lookup_ledger(lake, [req.request_id for _, req in batch])
        misses = list({req.request_id: req for _, req in batch if req.request_id not in ledger}.values())
        stats.cached += len(batch) - len(misses)
        progress(len(batch) - len(misses))
        got = asyncio.run(_answer(caller, misses, lake, budget, claims, progress)) if misses else _Answered()
        fresh = got.fresh
        elsewhere = lookup_ledger(lake, got.elsewhere)
        unsent = len(misses) - len(fresh) - len(got.elsewhere) - len(got.waiting)
        progress(unsent + len(got.waiting))
        stats.cached += len(got.elsewhere)
        stats.sent += len(fresh)
        stats.waiting += len(got.waiting)
        stats.unsent += unsent
        stats.errors += sum(1 for r in fresh if r.status == "error")
        answers = {**{k: v["text"] for k, v in ledger.items()}, **{k: v["text"] for k, v in elsewhere.items()},
                   **{r.request_id: r.text for r in fresh if r.status == "ok"}}
        for t, req in batch:
            text = answers.get(req.request_id)
            if text is None:
                t.stopped = True
                progress(len(t.steps) - wave - 1)
                continue
            step = t.steps[wave]
            parsed = parsing.parse(step.get("answer_type") or t.row["answer_type"], text)
            t.answers[step["name"]] = {"text": text, "value": parsed.value}
    if budget.stopped:
        stats.budget = (f"{budget.stopped}; {stats.unsent} request(s) of {model_name} not sent: everything answered "
                        "is kept, and a sweep with a higher budget sends only what is missing")
    stats.concurrency[model_name] = {"min": caller.local.min_limit, "final": caller.local.limit,
                                     "throttled": caller.local.throttled - throttled_before}
    stats.elapsed_s = time.monotonic() - started
    return stats
