"""Progress of long stages, reported to whoever listens (the CLI's progress bars, Prefect artifacts).

Stages call ``stage(name, total)`` and advance the handle it yields; with no listener installed
this costs nothing. One listener at a time: the CLI installs a rich one, a Prefect deployment may
install one that updates a progress artifact.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterator, Protocol


class Listener(Protocol):
    def start(self, name: str, total: int) -> object: ...
    def advance(self, handle: object, n: int, errors: int = 0) -> None: ...
    def finish(self, handle: object) -> None: ...


_listener: Listener | None = None
_lock = threading.Lock()


def set_listener(listener: Listener | None) -> None:
    """Install (or remove, with None) the progress listener."""
    global _listener
    _listener = listener


@contextlib.contextmanager
def stage(name: str, total: int) -> Iterator[Callable[..., None]]:
    """Report a stage of ``total`` units; yields ``advance(n, errors=0)`` (``errors``: how many of
    those ``n`` units failed, shown beside the stage's rate)."""
    listener = _listener
    if listener is None:
        yield lambda n, errors=0: None
        return
    with _lock:
        handle = listener.start(name, total)

    def advance(n: int, errors: int = 0) -> None:
        if n or errors:
            with _lock:
                listener.advance(handle, n, errors)

    try:
        yield advance
    finally:
        with _lock:
            listener.finish(handle)
