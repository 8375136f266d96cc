"""litellm's answers kept per litellm version (tasks/models/litellm_facts.py): they equal litellm's for
the routes the direct path serves, and a cold sweep of such a model imports no litellm once they are
kept, with the same requests, costs and error classes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO, fake_model_config, process_env
from fakes import FakeProvider, FakeServer

from tasks.lake.lake import Lake
from tasks.models import direct, litellm_facts
from tasks.models.config import ModelConfig
from tasks.models.pricing import price

# Routes the direct path serves (openai/<name> at an api_base): plain names, names litellm prices,
# names its openai provider maps differently (o-series, gpt-5: max_tokens, temperature); and routes
# it does not serve, whose route answer says so.
MODELS = ["openai/bench", "openai/Qwen/Qwen2.5-7B-Instruct", "openai/gpt-4o-mini", "openai/o3-mini",
          "openai/gpt-5-mini", "anthropic/claude-3-haiku", "hosted_vllm/x"]
SAMPLINGS = [{"temperature": 0.0, "max_tokens": 96, "top_p": 1.0},
             {"temperature": 0.7, "max_tokens": 300, "top_p": 0.9, "seed": 3}]
API_BASE = "http://127.0.0.1:9/v1"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder of this test's own, read afresh."""
    monkeypatch.setenv(litellm_facts.CACHE_ENV, str(tmp_path / "cache"))
    litellm_facts.forget()
    yield tmp_path / "cache"
    litellm_facts.forget()


def litellms_answers() -> list:
    """What litellm itself answers to each question the direct path asks of it."""
    from tasks.models.llm import litellm

    out = []
    for model in MODELS:
        name, provider, _, base = litellm.get_llm_provider(model, api_base=API_BASE)
        out.append(("route", model, [name, provider, base]))
        for batch in (False, True):
            try:
                info = litellm.get_model_info(model)
                suffix = "_batches" if batch else ""
                pair = [info.get(f"input_cost_per_token{suffix}") or info.get("input_cost_per_token"),
                        info.get(f"output_cost_per_token{suffix}") or info.get("output_cost_per_token")]
                out.append(("price", model, batch, None if None in pair else [float(p) for p in pair]))
            except Exception:  # noqa: BLE001 - not in the table
                out.append(("price", model, batch, None))
        if provider == "openai":
            for sampling in SAMPLINGS:
                mapped = litellm.get_optional_params(model=name, custom_llm_provider="openai", drop_params=True,
                                                     **sampling)
                mapped.pop("stream", None)
                mapped.update(mapped.pop("extra_body", None) or {})
                out.append(("params", name, sampling, list(mapped.items())))  # in litellm's order
    return out


def kept_answers() -> list:
    """The same questions through tasks.models.direct and pricing (kept answers once asked)."""
    out = []
    for model in MODELS:
        name, provider, base = direct.route(model, API_BASE)
        out.append(("route", model, [name, provider, base]))
        for batch in (False, True):
            p = price(ModelConfig(model=model), batch=batch)
            out.append(("price", model, batch, None if p is None else [p.input_per_token, p.output_per_token]))
        if provider == "openai":
            for sampling in SAMPLINGS:
                out.append(("params", name, sampling, list(direct.request_params(name, sampling).items())))
    return out


def test_kept_answers_equal_litellms_and_outlive_the_process(cache):
    expected = litellms_answers()
    assert any(a[0] == "params" and dict(a[3]).get("max_completion_tokens") for a in expected)  # a mapped one
    assert kept_answers() == expected  # asked of litellm, kept
    [stored] = list(cache.iterdir())
    assert stored.name.startswith("litellm-") and len(json.loads(stored.read_text())) > len(MODELS)
    litellm_facts.forget()  # as a new process: from the file alone
    assert kept_answers() == expected


@pytest.mark.parametrize("written", ['{"route [\\"openai/bench\\"', "", "[]", '["route", "openai"]', "null"],
                         ids=["cut-short", "empty", "empty-list", "list", "null"])
def test_a_cache_file_written_otherwise_is_asked_again(cache, written):
    """A kept-answers file another hand (or a full disk) left: not JSON, or JSON that is not an
    object of answers. The answers are litellm's again, and the file is whole once more."""
    expected = litellms_answers()
    kept_answers()
    [stored] = list(cache.iterdir())
    stored.write_text(written)
    litellm_facts.forget()
    assert kept_answers() == expected
    assert len(json.loads(stored.read_text())) > len(MODELS)


def test_a_cache_that_cannot_be_written_keeps_nothing_and_answers_the_same(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv(litellm_facts.CACHE_ENV, str(blocker / "cache"))
    litellm_facts.forget()
    try:
        assert kept_answers() == litellms_answers()
    finally:
        litellm_facts.forget()
    assert blocker.read_text().startswith("a file") and list(tmp_path.iterdir()) == [blocker]


def test_a_cache_folder_written_from_home_is_under_home(tmp_path, monkeypatch):
    """``INVARBENCH_CACHE_DIR=~/answers`` as a .env file or a service's unit writes it (no shell to
    expand the ~): the answers go under the home folder, not into a folder named ~ here."""
    home, here = tmp_path / "home", tmp_path / "here"
    here.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv(litellm_facts.CACHE_ENV, "~/answers")
    monkeypatch.chdir(here)
    litellm_facts.forget()
    try:
        assert litellm_facts.known("route", ["openai/m", API_BASE], lambda: ["m", "openai", None]) == ["m", "openai", None]
    finally:
        litellm_facts.forget()
    assert [p.name for p in (home / "answers").iterdir()][0].startswith("litellm-")
    assert list(here.iterdir()) == []


def test_the_oldest_answers_make_room(cache, monkeypatch):
    monkeypatch.setattr(litellm_facts, "MAX_KEPT", 10)
    for i in range(11):
        assert litellm_facts.known("route", [f"openai/m{i}", API_BASE], lambda i=i: [f"m{i}", "openai", None]) \
            == [f"m{i}", "openai", None]
    [stored] = list(cache.iterdir())
    kept = json.loads(stored.read_text())
    assert len(kept) == 5 and all(f"m{i}" in json.dumps(list(kept)) for i in range(6, 11))


def test_nothing_is_kept_when_the_price_map_may_change(cache, monkeypatch):
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "False")
    monkeypatch.setenv("LITELLM_OFFLINE_MODE", "false")
    litellm_facts.forget()
    # litellm was imported offline by this suite: its table answers, but no file keeps the answer
    assert direct.route("openai/bench", API_BASE) == ("bench", "openai", API_BASE)
    assert not cache.exists()


def sweep_process(cfg, warehouse, cache) -> subprocess.CompletedProcess:
    """A CLI sweep in a fresh interpreter, with ``-X importtime`` (every module it imports on stderr)."""
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "flows.cli", "sweep", "--config", str(cfg),
                           "--warehouse", str(warehouse)], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env=process_env({litellm_facts.CACHE_ENV: str(cache)}))


def imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_a_direct_path_sweep_imports_no_litellm_once_its_answers_are_kept(tmp_path):
    cache = tmp_path / "cache"
    with FakeServer() as server:
        cfg = fake_model_config(tmp_path, server.api_base, model_extra={"model": "openai/gpt-4o-mini"})
        first = sweep_process(cfg, tmp_path / "wh1", cache)  # nothing kept yet: asks litellm
        assert first.returncode == 0, first.stderr[-3000:]
        seen_first = [s.body for s in server.state.seen]
        server.state.seen.clear()
        second = sweep_process(cfg, tmp_path / "wh2", cache)  # a new lake: every request sent again
        assert second.returncode == 0, second.stderr[-3000:]
        seen_second = [s.body for s in server.state.seen]
    assert "litellm" in imported(first.stderr)
    assert "litellm" not in imported(second.stderr) and "tasks.models.llm" not in imported(second.stderr)
    assert "5 sent" in second.stdout and len(seen_second) == 5
    key = lambda body: json.dumps(body, sort_keys=True)  # noqa: E731
    assert sorted(map(key, seen_second)) == sorted(map(key, seen_first))  # the same requests

    def costs(wh):
        return sorted(r["cost_usd"] for r in Lake(str(wh / "lake")).read("SELECT cost_usd FROM cost_responses"))
    assert costs(tmp_path / "wh2") == costs(tmp_path / "wh1") and costs(tmp_path / "wh1")[0] > 0  # priced alike


FAILURES = textwrap.dedent("""
    import asyncio, json, sys
    from tasks.environment import apply_defaults
    from tasks.models.config import ModelConfig
    from tasks.models.direct import prepare
    from tasks.models.routes import Caller, RateLimiter, fatal_errors, is_throttle
    from tasks.records import Request, Route

    apply_defaults()
    cfg = ModelConfig(model="openai/x", api_base=sys.argv[1], timeout_s=5)
    prepare(cfg, 1)
    before = "litellm" in sys.modules
    local = RateLimiter(cfg, "m")
    caller = Caller(name="m", cfg=cfg, run_id="r", limiter=local, local=local)
    req = Request(trial_id="t", item_id="i", model="m", step="answer", route=Route("openai", cfg.model, cfg.api_base),
                  messages=(("user", "1+1?"),), sampling=cfg.sampling(), sample_idx=0)
    async def once():
        try:
            await caller._once(req, None)
        except Exception as exc:
            return exc
        finally:
            await caller.close()
    exc = asyncio.run(once())
    print(json.dumps({"before": before, "error": type(exc).__name__, "module": type(exc).__module__,
                      "throttle": is_throttle(exc), "fatal": isinstance(exc, fatal_errors())}))
""")


@pytest.mark.parametrize("fault,error,throttle", [("429", "RateLimitError", True),
                                                   ("500", "InternalServerError", False)])
def test_a_failure_imports_litellm_and_is_classified_as_before(tmp_path, fault, error, throttle):
    cache = tmp_path / "cache"
    with FakeServer(FakeProvider(fault=lambda content, attempt: fault)) as server:
        runs = [subprocess.run([sys.executable, "-c", FAILURES, server.api_base], cwd=REPO, capture_output=True,
                               text=True, timeout=300, env=process_env({litellm_facts.CACHE_ENV: str(cache)}))
                for _ in range(2)]  # the first asks litellm for the route and keeps it
    for r in runs:
        assert r.returncode == 0, r.stderr[-3000:]
    first, second = (json.loads(r.stdout.splitlines()[-1]) for r in runs)
    assert first["before"] and not second["before"]  # the second imported litellm only for the failure
    assert second == {**first, "before": False}
    assert (second["error"], second["throttle"], second["fatal"]) == (error, throttle, False)
    assert second["module"].startswith("litellm")


def test_a_slow_import_of_litellm_for_a_failure_is_not_the_provider_s_timeout(monkeypatch):
    """On a busy machine litellm's import for the first failure can take longer than the request's
    deadline: the failure is still the provider's answer (a 429 throttles), never a timeout."""
    from tasks.models import routes
    from tasks.models.routes import Caller, RateLimiter, is_throttle
    from tasks.records import Request, Route

    loaded = direct.litellm_loaded

    async def slow_import():
        await asyncio.sleep(0.6)  # longer than the deadline below
        await loaded()

    monkeypatch.setattr(direct, "litellm_loaded", slow_import)
    monkeypatch.setattr(routes, "DEADLINE_MARGIN_S", 0.1)
    with FakeServer(FakeProvider(fault=lambda content, attempt: "429")) as server:
        cfg = ModelConfig(model="openai/x", api_base=server.api_base, timeout_s=0.3)
        local = RateLimiter(cfg, "m")
        caller = Caller(name="m", cfg=cfg, run_id="r", limiter=local, local=local)
        req = Request(trial_id="t", item_id="i", model="m", step="answer", route=Route("openai", cfg.model, cfg.api_base),
                      messages=(("user", "1+1?"),), sampling=cfg.sampling(), sample_idx=0)

        async def once() -> BaseException:
            try:
                await caller._once(req, None)
            except Exception as exc:  # noqa: BLE001 - the failure is what is checked
                return exc
            finally:
                await caller.close()
            raise AssertionError("a 429 answered as a success")

        exc = asyncio.run(once())
    assert type(exc).__name__ == "RateLimitError" and is_throttle(exc), repr(exc)
