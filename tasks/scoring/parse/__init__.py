"""Answer extraction and normalization, versioned per answer type.

Each answer type names a parser module exposing ``VERSION`` (bumped whenever a change could alter
a parse), ``parse(text) -> Parsed`` and ``matches(value, gold) -> bool``; it may expose
``lenient(value, gold) -> bool`` for a separately labelled lenient score, and
``answer_key(value) -> str | None`` when its values are not yet keys: the canonical answer stored
with the parse (equal answers, equal keys), which Consistency@k compares. Parses are derived data:
``invarbench rescore`` recomputes them from stored responses at any time.

A parser marks a value read from a *stated* answer (its answer marker: an ``Answer:`` line,
``\\boxed{}``, an ``Output:`` line, ...) as such. A response cut at the token limit (finish reason
``length``) whose value was not stated is ``truncated``: whatever number its cut-off text ends with
(``1+1+1+…``) is not its answer (docs/scoring.md#truncated-responses).
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from types import ModuleType

ANSWER_TYPES: dict[str, str] = {
    "integer": "tasks.scoring.parse.numeric",
    "text": "tasks.scoring.parse.output_line",
    "math": "tasks.scoring.parse.math",
}


TRUNCATED_FINISH = "length"  # the finish reason of a response cut at the token limit


@dataclass(frozen=True)
class Parsed:
    """A parse: ``ok`` with a canonical ``value``, ``unparsable``, or ``truncated`` (cut at the token
    limit before an answer was stated); ``extracted`` is the span used; ``stated`` whether the value
    came from the parser's answer marker rather than from wherever the text ends."""

    status: str
    value: str | None
    extracted: str | None = None
    stated: bool = False

    @classmethod
    def ok(cls, value: str, extracted: str | None = None, stated: bool = False) -> "Parsed":
        return cls("ok", value, extracted if extracted is not None else value, stated)

    @classmethod
    def unparsable(cls, extracted: str | None = None) -> "Parsed":
        return cls("unparsable", None, extracted)


@functools.cache
def parser_for(answer_type: str) -> ModuleType:
    """The parser module of ``answer_type``; an unknown type is an error naming it."""
    # Cached: it runs once per parsed row, and import_module's lookup showed in rescore profiles.
    if answer_type not in ANSWER_TYPES:
        raise KeyError(f"unknown answer_type {answer_type!r}; known: {', '.join(sorted(ANSWER_TYPES))}")
    return importlib.import_module(ANSWER_TYPES[answer_type])


def parser_version(answer_type: str) -> str:
    """``<answer_type>/<VERSION>``: the version stamped on every parse row."""
    return f"{answer_type}/{parser_for(answer_type).VERSION}"


def parse(answer_type: str, text: str | None, finish_reason: str | None = None) -> Parsed:
    """Parse a response text with the parser of ``answer_type``; a response cut at the token limit
    (``finish_reason`` ``length``) without a stated answer is ``truncated``."""
    if text is None:
        return Parsed.unparsable()
    parsed = parser_for(answer_type).parse(text)
    if finish_reason == TRUNCATED_FINISH and not parsed.stated:
        return Parsed("truncated", None, parsed.extracted)
    return parsed


def answer_key(answer_type: str, value: str | None) -> str | None:
    """The canonical answer of a parsed ``value``: the parser's ``answer_key``, else the value itself
    (integer and text values are canonical already); None for no value."""
    if value is None:
        return None
    module = parser_for(answer_type)
    return module.answer_key(value) if hasattr(module, "answer_key") else value

