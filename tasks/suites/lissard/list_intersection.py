"""List intersection: the names common to two lists, sorted alphabetically, or ``None``.

Key entity: items per list (both lists have the same length). The paper only says the overlap
varies; here the overlap is 0 with probability ``none_share`` (default 0.1, so ``None`` answers
occur at every length) and otherwise uniform in 1..n. Names are distinct within each list; the
two lists need ``2n - overlap`` distinct names, so very long lists force a larger overlap.
"""

from __future__ import annotations

import random
from typing import Any

from tasks.suites.base import GeneratorError
from tasks.suites.lissard.common import OUTPUT_RULE, Problem, vocabulary

DESCRIPTION = "Common names of two lists, sorted, or None; key entity: items per list."
DEFAULTS = {"bins": [[1, 24], [24, 46], [46, 68], [68, 91]], "shots": 4, "none_share": 0.1}

EMPTY = "None"

INSTRUCTION = (
    "You are given two lists of names, A and B. Write the names that appear in both lists, sorted "
    f"alphabetically and separated by single spaces, or {EMPTY} if no name appears in both. "
    + OUTPUT_RULE
)


def intersection_answer(common: list[str]) -> str:
    """The gold: sorted common names joined by spaces, or ``None`` when there are none."""
    return " ".join(sorted(common)) if common else EMPTY


def make_problem(rng: random.Random, key: int, params: dict[str, Any]) -> Problem:
    """Two lists of ``key`` distinct names with a random overlap."""
    names = vocabulary("names")["names"]
    if key > len(names):
        raise GeneratorError(f"bins: lists of {key} distinct names exceed the {len(names)}-name vocabulary")
    share = float(params["none_share"])
    overlap = 0 if rng.random() < share else rng.randint(1, key)
    overlap = max(overlap, 2 * key - len(names))
    pool = rng.sample(names, 2 * key - overlap)
    common, only_a, only_b = pool[:overlap], pool[overlap:key], pool[key:]
    list_a = rng.sample(common + only_a, key)
    list_b = rng.sample(common + only_b, key)
    return Problem(
        question=f"A: {' '.join(list_a)}\nB: {' '.join(list_b)}",
        gold=intersection_answer(common),
        params={"overlap": overlap},
    )

