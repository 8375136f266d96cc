"""The direct path to OpenAI-compatible servers (tasks/models/direct.py) against litellm.acompletion:
the server receives the same request, and a failure is the same litellm exception."""

from __future__ import annotations

import asyncio

import pytest
from fakes import FakeProvider, FakeServer

from tasks.environment import apply_defaults
from tasks.models.config import ModelConfig
from tasks.models.routes import Caller, RateLimiter, _retry_after
from tasks.records import Request, Route


def request(cfg: ModelConfig, sample_idx: int = 2) -> Request:
    return Request(trial_id="t", item_id="i", model="m", step="answer", route=Route("openai", cfg.model, cfg.api_base),
                   messages=(("system", "Answer briefly."), ("user", "What is 1+1-1?")), sampling=cfg.sampling(),
                   sample_idx=sample_idx)


def caller(cfg: ModelConfig) -> Caller:
    local = RateLimiter(cfg, "m")
    return Caller(name="m", cfg=cfg, run_id="r", limiter=local, local=local)


async def through_both(cfg: ModelConfig) -> tuple[Caller, list]:
    """One request sent by the caller (direct), then the same through litellm.acompletion; the errors raised."""
    from tasks.models.llm import litellm

    c, errors = caller(cfg), []
    try:
        await c._once(request(cfg), None)
    except Exception as exc:  # noqa: BLE001 - compared below
        errors.append(exc)
    kwargs = dict(c.body(request(cfg)), timeout=cfg.timeout_s, num_retries=0, max_retries=0, **c.server(None))
    try:
        await litellm.acompletion(**kwargs)
    except Exception as exc:  # noqa: BLE001 - compared below
        errors.append(exc)
    await c.close()
    return c, errors


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_the_server_receives_what_litellm_sends(temperature):
    apply_defaults()
    with FakeServer() as server:
        cfg = ModelConfig(model="openai/Qwen/Qwen2.5-7B-Instruct", api_base=server.api_base, temperature=temperature)
        c, errors = asyncio.run(through_both(cfg))
        assert errors == []
        assert c.direct is not None  # the first request went the direct way
        direct, via_litellm = (s.body for s in server.state.seen)
        assert direct == via_litellm
        assert direct["model"] == "Qwen/Qwen2.5-7B-Instruct" and ("seed" in direct) == (temperature > 0)


@pytest.mark.parametrize("fault,error,retry_after", [("429", "RateLimitError", 1.0),
                                                      ("500", "InternalServerError", None),
                                                      ("stall", "Timeout", None)])
def test_a_failure_is_the_same_litellm_exception_either_way(fault, error, retry_after):
    from tasks.models.llm import litellm

    apply_defaults()
    with FakeServer(FakeProvider(fault=lambda content, attempt: fault, stall_s=2.0)) as server:
        _, errors = asyncio.run(through_both(ModelConfig(model="openai/x", api_base=server.api_base, timeout_s=1)))
    assert [type(e) for e in errors] == [getattr(litellm, error)] * 2
    assert [_retry_after(e) for e in errors] == [retry_after] * 2


def test_only_openai_compatible_servers_go_direct():
    apply_defaults()
    assert caller(ModelConfig(model="openai/x", api_base="http://127.0.0.1:9/v1")).direct is not None
    assert caller(ModelConfig(model="openai/gpt-4o-mini", api_key_env="")).direct is None  # no api_base: litellm
    assert caller(ModelConfig(model="openai/x", api_base="http://127.0.0.1:9/v1", batch=True)).direct is None
    assert caller(ModelConfig(model="anthropic/claude-3-haiku", api_base="http://127.0.0.1:9/v1")).direct is None
