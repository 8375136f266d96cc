"""Math answers (answer_type ``math``): extraction, matching rules 1 and 2, keys.

Extraction (the first source found decides; a later source is never consulted when an earlier one
exists but is unparsable, because that source is the model's declared answer):

1. the last JSON ``"numeric_answer"`` field in the text (inside prose or a code fence; a JSON
   string or a bare number, quoted keys in single or double quotes);
2. the last ``Answer:`` line (``Final answer:``, ``**Answer:**``, ``答案：`` and ``答：``
   included); its value is the first math-looking run on that line, or on the next non-empty
   line when the line is empty after the colon (``Answer: 2√5 ≈ 4.47`` reads ``2√5``);
3. the last ``\\boxed{...}``;
4. otherwise the last math-looking run of the whole text.

Math-looking runs and the canonical value (``Parsed.value``: a decimal string as given, else the
exact value printed by sympy) are :mod:`tasks.scoring.parse.math_expression`'s.

Matching (:func:`matches`): rule 1 for an exact gold (every generated gold; any gold written
without a decimal point), rule 2 for a gold written as a decimal (imported sets). Both rules, with
their examples, are stated once, in docs/scoring.md#rule-1 and docs/scoring.md#rule-2; rule 2 is
new in parser version 2 (version 1 compared a decimal gold like any decimal, by equality).

Answer key (:func:`answer_key`, stored with every parse for Consistency@k): a canonical form in
which equal values are equal strings. A value with a terminating decimal expansion is its shortest
decimal (``3/2``, ``1.5`` and ``1.50`` are all ``1.5``; ``12.0`` is ``12``); any other value is its
exact canonical form (``sqrt(20)`` and ``2√5`` are ``2*sqrt(5)``). A decimal and an irrational
value never share a key (``4.47`` is not ``2*sqrt(5)``): keys are an equivalence, and rounding is
not one. Correct answers are compared by the gold instead (see ``sql/intermediate/family_trials.sql``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import sympy

from tasks.scoring.parse import Parsed
from tasks.scoring.parse.math_expression import DECIMAL, canonical, canonical_exact, safe_sympify, span_value

VERSION = "4"

MAX_TEXT_CHARS = 100_000  # only the tail of a longer response is read (answers come last)
MIN_SIG_DIGITS = 3  # rules 1 and 2: fewer significant digits match only an equal value

_JSON_FIELD = re.compile(
    r"""["']numeric_answer["']\s*:\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^,}\n]*)"""
)
# "答案：" and "答：" (answer) are the Chinese prompts' answer lines; "解答：" opens a solution
_ANSWER_LINE = re.compile(r"(?i)(?:\banswer\b[*_ \t]*(?:is[ \t]*)?|(?<!解)答案?(?:是|为)?)[:：][*_ \t]*([^\n]*)")


@dataclass(frozen=True)
class _Value:
    """A canonical value read back: a decimal (exact value, places, significant digits) or exact."""

    expr: sympy.Expr
    is_decimal: bool
    places: int = 0
    sig_digits: int = 0


# Pure functions of their strings, cached: sympy costs milliseconds per answer and real answers
# repeat heavily (golds, common wrong answers), so re-scoring a million responses parses each
# distinct string once.
@lru_cache(maxsize=65536)
def parse(text: str) -> Parsed:
    """Extract the answer of a response and return its canonical value (see the module docstring)."""
    span, in_prose = _answer_span(text[-MAX_TEXT_CHARS:])
    found = span_value(span, last=in_prose)
    if found is None:
        return Parsed.unparsable(span.strip())
    value, run = found
    # sources 1-3 are the model's declared answer; free prose (source 4) is not
    return Parsed.ok(value, run if in_prose else span.strip(), stated=not in_prose)


@lru_cache(maxsize=65536)
def matches(value: str, gold: str) -> bool:
    """Whether a canonical parsed ``value`` matches the ``gold``: rule 1, or rule 2 for a decimal gold."""
    v, g = _read_canonical(value), _read_canonical(gold)
    if v is None or g is None:
        return False
    if g.is_decimal:
        return _agrees_with_decimal_gold(v, g)
    if v.is_decimal:
        return _decimal_agrees(v, g.expr)
    return _exact_equal(v.expr, g.expr)


@lru_cache(maxsize=65536)
def answer_key(value: str | None) -> str | None:
    """The key of a canonical value (see the module docstring): equal values, equal keys."""
    read = _read_canonical(value) if value is not None else None
    if read is None:
        return None
    if _terminates(read.expr):
        return _decimal_text(read.expr)
    return canonical_exact(read.expr)


# --- extraction ------------------------------------------------------------------------------


def _answer_span(text: str) -> tuple[str, bool]:
    """The text span holding the answer, and whether it was found in free prose (source 4)."""
    fields = _JSON_FIELD.findall(text)
    if fields:
        return _unquote(fields[-1]), False
    lines = list(_ANSWER_LINE.finditer(text))
    if lines:
        last = lines[-1]
        rest = last.group(1)
        if not rest.strip():
            following = [ln for ln in text[last.end():].splitlines() if ln.strip()]
            rest = following[0] if following else ""
        return rest, False
    boxed = _last_boxed(text)
    if boxed is not None:
        return boxed, False
    return text, True


def _unquote(raw: str) -> str:
    """A JSON field's raw value without quotes; ``\\\\`` and escaped quotes undone, LaTeX kept."""
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        raw = raw[1:-1]
        # json.loads would turn "\frac" into a form feed; undo only the escapes models mean
        raw = raw.replace("\\\\", "\\").replace('\\"', '"').replace("\\'", "'")
    return raw


def _last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}``, braces balanced."""
    start = text.rfind("\\boxed")
    if start < 0:
        return None
    brace = text.find("{", start)
    if brace < 0:
        return None
    depth = 0
    for i in range(brace, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[brace + 1 : i]
    return None

# --- comparison ------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _read_canonical(value: str) -> _Value | None:
    """A canonical string (or a gold written in sympy syntax) read back as a :class:`_Value`."""
    if value is None:
        return None
    text = value.strip()
    decimal = DECIMAL.match(text)
    if decimal:
        _, whole, frac = decimal.groups()
        digits = (whole + frac).lstrip("0")
        return _Value(sympy.Rational(Fraction(text)), True, len(frac), len(digits))
    canon = canonical(text)
    if canon is None:
        return None
    if DECIMAL.match(canon):
        return _read_canonical(canon)
    expr = safe_sympify(canon)
    return _Value(expr, False) if expr is not None else None


def _terminates(x: sympy.Expr) -> bool:
    """Whether ``x`` is a rational with a terminating decimal expansion (denominator 2^a·5^b)."""
    if not x.is_Rational:
        return False
    q = int(x.q)
    for p in (2, 5):
        while q % p == 0:
            q //= p
    return q == 1


def _decimal_agrees(d: _Value, x: sympy.Expr) -> bool:
    """Rule 1 for a decimal ``d`` against an exact ``x`` (see the module docstring)."""
    if x.is_Rational and d.expr == x:
        return True
    if _terminates(x) or d.sig_digits < MIN_SIG_DIGITS:
        return False
    return _within(x, d.expr, d.places)


def _agrees_with_decimal_gold(a: _Value, g: _Value) -> bool:
    """Rule 2 for an answer ``a`` against a decimal gold ``g`` (see the module docstring)."""
    if a.expr.is_Rational and a.expr == g.expr:
        return True
    coarser = a if a.is_decimal and a.places < g.places else g
    if coarser.sig_digits < MIN_SIG_DIGITS:
        return False
    return _within(a.expr, g.expr, coarser.places)


def _within(x: sympy.Expr, d: sympy.Expr, places: int) -> bool:
    """Whether ``|x − d| ≤ ½·10^(−places)``, exactly (numerically only where ``x`` is irrational)."""
    slack = sympy.Abs(x - d) - sympy.Rational(1, 2 * 10**places)
    if slack.is_Rational:
        return bool(slack <= 0)
    numeric = slack.evalf(30)
    return bool(numeric.is_number and numeric <= 0)


def _decimal_text(x: sympy.Rational) -> str:
    """The shortest decimal of a rational with a terminating expansion (``3/2`` → ``1.5``, ``12`` → ``12``)."""
    p, q = int(x.p), int(x.q)
    places = 0
    while (10**places) % q:  # q = 2^a·5^b divides 10^max(a, b)
        places += 1
    scaled = abs(p) * 10**places // q
    whole, frac = divmod(scaled, 10**places)
    text = f"{whole}.{frac:0{places}d}".rstrip("0").rstrip(".") if places else str(whole)
    return f"-{text}" if p < 0 else text


def _exact_equal(a: sympy.Expr, b: sympy.Expr) -> bool:
    """Symbolic equality, with a numeric pre-check so that different values fail fast."""
    if a == b:
        return True
    diff = a - b
    numeric = diff.evalf(30)
    scale = max(1.0, float(abs(a.evalf(15))))
    if not numeric.is_number or abs(numeric) > 1e-20 * scale:
        return False
    verdict = diff.equals(0)
    if verdict is None:
        return bool(abs(diff.evalf(60)) < 1e-45 * scale)
    return bool(verdict)
