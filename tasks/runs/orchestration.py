"""Prefect where a flow run is there, plain calls where none is.

A sweep whose every answer is in the ledger runs without Prefect (``invarbench sweep`` decides,
:mod:`flows.cli.sweep`): importing Prefect and booting its temporary server would take most of its
time. The sweep's stages are therefore plain functions marked with :func:`stage_task`: inside a
flow run each call is a Prefect task run, outside one a plain call; nothing here imports Prefect
until a flow run needs it.
"""

from __future__ import annotations

import functools
import inspect
import logging
import string
import sys
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

log = logging.getLogger("invarbench")


def in_flow_run() -> bool:
    """Whether this code runs inside a Prefect flow run (never, while Prefect is not imported)."""
    if "prefect" not in sys.modules:
        return False
    from prefect.context import FlowRunContext

    return FlowRunContext.get() is not None


def run_logger() -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
    """The flow run's logger (its lines show in the Prefect UI) inside a flow run, else the
    ``invarbench`` logger."""
    if in_flow_run():
        from prefect import get_run_logger

        return get_run_logger()  # type: ignore[return-value]
    return log


def stage_task(name: str, task_run_name: str | None = None) -> Callable[[F], F]:
    """Mark ``fn`` as a stage: inside a flow run each call is a Prefect task run named
    ``task_run_name`` (formatted from the call's arguments), without caching; outside one it is a
    plain call. ``fn.fn`` is the plain function either way.

    Every argument the run name does not use is passed in Prefect's ``quote``: Prefect otherwise
    walks each parameter, every row dict and each of its strings, twice per task run (looking for
    futures and for lineage), about 400 visits per item per stage; the function receives the
    plain value either way.
    """
    named = {field for _, field, _, _ in string.Formatter().parse(task_run_name or "") if field}

    def wrap(fn: F) -> F:
        signature = inspect.signature(fn)
        made: list[Any] = []  # the Prefect task, made once a flow run first calls the stage

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            if not in_flow_run():
                return fn(*args, **kwargs)
            from prefect import task
            from prefect.cache_policies import NONE
            from prefect.utilities.annotations import quote

            if not made:
                made.append(task(name=name, task_run_name=task_run_name, cache_policy=NONE)(fn))
            bound = signature.bind(*args, **kwargs).arguments
            return made[0](**{k: v if k in named else quote(v) for k, v in bound.items()})

        call.fn = fn  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return wrap
