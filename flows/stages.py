"""The sweep's Prefect tasks, one task run per batch, shared by :mod:`flows.sweep` (a sweep in
one process) and :mod:`flows.batch` (its (model, batch) units as flow runs on workers).

Each task is named for what it does to a batch (``validate_batch``, ``call_batch``, ...); the
plain functions behind them (:mod:`tasks`) carry no suffix. :func:`run_unit` is one model on one
batch: call, then parse and score what it answered.

Callers pass a batch's rows (and a selection's item ids) wrapped in Prefect's ``quote``: Prefect
otherwise walks every task parameter, each row dict and each of its strings, twice per task run
(looking for futures to resolve and for lineage), about 400 visits per item per stage; the
tasks receive the plain value either way.
"""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NONE
from prefect.utilities.annotations import quote

from tasks.config import Config, ConfigError
from tasks.items.generate import generate_task, item_row
from tasks.items.validate import validate_items
from tasks.lake.compact import compact_written
from tasks.lake.store import read, write_new_items
from tasks.models.call import CallStats, run_calls, step_plan
from tasks.models.cost import BudgetExceeded
from tasks.runs import progress
from tasks.scoring.score import StageStats, parse_responses, score_trials
from tasks.scoring.selection import Selection


@task(name="generate", task_run_name="generate-{suite}.{task_name}", cache_policy=NONE)
def generate_items(suite: str, task_name: str, params: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    """Items of one task as lake rows."""
    dataset, items = generate_task(suite, task_name, params, seed)
    return [item_row(item, dataset) for item in items]


@task(name="load-datasets", cache_policy=NONE)
def load_datasets(lake: str, datasets: list[str]) -> list[dict[str, Any]]:
    """Item rows of stored datasets (imported families), selected through their memberships
    (``dataset_items``), each item once; an unknown id is a ConfigError."""
    check_datasets(lake, datasets)
    return read(lake, "SELECT * FROM items WHERE item_id IN (SELECT item_id FROM dataset_items "
                "WHERE dataset_id IN (SELECT unnest(?::VARCHAR[]))) ORDER BY item_id", [datasets])


def check_datasets(lake: str, datasets: list[str]) -> None:
    """Raise ConfigError naming the ids of ``datasets`` that no stored item belongs to."""
    found = {r["dataset_id"] for r in read(
        lake, "SELECT DISTINCT dataset_id FROM dataset_items WHERE dataset_id IN (SELECT unnest(?::VARCHAR[]))",
        [datasets])}
    missing = sorted(set(datasets) - found)
    if missing:
        raise ConfigError(f"sweep.datasets: no stored dataset {', '.join(missing)}; see `invarbench sql "
                          f"\"SELECT DISTINCT dataset_id FROM dataset_items\"`")


@task(name="validate", task_run_name="validate-batch-{index}", cache_policy=NONE)
def validate_batch(rows: list[dict[str, Any]], index: int) -> int:
    """Great Expectations over one batch; raises ValidationFailed on any failed expectation."""
    return validate_items(rows, batch_name=f"batch_{index}", distinct_problems=True)


@task(name="store-items", task_run_name="store-items-batch-{index}", cache_policy=NONE)
def store_items_batch(lake: str, rows: list[dict[str, Any]], index: int) -> int:
    """Write the batch's items that the lake does not hold yet (items are content-addressed)."""
    return write_new_items(lake, rows)


@task(name="call", task_run_name="call-{model}-batch-{index}", cache_policy=NONE)
def call_batch(lake: str, rows: list[dict[str, Any]], model: str, cfg: Config, run_id: str, index: int) -> CallStats:
    """Every trial of the batch on one model; only ledger misses are sent."""
    total = sum(len(step_plan(r)) for r in rows) * cfg.sweep.samples
    with progress.stage(f"call {model} batch {index}", total) as advance:
        return run_calls(rows, model, cfg.model(model), run_id, lake, cfg.sweep.samples, advance, cfg.sweep)


@task(name="parse", task_run_name="parse-{model}-batch-{index}", cache_policy=NONE)
def parse_batch(lake: str, selection: Selection, model: str, index: int) -> StageStats:
    """Parse the batch's new responses."""
    with progress.stage(f"parse {model} batch {index}", 1) as advance:
        stats = parse_responses(lake, selection)
        advance(1)
    return stats


@task(name="score", task_run_name="score-{model}-batch-{index}", cache_policy=NONE)
def score_batch(lake: str, selection: Selection, run_id: str, model: str, index: int) -> StageStats:
    """Score the batch's trials."""
    with progress.stage(f"score {model} batch {index}", 1) as advance:
        stats = score_trials(lake, selection, run_id)
        advance(1)
    return stats


def run_unit(lake: str, rows: list[dict[str, Any]], model: str, cfg: Config, run_id: str, index: int) -> CallStats:
    """One model on one batch: call the model, then parse and score what it answered. The unit's
    files are merged when it ends, so that the next units' reads open one file per unit."""
    try:
        stats = call_batch(lake, quote(rows), model, cfg, run_id, index)
        selection = quote(Selection(run_ids=(run_id,), models=(model,), item_ids=tuple(r["item_id"] for r in rows)))
        parse_batch(lake, selection, model, index)
        score_batch(lake, selection, run_id, model, index)
    finally:
        compact_written(lake, final=False)
    if stats.budget:
        raise BudgetExceeded(stats.budget)  # after parse and score: what was answered counts
    return stats
