"""Calls to an OpenAI-compatible server without litellm's per-call overhead, litellm still the provider layer.

``litellm.acompletion`` costs 4.5-5 ms of CPU per call (its logging object, cost and model-info
look-ups, a hop through a thread pool), and a sweep calls every hosted model from one process
under the GIL, so one process answers at most about 100 requests per second whatever the servers
could take (bench/PROFILE.md, figure 10). For a model that litellm routes to its ``openai``
provider at an ``api_base`` (vLLM, llama.cpp's server, Ollama, any OpenAI-compatible server),
what litellm works out for a call is the same for every request of the model: the route, the
request parameters it maps or drops, where it sends them. :class:`DirectClient` asks litellm once
per model (``get_llm_provider``, ``get_optional_params``), keeps one aiohttp session open for the
model's stream (HTTP keep-alive; litellm ships aiohttp as a transport of its own) and posts each
request's JSON with it: about 0.2 ms of CPU per call against litellm's 4.6-5 ms and the OpenAI
client's 1.8-2.4 ms (most of theirs is building and validating typed request and response
models). A failure becomes the exception the OpenAI client would raise (its own constructor of
status errors), mapped by litellm's ``exception_type`` into the litellm exceptions that the
retries and the adaptive limits look at (:mod:`tasks.models.routes`). The server sees the same
request body either way (tests/test_direct.py).

litellm's answers (route, parameters, and the price of :mod:`tasks.models.pricing`) are kept per
litellm version (:mod:`tasks.models.litellm_facts`), and :func:`prepare` asks them before the
first request: so a sweep of such models imports litellm (4-5 s of CPU) only when no earlier
process kept an answer, or to map a failure (then in a thread: :func:`litellm_loaded`).
"""

from __future__ import annotations

import asyncio
import importlib
import json
from types import SimpleNamespace
from typing import Any

from tasks.models import litellm_facts
from tasks.models.config import ModelConfig
from tasks.models.pricing import price


class Unmapped(Exception):
    """A failed request of the direct path before litellm maps it: the transport's exception
    (``cause``), or the server's error answer. Raised within the request's deadline and mapped
    after it (:meth:`DirectClient.mapped`), so that the seconds litellm's import may take on a busy
    machine are never counted as the provider's and never turn its answer into a timeout."""

    def __init__(self, cause: BaseException | None = None, status: int = 0, headers: dict[str, str] | None = None,
                 content: bytes = b""):
        super().__init__(cause or status)
        self.cause, self.status, self.headers, self.content = cause, status, headers or {}, content


class DirectClient:
    """One model's OpenAI-compatible server, called with a session kept open (see the module docstring).

    Its session belongs to the event loop of its first request (its connections do): made per stream."""

    def __init__(self, model: str, api_base: str, api_key: str, timeout_s: float):
        self.model, self.url, self.api_key = model, api_base.rstrip("/") + "/chat/completions", api_key
        self.timeout_s = timeout_s
        self.session: Any = None  # made in the event loop of the first request
        self._params: dict[str, dict[str, Any]] = {}

    def _session(self) -> Any:
        if self.session is None:
            import aiohttp

            # No connection limit of its own: the model's limiter bounds the requests in flight.
            self.session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=self.timeout_s),
                headers={"Authorization": f"Bearer {self.api_key}"})
        return self.session

    def params(self, sampling: dict[str, Any]) -> dict[str, Any]:
        """The request parameters litellm would send for ``sampling`` (mapped, unsupported ones
        dropped, ``extra_body`` merged in as the OpenAI client does), worked out once per distinct
        sampling (the seed is one of them) and kept (:mod:`tasks.models.litellm_facts`)."""
        key = json.dumps(sampling, sort_keys=True)
        if key not in self._params:
            self._params[key] = request_params(self.model, sampling)
        return self._params[key]

    async def complete(self, body: dict[str, Any]) -> Any:
        """Send one request body (model, messages, sampling as ``Caller.body`` builds it); returns
        the completion (``choices[0].message.content``, ``choices[0].finish_reason``, ``usage``),
        or raises :class:`Unmapped` for a failure, which :meth:`mapped` turns into litellm's
        exception."""
        import aiohttp

        sampling = {k: v for k, v in body.items() if k not in ("model", "messages")}
        payload = {"model": self.model, "messages": body["messages"], **self.params(sampling)}
        try:
            async with self._session().post(self.url, json=payload) as resp:
                content = await resp.read()
                if resp.status < 400:
                    return completion(json.loads(content))
                raise Unmapped(status=resp.status, headers=dict(resp.headers), content=content)
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError, KeyError, IndexError) as exc:
            raise Unmapped(cause=exc) from None

    async def mapped(self, failure: Unmapped) -> Exception:
        """The exception litellm raises for ``failure`` (importing litellm first, in a thread, if no
        failure of this process needed it yet)."""
        await litellm_loaded()
        if failure.cause is not None:
            return self._failure(failure.cause)
        return self._status_error(failure.status, failure.headers, failure.content)

    def _status_error(self, status: int, headers: dict[str, str], content: bytes) -> Exception:
        import httpx2
        import openai

        request = httpx2.Request("POST", self.url)
        response = httpx2.Response(status, headers=headers, content=content, request=request)
        return self._mapped(openai.AsyncOpenAI(api_key=self.api_key)._make_status_error_from_response(response))

    def _failure(self, exc: BaseException) -> Exception:
        """A transport failure as the OpenAI client raises it (timeout, connection, unreadable
        body), mapped by litellm; an error already mapped is itself."""
        import httpx2
        import openai

        from tasks.models.llm import litellm

        if isinstance(exc, litellm.APIError) or isinstance(exc, openai.APIError):
            return exc
        request = httpx2.Request("POST", self.url)
        if isinstance(exc, asyncio.TimeoutError):
            return self._mapped(openai.APITimeoutError(request=request))
        return self._mapped(openai.APIConnectionError(message=str(exc), request=request))

    def _mapped(self, exc: Exception) -> Exception:
        from tasks.models.llm import litellm

        try:  # litellm's exception_type raises the exception it maps to
            return litellm.exception_type(model=self.model, original_exception=exc, custom_llm_provider="openai")
        except Exception as mapped:  # noqa: BLE001 - the mapped exception is the result
            return mapped

    async def close(self) -> None:
        """Close the session's connections."""
        if self.session is not None:
            await self.session.close()


def completion(data: dict[str, Any]) -> SimpleNamespace:
    """The parts of an OpenAI chat completion that a response row keeps, as attributes (the
    shape of litellm's and the OpenAI client's answers, without building their models)."""
    choice, usage = data["choices"][0], data.get("usage")
    return SimpleNamespace(
        choices=[SimpleNamespace(message=SimpleNamespace(content=choice["message"].get("content")),
                                 finish_reason=choice.get("finish_reason"))],
        usage=SimpleNamespace(prompt_tokens=usage.get("prompt_tokens"),
                              completion_tokens=usage.get("completion_tokens")) if usage else None)


def route(model: str, api_base: str) -> tuple[str, str, str | None]:
    """litellm's route of ``model`` at ``api_base``: the model name it sends, its provider, the
    ``api_base`` it resolves (``get_llm_provider``); kept per litellm version."""
    def derive() -> tuple[str, str, str | None]:
        from tasks.models.llm import litellm

        name, provider, _, base = litellm.get_llm_provider(model, api_base=api_base)
        return name, provider, base

    return tuple(litellm_facts.known("route", [model, api_base], derive))  # type: ignore[return-value]


def request_params(model: str, sampling: dict[str, Any]) -> dict[str, Any]:
    """The parameters litellm's ``openai`` provider sends for ``sampling`` to ``model`` (the routed
    name), as the OpenAI client puts them in the body; kept per litellm version."""
    def derive() -> dict[str, Any]:
        from tasks.models.llm import litellm

        mapped = litellm.get_optional_params(model=model, custom_llm_provider="openai", drop_params=True, **sampling)
        mapped.pop("stream", None)  # litellm sends no stream flag for a plain completion
        mapped.update(mapped.pop("extra_body", None) or {})
        return mapped

    return litellm_facts.known("params", [model, sampling], derive)


async def litellm_loaded() -> None:
    """Import litellm, when a failure needs its exceptions, in a thread: its seconds of import
    would otherwise stop the event loop, and with it every other request in flight (their timeouts
    run on)."""
    if not litellm_facts.litellm_imported():  # (tasks.models.llm sets its settings, cheaply, once it is)
        await asyncio.to_thread(importlib.import_module, "tasks.models.llm")


def served(cfg: ModelConfig) -> tuple[str, str] | None:
    """The model name and URL the direct path sends ``cfg``'s requests to, when litellm routes it to
    its ``openai`` provider at an ``api_base``; None otherwise, and for batch-job models, whose
    requests go to the provider's batch API instead."""
    if not cfg.api_base or cfg.batch:
        return None
    model, provider, api_base = route(cfg.model, cfg.api_base)
    return (model, api_base or cfg.api_base) if provider == "openai" else None


def direct_client(cfg: ModelConfig, server: dict[str, str]) -> DirectClient | None:
    """A :class:`DirectClient` for ``cfg`` when the direct path serves it (:func:`served`), else None
    (``server``: the ``api_base`` and ``api_key`` of a litellm call)."""
    target = served(cfg)
    return DirectClient(target[0], target[1], server["api_key"], cfg.timeout_s) if target else None


def sampling_sent(cfg: ModelConfig, sampling: dict[str, Any], sample_idx: int) -> dict[str, Any]:
    """The sampling parameters a request of ``cfg`` is sent with: its ``sampling``, and its
    ``sample_idx`` as the seed when it samples (temperature above 0)."""
    return {**sampling, "seed": sample_idx} if cfg.temperature > 0 else dict(sampling)


def prepare(cfg: ModelConfig, samples: int) -> None:
    """Ask, before a sweep's first request of ``cfg``, what that request asks of litellm: for a model
    the direct path serves, its route, price and request parameters (of each ``sample_idx`` below
    ``samples``), which import litellm only when no earlier process kept them
    (:mod:`tasks.models.litellm_facts`); for any other model, litellm itself (it sends the requests).
    Called outside the event loop (or in a thread of it): an import there would stall every call."""
    price(cfg)
    target = served(cfg)
    if target is None:
        import tasks.models.llm  # noqa: F401
        return
    for sample_idx in range(samples if cfg.temperature > 0 else 1):
        request_params(target[0], sampling_sent(cfg, cfg.sampling(), sample_idx))
    import aiohttp  # noqa: F401 - the first request's import (a second at load), here instead of in the event loop
