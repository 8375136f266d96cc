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
"""

from __future__ import annotations

import contextlib
import os
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
    """Replace this process with ``argv`` (default: the command line) under the defaults."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        sys.exit("usage: python -m tasks.environment COMMAND [ARG...]")
    apply_defaults()
    os.execvp(args[0], args)


if __name__ == "__main__":
    main()
