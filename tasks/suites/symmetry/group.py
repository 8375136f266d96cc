"""The group the property tasks are written over: elements, operation, identity, inverse, rendering.

Two instances exist: the integers under addition (``integers``) and addition modulo m (``mod<m>``,
for example ``mod7``). Expressions are lists of group elements; a task builds the list, the group
evaluates it (the gold) and renders it (the prompt), so a new group is one more instance here and
no task changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import reduce
from typing import Sequence

from tasks.suites.base import GeneratorError

_MOD_NAME = re.compile(r"mod(\d+)")


@dataclass(frozen=True)
class Group:
    """An additive group: the integers (``modulus`` None) or the integers modulo ``modulus``.

    ``one`` is the element written ``1``; the expressions of the suite are made of ``one``, the
    identity (written ``0``) and the inverse of ``one`` (written ``-1`` in both groups).
    """

    name: str
    modulus: int | None = None
    one: int = 1
    identity: int = 0

    def reduce(self, value: int) -> int:
        """The canonical element for an integer: itself, or its residue in ``[0, m)``."""
        return value if self.modulus is None else value % self.modulus

    def operation(self, a: int, b: int) -> int:
        """The group operation: addition, reduced modulo m when the group is modular."""
        return self.reduce(a + b)

    def inverse(self, a: int) -> int:
        """The element that combines with ``a`` to the identity."""
        return self.reduce(-a)

    @property
    def elements(self) -> tuple[int, int, int]:
        """The three elements expressions are made of: one, the identity, the inverse of one."""
        return (self.one, self.identity, self.inverse(self.one))

    def evaluate(self, terms: Sequence[int]) -> int:
        """The value of ``terms`` combined left to right (the gold of an expression)."""
        return reduce(self.operation, terms, self.identity)

    def symbol(self, element: int) -> str:
        """How an element is written: modular residues as their smallest signed representative.

        So the inverse of one is ``-1`` in ``mod7`` too (not ``6``), and an expression reads the
        same in both groups; only the question differs.
        """
        value = self.reduce(element)
        if self.modulus is not None and value > self.modulus // 2:
            value -= self.modulus
        return str(value)

    def render(self, terms: Sequence[int]) -> str:
        """The expression as text without spaces: ``1+1+0-1``, ``-1+1``."""
        if not terms:
            raise GeneratorError(f"{self.name}: cannot render an empty expression")
        symbols = [self.symbol(t) for t in terms]
        return symbols[0] + "".join(s if s.startswith("-") else "+" + s for s in symbols[1:])

    def question(self, expression: str) -> str:
        """The question asked about a rendered expression (or a template such as ``{a}+{b}``)."""
        if self.modulus is None:
            return f"What is {expression}?"
        return f"What is {expression} modulo {self.modulus}?"


INTEGERS = Group("integers")


def group_from_name(name: str) -> Group:
    """``integers`` or ``mod<m>`` with m >= 3 (below 3 the inverse of one is written ``1``)."""
    if name == INTEGERS.name:
        return INTEGERS
    match = _MOD_NAME.fullmatch(name)
    if match is None:
        raise GeneratorError(f"groups: unknown group {name!r}; use 'integers' or 'mod<m>' such as 'mod7'")
    modulus = int(match.group(1))
    if modulus < 3:
        raise GeneratorError(f"groups: {name!r} needs m >= 3, or the inverse of one would be written 1")
    return Group(name, modulus=modulus)
