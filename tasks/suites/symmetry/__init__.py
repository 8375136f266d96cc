"""Suite ``symmetry``: does a model preserve the properties of a group?

Described in docs/suites.md#symmetry; the paper it follows is listed in docs/suites.md#papers.

Tasks: ``closure``, ``identity``, ``inverse``, ``associativity`` (written once over
:class:`~tasks.suites.symmetry.group.Group`, run on every group in the ``groups`` parameter),
``counting_words`` and ``word_problems`` (natural language, integers only). Every task crosses its
items with ``prompt_styles`` (``direct``: only the final ``Answer: <number>`` line; ``cot``: reason
step by step, then that line); the prompt style is never part of the family, so invariance across
variants is computed within one prompt style. All answers are integers.

Choices made where the paper is silent:

- Groups are named ``integers`` and ``mod<m>`` (m >= 3; default ``mod7``). An expression reads the
  same in both groups (the inverse of one is written ``-1``, not ``6``); the modular question asks
  "What is <expression> modulo m?" and the gold is reduced modulo m. For the expression tasks the
  group name is also the item's ``category``, so tables can split by group without reading params.
- Families: ``closure`` (group, n); ``identity``/``inverse`` (group, n, ratio) so the four
  placements share a family; ``associativity`` (group, n) of its own, with the closure family of the
  same n recorded as ``params["baseline"]``; ``counting_words`` (count) so the words are variants;
  ``word_problems`` the drawn story's content. Seeds are not part of expression families, whose base
  problem is not random; only the ``random`` placement depends on the seed.
- ``inverse`` takes ``ratios`` like ``identity``: m = floor(r·n) inverses, r = 1.0 balanced (the
  paper's test, gold 0), r < 1 unbalanced (gold n − m, default r = 0.5) so that a bias toward 0 is
  told apart from skill. key_entities is n, the number of ones, in both tasks; the expression length
  is ``params["length"]``. A ratio that adds no element for some n is an error, not a silent skip.
- The ``random`` placement draws positions uniformly per (task, seed, n, filler count) and is shared
  by both groups; for small n it can coincide with another placement, as the paper's random
  swapping can, and is not redrawn.
- ``associativity`` rounds n·fraction half up (the paper's own example, six ones split 1 and 4, is
  inconsistent), at least 1, and needs n >= 2. Any ``split_<a>_<b>`` name works. The item is a
  chain: steps ``segment_1``, ``segment_2`` and ``combine``, whose template holds the literal
  placeholders ``{segment_1.value}`` and ``{segment_2.value}`` for the model's own parsed answers.
  Its ``messages`` hold the unsplit closure question for readers of the item table only.
- ``counting_words`` writes the words space-separated on one line, then "How many <plural> are
  there?" (regular English plural). Default bins open at the attractors 50 and 100: 40-50, 50-90
  (holds 50..60), 90-100, 100-110.
- ``word_problems``: adding sentences carry no order words (then, finally) so every permutation
  reads naturally; counts are written as words, as in the paper. Permuted variants are named
  ``permuted_1`` .. ``permuted_k`` (``params["permutation"]`` = k, ``params["order"]`` the shown
  order), so every (family, variant) is one item. ``irrelevant`` follows the paper: the irrelevant
  sentences are shuffled together with the adding ones, so the permuted variants are its control
  for reordering. key_entities is the number of adding sentences.
"""

from __future__ import annotations

from tasks.suites.base import TaskSpec
from tasks.suites.symmetry.expressions import ASSOCIATIVITY, CLOSURE, IDENTITY, INVERSE
from tasks.suites.symmetry.word_problems import WORD_PROBLEMS
from tasks.suites.symmetry.words import COUNTING_WORDS

TASKS: dict[str, TaskSpec] = {
    spec.name: spec for spec in (CLOSURE, IDENTITY, INVERSE, ASSOCIATIVITY, COUNTING_WORDS, WORD_PROBLEMS)
}
