"""The sweep's Prefect tasks, shared by :mod:`flows.sweep_run` (a sweep in one process) and
:mod:`flows.unit` (its (model, chunk) units as flow runs on workers).

Each task is named for what it does (``validate_chunks``, ``call_model``, ...); the plain functions
behind them (:mod:`tasks`) carry no suffix. :func:`stream_sweep` is a sweep's calls in one process:
one ``call-<model>`` task run per model, all at once (:mod:`tasks.models.stream`), while a
:class:`Finisher` thread parses and scores each chunk a model has finished. :func:`run_unit` is
one model on one chunk (a dispatched unit): call, then parse and score what it answered.

The tasks are :func:`~tasks.runs.orchestration.stage_task` functions: Prefect task runs inside a
flow run, plain calls in a sweep that runs without Prefect (one whose every answer is in the
ledger).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import re
import threading
import time
from typing import Any, Callable, Sequence

import pyarrow as pa

from tasks import progress
from tasks.config import Config
from tasks.errors import ConfigError
from tasks.items.compact import items_table
from tasks.items.generate import generate_task, item_row
from tasks.items.validate import validate_items
from tasks.lake.lake import Lake
from tasks.lake.writes import write_new_items
from tasks.models.call import CallStats
from tasks.models.cost import Budget, BudgetExceeded
from tasks.models.stream import Chunks, ModelStream, run_calls, run_streams
from tasks.records import step_plan
from tasks.runs.orchestration import stage_task
from tasks.scoring.score import StageStats, parse_responses, score_trials
from tasks.scoring.selection import Selection


@stage_task(name="generate", task_run_name="generate-{suite}.{task_name}")
def generate_items(suite: str, task_name: str, params: dict[str, Any], seed: int) -> pa.Table:
    """Items of one task as a table of lake rows (tasks.items.compact), without their surface
    features (added to the rows that are validated and stored: tasks.items.features.add_features)."""
    dataset, items = generate_task(suite, task_name, params, seed)
    return items_table(items, lambda item: item_row(item, dataset, features=False))


@stage_task(name="load-datasets")
def load_datasets(lake: Lake, datasets: list[str]) -> list[dict[str, Any]]:
    """Item rows of stored datasets (imported families), selected through their memberships
    (``dataset_items``), each item once; an unknown id is a ConfigError."""
    check_datasets(lake, datasets)
    return lake.read("SELECT * FROM items WHERE item_id IN (SELECT item_id FROM dataset_items "
                     "WHERE dataset_id IN (SELECT unnest(?::VARCHAR[]))) ORDER BY item_id", [datasets])


def check_datasets(lake: Lake, datasets: list[str]) -> None:
    """Raise ConfigError naming the ids of ``datasets`` that no stored item belongs to."""
    found = {r["dataset_id"] for r in lake.read(
        "SELECT DISTINCT dataset_id FROM dataset_items WHERE dataset_id IN (SELECT unnest(?::VARCHAR[]))",
        [datasets])}
    missing = sorted(set(datasets) - found)
    if missing:
        raise ConfigError(f"sweep.datasets: no stored dataset {', '.join(missing)}; see `invarbench sql "
                          f"\"SELECT DISTINCT dataset_id FROM dataset_items\"`")


# Great Expectations' validation costs about 80 ms of CPU per call whatever its rows (0.08 ms an
# item in chunks of 1,000, 0.01 in 10,000: bench/results.md, "vgroups"), so a sweep validates
# consecutive chunks together, up to this many rows.
VALIDATION_ROWS = 10_000


@stage_task(name="validate", task_run_name="validate-chunks-{first}-{last}")
def validate_chunks(rows: list[dict[str, Any]], first: int, last: int) -> int:
    """Great Expectations over the rows of chunks ``first`` to ``last``, checked together;
    raises ValidationFailed on any failed expectation."""
    return validate_items(rows, batch_name=f"chunks_{first}-{last}", distinct_problems=True)


# Every read of the lake opens each file of a table it names, so the items of consecutive chunks
# are stored together, up to this many rows a file: a 200,000-item sweep's 200 item files made each
# later read of the items (the stream's, the Finisher's) pay for 200 files (bench/results.md, "files").
STORE_ROWS = 10_000


@stage_task(name="store-items", task_run_name="store-items-chunks-{first}-{last}")
def store_items_chunks(lake: Lake, rows: pa.Table, first: int, last: int) -> int:
    """Write the items of chunks ``first`` to ``last`` (a table of the ``items`` schema) that the
    lake does not hold yet (items are content-addressed), as one file."""
    return write_new_items(lake, rows)


@stage_task(name="call-chunk", task_run_name="call-{model}-chunk-{index}")
def call_chunk(lake: Lake, rows: list[dict[str, Any]], model: str, cfg: Config, run_id: str, index: int) -> CallStats:
    """Every trial of the chunk on one model; only ledger misses are sent."""
    total = sum(len(step_plan(r)) for r in rows) * cfg.sweep.samples
    with progress.stage(f"call {model} chunk {index}", total) as advance:
        return run_calls(rows, model, cfg.model(model), run_id, lake, cfg.sweep.samples, advance, cfg.sweep)


@stage_task(name="parse", task_run_name="parse-{model}-chunk-{index}")
def parse_chunk(lake: Lake, selection: Selection, model: str, index: int | str) -> StageStats:
    """Parse the chunk's new responses."""
    with progress.stage(f"parse {model} chunk {index}", 1) as advance:
        stats = parse_responses(lake, selection)
        advance(1)
    return stats


@stage_task(name="score", task_run_name="score-{model}-chunk-{index}")
def score_chunk(lake: Lake, selection: Selection, run_id: str, model: str, index: int | str) -> StageStats:
    """Score the chunk's trials."""
    with progress.stage(f"score {model} chunk {index}", 1) as advance:
        stats = score_trials(lake, selection, run_id)
        advance(1)
    return stats


@stage_task(name="call", task_run_name="call-{model}")
async def call_model(stream: ModelStream, chunks: Chunks, model: str) -> CallStats:
    """Every chunk of the sweep on one model, as one stream of requests."""
    return await stream.run(chunks)


def finish_unit(lake: Lake, rows: Sequence[dict[str, Any]], model: str, run_id: str, index: int | str) -> None:
    """Parse and score what one model answered for one chunk (or several: ``index`` then names
    them, :func:`chunk_label`, and ``rows`` holds their items)."""
    selection = Selection(run_ids=(run_id,), models=(model,), item_ids=tuple(r["item_id"] for r in rows))
    parse_chunk(lake, selection, model, index)
    score_chunk(lake, selection, run_id, model, index)


def chunk_label(indices: Sequence[int]) -> str:
    """The chunk numbers of a task run's name: runs of consecutive ones as ``first-last``, in
    order, comma-separated (``[9, 3, 4]``: ``3-4,9``); chunks finish in any order."""
    runs: list[list[int]] = []
    for i in sorted(set(indices)):
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


# A model's finished chunks are parsed and scored together. A chunk's parse and score cost about
# what their queries cost whatever the chunk's size: each query opens every data file of the
# tables it reads (request, response and item ids are hashes, so no file's statistics exclude
# any), 1.1-1.4 s of CPU for the pair on a 200,000-item lake for 1,000 items, 1.4-1.6 s for 10,000
# (bench/results.md, "chunk-files"), and each is a Prefect task run. So a model's chunks wait
# FINISH_RATIO times as long as the last batch took (at most FINISH_SECONDS: the Finisher spends
# about a tenth of its time on what a batch costs whatever its size, and a chunk waits little on a
# small lake), or until FINISH_ITEMS items wait; closing finishes every one.
FINISH_RATIO = 10.0
FINISH_SECONDS = 30.0
FINISH_ITEMS = 10_000


class Finisher:
    """A thread that parses and scores the (model, chunk)s whose calls are done while the calls go
    on, a model's chunks together (``FINISH_RATIO``, ``FINISH_SECONDS``, ``FINISH_ITEMS``; a
    ``ratio`` of 0 makes every chunk wait ``wait``). Its queue holds chunk numbers only, so the
    calls never wait for it; the thread runs in the caller's context, so its task runs belong to
    the sweep's flow run."""

    def __init__(self, lake: Lake, run_id: str, chunks: Sequence[Sequence[dict[str, Any]]],
                 on_done: Callable[[str], None], wait: float = FINISH_SECONDS, items: int = FINISH_ITEMS,
                 ratio: float = FINISH_RATIO):
        self.lake, self.run_id, self.chunks, self.on_done = lake, run_id, chunks, on_done
        self.wait, self.items, self.ratio = wait, items, ratio
        self.pause = 0.0 if ratio else wait  # how long a model's first waiting chunk waits now
        self.queue: queue.Queue[tuple[str, int] | None] = queue.Queue()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=contextvars.copy_context().run, args=(self._loop,),
                                       name="parse-score", daemon=True)
        self.thread.start()

    def took(self, seconds: float) -> None:
        """A batch took ``seconds``: the next chunks wait ``ratio`` times that, ``wait`` at most."""
        if self.ratio:
            self.pause = min(self.wait, self.ratio * seconds)

    def chunk_done(self, model: str, index: int) -> None:
        """Queue a finished (model, chunk) for parsing and scoring."""
        self.queue.put((model, index))

    def _loop(self) -> None:
        waiting: dict[str, tuple[float, list[int]]] = {}  # per model: when its first chunk came, its chunks
        closing = False
        while not closing:
            due = min((since + self.pause for since, _ in waiting.values()), default=None)
            try:
                unit = self.queue.get(timeout=None if due is None else max(0.0, due - time.monotonic()))
            except queue.Empty:
                unit = ()  # a model's first chunk has waited long enough
            if unit is None:
                closing = True
            elif unit:
                model, index = unit
                waiting.setdefault(model, (time.monotonic(), []))[1].append(index)
            for model, (since, indices) in list(waiting.items()):
                size = sum(len(self.chunks[i]) for i in indices)
                if closing or size >= self.items or time.monotonic() >= since + self.pause:
                    del waiting[model]
                    self._finish(model, indices)

    def _finish(self, model: str, indices: list[int]) -> None:
        if self.error is not None:  # after a failure, units are left for the next sweep's rescore
            return
        rows = [row for i in indices for row in self.chunks[i]]
        label = chunk_label(indices)
        started = time.monotonic()
        try:
            finish_unit(self.lake, rows, model, self.run_id, label)
            self.took(time.monotonic() - started)
            for _ in indices:
                self.on_done(model)
        except BaseException as exc:  # noqa: BLE001 - raised by close(), in the flow's thread
            self.error = exc

    def close(self) -> None:
        """Finish every queued unit, stop the thread, and raise the first error it met."""
        self.queue.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error


def artifact_key(model: str) -> str:
    """The key of a model's progress artifact (Prefect keys: lower-case letters, digits, dashes)."""
    return "progress-" + re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")


def stream_sweep(lake: Lake, chunks: Sequence[Sequence[dict[str, Any]]], cfg: Config, run_id: str,
                 on_done: Callable[[str], None] = lambda model: None) -> dict[str, CallStats]:
    """Every model on every chunk: hosted models called at the same time, embedded ones in turn,
    each chunk parsed and scored as soon as a model has answered it (``on_done(model)`` then).
    Returns each model's call stats; a budget that stopped a model does not raise here."""
    models = cfg.sweep.models
    budgets = Budget.for_models(lake, run_id, cfg.sweep.max_cost_usd, {m: cfg.model(m).max_cost_usd for m in models})
    indexed = list(enumerate(chunks))
    per_model = sum(len(step_plan(r)) for rows in chunks for r in rows) * cfg.sweep.samples
    finisher = Finisher(lake, run_id, chunks, on_done)
    try:
        with contextlib.ExitStack() as bars:
            streams = [
                (ModelStream(m, cfg.model(m), run_id, lake, budgets[m], cfg.sweep, cfg.sweep.samples,
                             bars.enter_context(progress.stage(f"call {m}", per_model)),
                             lambda index, m=m: finisher.chunk_done(m, index)), indexed)
                for m in models
            ]
            stats = asyncio.run(run_streams(streams, lambda s, c: call_model(s, c, s.name)))
    finally:
        finisher.close()
    return dict(zip(models, stats))


def run_unit(lake: Lake, rows: list[dict[str, Any]], model: str, cfg: Config, run_id: str, index: int) -> CallStats:
    """One model on one chunk: call the model, then parse and score what it answered."""
    stats = call_chunk(lake, rows, model, cfg, run_id, index)
    finish_unit(lake, rows, model, run_id, index)
    if stats.budget:
        raise BudgetExceeded(stats.budget)  # after parse and score: what was answered counts
    return stats
