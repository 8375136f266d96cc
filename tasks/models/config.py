"""A model's configuration (the ``models`` keys of ``invarbench.toml``): its litellm route,
sampling parameters, limits, prices and budget, and the built-in embedded models and their threads
(``INVARBENCH_EMBEDDED_THREADS``)."""

from __future__ import annotations

import os
from typing import Any

from pydantic import Field, model_validator

from tasks.environment import thread_count
from tasks.strict_config import StrictConfig


class ModelConfig(StrictConfig):
    """One model: its litellm route, sampling parameters and limits."""

    model: str = Field(description="litellm model string, e.g. local/smollm2 or openai/<name>")
    api_base: str = Field("", description="server URL for self-served or OpenAI-compatible models")
    api_key_env: str = Field("", description="name of the environment variable holding the API key")
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(96, ge=1, le=32768)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    requests_per_minute: int = Field(0, ge=0, description="0 means no limit")
    tokens_per_minute: int = Field(0, ge=0, description="0 means no limit")
    concurrency: int = Field(4, ge=1, le=1024)
    timeout_s: float = Field(120.0, gt=0)
    retries: int = Field(3, ge=0, le=20)
    backoff_s: float = Field(1.0, ge=0, description="first retry delay; doubles each retry, with jitter")
    shared_limits: bool = Field(True, description="with PREFECT_API_URL set, draw the limits from Prefect "
                                "global concurrency limits shared by every worker (embedded models never do)")
    adaptive_concurrency: bool = Field(True, description="halve the requests in flight on 429 / Retry-After, "
                                       "grow by one after a window of successes, within [1, concurrency]")
    input_cost_per_mtok: float | None = Field(None, ge=0, description="USD per million prompt tokens; "
                                              "default: litellm's bundled price table")
    output_cost_per_mtok: float | None = Field(None, ge=0, description="USD per million completion tokens")
    max_cost_usd: float = Field(0.0, ge=0, description="budget of this model in one sweep run; 0 means none")
    batch: bool = Field(False, description="send ledger misses as provider batch jobs (OpenAI files/batches API)")
    batch_max_wait_h: float = Field(24.0, gt=0, le=168, description="hours a sweep waits for its batch jobs "
                                    "before it ends `waiting`")
    batch_poll_s: float = Field(30.0, gt=0, description="first delay between polls of a batch job; doubles up to 10 min")

    @model_validator(mode="after")
    def _consistent(self) -> "ModelConfig":
        if (self.input_cost_per_mtok is None) != (self.output_cost_per_mtok is None):
            raise ValueError("input_cost_per_mtok and output_cost_per_mtok: set both or neither")
        if self.batch and self.provider != "openai":
            raise ValueError(f"batch: batch jobs need an OpenAI-compatible model (openai/...), not {self.model!r}")
        return self

    @property
    def provider(self) -> str:
        """The litellm provider prefix of ``model`` (``local``, ``openai``, ...)."""
        return self.model.split("/", 1)[0] if "/" in self.model else "openai"

    def sampling(self) -> dict[str, Any]:
        """Every sampling parameter sent with a request (all of them are in the request hash)."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, "top_p": self.top_p}


BUILTIN_MODELS: dict[str, ModelConfig] = {
    # Embedded models run in-process, one call at a time: llama.cpp uses both cores per call.
    "local/smollm2": ModelConfig(model="local/smollm2", concurrency=1, timeout_s=300),
    "local/gemma3-270m": ModelConfig(model="local/gemma3-270m", concurrency=1, timeout_s=300),
}


THREADS_ENV = "INVARBENCH_EMBEDDED_THREADS"


def threads() -> int:
    """llama.cpp's threads for one call: ``INVARBENCH_EMBEDDED_THREADS``, else every CPU this process
    may run on. Fewer help where other work shares the cores: llama.cpp's threads spin while they
    wait for each other, and a thread that lost its core stalls all of them. A bad value raises
    ConfigError."""
    every_cpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return thread_count(THREADS_ENV) or every_cpu
