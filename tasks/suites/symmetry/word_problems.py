"""The ``word_problems`` task: accumulation stories and the random swapping symmetry in language.

A story is a start sentence ("Samantha has two stuffed animals."), n adding sentences (each adds a
count of the same object) and the question. Its gold is the start count plus the added counts,
computed from the drawn structure. Variants of one story (one family): ``original``,
``permuted_1`` .. ``permuted_k`` (the adding sentences reordered, first and last sentence fixed) and
``irrelevant`` (sentences that change no count shuffled in among the adding ones).
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from tasks.records import Item
from tasks.suites.base import GeneratorError, TaskSpec, bins_from_edges, family_id, find_bin, rng_for
from tasks.suites.symmetry.common import PROMPT_STYLES, SUITE, choices, int_range, number_word, styled_items

VERSION = "1.0"
VARIANTS = ("original", "permuted", "irrelevant")
DATA = Path(__file__).parent / "data"


@dataclass(frozen=True)
class Frame:
    """A story frame from the bank: who, what, and the sentences that each add ``{things}``."""

    id: str
    subject: str
    object: str
    objects: str
    start: str
    question: str
    verbs: tuple[str, ...]

    def things(self, count: int) -> str:
        """A count of the object in words: ``one puzzle``, ``three puzzles``."""
        return f"{number_word(count)} {self.object if count == 1 else self.objects}"


@dataclass(frozen=True)
class Story:
    """One drawn story: a frame, the start count, and the (verb index, count) of each addition."""

    frame: Frame
    start: int
    additions: tuple[tuple[int, int], ...]

    @property
    def gold(self) -> int:
        """The start count plus every added count."""
        return self.start + sum(count for _, count in self.additions)

    def first(self) -> str:
        """The start sentence."""
        return self.frame.start.format(things=self.frame.things(self.start))

    def middle(self) -> list[str]:
        """The adding sentences in their original order."""
        return [self.frame.verbs[verb].format(things=self.frame.things(count)) for verb, count in self.additions]

    def text(self, middle: Sequence[str]) -> str:
        """The story with ``middle`` between the start sentence and the question."""
        return " ".join([self.first(), *middle, self.frame.question])


@lru_cache(maxsize=1)
def story_frames() -> tuple[Frame, ...]:
    """The bank of story frames (``data/story_frames.json``)."""
    raw = json.loads((DATA / "story_frames.json").read_text(encoding="utf-8"))["frames"]
    return tuple(Frame(**{**f, "verbs": tuple(f["verbs"])}) for f in raw)


@lru_cache(maxsize=1)
def irrelevant_sentences() -> tuple[str, ...]:
    """The bank of sentences that change no count (``data/irrelevant_sentences.json``)."""
    return tuple(json.loads((DATA / "irrelevant_sentences.json").read_text(encoding="utf-8"))["sentences"])


def _pair(params: dict[str, Any], name: str, lowest: int) -> tuple[int, int]:
    pair = list(params[name])
    if len(pair) != 2 or not lowest <= int(pair[0]) <= int(pair[1]):
        raise GeneratorError(f"{name}: expected [lo, hi] with {lowest} <= lo <= hi, got {pair!r}")
    return int(pair[0]), int(pair[1])


def draw_story(n: int, rng: random.Random, start: tuple[int, int], increment: tuple[int, int]) -> Story:
    """A story with n distinct adding sentences from one frame, every count drawn from ``rng``."""
    frame = rng.choice(story_frames())
    verbs = rng.sample(range(len(frame.verbs)), n)
    return Story(frame, rng.randint(*start), tuple((v, rng.randint(*increment)) for v in verbs))


def permutations(n: int, count: int, rng: random.Random) -> list[tuple[int, ...]]:
    """``count`` orders of ``range(n)``, each different from the identity and from each other."""
    if math.factorial(n) - 1 < count:
        raise GeneratorError(f"permutations: {count} distinct reorderings of {n} sentences do not exist; raise n_min")
    identity = tuple(range(n))
    seen: list[tuple[int, ...]] = []
    while len(seen) < count:
        order = list(identity)
        rng.shuffle(order)
        if tuple(order) != identity and tuple(order) not in seen:
            seen.append(tuple(order))
    return seen


def with_irrelevant(story: Story, count: int, rng: random.Random) -> tuple[list[str], list[str]]:
    """(middle sentences shuffled together with ``count`` irrelevant ones, the irrelevant ones).

    Sentences containing the object's head noun (``coin`` for ``foreign coin``) are left out of the
    draw, so none could be read as a change of the count being asked about.
    """
    head = story.frame.object.split()[-1].lower()
    pool = [s for s in irrelevant_sentences() if head not in s.lower()]
    if count > len(pool):
        raise GeneratorError(
            f"irrelevant_sentences: {count} asked, the bank has {len(pool)} usable with {story.frame.id}"
        )
    extra = [s.format(subject=story.frame.subject) for s in rng.sample(pool, count)]
    middle = story.middle() + extra
    rng.shuffle(middle)
    return middle, extra


def _at_least_one(params: dict[str, Any], name: str) -> int:
    value = int(params[name])
    if value < 1:
        raise GeneratorError(f"{name}: {value} must be at least 1")
    return value


def _shown(
    story: Story, variants: list[str], params: dict[str, Any], draw: tuple[Any, ...]
) -> list[tuple[str, list[str], dict[str, Any]]]:
    """(variant, middle sentences as shown, variant params) for every requested variant of a story.

    ``draw`` names the story ((seed, n, index)); each variant kind draws from its own stream, so
    asking for fewer variants leaves the others unchanged.
    """
    middle = story.middle()
    shown: list[tuple[str, list[str], dict[str, Any]]] = []
    if "original" in variants:
        shown.append(("original", middle, {"order": list(range(len(middle)))}))
    if "permuted" in variants:
        rng = rng_for(SUITE, "word_problems", *draw, "permuted")
        orders = permutations(len(middle), _at_least_one(params, "permutations"), rng)
        for k, order in enumerate(orders, start=1):
            shown.append((f"permuted_{k}", [middle[i] for i in order], {"order": list(order), "permutation": k}))
    if "irrelevant" in variants:
        rng = rng_for(SUITE, "word_problems", *draw, "irrelevant")
        mixed, extra = with_irrelevant(story, _at_least_one(params, "irrelevant_sentences"), rng)
        shown.append(("irrelevant", mixed, {"irrelevant": extra}))
    return shown


def _generate_word_problems(params: dict[str, Any], seed: int) -> list[Item]:
    bins = bins_from_edges(params["bins"])
    styles = choices(params, "prompt_styles", list(PROMPT_STYLES))
    variants = choices(params, "variants", VARIANTS)
    start, increment = _pair(params, "start_range", 0), _pair(params, "increment_range", 1)
    n_values = int_range(params, "n", lowest=1)
    most = min(len(f.verbs) for f in story_frames())
    if n_values[-1] > most:
        raise GeneratorError(f"n_max: {n_values[-1]} adding sentences asked, some frames have only {most}")
    items = []
    for n in n_values:
        for index in range(_at_least_one(params, "stories_per_n")):
            story = draw_story(n, rng_for(SUITE, "word_problems", seed, n, index), start, increment)
            family = family_id(SUITE, "word_problems", frame=story.frame.id, start=story.start,
                               additions=[list(a) for a in story.additions])
            base = {
                "frame": story.frame.id,
                "object": story.frame.object,
                "objects": story.frame.objects,
                "start": story.start,
                "increments": [count for _, count in story.additions],
            }
            for variant, middle, extra in _shown(story, variants, params, (seed, n, index)):
                items += styled_items(
                    WORD_PROBLEMS, story.text(middle), styles, family=family, variant=variant, key_entities=n,
                    bin=find_bin(n, bins), gold=story.gold, seed=seed, params={**base, **extra},
                )
    return items


WORD_PROBLEMS = TaskSpec(
    suite=SUITE,
    name="word_problems",
    version=VERSION,
    defaults={
        "n_min": 3,
        "n_max": 11,
        "n_step": 2,
        "stories_per_n": 4,
        "start_range": [1, 5],
        "increment_range": [1, 3],
        "permutations": 5,
        "irrelevant_sentences": 3,
        "variants": list(VARIANTS),
        "prompt_styles": ["direct", "cot"],
        "bins": [[3, 6], [6, 9], [9, 12]],
    },
    generate=_generate_word_problems,
    description="accumulation stories: original, permuted_1..k, irrelevant; gold start + additions.",
    smoke={"n_min": 3, "n_max": 3, "stories_per_n": 1, "permutations": 2, "prompt_styles": ["direct"]},
)
