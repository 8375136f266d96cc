"""Per-model limits shared by every worker, through Prefect global concurrency limits.

With a Prefect server (``PREFECT_API_URL`` in the environment, as in every flow run a worker
starts), a hosted model's limits are one budget for all workers instead of one per process:

- ``invarbench-<model>-concurrency``: ``limit = concurrency``, held for the duration of each call;
- ``invarbench-<model>-rpm``: a rate limit (``slot_decay_per_second = requests_per_minute / 60``),
  one slot per call;
- ``invarbench-<model>-tpm``: a rate limit (``slot_decay_per_second = tokens_per_minute / 60``),
  as many slots as the call's estimated tokens.

A rate limit is a token bucket: it holds up to one minute's budget and refills continuously, the
way providers count their own per-minute limits. Limits are created by ``make deploy``
(:func:`ensure_limits`) and acquired with ``strict=True``: a missing limit stops the call stage
with :class:`SharedLimitError` instead of silently running unlimited.

Cost: every call attempt makes an API round trip to acquire the concurrency slot, one to release
it and one per configured rate limit. A process makes its slot calls one at a time
(:class:`_SlotGate`): the default SQLite-backed server refuses an acquisition that meets another
write (HTTP 503, then about 2 s of Prefect's back-off), which cut a 100-request sweep at
concurrency 64 to 1.1 calls per second; one at a time, it made about 10 per second on a loaded
2-core machine, as with a PostgreSQL server, and two processes on a full limit both finish, slowed
by each other's writes (docs/operations.md, "Shared rate limits"; bench/results.md, "shared-lock").
The in-process :class:`~tasks.models.routes.RateLimiter` stays in front, so a worker never queues
more than its own ``concurrency`` acquisitions. Prefect is imported inside the functions that use it, so a call
stage without a server (and ``import-responses``) never loads it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
import weakref
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Protocol

from tasks.models.config import ModelConfig
from tasks.records import content_hash
from tasks.runs import stopping

PREFIX = "invarbench"

# Characters Prefect refuses in names, plus anything that would need escaping in an API path.
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")

# How long an acquisition sleeps on a full limit before asking again: the server's Retry-After
# within these bounds (it can say 0 s, for a limit never released yet, or up to 30 s); a release
# in the same process wakes it sooner.
MIN_SLOT_WAIT_S = 0.05
MAX_SLOT_WAIT_S = 2.0
# How often a sleeping acquisition looks for a stop request (seconds).
STOP_POLL_S = 0.1


class SharedLimitError(RuntimeError):
    """A shared limit is missing or cannot be acquired; the message names it and how to create it."""


@dataclass(frozen=True)
class LimitSpec:
    """One Prefect global concurrency limit: a concurrency limit, or a rate limit when it decays."""

    name: str
    limit: int
    slot_decay_per_second: float = 0.0
    per_token: bool = False  # a call occupies its estimated tokens, not one slot

    @property
    def is_rate(self) -> bool:
        return self.slot_decay_per_second > 0

    def slots(self, tokens: int) -> int:
        """Slots one call occupies (never more than the limit, which the server would refuse)."""
        return min(tokens, self.limit) if self.per_token else 1


def limit_slug(model: str) -> str:
    """The model's part of a limit name; a hash suffix keeps names that needed escaping distinct."""
    slug = _UNSAFE.sub("-", model).strip("-")
    return slug if slug == model else f"{slug}-{content_hash(model, length=6)}"


def limit_specs(model: str, cfg: ModelConfig) -> list[LimitSpec]:
    """The shared limits of one model (the concurrency limit first, then its rate limits)."""
    base = f"{PREFIX}-{limit_slug(model)}"
    specs = [LimitSpec(f"{base}-concurrency", cfg.concurrency)]
    if cfg.requests_per_minute:
        specs.append(LimitSpec(f"{base}-rpm", cfg.requests_per_minute, cfg.requests_per_minute / 60))
    if cfg.tokens_per_minute:
        specs.append(LimitSpec(f"{base}-tpm", cfg.tokens_per_minute, cfg.tokens_per_minute / 60, per_token=True))
    return specs


def shares_limits(cfg: ModelConfig) -> bool:
    """Whether a model's limits are shared when a server is configured: a hosted model that does not
    opt out (an embedded model's limit is the CPU of the machine that runs it)."""
    return cfg.shared_limits and cfg.provider != "local"


def uses_shared_limits(cfg: ModelConfig) -> bool:
    """Whether this model's calls draw on shared limits now: it shares them and a Prefect API is configured."""
    return bool(os.environ.get("PREFECT_API_URL")) and shares_limits(cfg)


def ensure_limits(specs: list[LimitSpec]) -> None:
    """Create each limit, or update its size and decay when it exists (``make deploy`` runs this)."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        for spec in specs:
            client.upsert_global_concurrency_limit_by_name(spec.name, spec.limit, spec.slot_decay_per_second)


def check_limits(specs: list[LimitSpec]) -> None:
    """Raise SharedLimitError naming every limit that does not exist on the server (one round trip each)."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    missing = []
    with get_client(sync_client=True) as client:
        for spec in specs:
            try:
                client.read_global_concurrency_limit_by_name(spec.name)
            except ObjectNotFound:
                missing.append(spec.name)
    if missing:
        raise SharedLimitError(
            f"shared limit(s) {', '.join(missing)} do not exist on {os.environ.get('PREFECT_API_URL')}; "
            "create them with `make deploy` (python -m flows.deploy), or set shared_limits = false for the model"
        )


class Limiter(Protocol):
    """What :class:`SharedLimiter` needs of the in-process limiter (:class:`tasks.models.routes.RateLimiter`);
    a protocol, so that this module does not import the one that imports it."""

    async def run(self, tokens: int, call: Callable[[], Awaitable[Any]]) -> Any:
        """Wait for the limits, then await ``call()``."""


class _Line:
    """One limit's acquisitions waiting in one event loop: they take turns (``turn``), so only the
    first polls the server while the limit is full, and a release of that limit (``freed``) wakes
    it to try again at once."""

    def __init__(self) -> None:
        self.turn = asyncio.Lock()
        self.freed = asyncio.Event()


class _SlotGate:
    """One event loop's order for shared-slot calls (every wave of a call stage runs its own loop).

    ``api``: one slot call (an acquisition attempt or a release, of any model) at a time. Prefect's
    SQLite-backed server acquires a slot in a deferred transaction (read the limit, then update
    it): when another slot call commits in between, SQLite refuses the update at once ("database
    is locked"), the server answers 503 and Prefect's client backs off about 2 s (bench/results.md,
    shared-503). A waiting acquisition sleeps *without* ``api``: releases never wait behind a wait
    for a slot (holding ``api`` across Prefect's own 423 retries deadlocked two processes on a full
    limit). ``lines``: one :class:`_Line` per limit, so a full limit never holds up another's.
    """

    def __init__(self) -> None:
        self.api = asyncio.Lock()
        self.lines: dict[str, _Line] = {}

    def line(self, name: str) -> _Line:
        """The waiting line of limit ``name``."""
        if name not in self.lines:
            self.lines[name] = _Line()
        return self.lines[name]


_GATES: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _SlotGate]" = weakref.WeakKeyDictionary()


def _gate() -> _SlotGate:
    loop = asyncio.get_running_loop()
    gate = _GATES.get(loop)
    if gate is None:
        gate = _GATES[loop] = _SlotGate()
    return gate


def _retry_after(exc: BaseException) -> float | None:
    """The server's Retry-After when ``exc`` is a 423 (the limit is full), else None."""
    cause = exc.__cause__
    response = getattr(cause, "response", None)
    if response is None or response.status_code != 423:
        return None
    try:
        return max(0.0, float(response.headers.get("Retry-After", 1.0)))
    except ValueError:
        return 1.0


class _QuietFullLimit(logging.Filter):
    """Drops the ERROR Prefect's acquisition service logs for every failed attempt of ours
    (``max_retries=0``, the item's fourth field): a full limit (423) is expected and retried, and
    any other failure reaches the caller as SharedLimitError."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        return not (record.msg == "Service %r failed to process item %r" and isinstance(args, tuple)
                    and len(args) == 2 and args[0] == "ConcurrencySlotAcquisitionWithLeaseService"
                    and isinstance(args[1], tuple) and len(args[1]) > 3 and args[1][3] == 0)


def _quiet_full_limit() -> None:
    """Install :class:`_QuietFullLimit` on Prefect's concurrency logger once (at first use, not import)."""
    logger = logging.getLogger("prefect._internal.concurrency")
    if not any(isinstance(f, _QuietFullLimit) for f in logger.filters):
        logger.addFilter(_QuietFullLimit())


async def _wait_for_slot(line: _Line, seconds: float) -> None:
    """Sleep ``seconds``, less when this loop releases a slot of the limit; a stop requested
    meanwhile raises Stopped."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while not line.freed.is_set() and (left := end - loop.time()) > 0:
        stopping.raise_if_requested()
        try:
            await asyncio.wait_for(line.freed.wait(), timeout=min(left, STOP_POLL_S))
        except asyncio.TimeoutError:
            pass
    stopping.raise_if_requested()


class SharedLimiter:
    """The in-process limiter first, then the model's shared slots, held while the call runs.

    The concurrency slot is asked for one attempt at a time (``max_retries=0``) under the loop's
    ``api`` lock; when the limit is full (423) the lock is let go and the acquisition sleeps the
    server's Retry-After, at most ``max_wait_s``, or until this loop releases a slot of the limit
    (:class:`_SlotGate`, :class:`_Line`).
    Rate limits are acquired before it, outside the lock: Prefect waits for their refill itself.
    """

    def __init__(self, local: Limiter, specs: list[LimitSpec], max_wait_s: float | None = None):
        self._local = local
        self._concurrency = next(s for s in specs if not s.is_rate)
        self._rates = [s for s in specs if s.is_rate]
        self.max_wait_s = MAX_SLOT_WAIT_S if max_wait_s is None else max_wait_s

    async def run(self, tokens: int, call: Callable[[], Awaitable[Any]]) -> Any:
        """Same contract as ``RateLimiter.run``: wait for every limit, then await ``call()``."""
        return await self._local.run(tokens, lambda: self._shared(tokens, call))

    async def _shared(self, tokens: int, call: Callable[[], Awaitable[Any]]) -> Any:
        from prefect.concurrency.asyncio import (
            ConcurrencySlotAcquisitionError,
            rate_limit,
        )

        try:
            for spec in self._rates:
                await rate_limit(spec.name, occupy=spec.slots(tokens), strict=True)
        except ConcurrencySlotAcquisitionError as exc:
            raise SharedLimitError(f"{exc}; create the limits with `make deploy`") from exc
        gate = _gate()
        line = gate.line(self._concurrency.name)
        held = await self._acquire(gate, line)
        try:
            result = await call()
        except BaseException:
            await self._release(gate, line, held, sys.exc_info())
            raise
        await self._release(gate, line, held, (None, None, None))
        return result

    async def _acquire(self, gate: _SlotGate, line: _Line) -> Any:
        """Enter ``concurrency()`` for the slot: one attempt at a time, waiting outside the lock."""
        from prefect.concurrency.asyncio import (
            ConcurrencySlotAcquisitionError,
            concurrency,
        )

        _quiet_full_limit()
        async with line.turn:
            while True:
                stopping.raise_if_requested()  # a stopping sweep takes no slot for a call it will not send
                held = concurrency(self._concurrency.name, occupy=1, max_retries=0, strict=True)
                async with gate.api:
                    line.freed.clear()  # a release from now on means a slot may be free again
                    try:
                        await held.__aenter__()
                        return held
                    except ConcurrencySlotAcquisitionError as exc:
                        wait = _retry_after(exc)
                        if wait is None:
                            raise SharedLimitError(f"{exc}; create the limits with `make deploy`") from exc
                await _wait_for_slot(line, min(max(wait, MIN_SLOT_WAIT_S), self.max_wait_s))

    @staticmethod
    async def _release(gate: _SlotGate, line: _Line, held: Any, exc_info: Any) -> None:
        """Leave ``concurrency()`` (its release) under the lock, then wake a waiting acquisition."""
        try:
            await gate.api.acquire()
        except asyncio.CancelledError:
            await held.__aexit__(*exc_info)  # cancelled while waiting: a 503 risk beats a leaked slot
            raise
        try:
            await held.__aexit__(*exc_info)
        finally:
            gate.api.release()
            line.freed.set()
