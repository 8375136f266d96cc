"""Prefect flows (orchestration only: sweep, rescore, report, imports) and the ``invarbench`` CLI."""
