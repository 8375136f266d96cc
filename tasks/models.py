"""Model calls through litellm: routes, rate limits, retries, and the response records they yield.

Every model, embedded or hosted, is called with ``litellm.acompletion``. Limits are per model:
requests/minute and tokens/minute are spaced evenly (a request never starts sooner than
``60/rpm`` seconds after the previous one, so no window of any length sees more than the rate),
and a semaphore caps requests in flight. When a Prefect API is configured, the same limits are
also drawn from Prefect global concurrency limits shared by every worker (:mod:`tasks.limits`).
Retries back off exponentially with jitter and honour Retry-After; after the last retry the
result is an ``error`` response, which the next sweep sends again.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
import uuid
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import litellm

from tasks import embedded, limits, local_llm
from tasks.config import ModelConfig
from tasks.records import Request, Response, Route
from tasks.store import now_utc

litellm.suppress_debug_info = True
litellm.drop_params = True
litellm.telemetry = False

# Errors that a retry cannot fix; everything else (429, 5xx, timeouts, broken bodies) is retried.
# An embedded model's worker that died is restarted for the next batch, not retried within this one.
_FATAL = (
    litellm.BadRequestError,
    litellm.AuthenticationError,
    litellm.PermissionDeniedError,
    litellm.NotFoundError,
    embedded.EmbeddedModelCrashed,
)


def route_for(cfg: ModelConfig) -> Route:
    """The resolved route of a model; for embedded models the weight file stands as api_base."""
    api_base = cfg.api_base
    if cfg.provider == "local":
        name = cfg.model.split("/", 1)[1]
        api_base = f"file://{local_llm.EMBEDDED[name].package}"
    return Route(provider=cfg.provider, model=cfg.model, api_base=api_base)


class RateLimiter:
    """Per-model limits inside one process: concurrency, requests/minute, tokens/minute."""

    def __init__(self, cfg: ModelConfig):
        self._slots = asyncio.Semaphore(cfg.concurrency)
        self._interval = 60.0 / cfg.requests_per_minute if cfg.requests_per_minute else 0.0
        self._tpm = cfg.tokens_per_minute
        self._next_start = 0.0
        self._tokens = float(cfg.tokens_per_minute)
        self._refilled = time.monotonic()
        self._lock = asyncio.Lock()

    async def _pace(self, tokens: int) -> None:
        async with self._lock:
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
        """Wait for the pacing and a free slot, then await ``call()`` inside the slot."""
        async with self._slots:
            await self._pace(tokens)
            return await call()


def estimate_tokens(messages: list[dict[str, str]], max_tokens: int) -> int:
    """A rough token count for the tokens/minute budget: prompt characters / 4 plus max_tokens."""
    return sum(len(m["content"]) for m in messages) // 4 + max_tokens


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

    @classmethod
    def create(cls, name: str, cfg: ModelConfig, run_id: str) -> "Caller":
        """A caller under the model's limits: shared through Prefect when configured, else in-process."""
        if cfg.provider == "local":
            embedded.begin_batch(cfg.model.split("/", 1)[1])
        limiter: RateLimiter | limits.SharedLimiter = RateLimiter(cfg)
        if limits.uses_shared_limits(cfg):
            specs = limits.limit_specs(name, cfg)
            limits.check_limits(specs)  # fail the batch before sending anything, not per request
            limiter = limits.SharedLimiter(limiter, specs)
        return cls(name=name, cfg=cfg, run_id=run_id, limiter=limiter)

    def _api_key(self) -> str | None:
        if not self.cfg.api_key_env:
            return None
        key = os.environ.get(self.cfg.api_key_env)
        if not key:
            raise RuntimeError(f"models.{self.name}.api_key_env: environment variable {self.cfg.api_key_env} is not set")
        return key

    async def _once(self, request: Request, api_key: str | None) -> Any:
        messages = [{"role": r, "content": c} for r, c in request.messages]
        kwargs: dict[str, Any] = dict(
            model=self.cfg.model,
            messages=messages,
            timeout=self.cfg.timeout_s,
            num_retries=0,
            max_retries=0,
            **request.sampling,
        )
        if self.cfg.temperature > 0:
            kwargs["seed"] = request.sample_idx
        if self.cfg.api_base:
            kwargs["api_base"] = self.cfg.api_base
        if api_key:
            kwargs["api_key"] = api_key
        elif self.cfg.api_base:
            # Self-served OpenAI-compatible servers (vLLM, llama.cpp, Ollama) usually take no key,
            # but the OpenAI client refuses to send a request without one.
            kwargs["api_key"] = "no-key"
        tokens = estimate_tokens(messages, self.cfg.max_tokens)
        return await self.limiter.run(
            tokens, lambda: asyncio.wait_for(litellm.acompletion(**kwargs), timeout=self.cfg.timeout_s + 5)
        )

    async def call(self, request: Request) -> Response:
        """Send one request with retries; always returns a Response (``ok`` or ``error``)."""
        api_key = self._api_key()
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
                )
            except limits.SharedLimitError:
                raise  # our set-up, not the model's answer: never a ledger row
            except _FATAL as exc:
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
                  attempts: int, started: float, p_tok: int | None, c_tok: int | None) -> Response:
        return Response(
            response_id=uuid.uuid4().hex,
            request_id=request.request_id,
            run_id=self.run_id,
            model=self.name,
            status=status,
            text=text,
            error=error,
            attempts=attempts,
            latency_s=round(time.monotonic() - started, 4),
            prompt_tokens=p_tok,
            completion_tokens=c_tok,
            created_at=now_utc(),
        )
