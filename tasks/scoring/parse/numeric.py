"""Integer answers from free text (answer_type ``integer``).

Rule (version 1), first match wins:
1. the last line carrying an answer prefix (``Answer:``, ``Final answer:``, ``Output:``,
   ``Result:``, ``Total:``, case-insensitive, markdown emphasis ignored): the first integer or
   number word after the prefix;
2. otherwise the last integer in the text (a trailing ``=`` result of a worked sum is last);
3. otherwise the last number word sequence ("forty two", "one hundred and five").
Thousands separators (``1,000``) are accepted; a decimal with a non-zero fraction is not an
integer and is skipped. A text with no number is ``unparsable`` (never scored as wrong).
"""

from __future__ import annotations

import re

from tasks.scoring.parse import Parsed

VERSION = "1"

_PREFIX = re.compile(r"(?:final\s+answer|answer|output|result|total)\s*(?:is\s*:?|[:=])\s*(.*)$", re.I)
_INT = re.compile(r"(?<![\w.])[-−]?\d{1,3}(?:,\d{3})+(?!\d|\.\d)|(?<![\w.])[-−]?\d+(?:\.0+)?(?!\d|\.\d)")

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
    token = token.replace(",", "").replace("−", "-")
    return int(float(token)) if "." in token else int(token)


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
    m = _INT.search(fragment)
    if m:
        return Parsed.ok(str(_int_from_digits(m.group(0))), m.group(0))
    runs = _number_word_runs(fragment)
    if runs:
        return Parsed.ok(str(runs[0][0]), runs[0][1])
    return None


def parse(text: str) -> Parsed:
    """Extract the integer answer from ``text`` following the module's versioned rule."""
    cleaned = text.replace("*", "").replace("`", "")
    for line in reversed(cleaned.splitlines()):
        m = _PREFIX.search(line)
        if m:
            found = _first_integer(m.group(1))
            if found:
                return found
    digits = _INT.findall(cleaned)
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
