"""Last-letter concatenation: the last letter of each name, space-separated (``Mahir Yolisma`` -> ``r a``).

Key entity: names. Names within one question are distinct while the vocabulary lasts; longer
sequences draw with replacement, which leaves the task well defined.
"""

from __future__ import annotations

import random
from typing import Any

from tasks.suites.lissard.common import OUTPUT_RULE, Problem, vocabulary

DESCRIPTION = "Last letters of a name sequence; key entity: names."
DEFAULTS = {"bins": [[1, 8], [8, 15], [15, 22], [22, 30]], "shots": 4}

INSTRUCTION = (
    "You are given a sequence of names. Write the last letter of each name, in order, in lowercase, "
    "separated by single spaces. " + OUTPUT_RULE
)


def draw_names(rng: random.Random, count: int) -> list[str]:
    """``count`` names from the vocabulary: distinct when possible, with replacement beyond it."""
    names = vocabulary("names")["names"]
    if count <= len(names):
        return rng.sample(names, count)
    return rng.choices(names, k=count)


def make_problem(rng: random.Random, key: int, params: dict[str, Any]) -> Problem:
    """A sequence of ``key`` names and their last letters."""
    names = draw_names(rng, key)
    return Problem(
        question="Input: " + " ".join(names),
        gold=" ".join(name[-1].lower() for name in names),
    )

