"""The call engine: each model of a sweep is one stream of requests that keeps its slots full.

A :class:`ModelStream` runs a model's chunks through one pool of ``concurrency`` workers that
pull from one bounded queue, consecutive chunks taken together in groups of up to
:data:`GROUP_TRIALS` trials. Up to :data:`LOOKAHEAD` groups are in progress at once: while the
workers send one group's requests, the next group records its requests, looks them up in the
ledger, claims its misses and puts them on the queue behind the first, so the calls never drain
to zero at a group boundary (only the steps of a chain wait for their own earlier steps). The
queue is bounded, so a group never builds far ahead of what the workers can send.

Several streams run in one event loop at the same time (:func:`run_streams`): each model has its
own limiter, so a slow or throttled model never holds back another. Lake work (recording
requests, ledger look-ups, claims, writing responses) runs in threads so the event loop keeps
sending; responses are buffered and written by size or time, not one file per response, and
spooled to local disk as they arrive (:class:`tasks.models.spool.ResponseWriter`: a process killed
outright loses no answer it received). When a group's calls are done and its responses are in the
lake, ``on_chunk(index)`` tells the caller of each of its chunks, which the caller parses and
scores while the stream goes on.

Whether a request may start is decided in one place, :meth:`ModelStream.may_start`.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Awaitable, Callable, Iterable, Sequence

from tasks.items.compact import consecutive_groups
from tasks.lake.lake import Lake
from tasks.lake.writes import write_rows
from tasks.models import embedded
from tasks.models.batch_jobs import run_batch
from tasks.models.call import (
    CallStats,
    StepUnavailable,
    _Trial,
    lookup_ledger,
    request_row,
    step_messages,
    trial_id,
)
from tasks.models.claims import Claims
from tasks.models.config import ModelConfig
from tasks.models.cost import Budget, estimate_cost
from tasks.models.direct import prepare
from tasks.models.routes import Caller, route_for
from tasks.models.spool import ResponseWriter, replay
from tasks.records import Request, Response, step_plan
from tasks.runs import stopping
from tasks.runs.config import SweepConfig
from tasks.runs.lifecycle import mark_stale_crashed
from tasks.scoring import parse as parsing

LOOKAHEAD = 3  # groups of chunks in progress at once per model: one sending, the next ones queued behind it

# Trials a stream takes together from consecutive chunks: their requests are recorded, looked up
# in the ledger and claimed as one group. Those reads and commits cost per query, not per row
# (DuckDB's planning and DuckLake's catalog reads per table named): on a 20,000-item lake, 130-140
# µs per request in groups of 1,000 and 45-50 µs in groups of 4,000 (bench/results.md, "share3").
# Bounded in trials, so memory is: up to LOOKAHEAD groups' request rows are held at once (about
# 6 KB a trial). A chunk of more trials is a group of its own.
GROUP_TRIALS = 4000

Chunks = Sequence[tuple[int, Sequence[dict[str, Any]]]]

# The columns of an item row that a stream reads (its trials' ids, steps and messages): a sweep
# keeps only these for its calls, not whole rows (about a third of a row's memory).
ITEM_COLUMNS = ("item_id", "solver", "answer_type", "steps", "messages")


@dataclass
class _Answered:
    fresh: list[Response] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)  # answered by another sweep meanwhile
    waiting: list[str] = field(default_factory=list)


class ModelStream:
    """One model's calls over the chunks of a sweep (see the module's docstring)."""

    def __init__(self, name: str, cfg: ModelConfig, run_id: str, lake: Lake, budget: Budget,
                 sweep: SweepConfig | None = None, samples: int = 1,
                 on_progress: Callable[..., None] | None = None, on_chunk: Callable[[int], None] | None = None):
        sweep = sweep or SweepConfig()
        self.name, self.cfg, self.run_id, self.lake, self.budget, self.samples = name, cfg, run_id, lake, budget, samples
        # progress(n, errors=0): n requests done (sent, cached or given up), errors among them
        self.progress = on_progress or (lambda n, errors=0: None)
        self.on_chunk = on_chunk or (lambda index: None)
        self.claims = Claims(lake, run_id, sweep.claim_lease_s, sweep.claim_settle_s)
        self.route, self.sampling = route_for(cfg), cfg.sampling()
        self.embedded = cfg.model.split("/", 1)[1] if cfg.provider == "local" else ""  # its worker's name
        self.stats = CallStats()
        self.caller: Caller | None = None
        self.queue: asyncio.Queue[tuple[Request, asyncio.Future[Response | None], Callable[[Response], None]]]
        self.writer = ResponseWriter(lake, sweep.flush_s)

    def may_start(self, req: Request) -> float | None:
        """The one place deciding whether another request may start now: its cost estimate when it
        may (reserved in the budget until it ends), None when it must stay unsent."""
        assert self.caller is not None
        if stopping.requested():  # a stopping sweep lets the calls in flight end and starts none
            return None
        estimate = estimate_cost(self.caller.price, self.caller.messages(req), self.cfg.max_tokens)
        return estimate if self.budget.reserve(estimate) else None

    async def run(self, chunks: Chunks) -> CallStats:
        """Call every trial of ``chunks`` (index, item rows); returns what was done."""
        started = time.monotonic()
        await asyncio.to_thread(replay, self.lake)  # answers a killed sweep received: never paid again
        # What the first request asks of litellm, answered here: an import of litellm in the event
        # loop would stall every other model's calls (tasks.models.direct.prepare).
        await asyncio.to_thread(prepare, self.cfg, self.samples)
        self.caller = Caller.create(self.name, self.cfg, self.run_id)
        throttled_before = self.caller.local.throttled
        self.queue = asyncio.Queue(maxsize=2 * self.cfg.concurrency)
        # An embedded model takes its chunks one at a time: a worker that died is started again
        # for the next chunk (tasks.models.embedded), so a chunk must not overlap the next one.
        gate = asyncio.Semaphore(1 if self.embedded else LOOKAHEAD)

        async def one(indices: list[int], rows: Iterable[dict[str, Any]]) -> None:
            async with gate:
                if self.embedded:
                    embedded.begin_chunk(self.embedded)
                await self._chunk(rows)
            await self.writer.drain()  # its responses are in the lake before anyone parses them
            for index in indices:
                self.on_chunk(index)

        # An embedded model's chunks stay one at a time (above); a batch model's claim rounds are
        # its batch jobs, so its chunks stay one job each.
        alone = bool(self.embedded or self.cfg.batch)

        async def every_chunk() -> None:
            try:
                async with asyncio.TaskGroup() as group:
                    for indices, rows in call_groups(chunks, 0 if alone else GROUP_TRIALS // self.samples):
                        group.create_task(one(indices, rows))
            except BaseExceptionGroup as errors:
                raise first_error(errors) from None

        helpers = [asyncio.ensure_future(self._worker()) for _ in range(self.cfg.concurrency)]
        helpers.append(asyncio.ensure_future(self.writer.tick()))
        try:
            # A stop lets the calls in flight finish within the grace period (their answers are
            # written below), then abandons them.
            await stopping.wait_with_grace([asyncio.ensure_future(every_chunk())])
        finally:
            for h in helpers:
                h.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            await self.writer.drain()
            await self.caller.close()
        if self.budget.stopped:
            self.stats.budget = (f"{self.budget.stopped}; {self.stats.unsent} request(s) of {self.name} not sent: "
                                 "everything answered is kept, and a sweep with a higher budget sends only what is missing")
        self.stats.concurrency[self.name] = {"min": self.caller.local.min_limit, "final": self.caller.local.limit,
                                             "throttled": self.caller.local.throttled - throttled_before}
        self.stats.elapsed_s = time.monotonic() - started
        return self.stats

    async def _worker(self) -> None:
        # A pool of `concurrency` workers, not one task per request: the budget's in-flight sum
        # then covers the requests actually in flight, not every request still queued.
        assert self.caller is not None
        while True:
            req, fut, answered = await self.queue.get()
            estimate = self.may_start(req)
            if estimate is None:
                if not fut.done():
                    fut.set_result(None)
                continue
            try:
                resp = await self.caller.call(req)
            except stopping.Stopped:  # the stop came while it waited for its slot: never sent
                self.budget.settle(estimate, 0.0)
                if not fut.done():
                    fut.set_result(None)
                continue
            except Exception as exc:  # noqa: BLE001 - handed to the chunk waiting for it
                self.budget.settle(estimate, 0.0)
                if not fut.done():
                    fut.set_exception(exc)
                continue
            self.budget.settle(estimate, resp.cost_usd if resp.status == "ok" else 0.0)
            self.writer.add(resp)
            answered(resp)
            if not fut.done():
                fut.set_result(resp)

    async def _chunk(self, rows: Iterable[dict[str, Any]]) -> None:
        """Every trial of one group of chunks, step by step (a chain's step k is built from step k-1's answers)."""
        route = asdict(self.route)  # once per chunk, not per trial: asdict deep-copies
        trials = [
            _Trial(row=row, sample_idx=s, trial_id=trial_id(row["item_id"], route, self.sampling, s),
                   steps=step_plan(row))
            for row in rows for s in range(self.samples)
        ]
        self.stats.trials += len(trials)
        for wave in range(max((len(t.steps) for t in trials), default=0)):
            if self.budget.stopped or stopping.requested():  # nothing more will be sent: neither record nor claim the rest
                left = sum(len(t.steps) - wave for t in trials if not t.stopped and wave < len(t.steps))
                self.stats.unsent += sum(1 for t in trials if not t.stopped and wave < len(t.steps))
                self.progress(left)
                return
            try:
                await self._wave(trials, wave)
            except asyncio.CancelledError:
                # Abandoned by a stop past its grace period: the wave's trials count as not sent.
                self.stats.unsent += sum(1 for t in trials if not t.stopped and wave < len(t.steps))
                raise

    def _requests(self, trials: list[_Trial], wave: int) -> list[tuple[_Trial, Request]]:
        asked: list[tuple[_Trial, Request]] = []
        for t in trials:
            if t.stopped or wave >= len(t.steps):
                continue
            step = t.steps[wave]
            try:
                messages = step_messages(t.row, step, t.answers)
            except StepUnavailable:
                t.stopped = True
                self.stats.stopped += 1
                self.progress(len(t.steps) - wave)
                continue
            asked.append((t, Request(trial_id=t.trial_id, item_id=t.row["item_id"], model=self.name,
                                     step=step["name"], route=self.route, messages=messages,
                                     sampling=self.sampling, sample_idx=t.sample_idx)))
        return asked

    async def _wave(self, trials: list[_Trial], wave: int) -> None:
        asked = self._requests(trials, wave)
        if not asked:
            return
        # Recorded before anything is sent: a request of the run is never answered unrecorded.
        await asyncio.to_thread(write_rows, self.lake, "requests",
                                [request_row(self.run_id, req, wave) for _, req in asked])
        self.stats.requests += len(asked)
        ledger = await asyncio.to_thread(lookup_ledger, self.lake, [req.request_id for _, req in asked])
        misses = list({req.request_id: req for _, req in asked if req.request_id not in ledger}.values())
        self.stats.cached += len(asked) - len(misses)
        self.progress(len(asked) - len(misses))
        got = await self._answer(misses) if misses else _Answered()
        elsewhere = await asyncio.to_thread(lookup_ledger, self.lake, got.elsewhere)
        unsent = len(misses) - len(got.fresh) - len(got.elsewhere) - len(got.waiting)
        self.progress(unsent + len(got.waiting))
        self.stats.cached += len(got.elsewhere)
        self.stats.sent += len(got.fresh)
        self.stats.waiting += len(got.waiting)
        self.stats.unsent += unsent
        self.stats.errors += sum(1 for r in got.fresh if r.status == "error")
        # (text, finish reason): a step cut at the token limit has no value for the next one to use
        answers = {**{k: (v["text"], v["finish_reason"]) for k, v in [*ledger.items(), *elsewhere.items()]},
                   **{r.request_id: (r.text, r.finish_reason) for r in got.fresh if r.status == "ok"}}
        for t, req in asked:
            text, finish_reason = answers.get(req.request_id, (None, None))
            if text is None:
                t.stopped = True
                self.progress(len(t.steps) - wave - 1)
                continue
            if wave + 1 < len(t.steps):  # only a later step reads the answer
                step = t.steps[wave]
                parsed = parsing.parse(step["answer_type"], text, finish_reason)
                t.answers[step["name"]] = {"text": text, "value": parsed.value}

    async def _send(self, requests: list[Request], answered: Callable[[Response], None]) -> list[Response]:
        """Queue ``requests`` for the workers and wait for their answers (None: not sent)."""
        loop = asyncio.get_running_loop()
        waits = []
        for req in requests:
            fut: asyncio.Future[Response | None] = loop.create_future()
            await self.queue.put((req, fut, answered))
            waits.append(fut)
        return [r for r in await asyncio.gather(*waits) if r is not None]

    async def _answer(self, misses: list[Request]) -> _Answered:
        """Claim the misses, send what this run won (directly or as a batch job), wait for the rest."""
        out = _Answered()
        by_id = {r.request_id: r for r in misses}
        outstanding: set[str] = set()

        async def renew() -> None:
            while True:
                await asyncio.sleep(self.claims.lease_s / 3)
                await asyncio.to_thread(self.claims.renew, sorted(outstanding))

        def answered(resp: Response) -> None:
            outstanding.discard(resp.request_id)
            self.progress(1, errors=int(resp.status == "error"))

        renewer = asyncio.ensure_future(renew())
        try:
            pending = list(by_id)
            looked_up = True  # the misses of the ledger look-up made just before (_wave)
            while pending and not self.budget.stopped and not stopping.requested():
                got = await asyncio.to_thread(self.claims.claim, pending, looked_up)
                looked_up = False
                out.elsewhere += got.answered
                self.progress(len(got.answered))
                mine = [by_id[rid] for rid in got.mine]
                outstanding.update(got.mine)
                if mine and self.cfg.batch:
                    assert self.caller is not None
                    result = await run_batch(self.caller, self.lake, mine, self.budget)
                    for resp in result.responses:
                        if resp.request_id in by_id:
                            answered(resp)
                    out.fresh += [r for r in result.responses if r.request_id in by_id]
                    out.waiting += [rid for rid in result.waiting if rid in by_id]
                elif mine:
                    out.fresh += await self._send(mine, answered)
                pending = got.others
                if pending:
                    # A claiming sweep that died on this machine frees its claims now, not at expiry.
                    await asyncio.to_thread(mark_stale_crashed, self.lake)
                    await stopping.sleep(self.claims.poll_s)
        finally:
            renewer.cancel()
        return out


def call_groups(chunks: Chunks, items: int) -> list[tuple[list[int], Iterable[dict[str, Any]]]]:
    """Consecutive ``chunks`` taken together up to ``items`` items a group (a larger chunk, or
    ``items`` 0: a group of its own): each group's chunk indices and its rows in order."""
    chunks = list(chunks)
    return [([chunks[p][0] for p in group], itertools.chain.from_iterable(chunks[p][1] for p in group))
            for group in consecutive_groups([len(rows) for _, rows in chunks], items)]


def first_error(errors: BaseExceptionGroup) -> BaseException:
    """The first exception inside a (nested) exception group: the error callers expect to see."""
    first = errors.exceptions[0]
    return first_error(first) if isinstance(first, BaseExceptionGroup) else first


async def run_streams(streams: Sequence[tuple[ModelStream, Chunks]],
                      wrap: Callable[[ModelStream, Chunks], Awaitable[CallStats]] | None = None) -> list[CallStats]:
    """Run hosted models' streams at the same time and embedded models' (``local/*``) one after
    another: an embedded model uses every core of this machine for each call. ``wrap(stream,
    chunks)`` runs one stream (a Prefect task run, say); by default ``stream.run(chunks)``.
    One stream's error cancels the others and is raised."""
    run = wrap or (lambda stream, chunks: stream.run(chunks))
    results: dict[int, CallStats] = {}

    async def one(i: int) -> None:
        results[i] = await run(*streams[i])

    async def embedded_in_turn() -> None:
        for i, (stream, _) in enumerate(streams):
            if stream.embedded:
                await one(i)

    try:
        async with asyncio.TaskGroup() as group:
            for i, (stream, _) in enumerate(streams):
                if not stream.embedded:
                    group.create_task(one(i))
            group.create_task(embedded_in_turn())
    except BaseExceptionGroup as errors:
        raise first_error(errors) from None
    return [results[i] for i in range(len(streams))]


def run_calls(rows: Sequence[dict[str, Any]], model_name: str, cfg: ModelConfig, run_id: str, lake: Lake,
              samples: int = 1, on_progress: Callable[..., None] | None = None,
              sweep: SweepConfig | None = None) -> CallStats:
    """Run every trial of ``rows`` × ``samples`` on one model; write requests and responses to the lake.

    ``sweep`` supplies the sweep's budget and claim settings (the defaults when None). A budget that
    stops sending leaves the rest unsent and says so in ``CallStats.budget``; it never raises here,
    so what was answered is parsed and scored before the caller ends the run.
    """
    sweep = sweep or SweepConfig()
    budget = Budget.for_run(lake, run_id, model_name, sweep.max_cost_usd, cfg.max_cost_usd)
    stream = ModelStream(model_name, cfg, run_id, lake, budget, sweep, samples, on_progress)
    return asyncio.run(stream.run([(0, rows)]))
