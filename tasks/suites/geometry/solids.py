"""Solid templates of every category: boxes, tetrahedra, cones and cubes in space.

Length: ``box_diagonal``; area (volumes): ``tetrahedron_volume``, ``cone_volume``; angle:
``cube_angle``. Each category module lists its solid templates in its ``TEMPLATES``. Points in
space are placed by :func:`~tasks.suites.geometry.placement.place3d`.
"""

from __future__ import annotations

import random

import sympy

from tasks.suites.geometry.exact import (
    Config, I, Point, Z, add, angle_deg, dec, dec_points, dec_vector, dist, enc, enc_points, enc_vector, norm, sub,
)
from tasks.suites.geometry.placement import place3d
from tasks.suites.geometry.template import Template
from tasks.suites.geometry.text import circle_text, fmt, points_text, vec_text
from tasks.suites.geometry.triangles import RIGHT_LEGS


def corner_config(rng: random.Random, longest: int) -> Config:
    """A right corner: the vertex O and the far ends A, B, C of three perpendicular edges of
    lengths 1..``longest``, placed in space."""
    a, b, c = (I(rng.randint(1, longest)) for _ in range(3))
    base = {"O": (Z, Z, Z), "A": (a, Z, Z), "B": (Z, b, Z), "C": (Z, Z, c)}
    return {"points": enc_points(place3d(rng, base))}


def corner_edges(c: Config) -> list[Point]:
    """The edge vectors OA, OB, OC of a right corner."""
    p = dec_points(c)
    return [sub(p[n], p["O"]) for n in "ABC"]


def _edges_along(c: Config) -> str:
    """``the vectors u = ⟨..⟩, v = ⟨..⟩ and w = ⟨..⟩`` of a corner's edges."""
    u, v, w = corner_edges(c)
    return f"the vectors {vec_text('u', u)}, {vec_text('v', v)} and {vec_text('w', w)}"


# --- box diagonal (length) -------------------------------------------------------------------


def _box_gold(c: Config) -> sympy.Expr:
    u, v, w = corner_edges(c)
    return norm(add(add(u, v), w))


def _box_euclid(c: Config) -> str:
    a, b, e = (fmt(norm(v)) for v in corner_edges(c))
    return f"A rectangular box has edges of lengths {a}, {b} and {e}. Find the length of its space diagonal."


def _box_coord(c: Config) -> str:
    p = dec_points(c)
    return (f"A rectangular box has a vertex at {points_text(p, 'O')}, and the three vertices joined to it by "
            f"edges are {points_text(p, 'ABC')}. Find the length of the box's space diagonal.")


BOX_DIAGONAL = Template(
    "box_diagonal", "length", 3,
    draw=lambda rng: corner_config(rng, 10),
    gold=_box_gold, euclid=_box_euclid, coord=_box_coord,
    vector=lambda c: (
        f"Three edges of a rectangular box leave one vertex along {_edges_along(c)}. "
        "Find the length of the box's space diagonal."
    ),
)

# --- tetrahedron with a right corner (area) --------------------------------------------------


def _tetra_volume(c: Config) -> sympy.Expr:
    u, v, w = (sympy.Matrix(e) for e in corner_edges(c))
    return sympy.Abs(u.dot(v.cross(w))) / 6


def _tetra_euclid(c: Config) -> str:
    a, b, e = (fmt(norm(x)) for x in corner_edges(c))
    return (f"In tetrahedron OABC, the edges OA, OB and OC are mutually perpendicular, with OA = {a}, OB = {b} "
            f"and OC = {e}. Find the volume of the tetrahedron.")


TETRAHEDRON_VOLUME = Template(
    "tetrahedron_volume", "area", 4,
    draw=lambda rng: corner_config(rng, 9),
    gold=_tetra_volume, euclid=_tetra_euclid,
    coord=lambda c: f"Find the volume of the tetrahedron with vertices {points_text(dec_points(c), 'OABC')}.",
    vector=lambda c: f"A tetrahedron has three edges leaving one vertex along {_edges_along(c)}. "
                     "Find the volume of the tetrahedron.",
)

# --- cone (area) -----------------------------------------------------------------------------


def _cone_draw(rng: random.Random) -> Config:
    r, h = rng.choice(RIGHT_LEGS[:9])
    centre = [rng.randint(-5, 5) for _ in range(3)]
    apex = centre[:2] + [centre[2] + rng.choice((1, -1)) * h]
    return {"centre": enc_vector(centre), "apex": enc_vector(apex), "r": enc(r)}


def _cone_parts(c: Config):
    return dec_vector(c["centre"]), dec_vector(c["apex"]), dec(c["r"])


def _cone_gold(c: Config) -> sympy.Expr:
    centre, apex, r = _cone_parts(c)
    return sympy.pi * r ** 2 * dist(centre, apex) / 3


def _cone_euclid(c: Config) -> str:
    centre, apex, r = _cone_parts(c)
    slant = sympy.sqrt(r ** 2 + dist(centre, apex) ** 2)
    return f"A right circular cone has base radius {fmt(r)} and slant height {fmt(slant)}. Find its volume."


def _cone_coord(c: Config) -> str:
    centre, apex, r = _cone_parts(c)
    return (f"A right circular cone has its apex at {points_text({'P': apex}, 'P')}, and its base is the disc "
            f"bounded by the circle {circle_text(centre[:2], r ** 2, 'xy')} in the plane z = {fmt(centre[2])}. "
            "Find its volume.")


def _cone_vector(c: Config) -> str:
    centre, apex, r = _cone_parts(c)
    return (f"A right circular cone has its apex at the point with position vector {vec_text('v', apex)}. "
            f"Its base is the disc of the points x with |x - c| ≤ {fmt(r)} and (x - c) · (v - c) = 0, "
            f"where {vec_text('c', centre)}. Find its volume.")


CONE_VOLUME = Template(
    "cone_volume", "area", 2,
    draw=_cone_draw, gold=_cone_gold, euclid=_cone_euclid, coord=_cone_coord, vector=_cone_vector,
)

# --- angle between edges and face diagonals of a cube (angle) --------------------------------

CUBE = {"A": (0, 0, 0), "B": (1, 0, 0), "C": (1, 1, 0), "D": (0, 1, 0),
        "E": (0, 0, 1), "F": (1, 0, 1), "G": (1, 1, 1), "H": (0, 1, 1)}


def _cube_draw(rng: random.Random) -> Config:
    s = rng.randint(1, 6)
    x, y = rng.sample("BCDEFH", 2)  # G would give the space diagonal, whose angles are not whole
    unit = {n: tuple(I(s * v) for v in CUBE[n]) for n in ("A", x, y)}
    return {"edge": s, "names": [x, y], "points": enc_points(place3d(rng, unit))}


def _cube_vectors(c: Config):
    p = dec_points(c)
    x, y = c["names"]
    return sub(p[x], p["A"]), sub(p[y], p["A"])


def _cube_coord(c: Config) -> str:
    x, y = c["names"]
    return (f"The points {points_text(dec_points(c), 'A' + x + y)} are vertices of a cube with edge {c['edge']}. "
            f"Find ∠{x}A{y} in degrees.")


def _cube_vector(c: Config) -> str:
    u, v = _cube_vectors(c)
    return (f"From one vertex of a cube with edge {c['edge']}, the vectors {vec_text('u', u)} and {vec_text('v', v)} "
            "lead to two other vertices. Find the angle between u and v, in degrees.")


CUBE_ANGLE = Template(
    "cube_angle", "angle", 3,
    draw=_cube_draw,
    gold=lambda c: angle_deg(*_cube_vectors(c)),
    euclid=lambda c: (
        f"ABCDEFGH is a cube with edge {c['edge']}: ABCD is one face, and E, F, G and H lie directly above A, B, C "
        f"and D. Find ∠{c['names'][0]}A{c['names'][1]} in degrees."
    ),
    coord=_cube_coord, vector=_cube_vector,
)
