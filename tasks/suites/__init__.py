"""The suite registry: each suite module exposes ``TASKS: dict[str, TaskSpec]``.

Adding a suite is one module with a ``TASKS`` mapping, one line in ``SUITES`` and one in
``ANSWER_TYPES``.
"""

from __future__ import annotations

import importlib

from tasks.suites.base import GeneratorError, TaskSpec

SUITES: dict[str, str] = {
    "symmetry": "tasks.suites.symmetry",
    "lissard": "tasks.suites.lissard",
    "geometry": "tasks.suites.geometry",
}
# The answer type of every item a suite generates (of its final step, for a chain): the parser of
# the answer (tasks/scoring/parse/). The suites stamp it on their items, imports of their tasks use it.
ANSWER_TYPES: dict[str, str] = {"symmetry": "integer", "lissard": "text", "geometry": "math"}


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
