"""Numbers as people write them: thousands separators, scientific notation, mixed numbers.

Text rewrites shared by the ``integer`` and ``math`` parsers, applied before they look for a
value, each deciding an ambiguous form the way an expert grader of English-language answers does
(docs/scoring.md#numbers-as-people-write-them):

* a comma followed by exactly three digits, in a number whose every comma group has three digits,
  is a thousands separator (``1,250.5`` is 1250.5; ``12,345,678``); so the European decimal
  comma is not read: ``3,162`` is 3162 and ``3,16`` is the two numbers 3 and 16. A comma group of
  another length is a list (``1,2,3``), and so is a pair in brackets (``(1,250)``, a point);
* scientific notation (``3.162e0``, ``1.2E+3``, ``3.162 \\times 10^{0}``, ``1.2×10³``) is the
  plain decimal it denotes, with the mantissa's digits (``3.162e0`` is ``3.162``, ``2.50e-1``
  is ``0.250``; ``1.2e3``, with no digit left after the point, is the integer ``1200``);
* an integer directly followed by a proper fraction of integers is a mixed number: LaTeX
  ``2\\frac{2}{3}``, ``2\\tfrac23``, Unicode ``2⅔`` and plain ``2 2/3`` are all 8/3 and ``-2 2/3``
  is -8/3. An improper or non-integer fraction after a number is a product, as in algebra
  (``3\\frac{\\sqrt{3}}{2}``, ``2\\frac{5}{3}``), as is a written operator (``2 \\cdot \\frac{2}{3}``,
  ``2 times 2/3``).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_VULGAR = {"½": "1/2", "⅓": "1/3", "⅔": "2/3", "¼": "1/4", "¾": "3/4", "⅕": "1/5", "⅖": "2/5",
           "⅗": "3/5", "⅘": "4/5", "⅙": "1/6", "⅚": "5/6", "⅛": "1/8", "⅜": "3/8", "⅝": "5/8", "⅞": "7/8"}

# Every group after the first has three digits and the number ends there (``1,2500`` is no number
# with separators); one opening a bracket is a point's coordinate, and a further comma group a list.
_THOUSANDS = re.compile(r"(?<![\w.,(\[])(\d{1,3})((?:,\d{3})+)(?![\w]|,\d|\.\d*,)")

_MANTISSA = r"(?<![\w.^/√π)])([-−]?(?:\d+\.\d*|\.\d+|\d+))"
_E_NOTATION = re.compile(_MANTISSA + r"[eE]([+\-−]?\d{1,3})(?![\w.])")
_TIMES_TEN = re.compile(
    _MANTISSA + r"\s*(?:\\times|\\cdot|[×·⋅∙*x])\s*10\s*(?:\^\s*\{?\s*([+\-−]?\d{1,3})\s*\}?|([⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]+))"
    r"(?![\d.])")

_LATEX_MIXED = re.compile(
    r"(?<![\w.^/}])(\d+)\s*\\[dt]?frac\s*(?:\{\s*(\d+)\s*\}\s*\{\s*(\d+)\s*\}|(\d)\s*(\d))")
_PLAIN_MIXED = re.compile(r"(?<![\w.^/*)])(\d+)[ \t]+(\d+)[ \t]*/[ \t]*(\d+)(?![\w.^(/])")
_UNICODE_MIXED = re.compile(r"(?<![\w.^/])(\d*)[ \t]*([" + "".join(_VULGAR) + "])")


def drop_thousands_separators(text: str) -> str:
    """``text`` with the commas of numbers like ``1,250.5`` removed (see the module docstring)."""
    return _THOUSANDS.sub(lambda m: m.group(1) + m.group(2).replace(",", ""), text)


def expand_scientific(text: str) -> str:
    """``text`` with numbers in scientific notation written as plain decimals (``1.2e3`` → ``1200``)."""
    def plain(mantissa: str, exponent: str) -> str:
        try:
            value = Decimal(mantissa.replace("−", "-")).scaleb(int(exponent.replace("−", "-")))
        except (InvalidOperation, ValueError):
            return ""
        return format(value, "f")

    def e_repl(m: re.Match[str]) -> str:
        return plain(m.group(1), m.group(2)) or m.group(0)

    def times_repl(m: re.Match[str]) -> str:
        exponent = m.group(2) if m.group(2) is not None else m.group(3).translate(_SUPERSCRIPTS)
        return plain(m.group(1), exponent) or m.group(0)

    return _TIMES_TEN.sub(times_repl, _E_NOTATION.sub(e_repl, text))


def mixed_numbers(text: str) -> str:
    """``text`` with mixed numbers written as sums in parentheses (``2 2/3`` → ``(2+2/3)``)."""
    def latex(m: re.Match[str]) -> str:
        num, den = (m.group(2), m.group(3)) if m.group(2) is not None else (m.group(4), m.group(5))
        return _mixed(m.group(1), num, den) or m.group(0)

    def unicode(m: re.Match[str]) -> str:
        fraction = _VULGAR[m.group(2)]
        return f"({m.group(1)}+{fraction})" if m.group(1) else f"({fraction})"

    text = _LATEX_MIXED.sub(latex, text)
    text = _UNICODE_MIXED.sub(unicode, text)
    return _PLAIN_MIXED.sub(lambda m: _mixed(m.group(1), m.group(2), m.group(3)) or m.group(0), text)


def _mixed(whole: str, num: str, den: str) -> str:
    """``(whole+num/den)`` when ``num/den`` is a proper fraction, else "" (a product, not a mixed number)."""
    return f"({whole}+{num}/{den})" if 0 < int(num) < int(den) else ""
