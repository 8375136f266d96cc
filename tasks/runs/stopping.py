"""Stopping a run promptly and cleanly: one stop request per process, asked for by a signal
(SIGTERM, SIGINT) or by a cancellation in the Prefect UI or API, and honoured by the work.

Whoever wants the run to end calls :func:`request`; the work reads :func:`requested` before it
starts anything new (the call stage before each request, the sweep before each unit). Requests
already in flight get :data:`GRACE_S` to finish, so their answers are written and never paid
twice (:func:`wait_with_grace`). A second signal stops at once: the handler raises
:class:`StopNow` wherever the main thread is.

:func:`stoppable` wraps a flow: while it runs, SIGTERM and SIGINT request a stop instead of
killing the process (in a deployment run, Prefect's runner sends SIGTERM to cancel it), a thread
polls the flow run's state every :data:`POLL_S` so that a run started outside any worker (the
CLI's) sees a cancellation set through the API, and a flow that stopped ends ``Cancelled`` in
Prefect. The run itself records ``cancelled`` in ``runs`` (tasks.runs.lifecycle), which releases
its claims on requests (the ``live_claims`` view).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import threading
import uuid
from typing import Any, Callable, Iterable, Iterator, TypeVar

log = logging.getLogger(__name__)

# How long requests in flight may take to finish once a stop is requested (seconds).
GRACE_S = 5.0
# How often a running flow asks Prefect whether it was cancelled (seconds).
POLL_S = 2.0
SIGNALS = (signal.SIGTERM, signal.SIGINT)

_event = threading.Event()
# Reentrant: the signal handler takes it in the main thread, which may hold it already.
_lock = threading.RLock()
_state: dict[str, Any] = {"reason": "", "signals": 0, "signum": 0}
# Blocks of the main thread under on_signals (a flow inside the CLI's must keep the CLI's request)
# and under interruptible (where a signal raises Stopped at once).
_depth = {"signals": 0, "interruptible": 0}

F = TypeVar("F", bound=Callable[..., Any])


class Stopped(Exception):
    """The run ended early because a stop was requested; ``str()`` says who asked."""


class _Interrupt(BaseException):
    """A signal inside :func:`interruptible`: a BaseException, so that no ``except Exception`` on
    the way (Prefect's plugin loader has one) holds it up; the block raises Stopped for it."""


class StopNow(BaseException):
    """A second signal: stop at once, abandoning calls in flight (BaseException, like
    KeyboardInterrupt, so that no ``except Exception`` holds it up)."""


def request(reason: str) -> None:
    """Ask the run of this process to stop (the first reason given is kept)."""
    with _lock:
        if not _event.is_set():
            _state["reason"] = reason
            _event.set()
            log.warning("stopping: %s; no new calls start, calls in flight get %.0f s", reason, GRACE_S)


def configure(grace_s: float, poll_s: float) -> None:
    """Set the grace period and the poll interval (``[sweep] stop_grace_s``, ``cancel_poll_s``)."""
    global GRACE_S, POLL_S
    GRACE_S, POLL_S = grace_s, poll_s


def requested() -> bool:
    """True once a stop was requested."""
    return _event.is_set()


def reason() -> str:
    """Why the run is stopping (empty when it is not)."""
    return _state["reason"]


def exit_code() -> int:
    """The exit code of a process that stopped: 128 + the signal's number (130 for SIGINT, 143 for
    SIGTERM and for a cancellation through Prefect, which a worker delivers as SIGTERM)."""
    return 128 + (_state["signum"] or signal.SIGTERM)


def raise_if_requested() -> None:
    """Raise :class:`Stopped` when a stop was requested."""
    if requested():
        raise Stopped(reason())


def reset() -> None:
    """Forget any stop request (a new run in the same process starts clean)."""
    with _lock:
        _event.clear()
        _state.update(reason="", signals=0, signum=0)


def _handle(signum: int, frame: Any) -> None:
    with _lock:
        _state["signals"] += 1
        second = _state["signals"] > 1
        _state["signum"] = _state["signum"] or signum
    name = signal.Signals(signum).name
    if second:
        raise StopNow(f"stopped at once by a second signal ({name}); calls in flight were abandoned")
    request(f"{name} received")
    if _depth["interruptible"]:
        raise _Interrupt()


@contextlib.contextmanager
def on_signals() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGINT request a stop (the second raises StopNow); the
    previous handlers come back after it. Outside the main thread signals cannot be caught here,
    and nothing is installed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _handle) for s in SIGNALS}
    _depth["signals"] += 1
    try:
        yield
    finally:
        _depth["signals"] -= 1
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """While the block runs in the main thread, a signal raises :class:`Stopped` at once, wherever
    the thread is (an import, a wait): for start-up work that has no call in flight to let finish
    and writes nothing that an exception could leave half done. A stop requested before raises
    on entry, one requested during it at the latest on exit."""
    raise_if_requested()
    main = int(threading.current_thread() is threading.main_thread())  # only there do signals arrive
    _depth["interruptible"] += main
    try:
        yield
    except _Interrupt:
        raise Stopped(reason()) from None
    finally:
        _depth["interruptible"] -= main
    raise_if_requested()  # a stop requested off the main thread (a cancellation seen by polling)


def _prefect_client() -> Any:
    """A synchronous Prefect client (a context manager) for the cancellation watch."""
    from prefect.client.orchestration import get_client

    return get_client(sync_client=True)


def _cancelled_in_prefect(client: Any, flow_run_id: str) -> bool:
    state = client.read_flow_run(uuid.UUID(flow_run_id)).state
    return state is not None and (state.is_cancelling() or state.is_cancelled())


@contextlib.contextmanager
def watch_flow_run(flow_run_id: str) -> Iterator[None]:
    """While the block runs, poll the flow run's state every POLL_S and request a stop once it is
    Cancelling or Cancelled (a cancellation from the UI or API)."""
    done = threading.Event()

    def poll() -> None:
        # One client for the watch's life, made at the first poll that reaches the API: a client
        # per poll built a new SSL context each time, about 20 ms of CPU every POLL_S of a sweep.
        with contextlib.ExitStack() as opened:
            client = None
            while not done.wait(POLL_S) and not requested():
                try:
                    if client is None:
                        client = opened.enter_context(_prefect_client())
                    if _cancelled_in_prefect(client, flow_run_id):
                        request("cancelled in Prefect")
                except Exception:  # noqa: BLE001 - an unreachable API must not end the run; the next poll may reach it
                    log.debug("flow run %s: state not read", flow_run_id, exc_info=True)

    thread = threading.Thread(target=poll, daemon=True, name=f"cancel-watch-{flow_run_id}")
    if flow_run_id:
        thread.start()
    try:
        yield
    finally:
        done.set()
        if thread.is_alive():
            thread.join()


def cancel_flow_runs(client: Any, ids: list[Any], chunk: int = 200) -> int:
    """Cancel the flow runs of ``ids`` that are not final, as the Prefect UI does (Cancelling: a
    worker stops a running one with SIGTERM, one not started yet becomes Cancelled); returns how
    many were asked. ``client`` is a sync Prefect client."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import TERMINAL_STATES, StateType
    from prefect.states import Cancelling

    live = [s for s in StateType if s not in TERMINAL_STATES]
    asked = 0
    for start in range(0, len(ids), chunk):
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            id=FlowRunFilterId(any_=ids[start:start + chunk]),
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=live))), limit=chunk)
        for run in runs:
            client.set_flow_run_state(run.id, Cancelling(message=f"invarbench: {reason() or 'stopped'}"))
            asked += 1
    return asked


def stoppable(fn: F) -> F:
    """Make a flow function stoppable (put it under ``@flow``): signals and a Prefect cancellation
    request a stop while it runs, and a flow that stopped returns a Cancelled state, so the flow
    run reads Cancelled (calling the flow then raises prefect's CancelledRun)."""
    from prefect.states import Cancelled

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        from prefect.runtime import flow_run

        # A flow run in-process after a stopped one must not inherit its stop; but inside the CLI's
        # own handlers (it resets when it starts) a signal that came while Prefect started this
        # flow run is this run's.
        if not _depth["signals"]:
            reset()
        with on_signals(), watch_flow_run(str(flow_run.get_id() or "")):
            try:
                return fn(*args, **kwargs)
            except Exception:
                if not requested():
                    raise
        return Cancelled(message=f"invarbench: stopped ({reason()})")

    return run  # type: ignore[return-value]


async def sleep(seconds: float, every_s: float = 0.1) -> None:
    """``asyncio.sleep(seconds)`` that ends early once a stop is requested."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while not requested() and loop.time() < end:
        await asyncio.sleep(min(every_s, end - loop.time()))


async def wait_with_grace(tasks: Iterable[asyncio.Future[Any]], every_s: float = 0.1) -> None:
    """Wait for ``tasks``; once a stop is requested give those still running GRACE_S more, then
    cancel the rest. Exceptions of the tasks propagate as ``asyncio.gather`` would raise them."""
    pending = set(tasks)
    while pending and not requested():
        done, pending = await asyncio.wait(pending, timeout=every_s, return_when=asyncio.FIRST_EXCEPTION)
        for t in done:
            t.result()  # re-raise a task's error here, as gather would
    if pending:
        _, late = await asyncio.wait(pending, timeout=GRACE_S)
        for t in late:
            t.cancel()
        if late:
            log.warning("stopping: %d call(s) did not finish within %.0f s and were abandoned", len(late), GRACE_S)
        for t in pending:
            with contextlib.suppress(asyncio.CancelledError):
                await t
