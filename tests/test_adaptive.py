"""Adaptive concurrency against a provider whose real limit (8 in flight) is below the configured 64."""

from __future__ import annotations

import asyncio

import litellm
import pytest

from fakes import FakeProvider, FakeServer
from tasks.items.generate import generate_task, item_row
from tasks.lake.lake import Lake
from tasks.models.config import ModelConfig
from tasks.models.routes import RateLimiter
from tasks.models.stream import run_calls

LIMIT = 8


def limited_provider() -> FakeProvider:
    """A provider that answers 429 (Retry-After: 1) to every request arriving while more than 8 are in flight.
    Its 0.5 s per answer keeps that many in flight even when a loaded machine sends slowly: at 0.05 s
    a sweep on three busy test workers sent too slowly to ever have nine out at once."""
    state = FakeProvider(delay_s=0.5)
    state.fault = lambda content, attempt: "429" if state.in_flight > LIMIT else None
    return state


def closure_rows(n_max: int) -> list[dict]:
    dataset, items = generate_task("symmetry", "closure", {"n_min": 5, "n_max": n_max, "n_step": 5,
                                                           "groups": ["integers"], "prompt_styles": ["direct"]}, 0)
    return [item_row(i, dataset) for i in items]


def test_aimd_halves_on_throttling_once_per_generation_and_grows_after_a_window():
    limiter = RateLimiter(ModelConfig(model="openai/x", concurrency=16), "x")
    throttle = litellm.RateLimitError("slow down", llm_provider="openai", model="x")

    async def fail():
        raise throttle

    async def ok():
        return "fine"

    async def scenario():
        with pytest.raises(litellm.RateLimitError):
            await limiter.run(1, fail)
        assert limiter.limit == 8
        # A 429 of a request sent before the halving (an older generation) does not halve again.
        limiter._shrink(0)
        assert limiter.limit == 8 and limiter.throttled == 2
        for _ in range(8):
            await limiter.run(1, ok)
        assert limiter.limit == 9 and limiter.min_limit == 8

    asyncio.run(scenario())
    fixed = RateLimiter(ModelConfig(model="openai/x", concurrency=16, adaptive_concurrency=False), "x")
    fixed._shrink(0)
    assert fixed.limit == 16 and fixed.throttled == 1


@pytest.mark.slow  # waits out Retry-After: 1 in real time
def test_a_429_storm_shrinks_concurrency_and_every_request_is_answered(tmp_path):
    state = limited_provider()
    rows = closure_rows(300)
    lake = Lake(str(tmp_path / "lake"))
    with FakeServer(state) as server:
        cfg = ModelConfig(model="openai/fake-model", api_base=server.api_base, concurrency=64, retries=20,
                          backoff_s=0.05, timeout_s=30)
        stats = run_calls(rows, "adaptive-fake", cfg, "run-adaptive", lake)
    assert stats.sent == len(rows) == 60 and stats.errors == 0
    got = stats.concurrency["adaptive-fake"]
    assert got["min"] < 64 and got["throttled"] > 0, got
    ok = lake.read("SELECT count(*) AS n FROM ledger WHERE status = 'ok'")
    assert ok == [{"n": 60}]
