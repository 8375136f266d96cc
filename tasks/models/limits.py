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
it and one per configured rate limit, and Prefect serialises one process's acquisitions on one
model. Measured on 2 cores against the default SQLite-backed server on loopback: about 10 ms per
acquisition and 35 ms per release when idle, a ceiling of about 6–8 calls per second per limit
under load, about 1 per second with dozens of calls in flight (SQLite refuses an acquisition that
meets a release, and Prefect's client backs off; docs/operations.md, "Shared rate limits"). The in-process
:class:`~tasks.models.routes.RateLimiter` stays in front, so a worker never queues more than its own
``concurrency`` acquisitions. Prefect is imported inside the functions that use it, so a call
stage without a server (and ``import-responses``) never loads it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Protocol

from tasks.models.config import ModelConfig
from tasks.records import content_hash

PREFIX = "invarbench"

# Characters Prefect refuses in names, plus anything that would need escaping in an API path.
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


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


class SharedLimiter:
    """The in-process limiter first, then the model's shared slots, held while the call runs."""

    def __init__(self, local: Limiter, specs: list[LimitSpec]):
        self._local = local
        self._concurrency = next(s for s in specs if not s.is_rate)
        self._rates = [s for s in specs if s.is_rate]

    async def run(self, tokens: int, call: Callable[[], Awaitable[Any]]) -> Any:
        """Same contract as ``RateLimiter.run``: wait for every limit, then await ``call()``."""
        return await self._local.run(tokens, lambda: self._shared(tokens, call))

    async def _shared(self, tokens: int, call: Callable[[], Awaitable[Any]]) -> Any:
        from prefect.concurrency.asyncio import (
            ConcurrencySlotAcquisitionError,
            concurrency,
            rate_limit,
        )

        try:
            for spec in self._rates:
                await rate_limit(spec.name, occupy=spec.slots(tokens), strict=True)
            async with concurrency(self._concurrency.name, occupy=1, strict=True):
                return await call()
        except ConcurrencySlotAcquisitionError as exc:
            raise SharedLimitError(f"{exc}; create the limits with `make deploy`") from exc
