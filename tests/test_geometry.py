"""The geometry suite: parallel renderings carry the same problem, families, prompts, import.

The central check reads the numbers back from each rendering's prompt text with regexes and
recomputes the answer with float math and textbook formulas (law of cosines, Heron, mass points,
...), independently of the templates' sympy code, then compares with the stored gold.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections import defaultdict
from typing import Callable

import pytest
import sympy

from tasks.scoring.parse.math import matches
from tasks.scoring.parse.math_expression import canonical
from tasks.suites import get_task, suite_tasks
from tasks.suites.base import GeneratorError, bins_from_edges, find_bin
from tasks.suites.geometry import CATEGORIES, TASKS, TEMPLATES
from tasks.suites.geometry.imported import ImportFamiliesError, load_families

SEEDS = range(20)

# --- reading numbers back ----------------------------------------------------------------------

NUM = r"(?:-?\d*√\d+(?:/\d+)?|-?\d+(?:/\d+)?)"


def num(text: str) -> float:
    """``5``, ``-3/2``, ``√2``, ``-3√3/2`` → float."""
    m = re.fullmatch(r"(-?)(\d*)(?:√(\d+))?(?:/(\d+))?", text.strip())
    assert m, text
    sign, coeff, root, den = m.groups()
    value = float(coeff or 1) * (math.sqrt(int(root)) if root else 1.0) / float(den or 1)
    return -value if sign else value


def after(text: str, phrase: str) -> float:
    """The number right after ``phrase`` (a regex)."""
    m = re.search(rf"{phrase}\s*({NUM})", text)
    assert m, (phrase, text)
    return num(m.group(1))


def seg(text: str, name: str) -> float:
    """``AB = 5`` → 5."""
    return after(text, rf"(?<![A-Za-z]){name} =")


def _tuples(pattern: str, text: str) -> dict[str, tuple[float, ...]]:
    return {m.group(1): tuple(num(x) for x in m.group(2).split(", ")) for m in re.finditer(pattern, text)}


def points(text: str) -> dict[str, tuple[float, ...]]:
    """``A(1, -2)`` → {"A": (1, -2)}."""
    return _tuples(rf"(?<![A-Za-z_])([A-Z])\(((?:{NUM})(?:, (?:{NUM}))+)\)", text)


def vectors(text: str) -> dict[str, tuple[float, ...]]:
    """``a = ⟨1, -2⟩`` → {"a": (1, -2)}."""
    return _tuples(rf"(?<![A-Za-z_])([a-z]) = ⟨((?:{NUM})(?:, (?:{NUM}))+)⟩", text)


def position_points(text: str) -> dict[str, tuple[float, ...]]:
    """Position vectors a, b, ... read as the points A, B, ..."""
    return {k.upper(): v for k, v in vectors(text).items()}


def linear(eq: str) -> tuple[dict[str, float], float]:
    """``3x - (3/2)y = 27`` → ({x: 3, y: -1.5}, 27)."""
    lhs, rhs = eq.split(" = ")
    coeffs = {}
    for sign, coeff, var in re.findall(rf"([-+]?)\s*\(?((?:{NUM})?)\)?([xyz])", lhs.replace(" ", "")):
        value = num(coeff) if coeff else 1.0
        coeffs[var] = -value if sign == "-" else value
    return coeffs, num(rhs)


def circle(text: str) -> tuple[tuple[float, ...], float]:
    """``(x - 2)² + y² = 25`` → ((2, 0), 25)."""
    m = re.search(rf"((?:(?:\([xyz] [-+] {NUM}\)|[xyz])²(?: \+ )?)+) = ({NUM})", text)
    assert m, text
    centre = []
    for shifted, var in re.findall(rf"(\([xyz] [-+] {NUM}\))²|([xyz])²", m.group(1)):
        if var:
            centre.append(0.0)
        else:
            sign, value = re.match(rf"\([xyz] ([-+]) ({NUM})\)", shifted).groups()
            centre.append(num(value) if sign == "-" else -num(value))
    return tuple(centre), num(m.group(2))


# --- float geometry ------------------------------------------------------------------------------


def sub(p, q):
    return tuple(a - b for a, b in zip(p, q))


def norm(v) -> float:
    return math.sqrt(sum(a * a for a in v))


def dist(p, q) -> float:
    return norm(sub(p, q))


def dotp(u, v) -> float:
    return sum(a * b for a, b in zip(u, v))


def cross(u, v) -> float:
    return u[0] * v[1] - u[1] * v[0]


def angle(u, v) -> float:
    return math.degrees(math.acos(max(-1.0, min(1.0, dotp(u, v) / (norm(u) * norm(v))))))


def angle_at(p, vertex, first, second) -> float:
    return angle(sub(p[first], p[vertex]), sub(p[second], p[vertex]))


def shoelace(pts) -> float:
    return abs(sum(cross(pts[i], pts[(i + 1) % len(pts)]) for i in range(len(pts)))) / 2


def heron(a, b, c) -> float:
    s = (a + b + c) / 2
    return math.sqrt(max(0.0, s * (s - a) * (s - b) * (s - c)))


def law_of_cosines(adjacent1, adjacent2, opposite) -> float:
    return math.degrees(math.acos((adjacent1 ** 2 + adjacent2 ** 2 - opposite ** 2) / (2 * adjacent1 * adjacent2)))


def intersect(p1, p2, q1, q2):
    """Intersection of the lines p1p2 and q1q2 (Cramer)."""
    d, e = sub(p2, p1), sub(q2, q1)
    t = cross(sub(q1, p1), e) / cross(d, e)
    return (p1[0] + t * d[0], p1[1] + t * d[1])


def circumcentre(a, b, c):
    """Solve |x - a|² = |x - b|² = |x - c|² as two linear equations."""
    (x1, y1), (x2, y2), (x3, y3) = a, b, c
    a1, b1, c1 = 2 * (x2 - x1), 2 * (y2 - y1), x2 ** 2 + y2 ** 2 - x1 ** 2 - y1 ** 2
    a2, b2, c2 = 2 * (x3 - x1), 2 * (y3 - y1), x3 ** 2 + y3 ** 2 - x1 ** 2 - y1 ** 2
    det = a1 * b2 - a2 * b1
    return ((c1 * b2 - c2 * b1) / det, (a1 * c2 - a2 * c1) / det)


def tri_sides(text: str):
    """(a, b, c) = (BC, CA, AB) from ``AB = .., BC = .. and CA = ..``."""
    return seg(text, "BC"), seg(text, "CA"), seg(text, "AB")


def tri_pts(p):
    return dist(p["B"], p["C"]), dist(p["C"], p["A"]), dist(p["A"], p["B"])


def in_r(a, b, c) -> float:
    return heron(a, b, c) / ((a + b + c) / 2)


def circ_r(a, b, c) -> float:
    return a * b * c / (4 * heron(a, b, c))


def acute(theta: float) -> float:
    return min(theta, 180 - theta)


# --- checkers: one per template and representation ----------------------------------------------

Check = Callable[[str], float]


def both(on_points: Callable[[dict], float]) -> tuple[Check, Check]:
    """A coord and a vector checker from one computation on the named points."""
    return (lambda t: on_points(points(t))), (lambda t: on_points(position_points(t)))


def _foot_distance(p) -> float:
    a, b, c = p["A"], p["B"], p["C"]
    d = sub(b, a)
    t = dotp(sub(c, a), d) / dotp(d, d)
    return dist(a, (a[0] + t * d[0], a[1] + t * d[1]))


def _bisector_ratio(p) -> float:
    u, v = sub(p["B"], p["A"]), sub(p["C"], p["A"])
    w = tuple(x / norm(u) + y / norm(v) for x, y in zip(u, v))
    d = intersect(p["A"], tuple(a + b for a, b in zip(p["A"], w)), p["B"], p["C"])
    return dist(p["B"], d) / dist(d, p["C"])


def _line_ratio(a, b, coeffs, m) -> float:
    f = lambda p: coeffs.get("x", 0) * p[0] + coeffs.get("y", 0) * p[1] - m  # noqa: E731
    return abs(f(a)) / abs(f(b))


def _polygon(text: str) -> float:
    n = int(after(text, r"k = 0, 1, …,")) + 1
    r, step = after(text, r"(?:P_k = \(|v_k = )"), after(text, r"k·")
    assert step * n == 360
    pk = [(r * math.cos(math.radians(k * step)), r * math.sin(math.radians(k * step))) for k in range(3)]
    return angle(sub(pk[0], pk[1]), sub(pk[2], pk[1]))


CUBE = {"A": (0, 0, 0), "B": (1, 0, 0), "C": (1, 1, 0), "D": (0, 1, 0),
        "E": (0, 0, 1), "F": (1, 0, 1), "G": (1, 1, 1), "H": (0, 1, 1)}


def _cube_euclid(text: str) -> float:
    x, y = re.search(r"Find ∠([A-H])A([A-H])", text).groups()
    return angle(CUBE[x], CUBE[y])


def _asked_angle(text: str) -> str:
    return re.search(r"Find ∠([A-Z]{3})", text).group(1)


def _trapezoid_angle_euclid(text: str) -> float:
    base = math.degrees(math.atan2(after(text, "height"), (seg(text, "AB") - seg(text, "CD")) / 2))
    return base if _asked_angle(text) == "ABC" else 180 - base


def _trapezoid_angle_coord(text: str) -> float:
    x, v, y = _asked_angle(text)
    return angle_at(points(text), v, x, y)


def _vectors_angle(text: str) -> float:
    """``the angle between the vectors a - b and c - b`` with the position vectors of the text."""
    x, v, y, w = re.search(r"vectors ([a-z]) - ([a-z]) and ([a-z]) - ([a-z])", text).groups()
    assert v == w
    return angle_at(vectors(text), v, x, y)


def _slope_direction(eq: str):
    if eq.startswith("x ="):
        return (0.0, 1.0)
    m = re.fullmatch(rf"y = (-?)\(?((?:{NUM})?)\)?x(?: [-+] \d+)?|y = -?\d+", eq)
    assert m, eq
    if m.group(1) is None:  # y = c
        return (1.0, 0.0)
    slope = num(m.group(2)) if m.group(2) else 1.0
    return (1.0, -slope if m.group(1) else slope)


def _lines_coord(text: str) -> float:
    e1, e2 = re.search(r"lines (.+?) and (.+?), in degrees", text).groups()
    return acute(angle(_slope_direction(e1), _slope_direction(e2)))


def _chord_coord(text: str) -> float:
    coeffs, m = linear(re.search(r"line (.+?) cuts", text).group(1))
    centre, r2 = circle(text)
    a, b = coeffs.get("x", 0), coeffs.get("y", 0)
    d = abs(a * centre[0] + b * centre[1] - m) / math.hypot(a, b)
    return 2 * math.sqrt(r2 - d * d)


def _chord_vector(text: str) -> float:
    v = vectors(text)
    r, m = after(text, r"\|p - c\| ="), after(text, r"p · n =")
    d = abs(dotp(v["n"], v["c"]) - m) / norm(v["n"])
    return 2 * math.sqrt(r * r - d * d)


def _general_circle_area(text: str) -> float:
    eq = re.search(r"circle (.+) = 0", text).group(1)
    coeffs = {"x": 0.0, "y": 0.0, "": 0.0}
    for sign, value, var in re.findall(r"([-+]) (\d+)([xy]?)(?!²)", eq):
        coeffs[var] = float(value) if sign == "+" else -float(value)
    return math.pi * (coeffs["x"] ** 2 / 4 + coeffs["y"] ** 2 / 4 - coeffs[""])


def _cone_coord(text: str) -> float:
    apex = points(text)["P"]
    centre, r2 = circle(text)
    return math.pi * r2 * abs(apex[2] - after(text, "plane z =")) / 3


def _sector_coord(p) -> float:
    return math.pi * dist(p["O"], p["A"]) ** 2 * angle_at(p, "O", "A", "B") / 360


def _box_coord(p) -> float:
    return norm(tuple(sum(p[n][i] - p["O"][i] for n in "ABC") for i in range(3)))


def _triple(u, v, w) -> float:
    """|u · (v × w)|."""
    vw = (v[1] * w[2] - v[2] * w[1], v[2] * w[0] - v[0] * w[2], v[0] * w[1] - v[1] * w[0])
    return abs(dotp(u, vw))


def _tetra_coord(p) -> float:
    return _triple(*(sub(p[n], p["O"]) for n in "ABC")) / 6


def _parallel_other(text: str, p) -> float:
    other = "ABC" if "area of triangle ABC" in text else "DBCE"
    return shoelace([p["A"], p["D"], p["E"]]) / shoelace([p[n] for n in other])


def _parallel_euclid(text: str) -> float:
    k = seg(text, "AD") / (seg(text, "AD") + seg(text, "DB"))
    return k * k if "area of triangle ABC" in text else k * k / (1 - k * k)


def _chords_points(p) -> float:
    m = intersect(p["A"], p["B"], p["C"], p["D"])
    return dist(p["C"], m) / dist(m, p["D"])


def _cevians_points(p) -> float:
    mid = tuple((a + c) / 2 for a, c in zip(p["A"], p["C"]))
    m = intersect(p["A"], p["D"], p["B"], mid)
    return dist(p["A"], m) / dist(m, p["D"])


def _circles_points(p) -> float:
    a, b, c = tri_pts(p)
    return in_r(a, b, c) / dist(circumcentre(p["A"], p["B"], p["C"]), p["A"])


CHECKS: dict[str, tuple[Check, Check, Check]] = {
    # length
    "hypotenuse": (lambda t: math.hypot(seg(t, "AC"), seg(t, "BC")), *both(lambda p: dist(p["A"], p["B"]))),
    "median": (
        lambda t: 0.5 * math.sqrt(2 * seg(t, "CA") ** 2 + 2 * seg(t, "AB") ** 2 - seg(t, "BC") ** 2),
        *both(lambda p: dist(p["A"], tuple((b + c) / 2 for b, c in zip(p["B"], p["C"])))),
    ),
    "altitude": (
        lambda t: 2 * heron(*tri_sides(t)) / seg(t, "BC"),
        *both(lambda p: abs(cross(sub(p["C"], p["B"]), sub(p["A"], p["B"]))) / dist(p["B"], p["C"])),
    ),
    "circumradius": (
        lambda t: circ_r(*tri_sides(t)),
        *both(lambda p: dist(circumcentre(p["A"], p["B"], p["C"]), p["B"])),
    ),
    "inradius": (lambda t: in_r(*tri_sides(t)), *both(lambda p: in_r(*tri_pts(p)))),
    "chord": (
        lambda t: 2 * math.sqrt(after(t, "radius") ** 2 - after(t, "at distance") ** 2),
        _chord_coord,
        _chord_vector,
    ),
    "tangent": (
        lambda t: math.sqrt(after(t, "at distance") ** 2 - after(t, "radius") ** 2),
        lambda t: math.sqrt(dist(points(t)["P"], circle(t)[0]) ** 2 - circle(t)[1]),
        lambda t: math.sqrt(dist(vectors(t)["p"], vectors(t)["c"]) ** 2 - after(t, r"\|x - c\| =") ** 2),
    ),
    "box_diagonal": (
        lambda t: norm([num(x) for x in re.search(rf"lengths ({NUM}), ({NUM}) and ({NUM})", t).groups()]),
        lambda t: _box_coord(points(t)),
        lambda t: norm(tuple(sum(x) for x in zip(*vectors(t).values()))),
    ),
    "parallelogram_diagonal": (
        lambda t: math.sqrt(2 * seg(t, "AB") ** 2 + 2 * seg(t, "AD") ** 2 - seg(t, "BD") ** 2),
        *both(lambda p: dist(p["A"], tuple(b + d - a for a, b, d in zip(p["A"], p["B"], p["D"])))),
    ),
    "centroid_distance": (
        lambda t: math.sqrt(2 * seg(t, "CA") ** 2 + 2 * seg(t, "AB") ** 2 - seg(t, "BC") ** 2) / 3,
        *both(lambda p: dist(p["A"], tuple(sum(x) / 3 for x in zip(p["A"], p["B"], p["C"])))),
    ),
    "hypotenuse_segment": (
        lambda t: seg(t, "AC") ** 2 / math.hypot(seg(t, "AC"), seg(t, "BC")),
        *both(_foot_distance),
    ),
    # area
    "heron": (lambda t: heron(*tri_sides(t)), *both(lambda p: shoelace([p["A"], p["B"], p["C"]]))),
    "sas_area": (
        lambda t: 0.5 * seg(t, "CA") * seg(t, "CB") * math.sin(math.radians(after(t, "∠ACB ="))),
        lambda t: shoelace(list(points(t).values())),
        lambda t: 0.5 * math.sqrt((after(t, r"\|u\| =") * after(t, r"\|v\| =")) ** 2 - after(t, "u · v =") ** 2),
    ),
    "parallelogram_area": (
        lambda t: 2 * heron(seg(t, "AB"), seg(t, "AD"), seg(t, "BD")),
        lambda t: abs(cross(sub(points(t)["B"], points(t)["A"]), sub(points(t)["D"], points(t)["A"]))),
        lambda t: abs(cross(vectors(t)["u"], vectors(t)["v"])),
    ),
    "trapezoid_area": (
        lambda t: (seg(t, "AB") + seg(t, "CD")) / 2
        * math.sqrt(seg(t, "BC") ** 2 - ((seg(t, "AB") - seg(t, "CD")) / 2) ** 2),
        *both(lambda p: shoelace([p[n] for n in "ABCD"])),
    ),
    "circumcircle_area": (
        lambda t: math.pi * (seg(t, "AC") ** 2 + seg(t, "BC") ** 2) / 4,
        *both(lambda p: math.pi * dist(circumcentre(p["A"], p["B"], p["C"]), p["A"]) ** 2),
    ),
    "circle_equation_area": (
        lambda t: math.pi * ((after(t, "length") / 2) ** 2 + after(t, "at distance") ** 2),
        _general_circle_area,
        lambda t: math.pi * (after(t, r"p · p - 2 p · c =") + dotp(vectors(t)["c"], vectors(t)["c"])),
    ),
    "sector_area": (
        lambda t: math.pi * after(t, "radius") ** 2 * after(t, "central angle") / 360,
        lambda t: _sector_coord(points(t)),
        lambda t: math.pi * after(t, r"\|a\| = \|b\| =") ** 2
        * math.degrees(math.acos(after(t, "a · b =") / after(t, r"\|a\| = \|b\| =") ** 2)) / 360,
    ),
    "quadrilateral_area": (
        lambda t: heron(seg(t, "AB"), seg(t, "BC"), seg(t, "AC")) + heron(seg(t, "CD"), seg(t, "DA"), seg(t, "AC")),
        *both(lambda p: shoelace([p[n] for n in "ABCD"])),
    ),
    "rhombus_area": (
        lambda t: seg(t, "AC") * math.sqrt(after(t, "side") ** 2 - (seg(t, "AC") / 2) ** 2),
        lambda t: shoelace([points(t)[n] for n in "ABCD"]),
        lambda t: abs(cross(vectors(t)["p"], vectors(t)["q"])) / 2,
    ),
    "tetrahedron_volume": (
        lambda t: seg(t, "OA") * seg(t, "OB") * seg(t, "OC") / 6,
        lambda t: _tetra_coord(points(t)),
        lambda t: _triple(vectors(t)["u"], vectors(t)["v"], vectors(t)["w"]) / 6,
    ),
    "cone_volume": (
        lambda t: math.pi * after(t, "radius") ** 2
        * math.sqrt(after(t, "slant height") ** 2 - after(t, "radius") ** 2) / 3,
        _cone_coord,
        lambda t: math.pi * after(t, r"\|x - c\| ≤") ** 2 * dist(vectors(t)["v"], vectors(t)["c"]) / 3,
    ),
    "square_area": (lambda t: seg(t, "AC") ** 2 / 2, *both(lambda p: dist(p["A"], p["C"]) ** 2 / 2)),
    # angle
    "vector_angle": (
        lambda t: law_of_cosines(seg(t, "OA"), seg(t, "OB"), seg(t, "AB")),
        lambda t: angle_at(points(t), "O", "A", "B"),
        lambda t: angle(vectors(t)["u"], vectors(t)["v"]),
    ),
    "sides_angle": (
        lambda t: law_of_cosines(seg(t, "BC"), seg(t, "CA"), seg(t, "AB")),
        *both(lambda p: angle_at(p, "C", "A", "B")),
    ),
    "inclination": (
        lambda t: math.degrees(math.atan2(after(t, "rise is"), after(t, "run is"))),
        lambda t: math.degrees(math.atan2(*reversed(sub(points(t)["Q"], points(t)["P"])))),
        lambda t: angle(sub(vectors(t)["q"], vectors(t)["p"]), vectors(t)["i"]),
    ),
    "lines_angle": (
        lambda t: math.degrees(math.asin(after(t, "is at distance") / after(t, "OP ="))),
        _lines_coord,
        lambda t: acute(angle(vectors(t)["u"], vectors(t)["v"])),
    ),
    "inscribed_angle": (
        lambda t: after(t, "measures") / 2,
        lambda t: angle_at(points(t), "C", "A", "B"),
        lambda t: angle_at(vectors(t), "c", "a", "b"),
    ),
    "polygon_angle": (lambda t: 180 * (after(t, "with") - 2) / after(t, "with"), _polygon, _polygon),
    "isosceles_angle": (lambda t: (180 - after(t, "∠BAC =")) / 2, *both(lambda p: angle_at(p, "B", "A", "C"))),
    "tangent_angle": (
        lambda t: 2 * math.degrees(math.asin(after(t, "radius") / after(t, "at distance"))),
        lambda t: 2 * math.degrees(math.asin(math.sqrt(circle(t)[1]) / dist(points(t)["P"], circle(t)[0]))),
        lambda t: 2 * math.degrees(math.asin(after(t, r"\|x - c\| =") / dist(vectors(t)["p"], vectors(t)["c"]))),
    ),
    "cube_angle": (
        _cube_euclid,
        lambda t: angle_at(points(t), "A", *re.search(r"Find ∠([A-H])A([A-H])", t).groups()),
        lambda t: angle(vectors(t)["u"], vectors(t)["v"]),
    ),
    "trapezoid_angle": (
        _trapezoid_angle_euclid,
        _trapezoid_angle_coord,
        _vectors_angle,
    ),
    # ratio
    "section_ratio": (
        lambda t: seg(t, "AP") / (seg(t, "AB") - seg(t, "AP")),
        *both(lambda p: dist(p["A"], p["P"]) / dist(p["P"], p["B"])),
    ),
    "parallel_area_ratio": (
        _parallel_euclid,
        lambda t: _parallel_other(t, points(t)),
        lambda t: _parallel_other(t, position_points(t)),
    ),
    "cevian_area_ratio": (
        lambda t: seg(t, "BD") / seg(t, "DC"),
        *both(lambda p: shoelace([p["A"], p["B"], p["D"]]) / shoelace([p["A"], p["D"], p["C"]])),
    ),
    "bisector_ratio": (lambda t: seg(t, "AB") / seg(t, "CA"), *both(_bisector_ratio)),
    "circles_ratio": (lambda t: in_r(*tri_sides(t)) / circ_r(*tri_sides(t)), *both(_circles_points)),
    "trapezoid_diagonal_ratio": (
        lambda t: seg(t, "AB") / seg(t, "CD"),
        *both(lambda p: dist(p["A"], intersect(p["A"], p["C"], p["B"], p["D"]))
              / dist(intersect(p["A"], p["C"], p["B"], p["D"]), p["C"])),
    ),
    "line_section_ratio": (
        lambda t: num(re.search(rf"distances ({NUM}) and", t).group(1))
        / num(re.search(rf"and ({NUM}) from it", t).group(1)),
        lambda t: _line_ratio(points(t)["A"], points(t)["B"], *linear(re.search(r"line (.+?) at P", t).group(1))),
        lambda t: _line_ratio(vectors(t)["a"], vectors(t)["b"], dict(zip("xy", vectors(t)["n"])), after(t, "x · n =")),
    ),
    "chords_ratio": (
        lambda t: seg(t, "CP") ** 2 / (seg(t, "AP") * seg(t, "PB")),
        lambda t: _chords_points(points(t)),
        lambda t: _chords_points(position_points(t)),
    ),
    "cevians_ratio": (lambda t: (seg(t, "BD") + seg(t, "DC")) / seg(t, "BD"), *both(_cevians_points)),
    "shared_angle_ratio": (
        lambda t: seg(t, "AD") * seg(t, "AE") / (seg(t, "AB") * seg(t, "AC")),
        *both(lambda p: shoelace([p["A"], p["D"], p["E"]]) / shoelace([p["A"], p["B"], p["C"]])),
    ),
}

ALL_TEMPLATES = [(category, t.name) for category, ts in TEMPLATES.items() for t in ts]


def _direct_items(category: str, template: str, seed: int):
    params = {"templates": [template], "families_per_template": 1, "prompt_styles": ["direct"]}
    items = TASKS[category].run(params, seed)
    return {i.variant: i for i in items}


def _problem(item) -> str:
    return item.messages[-1][1].split("\n\n")[0]


@pytest.mark.parametrize("category, template", ALL_TEMPLATES)
def test_renderings_carry_the_same_problem(category: str, template: str) -> None:
    checks = dict(zip(("euclid", "coord", "vector"), CHECKS[template]))
    for seed in SEEDS:
        items = _direct_items(category, template, seed)
        assert set(items) == {"euclid", "coord", "vector"}
        golds = {i.gold for i in items.values()}
        assert len(golds) == 1
        gold = float(sympy.sympify(golds.pop()))
        for rep, item in items.items():
            found = checks[rep](_problem(item))
            assert math.isclose(found, gold, rel_tol=1e-9), (template, seed, rep, _problem(item), found, item.gold)


def test_checkers_cover_every_template() -> None:
    assert set(CHECKS) == {name for _, name in ALL_TEMPLATES}


def test_every_category_has_ten_templates() -> None:
    assert set(TEMPLATES) == set(CATEGORIES) == {"length", "area", "angle", "ratio"}
    for category, templates in TEMPLATES.items():
        assert len(templates) >= 10, category
        assert all(t.category == category for t in templates)
    names = [name for _, name in ALL_TEMPLATES]
    assert len(names) == len(set(names))


def test_registered_as_suite() -> None:
    assert set(suite_tasks("geometry")) == set(CATEGORIES)
    assert get_task("geometry", "angle") is TASKS["angle"]


@pytest.mark.parametrize("category", CATEGORIES)
def test_same_seed_same_items_other_seed_other_families(category: str) -> None:
    params = {"families_per_template": 2, "prompt_styles": ["direct"]}
    first, again, other = (TASKS[category].run(params, s) for s in (7, 7, 8))
    assert [i.item_id for i in first] == [i.item_id for i in again]
    fam_first, fam_other = {i.family_id for i in first}, {i.family_id for i in other}
    assert len(fam_first) == 2 * len(TEMPLATES[category])
    assert len(fam_first & fam_other) <= len(fam_first) // 4  # small parameter spaces may repeat a few


def test_more_families_extend_fewer() -> None:
    few = TASKS["length"].run({"families_per_template": 2, "prompt_styles": ["direct"]}, 3)
    more = TASKS["length"].run({"families_per_template": 3, "prompt_styles": ["direct"]}, 3)
    assert {i.item_id for i in few} <= {i.item_id for i in more}


@pytest.mark.parametrize("category", CATEGORIES)
def test_family_structure_and_fields(category: str) -> None:
    items = TASKS[category].run({"families_per_template": 2}, 1)
    bins = bins_from_edges(TASKS[category].defaults["bins"])
    by_family = defaultdict(list)
    for item in items:
        by_family[item.family_id].append(item)
        assert item.suite == "geometry" and item.task == category and item.category == category
        assert item.answer_type == "math" and item.generator == f"geometry.{category}"
        assert find_bin(item.key_entities, bins).label == item.bin
        assert canonical(item.gold) == item.gold and matches(item.gold, item.gold)
        if category == "angle":
            assert item.gold.isdigit() and 0 < int(item.gold) < 180
    for family in by_family.values():
        combos = sorted((i.variant, i.prompt_style) for i in family)
        assert combos == sorted(
            [(v, s) for v in ("euclid", "coord", "vector") for s in ("direct", "json")]
            + [("coord", "convert_then_solve"), ("vector", "convert_then_solve")]
        )
        assert len({i.gold for i in family}) == 1 and len({i.key_entities for i in family}) == 1
        assert len({i.params["template"] for i in family}) == 1


def test_prompt_styles() -> None:
    items = TASKS["ratio"].run({"families_per_template": 1, "templates": ["section_ratio"]}, 0)
    by = {(i.variant, i.prompt_style): i for i in items}
    assert ("euclid", "convert_then_solve") not in by
    direct, js = by[("coord", "direct")], by[("coord", "json")]
    assert direct.solver == "generate" and direct.messages[-1][1].rstrip().endswith("Answer: <exact value>")
    assert "numeric_answer" in js.messages[-1][1]
    chain = by[("vector", "convert_then_solve")]
    assert chain.solver == "chain" and [s.name for s in chain.steps] == ["convert", "solve"]
    convert, solve = chain.steps
    assert _problem(by[("vector", "direct")]) in convert.template and "Euclidean" in convert.template
    assert "{convert.text}" in solve.template and _problem(by[("vector", "direct")]) not in solve.template
    assert solve.answer_type == "math" and convert.answer_type == "text"


def test_smoke_slice_is_small() -> None:
    for category, spec in TASKS.items():
        items = spec.run(spec.smoke, 0)
        assert len(items) == 3 and {i.prompt_style for i in items} == {"direct"}, category


@pytest.mark.parametrize(
    "params, word",
    [
        ({"templates": ["no_such_template"]}, "no_such_template"),
        ({"prompt_styles": ["cot"]}, "cot"),
        ({"families_per_template": 0}, "families_per_template"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_parameters_are_named(params: dict, word: str) -> None:
    with pytest.raises(GeneratorError, match=word):
        TASKS["area"].run(params, 0)


def test_template_filter_skips_other_categories() -> None:
    assert TASKS["area"].run({"templates": ["hypotenuse"]}, 0) == []


# --- import ----------------------------------------------------------------------------------------

ROWS = [
    {"id": "p1", "category": "length", "euclid": "In right triangle ABC with legs 3 and 4, find the hypotenuse.",
     "coord": "Find the distance between A(0, 0) and B(3, 4).", "vector": "Find |b - a| for a = ⟨0, 0⟩, b = ⟨3, 4⟩.",
     "answer": "5"},
    {"id": "p2", "category": "Angle/Direction", "euclid": "Find the angle of an equilateral triangle.",
     "coord": "Find ∠BAC for A(0, 0), B(2, 0), C(1, √3).", "vector": "Find the angle between ⟨2, 0⟩ and ⟨1, √3⟩.",
     "answer": "60°"},
    {"id": "p3", "category": "area", "euclid": "A circle has radius 2. Find its area.",
     "coord": "Find the area of x² + y² = 4.", "vector": "Find the area of |p| = 2.", "answer": "4π"},
    {"id": "p4", "category": "ratio", "euclid": "A square has side 1. Find the ratio of its diagonal to its side.",
     "coord": "Find OB/OA for O(0, 0), A(1, 0), B(1, 1).", "vector": "Find |⟨1, 1⟩| / |⟨1, 0⟩|.", "answer": "1.414"},
]


def _write(path, rows, fmt):
    if fmt == "json":
        path.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    elif fmt == "jsonl":
        path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    else:
        columns = [k for k in rows[0] if all(k in r for r in rows)]  # a column missing anywhere is dropped
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_import_round_trip(tmp_path, fmt: str) -> None:
    path = tmp_path / f"set.{fmt}"
    _write(path, ROWS, fmt)
    items = load_families(path)
    assert len(items) == 3 * len(ROWS)
    by_family = defaultdict(dict)
    for item in items:
        assert item.suite == "geometry" and item.task == "imported" and item.generator == "geometry.imported"
        assert item.prompt_style == "direct" and item.answer_type == "math"
        by_family[item.params["source_id"]][item.variant] = item
    assert set(by_family) == {r["id"] for r in ROWS}
    for row in ROWS:
        family = by_family[row["id"]]
        assert set(family) == {"euclid", "coord", "vector"}
        assert len({i.family_id for i in family.values()}) == 1
        for rep, item in family.items():
            assert _problem(item) == row[rep]
    assert {r["id"]: by_family[r["id"]]["euclid"].category for r in ROWS} == {
        "p1": "length", "p2": "angle", "p3": "area", "p4": "ratio"}
    assert by_family["p2"]["coord"].gold == "60" and by_family["p3"]["coord"].gold == "4*pi"
    assert by_family["p4"]["coord"].gold == "1.414"
    # identical files give identical items, whatever the format
    assert [i.item_id for i in load_families(path)] == [i.item_id for i in items]


def test_import_formats_agree(tmp_path) -> None:
    ids = []
    for fmt in ("json", "jsonl", "csv"):
        path = tmp_path / f"set.{fmt}"
        _write(path, ROWS, fmt)
        ids.append([i.item_id for i in load_families(path)])
    assert ids[0] == ids[1] == ids[2]


def test_import_prompt_styles(tmp_path) -> None:
    path = tmp_path / "set.json"
    _write(path, ROWS[:1], "json")
    items = load_families(path, ["direct", "json", "convert_then_solve"])
    assert sorted((i.variant, i.prompt_style) for i in items) == sorted(
        [(v, s) for v in ("euclid", "coord", "vector") for s in ("direct", "json")]
        + [("coord", "convert_then_solve"), ("vector", "convert_then_solve")]
    )


def _without(row: dict, column: str) -> dict:
    return {k: v for k, v in row.items() if k != column}


MALFORMED = [
    ("missing column", [ROWS[0], _without(ROWS[1], "vector")], "row 2", "'vector'", "missing"),
    ("duplicate id", [ROWS[0], ROWS[1], dict(ROWS[2], id="p1")], "row 3", "'id'", "duplicate of row 1"),
    ("empty text", [ROWS[0], dict(ROWS[1], coord="   ")], "row 2", "'coord'", "empty"),
    ("unparsable answer", [dict(ROWS[0], answer="about five")], "row 1", "'answer'", "cannot parse"),
    ("unknown category", [dict(ROWS[0], category="topology")], "row 1", "'category'", "unknown category"),
]


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
@pytest.mark.parametrize("case, rows, row, column, what", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_import_rejects_malformed(tmp_path, fmt, case, rows, row, column, what) -> None:
    path = tmp_path / f"bad.{fmt}"
    _write(path, rows, fmt)
    with pytest.raises(ImportFamiliesError) as err:
        load_families(path)
    message = str(err.value)
    if case == "missing column" and fmt == "csv":  # the CSV has no such column: one line for the file
        row, what = "missing column", "columns found: 'id', 'category'"
    line = next((ln for ln in message.splitlines() if ln.startswith(row)), "")
    assert column in line and what in line, message
    assert isinstance(err.value, ValueError)


def test_import_reports_every_bad_row(tmp_path) -> None:
    path = tmp_path / "bad.json"
    _write(path, [dict(ROWS[0], answer="??"), ROWS[1], dict(ROWS[2], euclid="")], "json")
    with pytest.raises(ImportFamiliesError) as err:
        load_families(path)
    assert "row 1 (id 'p1'), column 'answer'" in str(err.value)
    assert "row 3 (id 'p3'), column 'euclid'" in str(err.value)


@pytest.mark.parametrize("content, suffix", [("{not json", ".json"), ('{"id": "x"}', ".json"), ("a,b\n", ".txt")])
def test_import_rejects_unreadable_files(tmp_path, content: str, suffix: str) -> None:
    path = tmp_path / f"bad{suffix}"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ImportFamiliesError):
        load_families(path)
