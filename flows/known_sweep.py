"""A sweep of known work: one whose plan (tasks.runs.plan) an earlier completed run had, with every
request of that run answered in the ledger as it saw it. ``invarbench sweep`` records it from that
run in DuckDB instead of generating its items, hashing its trials and streaming its requests
(bench/results.md, "Known work by plan key"); the rows stored are those the ordinary path stores.

What it does, in order: the run's ``running`` row (after the stale-run check, as any sweep), the
parse and score stages over the template's requests, which are the run's (the ordinary functions:
with nothing new to parse or score they write nothing, and otherwise exactly what the ordinary
path would, stamped with the run's id), the template's requests recorded as the run's (one
INSERT … SELECT), the catalog, the summary and its ``completed`` row. No item is generated or validated, no model is called, Prefect is not imported.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import duckdb

from flows.sweep_run import start_run, summarize
from tasks import progress
from tasks.config import Config
from tasks.errors import ConfigError
from tasks.lake.lake import Lake
from tasks.models.call import CallStats, run_totals
from tasks.models.routes import RateLimiter
from tasks.models.spool import spool_dir
from tasks.records import now_utc
from tasks.runs import lifecycle, stopping
from tasks.runs.plan import (
    Template,
    find_template,
    plan_columns,
    plan_key,
    record_requests,
)
from tasks.scoring.score import parse_responses, score_trials
from tasks.scoring.selection import Selection
from tasks.suites.base import GeneratorError


def known_template(cfg: Config) -> Template | None:
    """The run this sweep can be recorded from (:func:`tasks.runs.plan.find_template`), read
    without writing; None when there is none, when a killed sweep left answers in the spool (the
    ordinary path stores them first, and they may change the ledger) or the lake does not read."""
    lake = Lake.of(cfg, read_only=True)
    if not lake.has_catalog() or any(spool_dir(lake).glob("*.jsonl")):
        return None
    try:
        return find_template(lake, plan_key(cfg))
    except (duckdb.Error, ConfigError, GeneratorError):
        # a file that does not read, a parameter only a generator checks: the ordinary path says so
        return None


def per_model_stats(cfg: Config, lake: Lake, run_id: str, elapsed_s: float) -> dict[str, CallStats]:
    """Each model's CallStats as the stream gives them for requests all from the ledger: the run's
    totals read back (:func:`tasks.models.call.run_totals`: every request cached), its time, and
    the adaptive concurrency where it stands (nothing was sent to move it)."""
    totals = run_totals(lake, run_id)
    stats = {}
    for m in cfg.sweep.models:
        limiter = RateLimiter.for_model(m, cfg.model(m))
        stats[m] = dataclasses.replace(totals.get(m, CallStats()), elapsed_s=elapsed_s, concurrency={
            m: {"min": limiter.limit, "final": limiter.limit, "throttled": 0}})
    return stats


def record_known_sweep(cfg: Config, template: Template) -> dict[str, Any]:
    """Record the sweep of ``cfg`` from ``template`` (see the module's docstring); returns the run
    summary, as :func:`flows.sweep_run.perform_sweep` does."""
    started = time.monotonic()
    stopping.configure(cfg.sweep.stop_grace_s, cfg.sweep.cancel_poll_s)
    run = start_run(cfg, lifecycle.new_run_id(), template.n_items,
                    plan_columns(template.plan_key, template.dropped))
    # The template's requests are the run's (but for the run id): the parse and score stages select
    # them by the template's id, before they are copied, while the materialised views the score
    # stage reads are still current (a copy of requests changes their sources), and stamp what
    # they write with the run's id, as for its own requests.
    lake, selection = Lake.of(cfg), Selection(run_ids=(template.run_id,))
    with run:  # an exception ends the run failed or cancelled, as any sweep's
        with progress.stage("record requests from the ledger", 3) as advance:
            parse_responses(lake, selection)
            advance(1)
            score_trials(lake, selection, run.run_id)
            advance(1)
            record_requests(lake, template, run.run_id, now_utc())
            advance(1)
        per_model = per_model_stats(cfg, lake, run.run_id, time.monotonic() - started)
        totals = CallStats.total(per_model.values())
        run.count(n_requests=totals.requests, n_sent=0, n_cached=totals.cached, n_errors=0)
        stopping.raise_if_requested()  # the run ends `cancelled`
        with lifecycle.rebuilding_catalog(cfg) as catalog:  # the summary read while the catalog is rebuilt
            summary = summarize(cfg, run, template.n_items, template.dropped, per_model, totals, catalog)
        run.finish(report_path=summary["report"])
    return summary
