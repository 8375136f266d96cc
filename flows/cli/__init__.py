"""The ``invarbench`` command line: ``app``, with every command registered, and ``main``, its entry
point (``python -m flows.cli`` runs it too).

Exit codes: 0 success; 1 a run failed (a failed expectation, a crashed stage); 2 bad input or
configuration (nothing written); 130 / 143 a sweep stopped by SIGINT / by SIGTERM or a
cancellation in Prefect (tasks.runs.stopping).
"""

from __future__ import annotations

import gc
import warnings

from flows.cli.application import app
# Importing a command module registers its commands on ``app``, in this order in ``--help``.
from flows.cli import sweep, items, imports, warehouse, check, refresh  # noqa: F401, I001
from tasks.environment import apply_defaults, pace_collector

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    # llama-cpp-python keeps two /dev/null handles open for the life of the process; the
    # interpreter's exit would otherwise report them under every table this CLI prints.
    warnings.filterwarnings("ignore", category=ResourceWarning)
    apply_defaults()  # before any command loads Prefect or litellm
    pace_collector()  # before their imports, which make a third of their CPU collections otherwise
    try:
        app()
    finally:
        # The interpreter's last garbage collection walks every object Prefect, litellm and Great
        # Expectations created: 10 s and more on a busy machine after a sweep, so a stopped sweep
        # would linger. Nothing at exit needs those objects collected (atexit handlers still run).
        gc.freeze()
