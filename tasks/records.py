"""Typed records at the pipeline's boundaries and the content hashing that names them.

The vocabulary (docs/data-model.md#vocabulary): an *item* is one prompt with its gold answer, a
*request* one model call, a *response* the raw result of a request, a *parse* and a *score* are
derived from responses by versioned code. A *trial* is one attempt of one item by one model configuration
(``sample_idx`` included); it is made of one request, or several linked ones for chained solvers
such as the symmetry suite's associativity protocol.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import os
import threading
from dataclasses import asdict, dataclass, field, fields
from typing import Any


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: the byte form that every content hash covers."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def now_utc() -> dt.datetime:
    """The current time, timezone-aware UTC (every timestamp in the lake is UTC)."""
    return dt.datetime.now(dt.timezone.utc)


def content_hash(obj: Any, length: int = 16) -> str:
    """sha256 of the canonical JSON of ``obj``, hex, truncated to ``length`` characters."""
    digest = hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()
    return digest if length <= 0 else digest[:length]


# Random ids drawn from a pool of random bytes, _POOL_IDS ids at a time. uuid.uuid4() asks the
# kernel for 16 bytes per id, and that call lets go of the GIL: in a sweep's event loop, with
# litellm's threads waiting for it, each response's id then waited up to a switch interval to
# get it back (bench/results.md, "share").
_POOL_IDS = 256
_pool: list[str] = []  # ready ids of the process _pool_pid[0]
_pool_pid = [0]
_pool_lock = threading.Lock()


def uuid4_hex(raw: bytes) -> str:
    """``uuid.UUID(bytes=raw, version=4).hex``: 16 random bytes with the version and variant bits set."""
    b = bytearray(raw)
    b[6] = b[6] & 0x0F | 0x40
    b[8] = b[8] & 0x3F | 0x80
    return b.hex()


def random_id() -> str:
    """A random id in ``uuid.uuid4().hex``'s form (32 hex digits, version 4) and with its
    randomness (the kernel's, ``os.urandom``), drawn from a pool; a forked process draws its own."""
    with _pool_lock:
        if not _pool or _pool_pid[0] != os.getpid():
            block = os.urandom(16 * _POOL_IDS)
            _pool[:] = [uuid4_hex(block[i:i + 16]) for i in range(0, len(block), 16)]
            _pool_pid[0] = os.getpid()
        return _pool.pop()


@dataclass(frozen=True)
class Step:
    """One call of a chained solver.

    ``template`` is the user message; ``{<step name>.value}`` and ``{<step name>.text}`` are
    replaced by the parsed value and the raw text of an earlier step's response. ``answer_type``
    names the parser applied to this step's response (the trial's own answer type when empty).
    """

    name: str
    template: str
    answer_type: str = ""
    system: str = ""


def step_plan(row: dict[str, Any]) -> list[dict[str, str]]:
    """The steps of an item row, in order, each with the answer type that parses its response: one
    ``main`` step for ``generate``, the stored steps for ``chain`` (a step without an answer type of
    its own takes the item's)."""
    if row["solver"] != "chain":
        return [{"name": "main", "template": "", "answer_type": row["answer_type"], "system": ""}]
    return [{**s, "answer_type": s.get("answer_type") or row["answer_type"]} for s in json.loads(row["steps"])]


def step_answer_type(row: dict[str, Any], step: str) -> str:
    """The answer type of the step named ``step`` of an item row (:func:`step_plan`); the item's for
    a step it does not have."""
    return next((s["answer_type"] for s in step_plan(row) if s["name"] == step), row["answer_type"])


def n_steps_sql(solver: str, steps: str) -> str:
    """:func:`step_plan`'s number of steps as a SQL expression over an item's ``solver`` and
    ``steps`` (stored JSON) columns: every step of a chain, else one."""
    return f"CASE WHEN {solver} = 'chain' THEN json_array_length(coalesce({steps}, '[]')) ELSE 1 END"


@dataclass(frozen=True)
class Item:
    """One prompt with its gold answer; built by generators, never mutated (docs/data-model.md#items).

    ``solver`` is ``generate`` (one call with ``messages``) or ``chain`` (the ``steps`` run in
    order, the last one's answer is scored). ``params`` holds the generator's per-item
    parameters (ratio, split, permutation index, ...) that are not columns of their own.
    """

    suite: str
    task: str
    family_id: str
    variant: str
    prompt_style: str
    key_entities: int
    bin: str
    bin_lo: int
    bin_hi: int
    messages: tuple[tuple[str, str], ...]
    gold: str
    answer_type: str
    generator: str
    generator_version: str
    seed: int
    params: dict[str, Any] = field(default_factory=dict)
    solver: str = "generate"
    steps: tuple[Step, ...] = ()
    category: str = ""

    @property
    def prompt(self) -> str:
        """The prompt as plain text: every message's content, in order."""
        if self.solver == "chain":
            return "\n\n".join(s.template for s in self.steps)
        return "\n\n".join(content for _, content in self.messages)

    @property
    def item_id(self) -> str:
        """Content hash of everything that defines the item (so identical items share an id)."""
        return content_hash(self.identity())

    def identity(self) -> dict[str, Any]:
        """The fields the item id covers: all of them (as ``asdict`` gives them, without its deep copy
        of every value: the hash only reads them)."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["messages"] = [list(m) for m in self.messages]
        d["steps"] = [asdict(s) for s in self.steps]
        return d


@dataclass(frozen=True)
class Route:
    """Where a request goes: the litellm model string and the server. Part of every request hash."""

    provider: str
    model: str
    api_base: str = ""


@dataclass(frozen=True)
class Request:
    """One model call. ``request_id`` is the sha256 of everything that can change the answer."""

    trial_id: str
    item_id: str
    model: str
    step: str
    route: Route
    messages: tuple[tuple[str, str], ...]
    sampling: dict[str, Any]
    sample_idx: int

    # Cached: the call stage reads a request's id several times (request row, ledger look-up,
    # claims, response), and hashing the canonical JSON of its messages each time added up to
    # about 7 hashes per request. The fields it covers are frozen.
    @functools.cached_property
    def request_id(self) -> str:
        """sha256 over route, messages, sampling parameters and ``sample_idx``.

        See docs/data-model.md#request-id.
        """
        return content_hash(
            {
                "route": asdict(self.route),
                "messages": [list(m) for m in self.messages],
                "sampling": self.sampling,
                "sample_idx": self.sample_idx,
            },
            length=0,
        )


@dataclass
class Response:
    """The immutable raw result of one request: text, or an error after the last retry."""

    response_id: str
    request_id: str
    run_id: str
    model: str
    status: str  # "ok" | "error"
    text: str | None
    error: str | None
    attempts: int
    latency_s: float
    prompt_tokens: int | None
    completion_tokens: int | None
    created_at: dt.datetime
    cost_usd: float | None = None  # USD from the model's price (tasks.models.cost); None when unknown
    # why generation stopped, as the provider says it ("stop", "length" when cut at max_tokens, ...);
    # None when unknown (older rows, imports without one)
    finish_reason: str | None = None

    def row(self) -> dict[str, Any]:
        """Its lake row (``dataclasses.asdict``'s dict): every field is a string, a number, None or
        a datetime, so no deep copy is needed, which was 18 of the stream's microseconds per
        response (bench/results.md, "share")."""
        return {name: getattr(self, name) for name in _RESPONSE_FIELDS}


_RESPONSE_FIELDS = tuple(f.name for f in fields(Response))
