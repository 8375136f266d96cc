"""Answer type ``text``: the answer on a final ``Output: ...`` line (the lissard suite's format).

Extraction (``parse``):

- The answer follows the LAST ``Output:`` marker in the text (case-insensitive, a whole word,
  markdown emphasis allowed around the word: ``**Output:**``, ``**Output**:``), up to the end of
  that line; prose before or after is ignored. When nothing follows the marker on its line, the
  next non-empty line is the answer.
- Without any marker, a reply of exactly one non-empty line is the answer; anything else
  (empty text, several lines without a marker) is unparsable.
- Cleaning, repeated until nothing changes: surrounding whitespace and markdown characters
  ``*``, ``_`` and a backtick; trailing periods; one pair of matching quotes (``"..."`` or
  ``'...'``) around the whole answer. This is safe because no lissard gold contains these
  characters at its ends (brackets, commas, and question marks are kept: ``>`` starts many dyck
  answers). Internal whitespace runs become single spaces.
- The value is always a string: the answer ``None`` stays the four-letter string ``None``.

Scoring: ``matches`` is exact, case-sensitive equality after whitespace normalisation (the
headline score); ``lenient`` (version 2) compares the sets of items, ignoring order, repeats and
case, where items are separated by whitespace, ``/``, ``,`` or ``;`` (a separately labelled score,
meaningful for ``list_intersection``, whose answers are written ``a b c``, ``a/b/c`` or
``a, b, c`` depending on who wrote the prompt). Version 1 split on whitespace only and kept case.
Version 3 marks an answer after an ``Output:`` marker as stated: a lone line of a response cut at
the token limit is ``truncated`` (:func:`tasks.scoring.parse.parse`).
"""

from __future__ import annotations

import re

from tasks.scoring.parse import Parsed

VERSION = "3"

_MARKER = re.compile(r"\boutput\b[ \t]*[*_`]*[ \t]*:", re.IGNORECASE)
_EDGE_MARKUP = "*_`"
_QUOTES = "\"'"
_ITEM_SEPARATORS = re.compile(r"[\s/,;]+")


def parse(text: str) -> Parsed:
    """The answer of a reply: the last ``Output:`` line, else a lone single line, else unparsable."""
    markers = list(_MARKER.finditer(text))
    if markers:
        raw = _answer_after(text, markers[-1].end())
    else:
        lines = [line for line in text.splitlines() if line.strip()]
        raw = lines[0] if len(lines) == 1 else ""
    value = clean(raw)
    if not value:
        return Parsed.unparsable(raw or None)
    return Parsed.ok(value, raw.strip(), stated=bool(markers))


def clean(raw: str) -> str:
    """Strip markdown, trailing periods and enclosing quotes (see module docstring); single spaces."""
    value = raw
    while True:
        previous = value
        value = value.strip().strip(_EDGE_MARKUP).strip().rstrip(".")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in _QUOTES:
            value = value[1:-1]
        if value == previous:
            return normalize(value)


def normalize(value: str) -> str:
    """Whitespace runs to single spaces, no leading or trailing whitespace."""
    return " ".join(value.split())


def matches(value: str | None, gold: str) -> bool:
    """Exact match after whitespace normalisation (case-sensitive); a missing value never matches."""
    return value is not None and normalize(value) == normalize(gold)


def lenient(value: str | None, gold: str) -> bool:
    """Order- and case-insensitive match of the sets of items (see the module docstring)."""
    return value is not None and items(value) == items(gold)


def items(value: str) -> set[str]:
    """The set of items of a list answer: split on whitespace, ``/``, ``,`` and ``;``, lower-cased."""
    return {item for item in _ITEM_SEPARATORS.split(value.casefold()) if item}


def _answer_after(text: str, start: int) -> str:
    """The rest of the marker's line, or the next non-empty line when that rest is blank."""
    rest, *following = text[start:].split("\n")
    if clean(rest):
        return rest
    return next((line for line in following if line.strip()), "")
