"""The environment defaults that keep every run offline, applied by one explicit call.

litellm reads its price map from the installed package instead of downloading it, and Prefect
sends no analytics. Each entry point calls :func:`apply_defaults` before it loads Prefect or
litellm (the ``invarbench`` CLI, ``python -m flows.deploy``, the embedded model's worker process,
the flows themselves, the test suite, the benchmark); importing a module never changes the
environment. Values already in the environment win.

litellm reads its variables when it is imported, so a module imported outside an entry point
(a notebook, ``python -c``, a test) would still go online: :mod:`tasks.models.llm`, the one
module that imports litellm, imports it under :func:`offline` (the litellm variables in force for
the import only).

``python -m tasks.environment COMMAND ...`` runs ``COMMAND`` with the defaults applied: the
scripts of ``deploy/`` start the Prefect worker and server that way, so the list lives only here.
``python -m tasks.environment -m MODULE ...`` runs a Python module so, in this process, with the
garbage collector paced for a large start-up (:func:`pace_collector`): the sweep's temporary
Prefect server is started that way.
"""

from __future__ import annotations

import contextlib
import gc
import os
import runpy
import sys
from typing import Iterator

from tasks.errors import ConfigError

# What litellm reads when it is imported: its bundled price map and beta-header table instead of
# downloading them, and no other fetch of its own.
LITELLM_DEFAULTS = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_OFFLINE_MODE": "true",
}

DEFAULTS = {
    **LITELLM_DEFAULTS,
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}

# Python collects its youngest objects every 700 allocations by default, and every tenth and
# hundredth collection walks older generations too. A command's start-up imports about 1.1
# million objects (Prefect, litellm, Great Expectations) that live as long as the process: about
# 1,600 collections, 9 of them over everything, a third of those imports' CPU (1.5 of 5 s) and
# 0.4 of the 2.7 s Prefect's server takes to boot (bench/results.md, "The collector at start-up").
# Collecting the youngest every 50,000 makes it about 40, none of them full; garbage cycles are
# still collected, in larger steps.
COLLECTOR_THRESHOLDS = (50_000, 10, 10)
# Whether settle_collector freezes: set by pace_collector, for the process's life.
_freeze_at_run = False


def pace_collector(*, freeze_at_run: bool = True) -> None:
    """Run Python's garbage collector at :data:`COLLECTOR_THRESHOLDS` (for the rest of the
    process). ``freeze_at_run``: :func:`settle_collector` freezes (a command's own process; the
    test suite, which calls commands in its processes, passes False)."""
    global _freeze_at_run
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    _freeze_at_run = freeze_at_run


def settle_collector() -> None:
    """Freeze every object that exists now (``gc.freeze``: no later collection walks them) when
    :func:`pace_collector` asked for it: start-up is over and what it made lives as long as the
    process. Elsewhere (a test calling a command in its own process) nothing: objects alive when
    frozen and dropped later in a cycle would never be collected."""
    if _freeze_at_run:
        gc.freeze()


def thread_count(name: str) -> int | None:
    """The count of threads environment variable ``name`` sets, or None when it is unset or blank.
    A value that is not a whole number of 1 or more raises ConfigError naming the variable."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    if not value.isdecimal() or int(value) < 1:  # isdigit() also takes '²', which int() refuses
        raise ConfigError(f"{name} must be a whole number of threads, 1 or more, not {value!r}")
    return int(value)


def apply_defaults() -> None:
    """Set each of :data:`DEFAULTS` that the environment does not set already."""
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)


@contextlib.contextmanager
def offline(defaults: dict[str, str] = LITELLM_DEFAULTS) -> Iterator[None]:
    """Within the block, each of ``defaults`` that the environment does not set is set; on leaving
    it, those are removed again, so the process environment ends as it was."""
    added = [key for key in defaults if key not in os.environ]
    for key in added:
        os.environ[key] = defaults[key]
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


def main(argv: list[str] | None = None) -> None:
    """Replace this process with ``argv`` (default: the command line) under the defaults; or, for
    ``-m MODULE ARG...``, run that module here as ``python -m`` would, the collector paced too."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args == ["-m"]:
        sys.exit("usage: python -m tasks.environment COMMAND [ARG...] | -m MODULE [ARG...]")
    apply_defaults()
    if args[0] != "-m":
        os.execvp(args[0], args)
    pace_collector()
    sys.argv = args[1:]  # run_module puts the module's path in place of its name, as python -m does
    runpy.run_module(args[1], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
