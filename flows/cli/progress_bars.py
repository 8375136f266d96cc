"""Progress bars on the terminal, fed by the stages through ``tasks.progress``."""

from __future__ import annotations

import collections
import contextlib
from typing import Iterator

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from flows.cli.application import err
from tasks import progress


class RichListener:
    """Progress bars on the terminal, one per stage; the stages running and the last few finished.

    rich rebuilds every bar it holds ten times a second, in a thread that holds the GIL while it
    does: a 200,000-item sweep has 600 per-chunk stages, and with every finished one kept, redrawing
    them grew to most of a core (0.6 s per redraw at 600 bars) and slowed each chunk more than the
    last. Finished bars beyond ``keep_finished`` are dropped.
    """

    def __init__(self, bar: Progress, keep_finished: int = 8):
        self.bar = bar
        self.keep_finished = keep_finished
        self.finished: collections.deque = collections.deque()

    def start(self, name: str, total: int) -> object:
        return self.bar.add_task(name, total=total, errors=0)

    def advance(self, handle: object, n: int, errors: int = 0) -> None:
        if errors:
            task = next(t for t in self.bar.tasks if t.id == handle)
            self.bar.update(handle, errors=task.fields.get("errors", 0) + errors)
        self.bar.advance(handle, n)

    def finish(self, handle: object) -> None:
        self.finished.append(handle)
        while len(self.finished) > self.keep_finished:
            self.bar.remove_task(self.finished.popleft())
        self.bar.refresh()


class RateColumn(ProgressColumn):
    """A running stage's units per second, and its errors when it has any (a model's calls)."""

    def render(self, task: Task) -> Text:
        rate = f"{task.speed:.1f}/s" if task.speed and not task.finished else ""
        errors = task.fields.get("errors", 0)
        return Text(f"{rate} {errors} errors".strip() if errors else rate)


@contextlib.contextmanager
def progress_bars() -> Iterator[None]:
    """Show the progress of long stages (tasks.progress) as bars on stderr while the block runs."""
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), RateColumn(),
                   TimeElapsedColumn(), TimeRemainingColumn(), console=err, transient=False)
    progress.set_listener(RichListener(bar))
    try:
        with bar:
            yield
    finally:
        progress.set_listener(None)
