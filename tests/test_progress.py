"""Progress bars (flows/cli/progress_bars.py RichListener over tasks.progress): every stage is shown while it
runs, and the display stays bounded however many stages a long sweep has."""

from __future__ import annotations

import io

from rich.console import Console
from rich.progress import Progress

from flows.cli.progress_bars import RichListener
from tasks import progress


def test_finished_stages_beyond_a_few_leave_the_display_and_running_ones_stay():
    bar = Progress(console=Console(file=io.StringIO()), auto_refresh=False)
    progress.set_listener(RichListener(bar, keep_finished=3))
    try:
        with progress.stage("generate", 10) as advance:  # stays running throughout
            advance(4)
            for i in range(50):
                with progress.stage(f"call batch {i}", 2) as step:
                    step(2)
            shown = {t.description: (t.completed, t.total) for t in bar.tasks}
    finally:
        progress.set_listener(None)
    assert shown == {"generate": (4, 10), "call batch 47": (2, 2), "call batch 48": (2, 2),
                     "call batch 49": (2, 2)}
    # after it finished, the long stage is among the last three finished
    assert [t.description for t in bar.tasks] == ["generate", "call batch 48", "call batch 49"]


def test_a_models_bar_counts_its_errors_and_shows_them_beside_its_rate():
    from flows.cli.progress_bars import RateColumn

    bar = Progress(console=Console(file=io.StringIO()), auto_refresh=False)
    progress.set_listener(RichListener(bar))
    try:
        with progress.stage("call fast", 10) as advance:
            advance(3)
            advance(1, errors=1)
            advance(1, errors=1)
            [task] = bar.tasks
            shown = RateColumn().render(task).plain
    finally:
        progress.set_listener(None)
    assert (task.completed, task.fields["errors"]) == (5, 2)
    assert shown.endswith("2 errors")
