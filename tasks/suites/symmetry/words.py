"""The ``counting_words`` task: the closure expression with every ``1`` replaced by a word.

The paper's bias ablation: "apple apple ... apple. How many apples are there?" around the
attractors 50 and 100. Every word asked about one count shares that count's family, so the
variant (the word) is the only thing that changes within a family.
"""

from __future__ import annotations

import re
from typing import Any

from tasks.records import Item
from tasks.suites.base import GeneratorError, TaskSpec, bins_from_edges, family_id, find_bin
from tasks.suites.symmetry.common import PROMPT_STYLES, SUITE, choices, styled_items

VERSION = "1.0"
_WORD = re.compile(r"[a-z]+")


def plural(word: str) -> str:
    """The regular English plural (box → boxes, cherry → cherries, apple → apples)."""
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "i", "o", "u"):
        return word[:-1] + "ies"
    return word + "s"


def _counts(params: dict[str, Any]) -> list[int]:
    """The sorted distinct counts of the inclusive ``ranges``, every ``count_step``-th."""
    step = int(params["count_step"])
    if step < 1:
        raise GeneratorError(f"count_step: {step} must be at least 1")
    counts: set[int] = set()
    for i, pair in enumerate(params["ranges"]):
        if len(pair) != 2 or not 1 <= int(pair[0]) <= int(pair[1]):
            raise GeneratorError(f"ranges[{i}]: expected [lo, hi] with 1 <= lo <= hi, got {list(pair)!r}")
        counts.update(range(int(pair[0]), int(pair[1]) + 1, step))
    if not counts:
        raise GeneratorError("ranges: at least one [lo, hi] range is needed")
    return sorted(counts)


def _words(params: dict[str, Any]) -> list[str]:
    words = list(params["words"])
    if not words:
        raise GeneratorError("words: at least one word is needed")
    bad = [w for w in words if not _WORD.fullmatch(str(w))]
    if bad:
        raise GeneratorError(f"words: {', '.join(map(repr, bad))} must be single lowercase words")
    return words


def _generate_counting_words(params: dict[str, Any], seed: int) -> list[Item]:
    bins = bins_from_edges(params["bins"])
    styles = choices(params, "prompt_styles", list(PROMPT_STYLES))
    items = []
    for count in _counts(params):
        family = family_id(SUITE, "counting_words", count=count)
        for word in _words(params):
            question = f"{' '.join([word] * count)}\nHow many {plural(word)} are there?"
            items += styled_items(
                COUNTING_WORDS, question, styles, family=family, variant=word, key_entities=count,
                bin=find_bin(count, bins), gold=count, seed=seed, params={"word": word, "plural": plural(word)},
            )
    return items


COUNTING_WORDS = TaskSpec(
    suite=SUITE,
    name="counting_words",
    version=VERSION,
    defaults={
        "words": ["apple", "orange", "banana"],
        "ranges": [[40, 60], [90, 110]],
        "count_step": 1,
        "prompt_styles": ["direct", "cot"],
        # Each attractor (50, 100) opens a bin, so "just below" and "at or above" are told apart.
        "bins": [[40, 50], [50, 90], [90, 100], [100, 110]],
    },
    generate=_generate_counting_words,
    description="a word repeated count times, 'How many <words> are there?'; gold count.",
    smoke={"words": ["apple"], "ranges": [[49, 51]], "prompt_styles": ["direct"]},
)
