"""Scale-out: a sweep's (model, chunk) units as flow runs that any worker on the pool may run.

``sweep(dispatch=True)`` generates, validates and stores the items as usual, then creates one
flow run of the ``sweep-unit/unit`` deployment per unit (:func:`dispatch_units`). A unit reads
its items from the lake by id, and runs call → parse → score exactly as a local sweep does
(:func:`flows.stages.run_unit`, which streams the unit's requests as a local sweep streams a
model's: :mod:`tasks.models.stream`). Each request belongs to exactly one unit and the ledger
anti-join sends only what has no ``ok`` response yet, so the workers together store one response
per request, also when a unit is run again after a crash.

Workers on several machines must see the same lake (``warehouse.lake`` on shared storage) and the
same configuration file path (relative to the repository checkout, or on shared storage). The
parent reads the run's totals from the lake, not from the units' results: those stay on the
machine that computed them (:func:`tasks.models.call.run_totals`).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from typing import Any, Callable, Sequence

from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    FlowRunFilter,
    FlowRunFilterId,
    FlowRunFilterState,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import TERMINAL_STATES, FlowRun, StateType
from prefect.deployments import run_deployment

from flows.stages import run_unit
from tasks.config import load_config
from tasks.environment import apply_defaults
from tasks.errors import ConfigError
from tasks.lake.lake import Lake
from tasks.models import embedded
from tasks.models.call import CallStats, run_totals
from tasks.runs import stopping

UNIT_DEPLOYMENT = "sweep-unit/unit"
POLL_SECONDS = 2.0


def require_server() -> None:
    """Raise ConfigError unless a Prefect server is configured: ephemeral mode has no workers."""
    if not os.environ.get("PREFECT_API_URL"):
        raise ConfigError("dispatch needs a Prefect server and workers, but PREFECT_API_URL is not set; "
                          "see the README, section \"Operations\" (make server, make deploy, make worker)")


def load_items(lake: Lake, item_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The item rows of ``item_ids``, in that order; an id missing from the lake is an error."""
    rows = lake.read("SELECT * FROM items WHERE item_id IN (SELECT unnest(?::VARCHAR[]))", [list(item_ids)])
    by_id = {r["item_id"]: r for r in rows}
    missing = [i for i in item_ids if i not in by_id]
    if missing:
        raise RuntimeError(f"{len(missing)} item(s) of this chunk are not in the lake {lake} (first: {missing[0]}); "
                           "workers on several machines need warehouse.lake on shared storage")
    return [by_id[i] for i in item_ids]


@flow(name="sweep-unit", log_prints=False)
@stopping.stoppable
def sweep_unit(config_path: str | None, overrides: dict[str, Any] | None, run_id: str, model: str,
                index: int, item_ids: list[str]) -> dict[str, Any]:
    """One (model, chunk) unit of a dispatched sweep: call, parse and score; returns the call stats.

    Fails (after storing what it has) when an embedded model's worker process died during it.
    """
    apply_defaults()
    cfg = load_config(config_path, overrides)
    stopping.configure(cfg.sweep.stop_grace_s, cfg.sweep.cancel_poll_s)
    lake = Lake.of(cfg)
    rows = load_items(lake, item_ids)
    crashes_before = len(embedded.crashes())
    try:
        stats = run_unit(lake, rows, model, cfg, run_id, index)
    finally:
        embedded.stop_all()
    embedded.check_crashes(crashes_before)
    stopping.raise_if_requested()  # what it answered is stored; the flow run ends Cancelled
    return asdict(stats)


def _runs(ids: list[Any], states: set[StateType]) -> FlowRunFilter:
    return FlowRunFilter(id=FlowRunFilterId(any_=ids), state=FlowRunFilterState(type=FlowRunFilterStateType(any_=list(states))))


def wait_for(ids: list[Any], on_done: Callable[[int], None]) -> list[FlowRun]:
    """Poll until every flow run of ``ids`` is final, calling ``on_done(n)`` whenever the number of
    final ones changes; returns (up to 20 of) those that did not complete."""
    if not ids:
        return []
    done = -1
    cancelled = False
    with get_client(sync_client=True) as client:
        while True:
            if stopping.requested() and not cancelled:
                # The units stop as this run does: running ones get their grace, queued ones never start.
                stopping.cancel_flow_runs(client, ids)
                cancelled = True
            # Counted, not listed: the API lists at most 200 runs per call, a sweep may have more units.
            final = client.count_flow_runs(flow_run_filter=_runs(ids, TERMINAL_STATES))
            if final != done:
                done = final
                on_done(done)
            if done == len(ids):
                return client.read_flow_runs(flow_run_filter=_runs(ids, TERMINAL_STATES - {StateType.COMPLETED}),
                                             limit=20)
            time.sleep(POLL_SECONDS)


def dispatch_units(lake: Lake, config_path: str | None, overrides: dict[str, Any] | None, run_id: str,
                   units: list[tuple[str, int]], chunks: list[list[dict[str, Any]]],
                   on_done: Callable[[int], None]) -> dict[str, CallStats]:
    """Create one ``sweep-unit`` flow run per unit, wait for all, and return the run's totals per model.

    Raises RuntimeError naming the units whose flow run did not complete.
    """
    runs = [
        run_deployment(
            UNIT_DEPLOYMENT, timeout=0, flow_run_name=f"{model}-chunk-{i}",
            # The same unit of the same run is one flow run, even if this loop is retried.
            idempotency_key=f"{run_id}/{model}/{i}",
            parameters={"config_path": config_path, "overrides": overrides, "run_id": run_id, "model": model,
                        "index": i, "item_ids": [r["item_id"] for r in chunks[i]]},
        )
        for model, i in units
    ]
    failed = wait_for([r.id for r in runs], on_done)
    if failed and not stopping.requested():  # a stopped sweep ends `cancelled` with what its units did
        # The state's message carries the unit's error (a dead embedded model names its signal).
        raise RuntimeError("unit flow run(s) did not complete: " + "; ".join(
            f"{r.name} ({r.state_name}{': ' + r.state.message if r.state and r.state.message else ''})"
            for r in failed))
    return run_totals(lake, run_id)
