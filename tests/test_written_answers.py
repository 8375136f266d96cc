"""Answers written the way other people write them, each decided as an expert grader would.

Every row: the response text, the gold, whether it is correct, and the grader's reason. The
``math`` rows are scored against GeoRepEval-style golds (decimal, such as ``3.162``, or exact); the
``integer`` rows against the symmetry suite's integer golds. docs/scoring.md#numbers-as-people-write-them
states the same decisions.
"""

from __future__ import annotations

import pytest

from tasks.scoring.parse import math as m
from tasks.scoring.parse import numeric

# (response, gold, correct, the grader's reason)
MATH = [
    # thousands separators
    ("1,250.5", "1250.5", True, "a comma before three digits groups thousands"),
    ("The total is 1,250.5 square units.", "1250.5", True, "in prose too"),
    ("Answer: 12,345,678", "12345678", True, "every group three digits"),
    ("\\boxed{1,250}", "1250", True, "inside \\boxed"),
    ("$1,250.50", "1250.5", True, "currency: the dollar sign and the separator are dropped, 1250.50 = 1250.5"),
    ("The values are 1,2,3", "3", True, "groups of one digit make a list, whose last item is the prose's last number"),
    ("Answer: 1,2,3", "123", False, "a list is never one number"),
    ("Answer: 3,162", "3.162", False, "no decimal comma: in English 3,162 is three thousand one hundred sixty-two"),
    ("Answer: 3,162", "3162", True, "the same answer read as thousands"),
    ("Answer: 3,16", "3.16", False, "3,16 is no number with separators and no decimal: it starts with 3"),
    ("The midpoint is (1,250).", "1250", False, "a bracketed pair is a point, not a number"),
    # scientific notation
    ("3.162e0", "3.162", True, "e-notation is the decimal it denotes"),
    ("3.162e0", "sqrt(10)", True, "with the mantissa's precision: 3.162 rounds sqrt(10)"),
    ("Answer: 1.2E+3", "1200", True, "capital E and an explicit plus sign"),
    ("Answer: 3.162 \\times 10^{0}", "3.162", True, "LaTeX times ten to the power"),
    ("Answer: 3.162 \\times 10^{0}", "sqrt(10)", True, "kept a decimal: read exactly it would equal 1581/500 only"),
    ("1.2×10^3", "1200", True, "Unicode times and a caret"),
    ("1.2×10³", "1200", True, "a superscript exponent"),
    ("Answer: 5.4774 \\times 10^{1}", "54.77", True, "54.774 rounds to the gold"),
    ("Answer: 2.50e-1", "1/4", True, "0.250 equals 1/4 exactly"),
    ("Answer: 1.2e3", "1203", False, "1200 claims nothing after the point: only an equal gold matches"),
    # mixed numbers
    ("2\\frac{2}{3}", "8/3", True, "a whole number before a proper fraction is a mixed number"),
    ("Answer: 2\\tfrac23", "8/3", True, "the short LaTeX form"),
    ("Answer: $2\\dfrac{2}{3}$", "2.667", True, "8/3 rounds to the decimal gold"),
    ("Answer: 2 2/3", "8/3", True, "plain mixed number"),
    ("Answer: -2 2/3", "-8/3", True, "a minus applies to the whole mixed number"),
    ("Answer: 2⅔", "8/3", True, "Unicode vulgar fraction"),
    ("Answer: 2\\frac{2}{3}", "4/3", False, "not the product 2·2/3"),
    ("Answer: 2 \\cdot \\frac{2}{3}", "4/3", True, "a written operator makes a product"),
    ("Answer: 2 times 2/3", "4/3", True, "so does the word times"),
    ("Answer: 3\\frac{\\sqrt{3}}{2}", "3*sqrt(3)/2", True, "a fraction with a root is a coefficient's product"),
    ("Answer: 2\\frac{5}{3}", "10/3", True, "an improper fraction after a number is a product, as in algebra"),
    # currency, units, percentages
    ("Answer: €12", "12", True, "a currency sign is not part of the value"),
    ("The side is 12 cm.", "12", True, "a unit suffix is dropped"),
    ("Answer: 5 km/h", "5", True, "a compound unit's slash is no fraction"),
    ("Answer: 54.74°", "54.74", True, "degrees are the unit of angles"),
    ("Answer: 54.7356^\\circ", "54.74", True, "LaTeX degrees, rounding to the gold"),
    ("Answer: 45%", "0.45", True, "a percent sign divides by 100"),
    ("Answer: 45%", "9/20", True, "exactly"),
    ("Answer: 45%", "45", False, "45% is 0.45: no suite asks for a percentage, so the number stands as written"),
    # trailing periods, markdown, boxed, minus signs
    ("The answer is 12.", "12", True, "a sentence's full stop is no decimal point"),
    ("Answer: 3.162.", "3.162", True, "also after a decimal"),
    ("**Answer:** **12**", "12", True, "bold markdown"),
    ("The length is **3.162**", "3.162", True, "bold markdown in prose"),
    ("So the answer is $\\boxed{\\sqrt{10}}$.", "3.162", True, "boxed exact value against a decimal gold"),
    ("\\boxed{\\dfrac{8}{3}}", "8/3", True, "boxed fraction"),
    ("Answer: −3", "-3", True, "a Unicode minus"),
    ("Answer: −3", "3", False, "the sign counts"),
]

# (response, gold, correct, the grader's reason)
INTEGER = [
    ("Answer: 1,000", "1000", True, "a thousands separator"),
    ("The sum is 12,345.", "12345", True, "in prose, before a full stop"),
    ("1,2,3", "3", True, "a list: its last item"),
    ("Answer: 1,250.5", "1", False, "1,250.5 is not an integer; version 1 read its 1"),
    ("Answer: 1/2", "1", False, "a fraction is not an integer; version 1 read its numerator"),
    ("Answer: 2 2/3", "2", False, "a mixed number is not an integer"),
    ("Answer: 1.2e3", "1200", True, "scientific notation that denotes an integer"),
    ("Answer: $1,250", "1250", True, "currency"),
    ("Answer: 12 apples", "12", True, "a unit word"),
    ("The answer is 12.", "12", True, "a trailing full stop"),
    ("**12**", "12", True, "bold markdown"),
    ("\\boxed{12}", "12", True, "boxed"),
    ("Answer: −3", "-3", True, "a Unicode minus"),
    ("1 + 1 + 1 = 3", "3", True, "a worked sum ends with its result"),
    ("Answer: 45%", "45", True, "an integer answer's percent sign is a unit: the number is 45"),
]


@pytest.mark.parametrize("text, gold, correct, reason", MATH)
def test_math_answers_as_written(text: str, gold: str, correct: bool, reason: str) -> None:
    parsed = m.parse(text)
    assert (parsed.status == "ok" and m.matches(parsed.value, gold)) is correct, (reason, parsed)


@pytest.mark.parametrize("text, gold, correct, reason", INTEGER)
def test_integer_answers_as_written(text: str, gold: str, correct: bool, reason: str) -> None:
    parsed = numeric.parse(text)
    assert (parsed.status == "ok" and numeric.matches(parsed.value, gold)) is correct, (reason, parsed)


@pytest.mark.parametrize("text, value", [
    ("1,250.5", "1250.5"), ("3.162e0", "3.162"), ("2\\frac{2}{3}", "8/3"), ("2 2/3", "8/3"),
    ("2.50e-1", "0.250"), ("3.162 \\times 10^{0}", "3.162"), ("1.2E+3", "1200"),
])
def test_the_issue_forms_have_these_values(text: str, value: str) -> None:
    # the three forms issue #29 found misread (250.5, 0, 4/3) and their relatives
    assert m.parse(text).value == value
