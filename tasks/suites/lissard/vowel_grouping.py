"""Vowel grouping: overlapping pairs of neighbouring vowels (``E A O E`` -> ``EA,AO,OE``).

Key entity: letters in the sequence. One letter has no pair (an empty answer cannot be told from
a missing one), so sequences have at least two letters; a bin starting at 1 draws from 2 upwards.
"""

from __future__ import annotations

import random
from typing import Any

from tasks.suites.lissard.common import OUTPUT_RULE, Problem

DESCRIPTION = "Overlapping vowel pairs; key entity: letters in the sequence."
DEFAULTS = {"bins": [[1, 23], [23, 45], [45, 67], [67, 89]], "shots": 4}
MIN_KEY = 2

VOWELS = "AEIOU"

INSTRUCTION = (
    "You are given a sequence of uppercase vowels separated by spaces. Write every pair of "
    "neighbouring vowels, in order and overlapping (each vowel except the first and the last "
    "belongs to two pairs), with the pairs joined by commas and no spaces. " + OUTPUT_RULE
)


def make_problem(rng: random.Random, key: int, params: dict[str, Any]) -> Problem:
    """A sequence of ``key`` random vowels and its comma-joined overlapping pairs."""
    letters = [rng.choice(VOWELS) for _ in range(key)]
    pairs = [a + b for a, b in zip(letters, letters[1:])]
    return Problem(question="Input: " + " ".join(letters), gold=",".join(pairs))

