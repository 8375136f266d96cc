"""Suite ``lissard``: seven long-and-simple sequential tasks.

Described in docs/suites.md#lissard; the paper it follows is listed in docs/suites.md#papers.

Every task controls one integer, its *key entity*, and can generate any value of it, not only
the paper's Table 2 bins (``bins`` accepts any ``[[lo, hi], ...]``; ``lengths`` asks for explicit
values, labelled with the default bins or with a one-value bin of their own when outside them).

Shared conventions (where the paper is silent, the choice made here):

- Prompt: the task instruction is the system message; the in-context examples follow as
  user/assistant turns (4 per item, 1 for ``repeat_copy_logic`` and ``logic_grid``), drawn with a
  seed from the first default bin (``shot_range``), distinct from each other and never equal to
  the item; the assistant turns are written ``Output: <gold>`` and the instruction asks for a final
  ``Output:`` line, parsed by ``tasks.scoring.parse.output_line`` (answer type ``text``).
- Key-entity values are drawn uniformly within each bin; a question already generated in the
  same run is redrawn, so each family (one base problem, variant ``none``, prompt style
  ``few_shot``) appears once.
- Answers are case-sensitive and compared after whitespace normalisation. Spellings: dyck
  brackets space-separated (``> ]``); vowel pairs comma-joined without spaces (``EA,AO,OE``);
  last letters lower-case and space-separated; common names sorted with Python's string order
  (names are capitalised ASCII, so this is alphabetical) and space-separated, or ``None``;
  counts and house numbers in digits; repeat-copy text with single spaces between pieces.
- Vocabularies (``data/*.json``) were written for this project: 600+ first names, 8 object
  categories, 8 logic-grid attribute categories of 8 values, 17 repeat-copy templates.

Task-specific choices are documented in each task module.
"""

from __future__ import annotations

from tasks.suites.base import TaskSpec
from tasks.suites.lissard import (
    dyck,
    last_letter_concat,
    list_intersection,
    logic_grid,
    object_counting,
    repeat_copy_logic,
    vowel_grouping,
)
from tasks.suites.lissard.common import task_spec

_MODULES = (object_counting, logic_grid, dyck, list_intersection, last_letter_concat, repeat_copy_logic, vowel_grouping)

TASKS: dict[str, TaskSpec] = {spec.name: spec for spec in map(task_spec, _MODULES)}
