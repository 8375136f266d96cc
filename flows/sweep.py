"""The ``sweep`` flow: a sweep's run (:mod:`flows.sweep_run`) as a Prefect flow run, its stages as
task runs (:mod:`flows.stages`), stoppable from the Prefect UI or API and by signals."""

from __future__ import annotations

from typing import Any

from prefect import flow

from flows.sweep_run import perform_sweep
from tasks.runs import stopping


@flow(name="sweep", log_prints=False)
@stopping.stoppable
def sweep(config_path: str | None = None, overrides: dict[str, Any] | None = None,
          dispatch: bool = False, select: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """Run a sweep: every configured task on every configured model. Returns the run summary
    (:func:`flows.sweep_run.perform_sweep`)."""
    return perform_sweep(config_path, overrides, dispatch, select)
