"""The suite registry: each suite module exposes ``TASKS: dict[str, TaskSpec]``.

Adding a suite is one module with a ``TASKS`` mapping and one line in ``SUITES``.
"""

from __future__ import annotations

import importlib

from tasks.suites.base import GeneratorError, TaskSpec

SUITES: dict[str, str] = {
    "symmetry": "tasks.suites.symmetry",
    "lissard": "tasks.suites.lissard",
    "geometry": "tasks.suites.geometry",
}


def suite_tasks(suite: str) -> dict[str, TaskSpec]:
    """The tasks of ``suite``; an unknown suite is an error that lists the known ones."""
    if suite not in SUITES:
        raise GeneratorError(f"unknown suite {suite!r}; known: {', '.join(sorted(SUITES))}")
    return importlib.import_module(SUITES[suite]).TASKS


def get_task(suite: str, task: str) -> TaskSpec:
    """One task's specification; an unknown task is an error that lists the suite's tasks."""
    tasks = suite_tasks(suite)
    if task not in tasks:
        raise GeneratorError(f"unknown task {task!r} in suite {suite!r}; known: {', '.join(sorted(tasks))}")
    return tasks[task]
