"""Dyck language: complete a prefix of a balanced-bracket word over ``() [] {} <>``.

Key entity: symbols in the prefix. Every symbol is written separated by single spaces, in the
question, the in-context examples and the gold (``Input: [ < < >`` -> ``Output: > ]``), so
tokenisation never merges brackets and the exact-match rule has one spelling to compare.
"""

from __future__ import annotations

import random
from typing import Any

from tasks.suites.lissard.common import OUTPUT_RULE, Problem

DESCRIPTION = "Close a Dyck-4 prefix; key entity: symbols in the prefix."
DEFAULTS = {"bins": [[1, 26], [26, 50], [50, 74], [74, 99]], "shots": 4}

CLOSER = {"(": ")", "[": "]", "{": "}", "<": ">"}
OPENERS = tuple(CLOSER)

INSTRUCTION = (
    "You are given the beginning of a sequence of balanced brackets of the types (), [], {} and <>. "
    "Write the closing brackets that complete the sequence, in order, separated by single spaces. "
    + OUTPUT_RULE
)


def dyck_prefix(rng: random.Random, length: int) -> tuple[list[str], list[str]]:
    """A random prefix of ``length`` symbols and its closing sequence (never empty).

    Closes with probability 1/2 whenever a bracket is open, except that the last symbol may not
    close the only open bracket, so at least one bracket remains to be closed.
    """
    symbols: list[str] = []
    stack: list[str] = []
    for position in range(length):
        last = position == length - 1
        may_close = bool(stack) and not (last and len(stack) == 1)
        if may_close and rng.random() < 0.5:
            symbols.append(CLOSER[stack.pop()])
        else:
            opener = rng.choice(OPENERS)
            stack.append(opener)
            symbols.append(opener)
    return symbols, [CLOSER[o] for o in reversed(stack)]


def make_problem(rng: random.Random, key: int, params: dict[str, Any]) -> Problem:
    """A dyck item with ``key`` symbols in the prefix."""
    symbols, closing = dyck_prefix(rng, key)
    return Problem(question="Input: " + " ".join(symbols), gold=" ".join(closing))

