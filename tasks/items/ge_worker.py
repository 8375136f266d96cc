"""The items' expectations, checked with Great Expectations in a worker process of their own.

Importing Great Expectations and making its context costs about 1.7 s of CPU (pydantic v1
copying the fields of some 320 expectation classes, SciPy for one of them): on a cold sweep's
critical path when done in the sweep's process. Run as ``python -m tasks.items.ge_worker``, this
module is instead the worker process of :func:`tasks.items.validate.validate_items`: started
as soon as a command knows it will validate (the sweep: while it imports Prefect and Prefect's
server boots), it imports Great Expectations at once, then answers requests read from stdin, one
pickle each: ``(batch_name, distinct_problems, columns)`` (the columns :data:`COLUMNS` names, as
lists, plus ``well_formed`` and, with ``distinct_problems``, ``families_per_prompt``, both
computed by the caller) gets ``("failed", [one description per failed expectation])`` or
``("error", what was raised)`` back on stdout. It imports nothing of the pipeline beyond that,
and defers what Great Expectations imports for expectations it never runs (SciPy's statistics:
the worker's start-up then costs about 1.45 s of CPU instead of 1.9).

A thread reads the requests: when stdin ends (the parent exited or died, even by SIGKILL, while
this process imports or validates) it ends the process at once.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import pickle
import queue
import signal
import sys
import threading
import traceback
from typing import Any, BinaryIO

# The item columns the expectations read (besides the two the caller computes).
COLUMNS = ("item_id", "gold", "prompt", "family_id", "key_entities", "bin_lo", "bin_hi", "answer_type")


@functools.lru_cache(maxsize=1)
def _context():
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    # GE draws progress bars per validation and logs usage hints; the pipeline reports itself.
    for name in [n for n in logging.root.manager.loggerDict if n.startswith("great_expectations")]:
        logging.getLogger(name).setLevel(logging.ERROR)
    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    return context


def _item_expectations(distinct_problems: bool) -> list[Any]:
    import great_expectations as gx

    from tasks.scoring.parse import ANSWER_TYPES

    E = gx.expectations
    expectations = [
        E.ExpectColumnValuesToBeUnique(column="item_id"),
        E.ExpectColumnValuesToNotBeNull(column="gold"),
        E.ExpectColumnValueLengthsToBeBetween(column="gold", min_value=1),
        E.ExpectColumnValuesToNotBeNull(column="prompt"),
        E.ExpectColumnValueLengthsToBeBetween(column="prompt", min_value=1),
        E.ExpectColumnValuesToNotBeNull(column="family_id"),
        E.ExpectColumnValuesToNotBeNull(column="key_entities"),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="key_entities", column_B="bin_lo", or_equal=True),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="bin_hi", column_B="key_entities", or_equal=True),
        E.ExpectColumnValuesToBeInSet(column="answer_type", value_set=sorted(ANSWER_TYPES)),
        E.ExpectColumnValuesToBeInSet(column="well_formed", value_set=[True]),
    ]
    if distinct_problems:
        expectations.append(E.ExpectColumnValuesToBeBetween(column="families_per_prompt", min_value=1, max_value=1))
    return expectations


def _describe(result: Any) -> str:
    cfg = result.expectation_config
    kwargs = {k: v for k, v in cfg.kwargs.items() if k not in ("batch_id", "result_format")}
    unexpected = (result.result or {}).get("unexpected_count")
    element = (result.result or {}).get("element_count")
    rows = f"{unexpected} of {element} rows" if unexpected is not None else "the items"
    return f"{cfg.type} {kwargs}: failed for {rows}"


def failures(columns: dict[str, list[Any]], batch_name: str, distinct_problems: bool) -> list[str]:
    """The expectations ``columns`` (a chunk's, by name: :data:`COLUMNS`, ``well_formed`` and,
    with ``distinct_problems``, ``families_per_prompt``) fail, one description each."""
    import great_expectations as gx
    import pandas as pd

    frame = pd.DataFrame(columns)
    context = _context()
    source = context.data_sources.add_or_update_pandas(f"invarbench_{batch_name}")
    try:
        asset = source.add_dataframe_asset(name=f"batch_{len(source.assets)}")
        batch = asset.add_batch_definition_whole_dataframe("whole").get_batch(batch_parameters={"dataframe": frame})
        suite = gx.ExpectationSuite(name=f"items_{batch_name}", expectations=_item_expectations(distinct_problems))
        result = batch.validate(suite, result_format="SUMMARY")
    finally:
        # The context lives as long as the process and each data source keeps its batches' frames:
        # about 2.5 MB a 1,000-item chunk, so 0.5 GB over a 200,000-item sweep, until it ended.
        context.data_sources.delete(source.name)
    return [_describe(r) for r in result.results if not r.success]


def defer_import(name: str) -> None:
    """Make module ``name`` (a submodule of an imported-on-demand package) import lazily: its code
    runs when one of its attributes is first read, not when a module imports it. Nothing when it
    is not installed or already imported."""
    if name in sys.modules:
        return
    parent, _, child = name.rpartition(".")
    spec = importlib.util.find_spec(name)  # imports the parent package
    if spec is None or spec.loader is None:
        return
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if parent:
        # Bound on the package now: ``from scipy import stats`` then finds it without the import
        # system, which reads the module's ``__spec__`` and so would run it at once (Python 3.11).
        setattr(sys.modules[parent], child, module)


# What Great Expectations imports without this worker's expectations ever running it: SciPy's
# statistics (0.4 s of the import's CPU), for two distribution expectations and their metrics.
_DEFERRED = ("scipy.stats",)


def _read(requests: BinaryIO, into: queue.Queue) -> None:
    # The parent holds the only writer of stdin: its end (exit, crash, SIGKILL) ends this process,
    # whatever the main thread is doing (importing Great Expectations takes seconds).
    while True:
        try:
            into.put(pickle.load(requests))
        except Exception:  # noqa: BLE001 - EOF, or a request cut short by the parent's death
            os._exit(0)


def _answer(request: tuple[str, bool, dict[str, list[Any]]], broken: str | None) -> tuple[str, Any]:
    if broken is not None:
        return "error", broken
    batch_name, distinct_problems, columns = request
    try:
        return "failed", failures(columns, batch_name, distinct_problems)
    except Exception:  # noqa: BLE001 - what Great Expectations raised is this request's answer
        return "error", traceback.format_exc(limit=-3)


def main() -> None:
    """The worker process: import Great Expectations, then answer requests until stdin ends."""
    from tasks.environment import pace_collector, settle_collector

    pace_collector()  # the import makes about 0.4 million objects that live as long as the process
    # Ctrl-C reaches the whole foreground process group; the parent decides when the worker stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The replies get a descriptor of their own, and fd 1 points at stderr: anything a library
    # prints on stdout then lands in the log instead of in the middle of a reply.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests: queue.Queue = queue.Queue()
    threading.Thread(target=_read, args=(sys.stdin.buffer, requests), daemon=True, name="requests").start()
    broken = None
    try:
        for name in _DEFERRED:
            defer_import(name)
        _context()
    except Exception:  # noqa: BLE001 - reported as the answer to each request
        broken = traceback.format_exc(limit=-3)
    settle_collector()
    while True:
        pickle.dump(_answer(requests.get(), broken), replies, protocol=pickle.HIGHEST_PROTOCOL)
        replies.flush()


if __name__ == "__main__":
    main()
