"""The ``rescore`` flow: re-parse and re-score stored responses with the current parser and scorer.

No model is called: the flow reads responses from the lake (the ledger), and the parse and score
stages write new rows only where the current parser or scorer version has none yet (derived data
is versioned, ARCHITECTURE §3). The selection is any combination of runs, models, suites and a
start date (requests made on or after it). The flow records itself as a run of kind ``rescore``;
the ``score_changes`` view then shows which trials' scores changed.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, Sequence

import duckdb
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NONE
from prefect.runtime import flow_run

from tasks.config import load_config
from tasks.records import canonical_json
from tasks.score import StageStats, parse_stage, score_stage
from tasks.selection import Selection
from tasks.store import build_catalog, now_utc, read, write_rows


@task(name="reparse", cache_policy=NONE)
def reparse_stage(lake: str, selection: Selection) -> StageStats:
    """Parse the selection's responses that lack a parse of the current parser version."""
    return parse_stage(lake, selection)


@task(name="rescore", cache_policy=NONE)
def rescore_stage(lake: str, selection: Selection, run_id: str) -> StageStats:
    """Score the selection's trials that lack a score of the current scorer version."""
    return score_stage(lake, selection, run_id)


def selection_of(runs: Sequence[str] = (), models: Sequence[str] = (), suites: Sequence[str] = (),
                 since: dt.date | None = None) -> Selection:
    """The stored trials to rescore (nothing given: every trial in the warehouse)."""
    return Selection(run_ids=tuple(runs), models=tuple(models), suites=tuple(suites), since=since)


def changes(lake: str, run_id: str) -> list[dict[str, Any]]:
    """The score changes this rescore run made (one row per trial whose status or answer changed)."""
    return read(
        lake,
        """SELECT trial_id, model, suite, task, variant, prompt_style, gold,
                  previous_scorer_version, scorer_version, previous_status, status,
                  previous_predicted, predicted, flipped
           FROM score_changes WHERE run_id = ? ORDER BY model, suite, task, trial_id""",
        [run_id],
    )


def _run_row(run_id: str, selection: Selection, status: str, started: dt.datetime, **counts: Any) -> dict[str, Any]:
    described = {
        "run_ids": list(selection.run_ids), "models": list(selection.models), "suites": list(selection.suites),
        "since": selection.since.isoformat() if selection.since else None,
    }
    return {
        "run_id": run_id, "flow_run_id": str(flow_run.get_id() or ""), "kind": "rescore", "status": status,
        "started_at": started, "updated_at": now_utc(), "config": canonical_json({"selection": described}),
        "models": canonical_json(list(selection.models)), **counts,
    }


@flow(name="rescore", log_prints=False)
def rescore(config_path: str | None = None, runs: Sequence[str] = (), models: Sequence[str] = (),
            suites: Sequence[str] = (), since: dt.date | None = None,
            overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Re-parse and re-score the selected stored responses; returns the summary with the changes."""
    logger = get_run_logger()
    cfg = load_config(config_path, overrides)
    lake = cfg.lake_path
    selection = selection_of(runs, models, suites, since)
    run_id = f"{now_utc():%Y%m%dT%H%M%S}-rescore-{uuid.uuid4().hex[:8]}"
    started = now_utc()
    write_rows(lake, "runs", [_run_row(run_id, selection, "running", started)])
    parsed = reparse_stage(lake, selection)
    scored = rescore_stage(lake, selection, run_id)
    changed = changes(lake, run_id)
    n_flipped = sum(1 for c in changed if c["flipped"])
    message = (f"{parsed.written} of {parsed.examined} responses re-parsed, {scored.written} of "
               f"{scored.examined} trials re-scored, {len(changed)} changed, {n_flipped} flipped correctness")
    write_rows(lake, "runs", [_run_row(run_id, selection, "completed", started, n_requests=parsed.examined,
                                       n_sent=0, n_cached=0, message=message)])
    catalog = cfg.warehouse_path / "invarbench.duckdb"
    try:
        build_catalog(catalog, lake)
    except duckdb.IOException as exc:
        logger.warning("catalog %s not rebuilt (%s); the lake is complete", catalog, exc)
    logger.info(message)
    return {
        "run_id": run_id, "flow_run_id": str(flow_run.get_id() or ""), "lake": lake,
        "responses": parsed.examined, "parses_written": parsed.written,
        "trials": scored.examined, "scores_written": scored.written,
        "changed": changed, "flipped": n_flipped, "message": message,
    }
