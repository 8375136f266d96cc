"""The ``rescore`` flow: re-parse and re-score stored responses with the current parser and scorer.

No model is called: the flow reads responses from the lake (the ledger), and parsing and scoring
write new rows only where the current parser or scorer version has none yet (derived data is
versioned: docs/data-model.md#versioned-parses-and-scores). The selection is any combination of
runs, models, suites and a start date (requests made on or after it). The flow records itself as
a run of kind ``rescore``; the ``score_changes`` view then shows which trials' scores changed.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Sequence

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NONE

from tasks.config import load_config
from tasks.environment import apply_defaults
from tasks.lake.lake import Lake
from tasks.records import canonical_json
from tasks.runs import lifecycle
from tasks.scoring.score import StageStats, parse_responses, score_trials
from tasks.scoring.selection import Selection


@task(name="reparse", cache_policy=NONE)
def reparse_selection(lake: Lake, selection: Selection) -> StageStats:
    """Parse the selection's responses that lack a parse of the current parser version."""
    return parse_responses(lake, selection)


@task(name="rescore", cache_policy=NONE)
def rescore_selection(lake: Lake, selection: Selection, run_id: str) -> StageStats:
    """Score the selection's trials that lack a score of the current scorer version."""
    return score_trials(lake, selection, run_id)


def selection_of(runs: Sequence[str] = (), models: Sequence[str] = (), suites: Sequence[str] = (),
                 since: dt.date | None = None) -> Selection:
    """The stored trials to rescore (nothing given: every trial in the warehouse)."""
    return Selection(run_ids=tuple(runs), models=tuple(models), suites=tuple(suites), since=since)


def changes(lake: Lake, run_id: str) -> list[dict[str, Any]]:
    """The score changes this rescore run made (one row per trial whose status or answer changed)."""
    return lake.read(
        """SELECT trial_id, model, suite, task, variant, prompt_style, gold,
                  previous_scorer_version, scorer_version, previous_status, status,
                  previous_predicted, predicted, flipped
           FROM score_changes WHERE run_id = ? ORDER BY model, suite, task, trial_id""",
        [run_id],
    )


@flow(name="rescore", log_prints=False)
def rescore(config_path: str | None = None, runs: Sequence[str] = (), models: Sequence[str] = (),
            suites: Sequence[str] = (), since: dt.date | None = None,
            overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Re-parse and re-score the selected stored responses; returns the summary with the changes."""
    apply_defaults()
    logger = get_run_logger()
    cfg = load_config(config_path, overrides)
    lake = Lake.of(cfg)
    selection = selection_of(runs, models, suites, since)
    described = {
        "run_ids": list(selection.run_ids), "models": list(selection.models), "suites": list(selection.suites),
        "since": selection.since.isoformat() if selection.since else None,
    }
    with lifecycle.begin(lake, "rescore", config=canonical_json({"selection": described}),
                         models=selection.models) as run:
        parsed = reparse_selection(lake, selection)
        scored = rescore_selection(lake, selection, run.run_id)
        changed = changes(lake, run.run_id)
        n_flipped = sum(1 for c in changed if c["flipped"])
        message = (f"{parsed.written} of {parsed.examined} responses re-parsed, {scored.written} of "
                   f"{scored.examined} trials re-scored, {len(changed)} changed, {n_flipped} flipped correctness")
        run.finish(message, n_requests=parsed.examined, n_sent=0, n_cached=0)
    lifecycle.rebuild_catalog(cfg)
    logger.info(message)
    return {
        "run_id": run.run_id, "flow_run_id": run.flow_run_id, "lake": lake.location,
        "responses": parsed.examined, "parses_written": parsed.written,
        "trials": scored.examined, "scores_written": scored.written,
        "changed": changed, "flipped": n_flipped, "message": message,
    }
