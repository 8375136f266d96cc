"""How the renderings write numbers, points, vectors and equations.

Every number a rendering prints is readable: an integer, a fraction ``p/q``, or ``k√n``,
``k√n/q`` (:func:`fmt`); a gold is readable when it is ``p/q``, ``p√n/q`` or ``pπ/q`` with small
numbers (:func:`readable`).
"""

from __future__ import annotations

from typing import Any, Sequence

import sympy

from tasks.suites.base import GeneratorError
from tasks.suites.geometry.exact import Config, Point, dec_points, dist


def fmt(x: Any) -> str:
    """A readable exact number: ``5``, ``-3/2``, ``√2``, ``-3√3``, ``3√3/2``.

    Raises :class:`GeneratorError` for any other shape: a template must never print an
    unreadable number (that is a template bug, caught by the tests for every seed).
    """
    x = sympy.nsimplify(x)
    coeff, rest = x.as_coeff_Mul()
    if not coeff.is_Rational:
        raise GeneratorError(f"geometry: cannot print {x} readably")
    sign = "-" if coeff < 0 else ""
    p, q = abs(int(coeff.p)), int(coeff.q)
    den = f"/{q}" if q != 1 else ""
    if rest == 1:
        return f"{sign}{p}{den}"
    if rest.is_Pow and rest.exp == sympy.S.Half and rest.base.is_Integer:
        return f"{sign}{p if p != 1 else ''}√{rest.base}{den}"
    raise GeneratorError(f"geometry: cannot print {x} readably")


def readable(x: sympy.Expr, max_den: int = 100, max_num: int = 5000) -> bool:
    """Whether a gold is readable: ``p/q``, ``p√n/q`` or ``pπ/q`` with small p, q, n."""
    x = sympy.nsimplify(x)
    coeff, rest = x.as_coeff_Mul()
    if not coeff.is_Rational or coeff == 0 or abs(coeff.p) > max_num or coeff.q > max_den:
        return False
    if rest == 1 or rest == sympy.pi:
        return True
    return bool(rest.is_Pow and rest.exp == sympy.S.Half and rest.base.is_Integer and rest.base < 1000)


def coefficient(x: Any) -> str:
    """A coefficient before a variable: empty for 1, parenthesised when a fraction (``(3/2)``)."""
    mag = fmt(x)
    return "" if mag == "1" else (f"({mag})" if "/" in mag else mag)


def point_text(name: str, p: Point) -> str:
    """``A(3, -2)``."""
    return f"{name}({', '.join(fmt(c) for c in p)})"


def vec_text(name: str, p: Point) -> str:
    """``a = ⟨3, -2⟩``."""
    return f"{name} = ⟨{', '.join(fmt(c) for c in p)}⟩"


def join(parts: Sequence[str]) -> str:
    """``x``, ``x and y``, ``x, y and z``."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def points_text(points: dict[str, Point], names: str) -> str:
    """``A(1, 2), B(3, 4) and C(5, 6)``."""
    return join([point_text(n, points[n]) for n in names])


def position_vectors_text(points: dict[str, Point], names: str, where: str = "") -> str:
    """``the points A, B and C have position vectors a = ⟨..⟩, b = ⟨..⟩ and c = ⟨..⟩``; ``where``
    (`` on the circle``) follows the names."""
    return (f"the points {join(list(names))}{where} have position vectors "
            f"{join([vec_text(n.lower(), points[n]) for n in names])}")


def _length(points: dict[str, Point], names: str) -> str:
    """The printed length of the segment ``names`` (``AB``) of ``points``."""
    return fmt(dist(points[names[0]], points[names[1]]))


def segment_text(config: Config, names: str) -> str:
    """The printed length of the configuration's segment ``names`` (``AB``)."""
    return _length(dec_points(config), names)


def lengths_text(config: Config, segments: Sequence[str]) -> str:
    """``AB = 13, BC = 14 and CA = 15``: the printed lengths of the configuration's segments."""
    points = dec_points(config)  # decoded once: sympify dominates a rendering's cost
    return join([f"{s} = {_length(points, s)}" for s in segments])


def in_plane(config: Config, names: str) -> str:
    """``In the plane, the points .. have position vectors ...`` (the vector rendering's opening)."""
    return f"In the plane, {position_vectors_text(dec_points(config), names)}."


def vector_question(first: str, vertex: str, second: str) -> str:
    """``Find the angle between the vectors a - c and b - c, in degrees.`` (an angle's vector question)."""
    return f"Find the angle between the vectors {first} - {vertex} and {second} - {vertex}, in degrees."


def signed_sum(terms: Sequence[tuple[str, Any]]) -> str:
    """``x² + y² - 4x + (3/2)y - 12`` from (variable, coefficient) pairs; zero terms dropped."""
    out = ""
    for var, coeff in terms:
        coeff = sympy.nsimplify(coeff)
        if coeff == 0:
            continue
        mag = coefficient(abs(coeff)) if var else fmt(abs(coeff))
        sign = ("-" if coeff < 0 else "") if not out else (" - " if coeff < 0 else " + ")
        out += f"{sign}{mag}{var}"
    return out or "0"


def linear_text(coeffs: Sequence[Any], names: Sequence[str], rhs: Any) -> str:
    """``3x + 4y = 27``, signs flipped so that the first coefficient is positive."""
    lead = next(c for c in coeffs if c != 0)
    flip = -1 if lead < 0 else 1
    return f"{signed_sum([(n, flip * c) for n, c in zip(names, coeffs)])} = {fmt(flip * rhs)}"


def shifted_square(var: str, centre: sympy.Expr) -> str:
    """``(x - 2)²``, ``(y + 3)²`` or ``x²``."""
    if centre == 0:
        return f"{var}²"
    return f"({var} - {fmt(centre)})²" if centre > 0 else f"({var} + {fmt(-centre)})²"


def circle_text(centre: Point, r2: sympy.Expr, names: str = "xyz") -> str:
    """``(x - 2)² + (y + 3)² = 25`` (also a sphere with three coordinates)."""
    return " + ".join(shifted_square(v, c) for v, c in zip(names, centre)) + f" = {fmt(r2)}"
