"""Surface features of a prompt, computed for every item of every suite.

Described in docs/data-model.md#surface-features.

Each feature counts exactly what its name says, so the surface-complexity regression measures
what it claims (one of the GeoRepEval scripts' defects):

- ``n_chars``: characters of the prompt text;
- ``n_words``: whitespace-separated tokens;
- ``n_tokens``: tiktoken ``cl100k_base`` tokens;
- ``n_symbols``: characters that are neither alphanumeric nor whitespace;
- ``symbol_density``: ``n_symbols / n_chars``;
- ``n_numbers``: maximal runs of digits, with one decimal point (``3.14`` is one number);
- ``n_operators``: occurrences of ``+ - * / = ^ · × ÷ √ ·`` and the words ``dot``/``cross``;
- ``n_points``: distinct capital letters inside all-capital words of one to four letters
  (``ABC`` names the points A, B, C), the point names of a geometry statement; the article
  ``A`` and the pronoun ``I`` before a lowercase word are not points.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import asdict, dataclass
from typing import Any

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_OPERATOR = re.compile(r"[+\-*/=^·×÷√]|\b(?:dot|cross)\b")
_POINT_WORD = re.compile(r"\b([A-Z]{1,4})\b(?!\s+[a-z])|\b([A-Z]{2,4})\b")


@dataclass(frozen=True)
class SurfaceFeatures:
    """The surface features of one prompt."""

    n_chars: int
    n_words: int
    n_tokens: int
    n_symbols: int
    symbol_density: float
    n_numbers: int
    n_operators: int
    n_points: int


@functools.lru_cache(maxsize=1)
def _encoding():
    # litellm ships the cl100k_base BPE file and tiktoken reads TIKTOKEN_CACHE_DIR first, so
    # pointing it there keeps token counting offline (tiktoken would otherwise download it).
    # find_spec locates the file without importing litellm (seconds of start-up for `generate`).
    import importlib.util

    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("litellm is not installed: its bundled tokenizer file is needed offline")
    bundled = os.path.join(list(spec.submodule_search_locations)[0], "litellm_core_utils", "tokenizers")
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", bundled)
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")


def prepare() -> None:
    """Load the tokenizer now, not at the first item row that needs it (see validate.prepare)."""
    _encoding()


def surface_features(text: str) -> SurfaceFeatures:
    """Compute the surface features of ``text``."""
    n_chars = len(text)
    n_symbols = sum(1 for ch in text if not ch.isalnum() and not ch.isspace())
    return SurfaceFeatures(
        n_chars=n_chars,
        n_words=len(text.split()),
        n_tokens=len(_encoding().encode(text, disallowed_special=())),
        n_symbols=n_symbols,
        symbol_density=(n_symbols / n_chars) if n_chars else 0.0,
        n_numbers=len(_NUMBER.findall(text)),
        n_operators=len(_OPERATOR.findall(text)),
        n_points=len({ch for m in _POINT_WORD.findall(text) for ch in "".join(m)}),
    )


def feature_row(text: str) -> dict[str, float | int]:
    """The features as a flat dict, ready to be item columns."""
    return asdict(surface_features(text))


def add_features(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give each item row that has none (no ``n_tokens``, or a null one: a row read back from a
    sweep's table, tasks.items.compact) its surface features (in place); returns ``rows``. A
    sweep computes them only for the chunks it validates and stores: tokenizing is most of the
    cost of generating an item, and the lake already holds the features of the items it holds."""
    for row in rows:
        if row.get("n_tokens") is None:
            row.update(feature_row(row["prompt"]))
    return rows
