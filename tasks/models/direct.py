"""Calls to an OpenAI-compatible server without litellm's per-call overhead, litellm still the provider layer.

``litellm.acompletion`` costs 4.5-5 ms of CPU per call (its logging object, cost and model-info
look-ups, a hop through a thread pool), and a sweep calls every hosted model from one process
under the GIL, so one process answers at most about 100 requests per second whatever the servers
could take (bench/PROFILE.md, figure 10). For a model that litellm routes to its ``openai``
provider at an ``api_base`` (vLLM, llama.cpp's server, Ollama, any OpenAI-compatible server),
what litellm works out for a call is the same for every request of the model: the route, the
request parameters it maps or drops, the OpenAI client it sends with. :class:`DirectClient` asks
litellm once per model (``get_llm_provider``, ``get_optional_params``), keeps one ``AsyncOpenAI``
client open for the model's stream (HTTP keep-alive) and sends each request with it, about 2 ms
of CPU per call; an error is mapped by litellm's ``exception_type`` into the litellm exceptions
that the retries and the adaptive limits look at (:mod:`tasks.models.routes`). The server sees the
same request body either way (tests/test_direct.py).
"""

from __future__ import annotations

import json
from typing import Any

from tasks.models.config import ModelConfig


class DirectClient:
    """One model's OpenAI-compatible server, called with a client kept open (see the module docstring).

    It belongs to the event loop it first sends in (its connections do): made per stream."""

    def __init__(self, model: str, api_base: str, api_key: str, timeout_s: float):
        import openai

        self.model = model
        self.client = openai.AsyncOpenAI(base_url=api_base, api_key=api_key, max_retries=0, timeout=timeout_s)
        self._params: dict[str, dict[str, Any]] = {}

    def params(self, sampling: dict[str, Any]) -> dict[str, Any]:
        """The request parameters litellm would send for ``sampling`` (mapped, unsupported ones
        dropped), worked out once per distinct sampling (the seed is one of them)."""
        key = json.dumps(sampling, sort_keys=True)
        if key not in self._params:
            from tasks.models.llm import litellm

            mapped = litellm.get_optional_params(model=self.model, custom_llm_provider="openai", drop_params=True,
                                                 **sampling)
            mapped.pop("stream", None)  # litellm sends no stream flag for a plain completion
            if not mapped.get("extra_body"):
                mapped.pop("extra_body", None)
            self._params[key] = mapped
        return self._params[key]

    async def complete(self, body: dict[str, Any]) -> Any:
        """Send one request body (model, messages, sampling as :meth:`Caller.body` builds it);
        returns the chat completion, or raises litellm's exception for the failure."""
        import openai

        sampling = {k: v for k, v in body.items() if k not in ("model", "messages")}
        try:
            return await self.client.chat.completions.create(model=self.model, messages=body["messages"],
                                                             **self.params(sampling))
        except openai.APIError as exc:
            from tasks.models.llm import litellm

            # exception_type raises the mapped exception itself; it returns one already mapped
            raise litellm.exception_type(model=self.model, original_exception=exc,
                                         custom_llm_provider="openai") from None

    async def close(self) -> None:
        """Close the client's connections."""
        await self.client.close()


def direct_client(cfg: ModelConfig, server: dict[str, str]) -> DirectClient | None:
    """A :class:`DirectClient` for ``cfg`` when litellm routes it to its ``openai`` provider at an
    ``api_base`` (``server``: the ``api_base`` and ``api_key`` of a litellm call); None otherwise,
    and for batch-job models, whose requests go to the provider's batch API instead."""
    if not cfg.api_base or cfg.batch:
        return None
    from tasks.models.llm import litellm

    model, provider, _, api_base = litellm.get_llm_provider(cfg.model, api_base=cfg.api_base)
    if provider != "openai":
        return None
    return DirectClient(model, api_base or cfg.api_base, server["api_key"], cfg.timeout_s)
