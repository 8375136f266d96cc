"""The ``math`` answer parser: extraction, canonical values and matching rule 1."""

from __future__ import annotations

import time

import pytest

from tasks.parse import math as m
from tasks.parse import parse, parser_version

# (response text, gold, expected match)
CASES = [
    # the SPEC §4 and issue examples
    ("3/2", "3/2", True),
    ("1.5", "3/2", True),
    ("2√5", "sqrt(20)", True),
    ("2*sqrt(5)", "sqrt(20)", True),
    ("sqrt(20)", "2*sqrt(5)", True),
    ("4.47", "2*sqrt(5)", True),
    ("4.4", "2*sqrt(5)", False),
    ("8π", "8*pi", True),
    ("25.13", "8*pi", True),
    ("90°", "90", True),
    ("1/3", "0.3", False),
    ("0.3", "1/3", False),
    ("0.333", "1/3", True),
    # rule 1 details
    ("4.472", "2*sqrt(5)", True),
    ("4.470", "2*sqrt(5)", False),  # claims 4 significant digits, the 4th is wrong
    ("4.48", "2*sqrt(5)", False),
    ("0.667", "2/3", True),
    ("0.666", "2/3", False),  # truncated, not rounded
    ("0.67", "2/3", False),  # only 2 significant digits
    ("1.25", "5/4", True),
    ("1.3", "5/4", False),
    ("1.250", "5/4", True),
    ("1.249", "5/4", False),  # a terminating gold demands the exact decimal
    ("12.0", "12", True),
    ("25.133", "8*pi", True),
    ("25.132", "8*pi", False),
    ("3.14", "pi", True),
    ("1.0472", "pi/3", True),
    # exact forms
    ("3√2/2", "3*sqrt(2)/2", True),
    ("3/sqrt(2)", "3*sqrt(2)/2", True),
    ("\\frac{3}{2}", "3/2", True),
    ("\\dfrac{\\sqrt{3}}{2}", "sqrt(3)/2", True),
    ("\\sqrt{20}", "2*sqrt(5)", True),
    ("2\\sqrt{5}", "2*sqrt(5)", True),
    ("$\\frac{25\\pi}{4}$", "25*pi/4", True),
    ("6.25π", "25*pi/4", True),
    ("25pi/4", "25*pi/4", True),
    ("60^\\circ", "60", True),
    ("60 degrees", "60", True),
    ("3:2", "3/2", True),
    ("(3 + √5)/2", "sqrt(5)/2 + 3/2", True),
    ("2√5", "2*sqrt(3)", False),
    ("8", "8*pi", False),
    ("-3/2", "3/2", False),
    ("π/2", "90", False),  # answers are asked for in degrees
    # JSON numeric_answer, in prose or a code fence
    ('{"reasoning": "law of cosines", "numeric_answer": "2*sqrt(5)"}', "sqrt(20)", True),
    ('Here it is:\n```json\n{"numeric_answer": 4.47}\n```', "2*sqrt(5)", True),
    ('{"numeric_answer": "\\\\frac{3}{2}"}', "3/2", True),
    ('{"reasoning": "answer: 7", "numeric_answer": "8"}', "8", True),
    ('{"numeric_answer": null}', "8", False),
    # prose with an Answer line (the last one wins) or without one
    ("AB² = 4 + 16 = 20, so AB = 2√5 ≈ 4.47.\nAnswer: 2√5", "2*sqrt(5)", True),
    ("Answer: 3\nWait, recheck.\nAnswer: 5", "5", True),
    ("Answer: 3\nWait, recheck.\nAnswer: 5", "3", False),
    ("**Answer:** 12 square units", "12", True),
    ("Final answer:\n$\\boxed{\\frac{8}{3}}$", "8/3", True),
    ("The area is therefore \\boxed{84}.", "84", True),
    ("The sides are 3, 4 and 5, so the area is 6.", "6", True),
    ("Answer: 2√5 ≈ 4.47", "2*sqrt(5)", True),
    ("Answer: 3 \\text{cm}^2", "3", True),
    ("\\boxed{12 \\text{ units}}", "12", True),
    # unparsable garbage never matches
    ("I cannot determine this.", "3", False),
    ("Answer: unknown", "3", False),
    ("9^9^9^9", "3", False),
    ("", "3", False),
]


@pytest.mark.parametrize("text, gold, expected", CASES)
def test_match_table(text: str, gold: str, expected: bool) -> None:
    parsed = m.parse(text)
    assert (parsed.status == "ok" and m.matches(parsed.value, gold)) is expected, parsed


def test_table_is_large_and_balanced() -> None:
    assert len(CASES) >= 40
    assert sum(e for *_, e in CASES) >= 15 and sum(not e for *_, e in CASES) >= 15


@pytest.mark.parametrize(
    "text, value",
    [
        ("sqrt(20)", "2*sqrt(5)"),
        ("2√5", "2*sqrt(5)"),
        ("1.5", "1.5"),
        ("+.50", "0.50"),
        ("-0.333", "-0.333"),
        ("007.5", "7.5"),
        ("8π", "8*pi"),
        ("90°", "90"),
        ("\\frac{6}{4}", "3/2"),
        ("1.5π", "3*pi/2"),
        ("50%", "1/2"),
    ],
)
def test_canonical_values(text: str, value: str) -> None:
    parsed = m.parse(text)
    assert parsed.status == "ok" and parsed.value == value


@pytest.mark.parametrize(
    "text", ["hello", "Answer: none", "1/0", "sqrt(-4)", "2^(1/13)", "9^9^9", "((((", "x" * 1000]
)
def test_unparsable(text: str) -> None:
    assert m.parse(text).status == "unparsable"


def test_extracted_span_is_recorded() -> None:
    assert m.parse("so\nAnswer: 2√5 ≈ 4.47").extracted == "2√5 ≈ 4.47"
    assert m.parse("The result is 12.").extracted == "12"


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("3/2", "1.5", True),  # decimal agrees with exact
        ("1.5", "1.50", True),  # both decimals, numerically equal
        ("4.47", "4.472", False),  # both decimals, not equal
        ("2*sqrt(5)", "4.47", True),
        ("2*sqrt(5)", "sqrt(20)", True),
        ("8*pi", "25.13", True),
        ("8*pi", "8", False),
        ("not a value", "3", False),
    ],
)
def test_equivalent_for_consistency(a: str, b: str, expected: bool) -> None:
    assert m.equivalent(a, b) is expected
    assert m.equivalent(b, a) is expected


def test_pathological_input_is_cheap() -> None:
    started = time.monotonic()
    for text in ["9" * 5000, "(" * 3000 + "1" + ")" * 3000, "2^2^2^2^2^2^2^2", "1 " * 20000, "((2^12)^12)^12",
                 "a: " * 30000, "1" * 99_000 + ":2"]:
        m.parse(text)
    assert time.monotonic() - started < 5


def test_no_names_reach_eval() -> None:
    # only digits, operators, sqrt and pi survive normalization: the rest never reaches sympy
    assert m.parse("Answer: __import__('os').system('true')").status == "unparsable"
    assert m._safe_sympify("__import__('os')") is None
    assert m._safe_sympify("x + 1") is None


def test_registered_with_version() -> None:
    assert m.VERSION == "1"
    assert parser_version("math") == "math/1"
    assert parse("math", "Answer: 3/2").value == "3/2"
    assert parse("math", None).status == "unparsable"


def test_gold_strings_round_trip() -> None:
    for gold in ["2*sqrt(5)", "3/2", "8*pi", "sqrt(97)/3", "25*pi/4", "90", "sqrt(5)/2 + 3/2"]:
        assert m.canonical(gold) == gold
        assert m.matches(gold, gold)
