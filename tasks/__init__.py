"""invarbench's work: suites (generators), validation, model calls, parsing, scoring, storage, statistics.

Importing this package changes nothing: entry points apply the offline environment defaults
with :func:`tasks.environment.apply_defaults`.
"""
