"""The ``sweep`` flow: generate → dedupe/validate → call → parse → score → store, per batch.

Prefect only orchestrates: each stage is a task run per batch (up to ``sweep.batch_size``
items), never per item. Nothing reaches the lake before every batch has passed validation, so a
failing expectation leaves the lake untouched.
"""

from __future__ import annotations

import uuid
from typing import Any, Sequence

import duckdb
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NONE
from prefect.runtime import flow_run

from tasks import progress
from tasks.call import CallStats, run_calls, step_plan
from tasks.config import Config, load_config
from tasks.generate import generate_task, item_row
from tasks.records import canonical_json
from tasks.score import StageStats, parse_stage, score_stage
from tasks.selection import Selection
from tasks.store import build_catalog, connect, now_utc, query, write_rows
from tasks.validate import dedupe, validate_items


def chunks(rows: Sequence[Any], size: int) -> list[list[Any]]:
    """``rows`` in consecutive batches of at most ``size``."""
    return [list(rows[i : i + size]) for i in range(0, len(rows), size)]


@task(name="generate", task_run_name="generate-{suite}.{task_name}", cache_policy=NONE)
def generate_stage(suite: str, task_name: str, params: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    """Items of one task as lake rows."""
    dataset, items = generate_task(suite, task_name, params, seed)
    return [item_row(item, dataset) for item in items]


@task(name="validate", task_run_name="validate-batch-{index}", cache_policy=NONE)
def validate_stage(rows: list[dict[str, Any]], index: int) -> int:
    """Great Expectations over one batch; raises ValidationFailed on any failed expectation."""
    return validate_items(rows, batch_name=f"batch_{index}")


@task(name="store-items", task_run_name="store-items-batch-{index}", cache_policy=NONE)
def store_items_stage(lake: str, rows: list[dict[str, Any]], index: int) -> int:
    """Write the batch's items that the lake does not hold yet (items are content-addressed)."""
    con = connect(lake)
    try:
        known = {r["item_id"] for r in query(
            con, "SELECT DISTINCT item_id FROM raw_items WHERE item_id IN (SELECT unnest(?::VARCHAR[]))",
            [[r["item_id"] for r in rows]])}
    finally:
        con.close()
    new = [r for r in rows if r["item_id"] not in known]
    write_rows(lake, "items", new)
    return len(new)


@task(name="call", task_run_name="call-{model}-batch-{index}", cache_policy=NONE)
def call_stage(lake: str, rows: list[dict[str, Any]], model: str, cfg: Config, run_id: str, index: int) -> CallStats:
    """Every trial of the batch on one model; only ledger misses are sent."""
    total = sum(len(step_plan(r)) for r in rows) * cfg.sweep.samples
    with progress.stage(f"call {model} batch {index}", total) as advance:
        return run_calls(rows, model, cfg.model(model), run_id, lake, cfg.sweep.samples, advance)


@task(name="parse", task_run_name="parse-{model}-batch-{index}", cache_policy=NONE)
def parse_batch(lake: str, selection: Selection, model: str, index: int) -> StageStats:
    """Parse the batch's new responses."""
    return parse_stage(lake, selection)


@task(name="score", task_run_name="score-{model}-batch-{index}", cache_policy=NONE)
def score_batch(lake: str, selection: Selection, run_id: str, model: str, index: int) -> StageStats:
    """Score the batch's trials."""
    return score_stage(lake, selection, run_id)


def _run_row(run_id: str, cfg: Config, status: str, **counts: Any) -> dict[str, Any]:
    now = now_utc()
    return {
        "run_id": run_id, "flow_run_id": str(flow_run.get_id() or ""), "kind": "sweep", "status": status,
        "started_at": counts.pop("started_at", now), "updated_at": now,
        "config": canonical_json(cfg.resolved()), "models": canonical_json(cfg.sweep.models), **counts,
    }


def headline(lake: str, run_id: str) -> list[dict[str, Any]]:
    """Per model, suite, task and bin: accuracy of this run's trials (all variants together)."""
    con = connect(lake)
    try:
        return query(
            con,
            """
            SELECT ts.model, ts.suite, ts.task, ts.bin, min(ts.bin_lo) AS bin_lo,
                   count(*) FILTER (WHERE ts.status <> 'error') AS n_scored,
                   count(*) FILTER (WHERE ts.status = 'correct') AS n_correct,
                   count(*) FILTER (WHERE ts.status = 'unparsable') AS n_unparsable,
                   count(*) FILTER (WHERE ts.status = 'error') AS n_error,
                   round(count(*) FILTER (WHERE ts.status = 'correct')
                         / nullif(count(*) FILTER (WHERE ts.status <> 'error'), 0), 3) AS accuracy
            FROM trial_scores ts JOIN (SELECT DISTINCT trial_id FROM run_trials WHERE run_id = ?) r USING (trial_id)
            GROUP BY ALL ORDER BY ts.model, ts.suite, ts.task, bin_lo
            """,
            [run_id],
        )
    finally:
        con.close()


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """A markdown table of ``rows`` (for the Prefect artifact)."""
    if not rows:
        return "_no scored trials_"
    cols = [c for c in rows[0] if c != "bin_lo"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join("" if r[c] is None else str(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


@flow(name="sweep", log_prints=False)
def sweep(config_path: str | None = None, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run a sweep: every configured task on every configured model. Returns the run summary."""
    logger = get_run_logger()
    cfg = load_config(config_path, overrides)
    lake, size = cfg.lake_path, cfg.sweep.batch_size
    run_id = f"{now_utc():%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"

    rows: list[dict[str, Any]] = []
    for suite, task_name in cfg.selected_tasks():
        rows.extend(generate_stage(suite, task_name, cfg.task_params(suite, task_name), cfg.sweep.seed))
    rows, dropped = dedupe(rows)
    batches = chunks(rows, size)
    for i, batch in enumerate(batches):
        validate_stage(batch, i)
    logger.info("generated %d items (%d duplicates dropped) in %d batch(es)", len(rows), dropped, len(batches))

    started = now_utc()
    write_rows(lake, "runs", [_run_row(run_id, cfg, "running", started_at=started, n_items=len(rows))])
    for i, batch in enumerate(batches):
        store_items_stage(lake, batch, i)

    totals = CallStats()
    for model in cfg.sweep.models:
        for i, batch in enumerate(batches):
            totals.add(call_stage(lake, batch, model, cfg, run_id, i))
            selection = Selection(run_ids=(run_id,), models=(model,), item_ids=tuple(r["item_id"] for r in batch))
            parse_batch(lake, selection, model, i)
            score_batch(lake, selection, run_id, model, i)

    catalog = cfg.warehouse_path / "invarbench.duckdb"
    try:
        build_catalog(catalog, lake)
    except duckdb.IOException as exc:
        # A user's DuckDB shell holding the catalog must not fail a finished sweep: the lake is
        # complete, and the views only change when sql/ does.
        logger.warning("catalog %s not rebuilt (%s); the lake is complete", catalog, exc)
    table = headline(lake, run_id)
    summary = {
        "run_id": run_id, "flow_run_id": str(flow_run.get_id() or ""), "items": len(rows),
        "requests": totals.requests, "sent": totals.sent, "cached": totals.cached, "errors": totals.errors,
        "warehouse": str(cfg.warehouse_path), "catalog": str(catalog), "lake": lake, "headline": table,
    }
    write_rows(lake, "runs", [_run_row(
        run_id, cfg, "completed", started_at=started, n_items=len(rows), n_requests=totals.requests,
        n_sent=totals.sent, n_cached=totals.cached, n_errors=totals.errors)])
    create_markdown_artifact(
        key="sweep-summary",
        markdown=(f"# invarbench sweep {run_id}\n\n{len(rows)} items, {totals.requests} requests "
                  f"({totals.sent} sent, {totals.cached} from the ledger, {totals.errors} errors).\n\n"
                  f"Warehouse: `{cfg.warehouse_path}`\n\n{markdown_table(table)}\n"),
        description=f"invarbench sweep {run_id}",
    )
    return summary
