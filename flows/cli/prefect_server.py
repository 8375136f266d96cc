"""Prefect's temporary API server, started early by the commands that run a flow."""

from __future__ import annotations

import threading
from typing import Callable

from tasks.runs import stopping


def start_prefect_server() -> Callable[[], None]:
    """Start Prefect's temporary API server now, in the background, when a flow would start one
    (no ``PREFECT_API_URL``); returns a function that waits until it is up (a no-op otherwise),
    or raises ``Stopped`` once a stop is requested.

    The server is a separate process that takes seconds to boot, and a flow starts it only when
    it runs, then waits: started first, it boots while this process imports the flow's modules.
    Prefect keeps one such server per process, so the flow then finds it running. A failed start
    is not reported here: the flow starts the server again and reports it.
    """
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return lambda: None
    # Created here, not in the thread: two threads importing overlapping modules can deadlock.
    server = stopping.ephemeral_server()

    up = threading.Event()

    def start() -> None:
        try:
            server.start()
        except Exception:  # noqa: BLE001 - the flow's own start raises it again, with Prefect's message
            pass
        up.set()
        # The server dies with the thread that started it (stopping.ephemeral_server): this one
        # lives as long as the process, so a SIGKILLed sweep takes its server with it.
        threading.Event().wait()

    def wait() -> None:
        while not up.wait(0.1):
            stopping.raise_if_requested()  # a stop while the server boots ends the wait at once

    thread = threading.Thread(target=start, name="prefect-server-start", daemon=True)
    thread.start()
    return wait
