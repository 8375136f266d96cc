"""Prefect flows (orchestration only: sweep, rescore, report, import) and the ``invarbench`` CLI."""

import tasks  # noqa: F401  - sets the offline environment defaults before Prefect or litellm load
