"""Math expressions: a text span normalized into math-looking runs, and a run read as its canonical value.

The ``math`` parser (:mod:`tasks.scoring.parse.math`) finds the span that holds the answer; this
module reads the value in it. Geometry golds are printed by :func:`canonical_exact` and imported
golds read by :func:`canonical`, so golds and answers share one canonical form.

A *math-looking run* is a maximal stretch of digits, ``.``, ``+ - * / ^``, parentheses, spaces,
``√`` and ``π`` on one line, after LaTeX (``\\frac``, ``\\dfrac``, ``\\sqrt``, ``\\sqrt[n]``,
``\\pi``, ``\\cdot``, ``\\times``, ``^\\circ``), the words ``sqrt`` and ``pi``, and degree signs
have been normalized; it must contain a digit or π. Degree signs and LaTeX units
(``\\text{cm}^2``) are dropped (answers are asked for in degrees, so ``90°`` is ``90``);
``50%`` is ``50/100``; a span that is nothing but ``a:b``, both sides math-looking runs, is the
ratio ``a/b`` (``Step 1: 5`` has a word on the left and stays ``5``). Numbers as people write
them are read first (:mod:`tasks.scoring.parse.written`, new in version 3): ``1,250.5``,
``3.162e0``, ``3.162 \\times 10^{0}``, the mixed numbers ``2\\frac{2}{3}`` and ``2 2/3``; the word
``times`` between numbers is a product.

Canonical value (``Parsed.value``):

* a bare decimal (``4.47``, ``-0.50``, ``.5``) is kept as the decimal string as given, with
  a leading ``0`` added and ``+`` and leading integer zeros dropped, trailing zeros kept: its
  significant digits are what rule 1 needs;
* anything else is the exact value: parsed with sympy (decimals inside a larger expression, such
  as ``1.5π``, are read as exact rationals), ``sympy.simplify``-ed and printed with ``str``
  (``2*sqrt(5)``, ``3/2``, ``8*pi``, ``90``). The generated golds use the same printer
  (:func:`canonical_exact`). An exact canonical string never contains ``.``, so the two kinds are
  told apart by their text alone. A gold is read the same way: ``3.162`` is a decimal gold.

Safety: the text handed to sympy is capped at :data:`MAX_EXPR_CHARS` characters, may contain only
digits, ``.``, ``+ - * / ^``, parentheses, spaces and the names ``sqrt`` and ``pi`` (so ``eval``
inside ``parse_expr`` sees no other name, attribute or literal), and is first parsed unevaluated so
that exponents can be bounded before anything is computed (``9^9^9`` is rejected, not evaluated).
"""

from __future__ import annotations

import re
from functools import lru_cache

import sympy
from sympy.parsing.sympy_parser import (
    auto_number,
    convert_xor,
    implicit_multiplication,
    parse_expr,
    rationalize,
)

from tasks.scoring.parse.written import drop_thousands_separators, expand_scientific, mixed_numbers

MAX_EXPR_CHARS = 200  # longer "answers" are prose or garbage, and cost sympy time
MAX_EXPONENT = 12  # |numerator| and denominator of any exponent
MAX_POWER_PRODUCT = 64  # product of exponents along nested powers: bounds the size of integers
MAX_RUNS = 50  # runs tried per span: garbage with thousands of failing runs stays cheap

_TRANSFORMS = (auto_number, rationalize, convert_xor, implicit_multiplication)
_GLOBALS = {
    "Integer": sympy.Integer,
    "Float": sympy.Float,
    "Rational": sympy.Rational,
    "Add": sympy.Add,
    "Mul": sympy.Mul,
    "Pow": sympy.Pow,
}
_LOCALS = {"sqrt": sympy.sqrt, "pi": sympy.pi}

_SAFE_EXPR = re.compile(r"^(?:sqrt|pi|[0-9.+\-*/^() ])+$")
# a bare decimal (sign, integer digits, fraction digits); the comparison reads golds with it too
DECIMAL = re.compile(r"^([+-]?)(\d*)\.(\d+)$")
_RUN = re.compile(r"[0-9.√π+\-*/^() \t]+")
_RATIO_SIDE = r"[0-9.√π+\-*/^() \t]*?[0-9π][0-9.√π+\-*/^() \t]*?"
_RATIO = re.compile(rf"^\s*({_RATIO_SIDE})\s*:\s*({_RATIO_SIDE})\s*$")
_HALFWIDTH = {**{c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}, 0x3000: 0x20}

_LATEX_SUBS: tuple[tuple[str, str], ...] = (
    (r"\\left|\\right|\\displaystyle|\\,|\\;|\\!|\\quad|\$", " "),
    (r"\\frac\s*(\d)\s*(\d)", r"((\1)/(\2))"),  # \frac12
    (r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|\\degree|°|º", ""),
    (r"\\cdot|\\times|[×·⋅∙]", "*"),
    (r"[−–—]", "-"),
    (r"÷", "/"),
    (r"\\pi\b|π", " π "),
    (r"\\sqrt\s*(\d+)", r"√\1"),
)
_INNER_GROUPS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\\boxed\s*\{([^{}]*)\}"), r"\1"),
    (re.compile(r"\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}"), r"((\1)/(\2))"),
    (re.compile(r"\\sqrt\s*\[([^\[\]{}]*)\]\s*\{([^{}]*)\}"), r"((\2)^(1/(\1)))"),
    (re.compile(r"\\sqrt\s*\{([^{}]*)\}"), r"√(\1)"),
)


def canonical_exact(expr: sympy.Expr) -> str:
    """The canonical string of an exact value: ``str(sympy.simplify(expr))`` (golds use this too)."""
    return str(sympy.simplify(expr))


def canonical(text: str) -> str | None:
    """The canonical value of a bare expression (no extraction), or None when it does not parse."""
    found = span_value(text, last=True)
    return found[0] if found else None


# --- runs ------------------------------------------------------------------------------------


def span_value(span: str, last: bool) -> tuple[str, str] | None:
    """(canonical value, run) of the first parsable run of the span, or of the last when ``last``.

    Free prose (``last``) ends with the answer; a declared answer starts with it (``2√5 ≈ 4.47``).
    """
    norm = _normalize(span)
    # a ratio is short; the length guard also keeps the regex from backtracking over long prose
    ratio = _RATIO.match(norm) if ":" in norm and len(norm) <= MAX_EXPR_CHARS else None
    if ratio:
        norm = f"({ratio.group(1)})/({ratio.group(2)})"
    runs = [r for r in (_trim(m.group(0)) for m in _RUN.finditer(norm)) if r]
    if last:
        runs.reverse()
    for run in runs[:MAX_RUNS]:
        value = _canonical_run(run)
        if value is not None:
            return value, run
    return None


def halfwidth(text: str) -> str:
    """Full-width forms (``３√２``, ``（１）``, ``：``, as Chinese and Japanese text writes them) and the
    ideographic space as their ASCII counterparts; nothing else changes (NFKC would also turn ``²``
    into ``2``, so that ``AB²`` read as ``AB2``)."""
    return text.translate(_HALFWIDTH)


def _normalize(text: str) -> str:
    """LaTeX, Unicode operators, degree signs, the words sqrt and pi → the run alphabet."""
    # numbers as people write them first: the LaTeX rewrites below would split 2\frac{2}{3}
    text = mixed_numbers(expand_scientific(drop_thousands_separators(halfwidth(text))))
    text = re.sub(r"\\[dt]frac", r"\\frac", text)
    text = re.sub(r"(?<=[\d)π])\s+times\s+(?=[\d(√π\\])", " * ", text)  # "2 times 2/3" is a product
    # units (with their exponent: cm^2 is not a square), before groups are unwrapped
    text = re.sub(r"\\(?:text|mathrm)\s*\{[^{}]*\}(?:\s*\^\s*\{?\s*\d\s*\}?)?", " ", text)
    for _ in range(20):  # innermost groups first; nesting deeper than this is not an answer
        new = text
        for pattern, repl in _INNER_GROUPS:
            new = pattern.sub(repl, new)
        if new == text:
            break
        text = new
    for pattern, repl in _LATEX_SUBS:
        text = re.sub(pattern, repl, text)
    text = re.sub(r"(?<![A-Za-z])sqrt(?![A-Za-z])", "√", text)
    text = re.sub(r"(?<![A-Za-z])pi(?![A-Za-z])", "π", text)
    text = re.sub(r"(\d)\s*%", r"\1/100", text)
    text = text.replace("**", "^").replace("{", "(").replace("}", ")")
    return text


def _trim(run: str) -> str:
    """A run without surrounding spaces, a sentence's final dot, dangling operators or parens."""
    run = run.strip()
    while True:
        before = run
        run = run.strip().rstrip(".+-*/^").lstrip("+*/^").strip()
        if run.count("(") > run.count(")") and run.startswith("("):
            run = run[1:]
        if run.count(")") > run.count("(") and run.endswith(")"):
            run = run[:-1]
        if run.endswith("("):  # an aside after the answer: "3√2 (since AC = 3"
            run = run[:-1]
        if run == before:
            break
    return run if re.search(r"[0-9π]", run) else ""


@lru_cache(maxsize=65536)
def _canonical_run(run: str) -> str | None:
    """The canonical value of one run, or None when it is not a finite real number."""
    expr_text = re.sub(r"√\s*(\d+(?:\.\d+)?|π)", r"sqrt(\1)", run)
    expr_text = expr_text.replace("√", "sqrt").replace("π", " pi ")
    expr_text = re.sub(r"\s+", " ", expr_text).strip()
    compact = expr_text.replace(" ", "")
    decimal = DECIMAL.match(compact)
    if decimal:
        sign, whole, frac = decimal.groups()
        return f"{'-' if sign == '-' else ''}{int(whole or '0')}.{frac}"
    expr = safe_sympify(expr_text)
    return canonical_exact(expr) if expr is not None else None


# --- safe evaluation -------------------------------------------------------------------------


def safe_sympify(expr_text: str) -> sympy.Expr | None:
    """Parse a whitelisted expression with sympy, bounding exponents before evaluating anything."""
    if len(expr_text) > MAX_EXPR_CHARS or not _SAFE_EXPR.match(expr_text):
        return None
    try:
        unevaluated = parse_expr(
            expr_text, local_dict=dict(_LOCALS), global_dict=dict(_GLOBALS),
            transformations=_TRANSFORMS, evaluate=False,
        )
        if not _bounded(unevaluated, 1):
            return None
        expr = parse_expr(
            expr_text, local_dict=dict(_LOCALS), global_dict=dict(_GLOBALS),
            transformations=_TRANSFORMS,
        )
    except Exception:  # sympy raises many types (SyntaxError, TokenError, TypeError, ...)
        return None
    if not isinstance(expr, sympy.Expr) or expr.free_symbols or not expr.is_number:
        return None
    if expr.has(sympy.zoo, sympy.oo, -sympy.oo, sympy.nan) or expr.is_real is not True:
        return None
    return expr


def _bounded(expr: sympy.Basic, product: int) -> bool:
    """Whether every exponent is a small rational and nested powers stay small (no 9^9^9)."""
    if isinstance(expr, sympy.Pow):
        base, exp = expr.args
        if exp.free_symbols or not _bounded(exp, 1):
            return False
        exp_value = exp.doit()
        if not exp_value.is_Rational:
            return False
        p, q = abs(int(exp_value.p)), int(exp_value.q)
        if p > MAX_EXPONENT or q > MAX_EXPONENT or product * max(p, 1) > MAX_POWER_PRODUCT:
            return False
        return _bounded(base, product * max(p, 1))
    return all(_bounded(arg, product) for arg in expr.args)

