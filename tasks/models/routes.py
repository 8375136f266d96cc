"""Model calls through litellm: routes, rate limits, retries, and the response records they yield.

Every model, embedded or hosted, is called with ``litellm.acompletion``. Limits are per model:
requests/minute and tokens/minute are spaced evenly (a request never starts sooner than
``60/rpm`` seconds after the previous one, so no window of any length sees more than the rate),
and a semaphore caps requests in flight. When a Prefect API is configured, the same limits are
also drawn from Prefect global concurrency limits shared by every worker (:mod:`tasks.models.limits`).
Retries back off exponentially with jitter and honour Retry-After; after the last retry the
result is an ``error`` response, which the next sweep sends again.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import random
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from tasks.models import embedded, embedded_worker, limits, litellm_facts
from tasks.models.config import ModelConfig
from tasks.models.cost import prompt_token_estimate, response_cost
from tasks.models.direct import DirectClient, Unmapped, direct_client, sampling_sent
from tasks.models.pricing import Price, price
from tasks.records import Request, Response, Route, now_utc, random_id
from tasks.runs import stopping

log = logging.getLogger("invarbench.concurrency")
# How long past the model's own timeout_s an attempt may take before it is abandoned as timed out:
# the client's timeout fires first; this bounds what it does not cover (a stalled connection pool).
DEADLINE_MARGIN_S = 5.0


def fatal_errors() -> tuple[type[BaseException], ...]:
    """Errors that a retry cannot fix; everything else (429, 5xx, timeouts, broken bodies) is retried.
    An embedded model's worker that died is restarted for the next chunk, not retried within this one.
    Each is a litellm exception: none exists before litellm is imported, which a sweep whose calls
    all go the direct path and succeed never does (:mod:`tasks.models.litellm_facts`)."""
    return _fatal_errors() if litellm_facts.litellm_imported() else ()


@functools.cache
def _fatal_errors() -> tuple[type[BaseException], ...]:
    from tasks.models.llm import litellm

    return (litellm.BadRequestError, litellm.AuthenticationError, litellm.PermissionDeniedError,
            litellm.NotFoundError, embedded.EmbeddedModelCrashed)


def route_for(cfg: ModelConfig) -> Route:
    """The resolved route of a model; for embedded models the weight file stands as api_base."""
    api_base = cfg.api_base
    if cfg.provider == "local":
        name = cfg.model.split("/", 1)[1]
        api_base = f"file://{embedded_worker.EMBEDDED[name].package}"
    return Route(provider=cfg.provider, model=cfg.model, api_base=api_base)


class RateLimiter:
    """Per-model limits inside one process: concurrency (adaptive), requests/minute, tokens/minute.

    Concurrency follows additive-increase / multiplicative-decrease: a 429 or a Retry-After halves
    the number of requests allowed in flight (at most once per generation: the answers of requests
    sent under the larger limit do not halve it again), and each window of ``limit`` successes
    raises it by one, always within ``[1, concurrency]``. With ``adaptive_concurrency = false`` the
    limit stays at ``concurrency``. The state lives as long as the process (:meth:`for_model`),
    so a sweep's later chunks start from what the earlier ones learned.
    """

    _registry: dict[tuple[str, str], "RateLimiter"] = {}

    def __init__(self, cfg: ModelConfig, name: str = ""):
        self.name = name or cfg.model
        self.ceiling = cfg.concurrency
        self.adaptive = cfg.adaptive_concurrency
        self.limit = cfg.concurrency
        self.min_limit = cfg.concurrency
        self.throttled = 0
        self._generation = 0
        self._successes = 0
        self._in_flight = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cond: asyncio.Condition | None = None
        self._interval = 60.0 / cfg.requests_per_minute if cfg.requests_per_minute else 0.0
        self._tpm = cfg.tokens_per_minute
        self._next_start = 0.0
        self._tokens = float(cfg.tokens_per_minute)
        self._refilled = time.monotonic()
        self._lock: asyncio.Lock | None = None

    @classmethod
    def for_model(cls, name: str, cfg: ModelConfig) -> "RateLimiter":
        """The process's limiter of this model configuration (created on first use)."""
        key = (name, cfg.model_dump_json())
        if key not in cls._registry:
            cls._registry[key] = cls(cfg, name)
        return cls._registry[key]

    def _primitives(self) -> tuple[asyncio.Condition, asyncio.Lock]:
        # asyncio primitives belong to one event loop, and each wave of a call stage runs its own
        # (asyncio.run); the numbers above outlive the loops, the primitives are made per loop.
        loop = asyncio.get_running_loop()
        if loop is not self._loop or self._cond is None or self._lock is None:
            self._loop, self._cond, self._lock, self._in_flight = loop, asyncio.Condition(), asyncio.Lock(), 0
        return self._cond, self._lock

    def start_window(self) -> None:
        """Start counting a new stage: its minimum is measured from the current limit."""
        self.min_limit = self.limit

    def _shrink(self, generation: int) -> None:
        self.throttled += 1
        if not self.adaptive or generation != self._generation:
            return
        self._generation += 1
        self._successes = 0
        if self.limit > 1:
            before, self.limit = self.limit, max(1, self.limit // 2)
            self.min_limit = min(self.min_limit, self.limit)
            _log("%s: throttled by the provider, concurrency %d -> %d", self.name, before, self.limit)

    def _grow(self, generation: int) -> None:
        if not self.adaptive or generation != self._generation:
            return
        self._successes += 1
        if self._successes >= self.limit and self.limit < self.ceiling:
            self._successes = 0
            self.limit += 1
            _log("%s: %d successes in a row, concurrency %d -> %d", self.name, self.limit - 1,
                 self.limit - 1, self.limit)

    async def _pace(self, tokens: int, lock: asyncio.Lock) -> None:
        async with lock:
            now = time.monotonic()
            if self._interval:
                wait = self._next_start - now
                if wait > 0:
                    await asyncio.sleep(wait)
                    now = time.monotonic()
                self._next_start = now + self._interval
            if self._tpm:
                tokens = min(tokens, self._tpm)
                while True:
                    self._tokens = min(self._tpm, self._tokens + (now - self._refilled) * self._tpm / 60.0)
                    self._refilled = now
                    if self._tokens >= tokens:
                        self._tokens -= tokens
                        break
                    await asyncio.sleep((tokens - self._tokens) * 60.0 / self._tpm)
                    now = time.monotonic()

    async def run(self, tokens: int, call: Callable[[], Awaitable[Any]]) -> Any:
        """Wait for the pacing and a free slot, then await ``call()`` inside the slot.

        A throttling failure of ``call()`` (429, Retry-After) shrinks the limit, a success grows it;
        the exception is re-raised for the caller's retry loop either way.
        """
        cond, lock = self._primitives()
        async with cond:
            await cond.wait_for(lambda: self._in_flight < self.limit)
            self._in_flight += 1
            generation = self._generation
        try:
            await self._pace(tokens, lock)
            result = await call()
        except Exception as exc:
            if is_throttle(exc):
                self._shrink(generation)
            raise
        finally:
            async with cond:
                self._in_flight -= 1
                cond.notify_all()
        self._grow(generation)
        return result


def _log(message: str, *args: Any) -> None:
    """Log a concurrency change to the Prefect run's log when inside a run (the UI shows it), else locally."""
    try:
        from prefect.logging import get_run_logger

        get_run_logger().info(message, *args)
    except Exception:  # noqa: BLE001 - outside a flow or task run there is no run logger
        log.info(message, *args)


def is_throttle(exc: BaseException) -> bool:
    """Whether a failure is the provider asking us to slow down: a 429, or any answer with Retry-After."""
    if litellm_facts.litellm_imported():  # else exc is no litellm exception
        from tasks.models.llm import litellm

        if isinstance(exc, litellm.RateLimitError):
            return True
    return _retry_after(exc) is not None


def estimate_tokens(messages: list[dict[str, str]], max_tokens: int) -> int:
    """A rough token count for the tokens/minute budget: prompt characters / 4 plus max_tokens."""
    return prompt_token_estimate(messages) + max_tokens


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(exc, "litellm_response_headers", None)
    response = getattr(exc, "response", None)
    if headers is None and response is not None:
        headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return None


def _scrub(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


@dataclass
class Caller:
    """Sends requests of one model, under its limits, and turns results into :class:`Response` rows."""

    name: str
    cfg: ModelConfig
    run_id: str
    limiter: RateLimiter | limits.SharedLimiter
    local: RateLimiter  # the in-process limiter (also inside a SharedLimiter): its adaptive state

    @functools.cached_property
    def price(self) -> Price | None:
        """The model's price, looked up when first needed (litellm's table, kept per litellm version:
        asked before the stream by tasks.models.direct.prepare, so never an import in the event loop)."""
        return price(self.cfg)

    @classmethod
    def create(cls, name: str, cfg: ModelConfig, run_id: str) -> "Caller":
        """A caller under the model's limits: shared through Prefect when configured, else in-process.

        The shared limit stays the ceiling: adaptive concurrency only ever lowers this process's
        share below ``concurrency``, and the Prefect limit is acquired inside the local slot.
        """
        if cfg.provider == "local":
            embedded.begin_chunk(cfg.model.split("/", 1)[1])
        local = RateLimiter.for_model(name, cfg)
        local.start_window()
        limiter: RateLimiter | limits.SharedLimiter = local
        if limits.uses_shared_limits(cfg):
            specs = limits.limit_specs(name, cfg)
            limits.check_limits(specs)  # fail the chunk before sending anything, not per request
            limiter = limits.SharedLimiter(local, specs)
        return cls(name=name, cfg=cfg, run_id=run_id, limiter=limiter, local=local)

    def messages(self, request: Request) -> list[dict[str, str]]:
        """The request's messages in the chat format."""
        return [{"role": r, "content": c} for r, c in request.messages]

    def api_key(self) -> str | None:
        """The model's API key from its environment variable (None when it needs none)."""
        if not self.cfg.api_key_env:
            return None
        key = os.environ.get(self.cfg.api_key_env)
        if not key:
            raise RuntimeError(f"models.{self.name}.api_key_env: environment variable {self.cfg.api_key_env} is not set")
        return key

    def server(self, api_key: str | None) -> dict[str, str]:
        """The ``api_base`` and ``api_key`` arguments of a litellm call to this model."""
        out = {"api_base": self.cfg.api_base} if self.cfg.api_base else {}
        if api_key:
            out["api_key"] = api_key
        elif self.cfg.api_base:
            # Self-served OpenAI-compatible servers (vLLM, llama.cpp, Ollama) usually take no key,
            # but the OpenAI client refuses to send a request without one.
            out["api_key"] = "no-key"
        return out

    def body(self, request: Request) -> dict[str, Any]:
        """What the provider receives for ``request``: model, messages, sampling (and the seed when sampling)."""
        body: dict[str, Any] = dict(model=self.cfg.model, messages=self.messages(request),
                                    **sampling_sent(self.cfg, request.sampling, request.sample_idx))
        if self.cfg.batch:
            # A batch line goes to the provider as is: no litellm route prefix in the model name.
            body["model"] = self.cfg.model.split("/", 1)[1] if "/" in self.cfg.model else self.cfg.model
        return body

    @functools.cached_property
    def direct(self) -> DirectClient | None:
        """The model's client kept open when litellm routes it to an OpenAI-compatible server
        (:mod:`tasks.models.direct`), else None; made on first use, in the event loop that sends."""
        return direct_client(self.cfg, self.server(self.api_key()))

    async def close(self) -> None:
        """Close what the caller keeps open (the direct client's connections)."""
        if self.__dict__.get("direct") is not None:
            await self.direct.close()

    async def _once(self, request: Request, api_key: str | None) -> Any:
        if self.cfg.provider == "local":
            embedded.register()
        body = self.body(request)
        tokens = estimate_tokens(body["messages"], self.cfg.max_tokens)
        direct = self.direct
        if direct is not None:
            send: Callable[[], Awaitable[Any]] = lambda: direct.complete(body)  # noqa: E731
        else:
            from tasks.models.llm import litellm

            kwargs: dict[str, Any] = dict(body, model=self.cfg.model, timeout=self.cfg.timeout_s, num_retries=0, max_retries=0,
                                          **self.server(api_key))
            send = lambda: litellm.acompletion(**kwargs)  # noqa: E731

        async def attempt() -> Any:
            # Every limit (pacing, local and shared slots) may be waited for long: a stop requested
            # meanwhile starts no call.
            stopping.raise_if_requested()
            try:
                return await asyncio.wait_for(send(), timeout=self.cfg.timeout_s + DEADLINE_MARGIN_S)
            except Unmapped as failure:  # mapped outside the deadline: litellm's import is not the provider's time
                raise await direct.mapped(failure) from None

        return await self.limiter.run(tokens, attempt)

    async def call(self, request: Request) -> Response:
        """Send one request with retries; always returns a Response (``ok`` or ``error``)."""
        api_key = self.api_key()
        started = time.monotonic()
        attempts = 0
        error = ""
        while True:
            attempts += 1
            try:
                result = await self._once(request, api_key)
                text = result.choices[0].message.content
                if text is None:
                    raise ValueError("response has no message content")
                usage = getattr(result, "usage", None)
                return self._response(
                    request, "ok", text, None, attempts, started,
                    getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None),
                    getattr(result.choices[0], "finish_reason", None),
                )
            except (limits.SharedLimitError, stopping.Stopped):
                raise  # our set-up, or a stop before the attempt started: never a ledger row
            except fatal_errors() as exc:
                error = f"{type(exc).__name__}: {exc}"
                break
            except Exception as exc:  # noqa: BLE001 - every other failure is retried, then recorded
                error = f"{type(exc).__name__}: {exc}"
                if attempts > self.cfg.retries:
                    break
                delay = self.cfg.backoff_s * 2 ** (attempts - 1) * (0.5 + random.random())
                hinted = _retry_after(exc)
                await asyncio.sleep(max(delay, hinted) if hinted is not None else delay)
        return self._response(request, "error", None, _scrub(error, api_key)[:2000], attempts, started, None, None)

    def _response(self, request: Request, status: str, text: str | None, error: str | None,
                  attempts: int, started: float, p_tok: int | None, c_tok: int | None,
                  finish_reason: str | None = None) -> Response:
        return self.response(request.request_id, status, text, error, attempts, time.monotonic() - started,
                             p_tok, c_tok, self.price, finish_reason)

    def response(self, request_id: str, status: str, text: str | None, error: str | None, attempts: int,
                 latency_s: float, p_tok: int | None, c_tok: int | None, p: Price | None,
                 finish_reason: str | None = None) -> Response:
        """A response row of this model and run, priced at ``p`` (direct and batch calls alike), with the
        provider's ``finish_reason`` when it gave one."""
        return Response(
            response_id=random_id(),
            request_id=request_id,
            run_id=self.run_id,
            model=self.name,
            status=status,
            text=text,
            error=error,
            attempts=attempts,
            latency_s=round(latency_s, 4),
            prompt_tokens=p_tok,
            completion_tokens=c_tok,
            created_at=now_utc(),
            cost_usd=response_cost(p, p_tok, c_tok),
            finish_reason=finish_reason or None,
        )
