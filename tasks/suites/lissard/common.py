"""What the seven lissard generators share: vocabularies, key-entity draws, few-shot assembly.

Each task module supplies one pure function ``make_problem(rng, key, params) -> Problem`` that
builds a single problem with ``key`` key entities, and declares its instruction, bins and shots;
:func:`task_spec` turns the module into a :class:`TaskSpec` whose generator handles bins,
explicit lengths, deduplication and the in-context examples the same way for every task.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Sequence

from tasks.records import Item
from tasks.suites import ANSWER_TYPES
from tasks.suites.base import (
    Bin,
    GeneratorError,
    TaskSpec,
    bins_from_edges,
    family_id,
    find_bin,
    make_item,
    rng_for,
)

SUITE = "lissard"
DATA_DIR = Path(__file__).parent / "data"
ANSWER_PREFIX = "Output:"
ANSWER_TYPE = ANSWER_TYPES[SUITE]
OUTPUT_RULE = f'Finish your reply with one final line of the form "{ANSWER_PREFIX} <answer>".'

# Redraw budgets: a bin whose problem space is nearly exhausted fails loudly instead of looping.
_DRAWS_PER_ITEM = 200
_DRAWS_PER_SHOT = 200


@dataclass(frozen=True)
class Problem:
    """One base problem: the user-facing question, its gold answer and per-item parameters."""

    question: str
    gold: str
    params: dict[str, Any] = field(default_factory=dict)


ProblemFn = Callable[[random.Random, int, dict[str, Any]], Problem]


@lru_cache(maxsize=None)
def vocabulary(name: str) -> dict[str, Any]:
    """The JSON vocabulary ``data/<name>.json`` (read once per process)."""
    return json.loads((DATA_DIR / f"{name}.json").read_text(encoding="utf-8"))


def join_and(parts: Sequence[str]) -> str:
    """English list: ``a``, ``a and b``, ``a, b, and c`` (serial comma, as in the paper's examples)."""
    if len(parts) <= 2:
        return " and ".join(parts)
    return ", ".join(parts[:-1]) + ", and " + parts[-1]


def answer_line(gold: str) -> str:
    """The assistant turn of an in-context example: the final ``Output:`` line the prompt asks for."""
    return f"{ANSWER_PREFIX} {gold}"


def key_values(b: Bin, min_key: int) -> list[int]:
    """The key-entity values of bin ``b`` that a task can build (at least ``min_key``)."""
    top = b.hi if (b.closed or b.hi == b.lo) else b.hi - 1
    return list(range(max(b.lo, min_key), top + 1))


def task_spec(task: ModuleType) -> TaskSpec:
    """The :class:`TaskSpec` of a lissard task module, named after the module.

    A task module declares ``DESCRIPTION``, ``DEFAULTS`` (its default ``bins`` and ``shots``, the
    in-context examples per item, and the defaults of its own parameters), ``INSTRUCTION`` (the
    system message), ``make_problem`` and, when it cannot build a problem with one key entity,
    ``MIN_KEY``. Parameters every task accepts: ``bins`` (``[[lo, hi], ...]``, half-open, last
    closed), ``items_per_bin``, ``lengths`` (explicit key-entity values, each labelled with
    :func:`find_bin` against ``bins``, which replace the per-bin draws when non-empty), ``shots``
    and ``shot_range`` (``[lo, hi]`` closed, where examples are drawn from; by default the values
    of the first default bin, as in the paper).
    """
    make_problem, instruction, min_key = task.make_problem, task.INSTRUCTION, getattr(task, "MIN_KEY", 1)
    own = dict(task.DEFAULTS)
    bins = own.pop("bins")

    def generate(params: dict[str, Any], seed: int) -> list[Item]:
        return generate_items(spec, params, seed, make_problem, instruction, min_key)

    first = key_values(bins_from_edges(bins)[0], min_key)
    defaults = {
        "bins": bins,
        "items_per_bin": 75,
        "lengths": [],
        "shots": own.pop("shots"),
        "shot_range": [first[0], first[-1]],
        **own,
    }
    spec = TaskSpec(
        suite=SUITE,
        name=task.__name__.rpartition(".")[2],
        version="1",
        defaults=defaults,
        generate=generate,
        description=task.DESCRIPTION,
        smoke={"bins": [list(b) for b in bins[:2]], "items_per_bin": 2},
    )
    return spec


def generate_items(
    spec: TaskSpec,
    params: dict[str, Any],
    seed: int,
    make_problem: ProblemFn,
    instruction: str,
    min_key: int,
) -> list[Item]:
    """Items for every bin (or every explicit length), distinct questions, seeded few-shot examples."""
    bins = bins_from_edges(params["bins"])
    count = _positive_int(params, "items_per_bin")
    shots = _non_negative_int(params, "shots")
    shot_bin = Bin(*_pair(params["shot_range"], "shot_range"), closed=True)
    shot_keys = key_values(shot_bin, min_key)
    if shots and not shot_keys:
        raise GeneratorError(f"shot_range: no value of {shot_bin.label} reaches the minimum {min_key}")

    seen: set[str] = set()
    items: list[Item] = []
    for b, keys in _groups(params, bins, min_key):
        rng = rng_for(SUITE, spec.name, seed, "items", b.label, keys[0], keys[-1])
        for _ in range(count):
            key, problem = _fresh_problem(rng, keys, params, make_problem, seen, b)
            shot_rng = rng_for(SUITE, spec.name, seed, "shots", problem.question)
            items.append(
                make_item(
                    spec,
                    family=family_id(SUITE, spec.name, question=problem.question),
                    variant="none",
                    prompt_style="few_shot",
                    key_entities=key,
                    bin=b,
                    user=problem.question,
                    gold=problem.gold,
                    answer_type=ANSWER_TYPE,
                    seed=seed,
                    system=instruction,
                    params=problem.params,
                    few_shot=few_shot(shot_rng, shot_keys, shots, params, make_problem, problem.question),
                )
            )
    return items


def few_shot(
    rng: random.Random,
    keys: Sequence[int],
    count: int,
    params: dict[str, Any],
    make_problem: ProblemFn,
    exclude: str,
) -> list[tuple[str, str]]:
    """``count`` distinct in-context examples (question, ``Output:`` line), none equal to ``exclude``."""
    pairs: list[tuple[str, str]] = []
    used = {exclude}
    for _ in range(count * _DRAWS_PER_SHOT):
        if len(pairs) == count:
            break
        problem = make_problem(rng, rng.choice(keys), params)
        if problem.question not in used:
            used.add(problem.question)
            pairs.append((problem.question, answer_line(problem.gold)))
    if len(pairs) < count:
        raise GeneratorError(f"shot_range: too few distinct problems for {count} in-context examples")
    return pairs


def _groups(params: dict[str, Any], bins: list[Bin], min_key: int) -> list[tuple[Bin, list[int]]]:
    """(bin, key values to draw from): one group per explicit length, else one per bin."""
    lengths = [int(v) for v in params["lengths"]]
    if lengths:
        low = [v for v in lengths if v < min_key]
        if low:
            raise GeneratorError(f"lengths: {low} below the task's minimum of {min_key} key entities")
        return [(find_bin(v, bins), [v]) for v in lengths]
    groups = [(b, key_values(b, min_key)) for b in bins]
    empty = [b.label for b, keys in groups if not keys]
    if empty:
        raise GeneratorError(f"bins: {', '.join(empty)} hold no value of at least {min_key} key entities")
    return groups


def _fresh_problem(
    rng: random.Random,
    keys: Sequence[int],
    params: dict[str, Any],
    make_problem: ProblemFn,
    seen: set[str],
    b: Bin,
) -> tuple[int, Problem]:
    """A problem whose question is not yet in ``seen`` (one family per base problem)."""
    for _ in range(_DRAWS_PER_ITEM):
        key = rng.choice(keys)
        problem = make_problem(rng, key, params)
        if problem.question not in seen:
            seen.add(problem.question)
            return key, problem
    raise GeneratorError(f"items_per_bin: bin {b.label} has too few distinct problems for the count asked")


def _pair(value: Any, name: str) -> tuple[int, int]:
    if not isinstance(value, (list, tuple)) or len(value) != 2 or int(value[1]) < int(value[0]):
        raise GeneratorError(f"{name}: expected [lo, hi] with lo <= hi, got {value!r}")
    return int(value[0]), int(value[1])


def _positive_int(params: dict[str, Any], name: str) -> int:
    value = int(params[name])
    if value < 1:
        raise GeneratorError(f"{name}: must be at least 1, got {value}")
    return value


def _non_negative_int(params: dict[str, Any], name: str) -> int:
    value = int(params[name])
    if value < 0:
        raise GeneratorError(f"{name}: must be at least 0, got {value}")
    return value
