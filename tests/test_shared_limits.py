"""Shared slots (tasks/models/limits.py) against the session's real Prefect server (SQLite-backed):
one slot call at a time per process, no deadlock between processes on a full limit, a stop while
waiting for a slot. bench/results.md, sections shared-503 and shared-lock, has the measurements."""

from __future__ import annotations

import asyncio
import threading
import uuid
from contextlib import asynccontextmanager

import pytest
from conftest import fake_model_config

from tasks.config import load_config
from tasks.models.limits import LimitSpec, SharedLimiter, ensure_limits, limit_specs
from tasks.models.routes import RateLimiter
from tasks.runs import stopping

# How long a test waits for what must end before it fails (not a speed figure: a deadlock or a
# wait that ignores the stop would never end).
STUCK_S = 60.0


def limiter_for(tmp_path, concurrency: int, specs: list[LimitSpec] | None = None, **kw) -> SharedLimiter:
    """A SharedLimiter of a fake model with ``concurrency`` in the process, on ``specs``."""
    cfg = load_config(fake_model_config(tmp_path, "http://127.0.0.1:9/v1", model_extra={"concurrency": concurrency}))
    return SharedLimiter(RateLimiter(cfg.model("fake")), specs or limit_specs("fake", cfg.model("fake")), **kw)


def test_a_process_makes_one_shared_slot_call_at_a_time(tmp_path, monkeypatch):
    """Acquisitions and releases of one process never overlap (bench/results.md, shared-503): on a
    SQLite-backed server an acquisition beside a release fails with 503 and costs ~2 s of backoff.
    Each acquisition is one attempt (Prefect's own 423 retries would hold the lock); every slot is
    taken before its call and given back after it, an error included."""
    import prefect.concurrency.asyncio as prefect_concurrency

    seen = {"active": 0, "peak": 0, "held": 0, "in_call_held": [], "entered": 0, "exited": 0, "retries": set()}

    async def api_call(key):
        seen["active"] += 1
        seen["peak"] = max(seen["peak"], seen["active"])
        await asyncio.sleep(0.001)  # a round trip: the others get to run
        seen["active"] -= 1
        seen[key] += 1

    @asynccontextmanager
    async def fake_concurrency(name, occupy=1, max_retries=None, strict=False):
        seen["retries"].add(max_retries)
        await api_call("entered")
        seen["held"] += 1
        try:
            yield
        finally:
            seen["held"] -= 1
            await api_call("exited")

    monkeypatch.setattr(prefect_concurrency, "concurrency", fake_concurrency)
    limiter = limiter_for(tmp_path, 8)

    async def call(i):
        seen["in_call_held"].append(seen["held"] > 0)
        await asyncio.sleep(0.002)
        if i == 3:
            raise ValueError("the provider failed")
        return i

    async def main():
        return await asyncio.gather(*(limiter.run(10, lambda i=i: call(i)) for i in range(24)),
                                    return_exceptions=True)

    results = asyncio.run(main())
    assert isinstance(results[3], ValueError) and results[:3] == [0, 1, 2] and results[4:] == list(range(4, 24))
    assert seen["peak"] == 1
    assert seen["retries"] == {0}
    assert seen["entered"] == seen["exited"] == 24 and seen["held"] == 0 and all(seen["in_call_held"])


def test_two_processes_on_a_full_shared_limit_both_finish(tmp_path):
    """Two processes wanting more slots than the limit has: each waits for a slot while its calls
    in flight give theirs back. Holding the process's lock across Prefect's 423 retries deadlocked
    them (shared-503's tried fix): a process's releases waited behind its own waiting acquisition.
    The processes are two threads with an event loop each: each loop has its own lock and waiting
    line (limits._SlotGate), as each process would, against the same server and limit."""
    spec = LimitSpec(f"invarbench-test-{uuid.uuid4().hex[:8]}-concurrency", 2)
    ensure_limits([spec])
    done: dict[str, object] = {}
    in_flight = {"now": 0, "peak": 0}  # both processes' calls: the server's view of the limit
    counting = threading.Lock()

    def process(name: str) -> None:
        limiter = limiter_for(tmp_path / name, 3, [spec], max_wait_s=0.2)

        async def call(i):
            with counting:
                in_flight["now"] += 1
                in_flight["peak"] = max(in_flight["peak"], in_flight["now"])
            await asyncio.sleep(0.2)  # long beside a slot call, so that both slots fill
            with counting:
                in_flight["now"] -= 1
            return i

        async def main():
            return await asyncio.gather(*(limiter.run(1, lambda i=i: call(i)) for i in range(6)))

        try:
            done[name] = asyncio.run(asyncio.wait_for(main(), STUCK_S))
        except BaseException as exc:  # noqa: BLE001 - reported by the test's assertion
            done[name] = exc

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    threads = [threading.Thread(target=process, args=(n,), daemon=True) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(STUCK_S + 30)
    assert done.get("a") == done.get("b") == list(range(6)), done
    assert in_flight["peak"] == 2  # the limit was full (6 wanted slots), never exceeded


def test_a_stop_ends_a_wait_for_a_full_shared_limit(tmp_path):
    """A sweep stopping while its calls wait for a slot of a full limit (held elsewhere) ends them
    at once, sending nothing, instead of waiting for a slot it will not use."""
    from prefect.client.orchestration import get_client

    spec = LimitSpec(f"invarbench-test-{uuid.uuid4().hex[:8]}-concurrency", 1)
    ensure_limits([spec])
    limiter = limiter_for(tmp_path, 4, [spec], max_wait_s=30.0)
    sent = []

    async def call():
        sent.append(1)

    async def main():
        async with get_client() as client:  # another process holds the only slot
            held = await client.increment_concurrency_slots_with_lease(
                names=[spec.name], slots=1, mode="concurrency", lease_duration=120)
            try:
                asyncio.get_running_loop().call_later(0.5, stopping.request, "test stop")
                results = await asyncio.wait_for(
                    asyncio.gather(*(limiter.run(1, call) for _ in range(3)), return_exceptions=True), STUCK_S)
            finally:
                await client.release_concurrency_slots_with_lease(lease_id=held.json()["lease_id"])
        return results

    stopping.reset()
    try:
        results = asyncio.run(main())
    finally:
        stopping.reset()
    assert [type(r) for r in results] == [stopping.Stopped] * 3, results
    assert sent == []


def test_a_full_limit_does_not_hold_up_another_models_calls(tmp_path):
    """A sweep calls every model at once: while one model's limit is full (held elsewhere) and its
    calls wait, another model's calls in the same process still get their slots."""
    from prefect.client.orchestration import get_client

    full, free = (LimitSpec(f"invarbench-test-{uuid.uuid4().hex[:8]}-concurrency", 1) for _ in range(2))
    ensure_limits([full, free])
    waiting = limiter_for(tmp_path, 2, [full], max_wait_s=0.2)
    other = limiter_for(tmp_path, 2, [free])

    async def call(i):
        return i

    async def main():
        async with get_client() as client:  # another process holds the full limit's only slot
            held = await client.increment_concurrency_slots_with_lease(
                names=[full.name], slots=1, mode="concurrency", lease_duration=120)
            try:
                stuck = [asyncio.ensure_future(waiting.run(1, lambda: call(-1))) for _ in range(2)]
                await asyncio.sleep(0.3)  # the full limit's calls are waiting for it
                answered = await asyncio.wait_for(
                    asyncio.gather(*(other.run(1, lambda i=i: call(i)) for i in range(3))), STUCK_S)
                stopping.request("test over")  # ends the waiting calls
                ended = await asyncio.wait_for(asyncio.gather(*stuck, return_exceptions=True), STUCK_S)
            finally:
                await client.release_concurrency_slots_with_lease(lease_id=held.json()["lease_id"])
        return answered, ended

    stopping.reset()
    answered, ended = asyncio.run(main())
    assert answered == [0, 1, 2]
    assert [type(r) for r in ended] == [stopping.Stopped] * 2, ended


@pytest.fixture(autouse=True)
def _no_stop_left():
    """A stop request is process-wide: none may leak into the next test."""
    yield
    stopping.reset()
