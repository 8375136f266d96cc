"""What every generator shares: bins, the task specification, and item construction.

A generator is a small pure function ``generate(params, seed) -> list[Item]``: the same
parameters and seed always give byte-identical items, because every random draw comes from a
``random.Random`` seeded from (task, seed, ...) and ids are content hashes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from tasks.records import Item, Step, content_hash


class GeneratorError(ValueError):
    """A generator was given parameters it cannot honour (the message names the parameter)."""


@dataclass(frozen=True)
class Bin:
    """A labelled range of key entities: half-open ``[lo, hi)``, or closed when ``closed``."""

    lo: int
    hi: int
    closed: bool = False

    @property
    def label(self) -> str:
        """Printed as ``lo-hi``, a one-value bin as ``lo`` (docs/suites.md#key-entities-and-bins)."""
        return str(self.lo) if self.hi == self.lo else f"{self.lo}-{self.hi}"

    def contains(self, value: int) -> bool:
        """Whether ``value`` falls in this bin."""
        if self.closed or self.hi == self.lo:
            return self.lo <= value <= self.hi
        return self.lo <= value < self.hi


def bins_from_edges(edges: Sequence[Sequence[int]]) -> list[Bin]:
    """Bins from ``[[lo, hi], ...]``: half-open, the last one closed, so each value is in exactly one.

    Rejects overlapping or unordered edges, which would put a value in two bins.
    """
    if not edges:
        raise GeneratorError("bins: at least one [lo, hi] pair is needed")
    out: list[Bin] = []
    for i, pair in enumerate(edges):
        if len(pair) != 2:
            raise GeneratorError(f"bins[{i}]: expected [lo, hi], got {list(pair)!r}")
        lo, hi = int(pair[0]), int(pair[1])
        if hi < lo:
            raise GeneratorError(f"bins[{i}]: hi {hi} is below lo {lo}")
        if out and lo < out[-1].hi and not (out[-1].hi == out[-1].lo):
            raise GeneratorError(f"bins[{i}]: starts at {lo}, inside the previous bin {out[-1].label}")
        if out and out[-1].hi == out[-1].lo and lo <= out[-1].lo:
            raise GeneratorError(f"bins[{i}]: starts at {lo}, not after the previous bin {out[-1].label}")
        out.append(Bin(lo, hi, closed=(i == len(edges) - 1)))
    return out


def find_bin(value: int, bins: Sequence[Bin]) -> Bin:
    """The one bin holding ``value``; outside every bin, a one-value bin of its own.

    Generators may be asked for lengths beyond the default bins (long-and-simple tests); such
    values get an honest bin label rather than being forced into the nearest one.
    """
    for b in bins:
        if b.contains(value):
            return b
    return Bin(value, value, closed=True)


def rng_for(*parts: Any) -> random.Random:
    """A ``random.Random`` seeded from the content hash of ``parts`` (stable across processes)."""
    return random.Random(int(content_hash(list(parts), length=16), 16))


@dataclass(frozen=True)
class TaskSpec:
    """A generator inside a suite: its name, version, default parameters and function."""

    suite: str
    name: str
    version: str
    defaults: dict[str, Any]
    generate: Callable[[dict[str, Any], int], list[Item]]
    description: str = ""
    smoke: dict[str, Any] = field(default_factory=dict)

    def resolve(self, params: dict[str, Any] | None) -> dict[str, Any]:
        """Defaults overlaid with ``params``; an unknown parameter is an error naming it."""
        params = dict(params or {})
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            raise GeneratorError(
                f"{self.suite}.{self.name}: unknown parameter(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(self.defaults))}"
            )
        return {**self.defaults, **params}

    def run(self, params: dict[str, Any] | None, seed: int) -> list[Item]:
        """Resolve parameters and generate the items."""
        return self.generate(self.resolve(params), seed)


def family_id(suite: str, task: str, **base: Any) -> str:
    """A family id: content hash of the base problem (everything its variants share)."""
    return content_hash({"suite": suite, "task": task, **base})


def make_item(
    spec: TaskSpec,
    *,
    family: str,
    variant: str,
    prompt_style: str,
    key_entities: int,
    bin: Bin,
    user: str,
    gold: Any,
    answer_type: str,
    seed: int,
    system: str = "",
    params: dict[str, Any] | None = None,
    steps: Sequence[Step] = (),
    category: str = "",
    few_shot: Sequence[tuple[str, str]] = (),
) -> Item:
    """Build an :class:`Item` with the generator's name and version filled in.

    ``few_shot`` pairs (question, answer) become alternating user/assistant messages before the
    question, so the in-context examples are part of the stored prompt and of the request hash.
    """
    messages: list[tuple[str, str]] = []
    if system:
        messages.append(("system", system))
    for question, answer in few_shot:
        messages.append(("user", question))
        messages.append(("assistant", answer))
    messages.append(("user", user))
    return Item(
        suite=spec.suite,
        task=spec.name,
        family_id=family,
        variant=variant,
        prompt_style=prompt_style,
        key_entities=int(key_entities),
        bin=bin.label,
        bin_lo=bin.lo,
        bin_hi=bin.hi,
        messages=tuple(messages),
        gold=str(gold),
        answer_type=answer_type,
        generator=f"{spec.suite}.{spec.name}",
        generator_version=spec.version,
        seed=int(seed),
        params=dict(params or {}),
        solver="chain" if steps else "generate",
        steps=tuple(steps),
        category=category,
    )
