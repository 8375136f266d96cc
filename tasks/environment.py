"""The environment defaults that keep every run offline, applied by one explicit call.

litellm reads its price map from the installed package instead of downloading it, and Prefect
sends no analytics. Each entry point calls :func:`apply_defaults` before it loads Prefect or
litellm (the ``invarbench`` CLI, ``python -m flows.deploy``, the embedded model's worker process,
the flows themselves, the test suite, the benchmark); importing a module never changes the
environment. Values already in the environment win.

``python -m tasks.environment COMMAND ...`` runs ``COMMAND`` with the defaults applied: the
scripts of ``deploy/`` start the Prefect worker and server that way, so the list lives only here.
"""

from __future__ import annotations

import os
import sys

DEFAULTS = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}


def apply_defaults() -> None:
    """Set each of :data:`DEFAULTS` that the environment does not set already."""
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)


def main(argv: list[str] | None = None) -> None:
    """Replace this process with ``argv`` (default: the command line) under the defaults."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        sys.exit("usage: python -m tasks.environment COMMAND [ARG...]")
    apply_defaults()
    os.execvp(args[0], args)


if __name__ == "__main__":
    main()
