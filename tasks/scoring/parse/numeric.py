"""Integer answers from free text (answer_type ``integer``).

Rule (version 2), first match wins:
1. the last line carrying an answer prefix (``Answer:``, ``Final answer:``, ``Output:``,
   ``Result:``, ``Total:``, case-insensitive, markdown emphasis ignored): the first integer or
   number word after the prefix;
2. otherwise the last integer in the text (a trailing ``=`` result of a worked sum is last);
3. otherwise the last number word sequence ("forty two", "one hundred and five").
Numbers are read as people write them (:mod:`tasks.scoring.parse.written`): thousands separators
(``1,000``), scientific notation (``1.2e3``), a Unicode minus. A decimal with a non-zero fraction
(``1,250.5``), a fraction (``1/2``) and a mixed number (``2 2/3``) are not integers and are
skipped whole (version 1 read ``1,250.5`` as 1 and ``Answer: 1/2`` as 1). A text with no number is
``unparsable`` (never scored as wrong).
"""

from __future__ import annotations

import re

from tasks.scoring.parse import Parsed
from tasks.scoring.parse.written import drop_thousands_separators, expand_scientific

VERSION = "2"

_PREFIX = re.compile(r"(?:final\s+answer|answer|output|result|total)\s*(?:is\s*:?|[:=])\s*(.*)$", re.I)
# A number, with its fraction part; one beside a slash is a fraction's numerator or denominator,
# one before a fraction the whole part of a mixed number (``2 2/3``).
_NUMBER = re.compile(r"(?<![\w.])(?<!/)(?<!/ )[-−]?\d+(?:\.\d+)?(?![\w.]\d|\w| ?/ ?\d|[ \t]+\d+ ?/ ?\d)")
_INT = re.compile(r"[-−]?\d+(?:\.0+)?")

_UNITS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
_SCALES = {"hundred": 100, "thousand": 1000}
_WORD = re.compile(r"[a-z]+", re.I)


def _int_from_digits(token: str) -> int:
    token = token.replace("−", "-")
    return int(token.split(".")[0])


def _integers(text: str) -> list[str]:
    """The integers of ``text`` in order: numbers without a non-zero fraction, outside fractions."""
    return [t for t in _NUMBER.findall(text) if _INT.fullmatch(t)]


def _as_written(text: str) -> str:
    """``text`` with thousands separators and scientific notation read (module docstring)."""
    return expand_scientific(drop_thousands_separators(text))


def _number_word_runs(text: str) -> list[tuple[int, str]]:
    """Every maximal run of number words in ``text`` with its value, in order."""
    runs: list[tuple[int, str]] = []
    total = current = 0
    words: list[str] = []
    negative = False

    def close() -> None:
        nonlocal total, current, words, negative
        if words:
            value = total + current
            runs.append((-value if negative else value, " ".join(words)))
        total = current = 0
        words = []
        negative = False

    for m in _WORD.finditer(text.replace("-", " ")):
        w = m.group(0).lower()
        if w in _UNITS:
            current += _UNITS[w]
        elif w in _TENS:
            current += _TENS[w]
        elif w in _SCALES and words:
            scale = _SCALES[w]
            if scale == 100:
                current *= 100
            else:
                total += current * scale
                current = 0
        elif w == "and" and words:
            continue
        elif w in ("minus", "negative") and not words:
            negative = True
            words.append(w)
            continue
        else:
            if words == ["minus"] or words == ["negative"]:
                words = []
                negative = False
            close()
            continue
        words.append(w)
    close()
    return [(v, s) for v, s in runs if s not in ("minus", "negative")]


def _first_integer(fragment: str) -> Parsed | None:
    """The first integer (or number words) after an answer prefix: a stated answer."""
    found = _integers(fragment)
    if found:
        return Parsed.ok(str(_int_from_digits(found[0])), found[0], stated=True)
    runs = _number_word_runs(fragment)
    if runs:
        return Parsed.ok(str(runs[0][0]), runs[0][1], stated=True)
    return None


def parse(text: str) -> Parsed:
    """Extract the integer answer from ``text`` following the module's versioned rule."""
    cleaned = _as_written(text.replace("*", "").replace("`", ""))
    for line in reversed(cleaned.splitlines()):
        m = _PREFIX.search(line)
        if m:
            found = _first_integer(m.group(1))
            if found:
                return found
    digits = _integers(cleaned)
    if digits:
        return Parsed.ok(str(_int_from_digits(digits[-1])), digits[-1])
    runs = _number_word_runs(cleaned)
    if runs:
        return Parsed.ok(str(runs[-1][0]), runs[-1][1])
    return Parsed.unparsable(text.strip()[-80:] or None)


def matches(value: str, gold: str) -> bool:
    """Integer equality of a parsed value and the gold."""
    try:
        return int(value) == int(gold)
    except (TypeError, ValueError):
        return False
