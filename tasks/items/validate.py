"""The dedupe/validate stage: drop repeated problems, then check each chunk with Great Expectations.

Dedupe keeps one copy of identical items and, within a suite, one family per problem: a family
with a prompt that an earlier family already has (the same problem drawn twice, or stated alike
by two templates) is dropped whole, and the sweep says which. Variants of one family may share a
prompt (an imported family stating two representations alike, a random position that fell on
the fixed one); they stay, as they are one problem's variants.

A failing expectation raises :class:`ValidationFailed` before anything is written or any model
is called; its message lists each failed expectation and for how many rows it failed. Besides
the columns' own checks, validation fails on a prompt shared by two families of a suite (with
``distinct_problems``) and on a geometry item whose figure is degenerate.

Great Expectations runs in a worker process of its own (:mod:`tasks.items.ge_worker`, one per
process, started by :func:`prepare` or the first validation): its import, 1.7 s of CPU, is off
the caller's critical path, and the caller imports neither it nor pandas.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import pickle
import subprocess
import threading
from typing import Any, Mapping, Sequence

from tasks import worker_process
from tasks.items.ge_worker import COLUMNS


class ValidationFailed(RuntimeError):
    """One or more expectations failed on a set of items; the message says which and how many rows."""


def _family(row: dict[str, Any]) -> tuple[str, str, str]:
    return (row["suite"], row["task"], row["family_id"])


def dedupe(rows: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], int, list[dict[str, Any]]]:
    """Drop repeated items and repeated problems; returns (rows, identical items dropped,
    families dropped).

    An item whose ``item_id`` was already seen is identical content. Then, in order of first
    appearance, a family is kept only when none of its prompts belongs to a family kept before
    it in the same suite; otherwise the whole family is dropped and reported as a dict (suite,
    task, family_id, duplicate_of_task, duplicate_of_family, prompt).

    Dict rows (an export's) are decided as :func:`dedupe_table` decides a sweep's table, by the
    same code: the rows kept are the dicts given, in order.
    """
    import pyarrow as pa

    columns = pa.table({c: pa.array([r[c] for r in rows], pa.string()) for c in _DEDUPE_COLUMNS})
    kept, identical, dropped = _kept(columns)
    return [rows[i] for i in kept], identical, dropped


def dedupe_table(table: Any) -> tuple[Any, int, list[dict[str, Any]]]:
    """:func:`dedupe` of item rows held as an Arrow table (tasks.items.compact): the same rows
    kept, in the same order, and the table itself when none is dropped."""
    import pyarrow as pa

    kept, identical, dropped = _kept(table)
    if len(kept) == table.num_rows:
        return table, identical, dropped
    mask = [False] * table.num_rows
    for i in kept:
        mask[i] = True
    return table.filter(pa.array(mask)), identical, dropped  # filter keeps the table's slices


# The columns that decide what :func:`dedupe` keeps.
_DEDUPE_COLUMNS = ("item_id", "suite", "task", "family_id", "prompt")


def _kept(table: Any) -> tuple[list[int], int, list[dict[str, Any]]]:
    """What :func:`dedupe` keeps of ``table``'s rows: their positions, how many identical items
    were dropped, and the families dropped. Read a slice at a time, prompts held as hashes only;
    the few families that share a hash with another family of their suite are then decided by
    their prompts' texts (a family that shares no prompt with another is kept whatever the
    others do)."""
    import pyarrow as pa

    ids: list[str] = []
    families: list[tuple[str, str, str]] = []
    hashes: list[int] = []
    for batch in table.select(list(_DEDUPE_COLUMNS)).to_batches(max_chunksize=1_000):
        for item_id, suite, task, family_id, prompt in zip(*(c.to_pylist() for c in batch.columns)):
            ids.append(item_id)
            families.append((suite, task, family_id))
            hashes.append(hash((suite, prompt)))
    unique = _unique(ids)
    of_hash: dict[int, set[tuple[str, str, str]]] = {}
    for i in unique:
        of_hash.setdefault(hashes[i], set()).add(families[i])
    shared = {f for fams in of_hash.values() if len(fams) > 1 for f in fams}  # equal hash: maybe one prompt
    candidates = [i for i in unique if families[i] in shared]
    texts = table.column("prompt").take(pa.array(candidates, pa.int64())).to_pylist() if candidates else []
    dropped = _repeated_families(candidates, families, dict(zip(candidates, texts)))
    gone = {(d["suite"], d["task"], d["family_id"]) for d in dropped}
    return [i for i in unique if families[i] not in gone], len(ids) - len(unique), dropped


def dropped_family(d: dict[str, Any]) -> str:
    """What a sweep and an export say of a family :func:`dedupe` dropped (one of its dicts)."""
    return (f"dropped family {d['family_id']} of {d['suite']}.{d['task']}: it repeats a prompt of family "
            f"{d['duplicate_of_family']} of {d['suite']}.{d['duplicate_of_task']}")


def _unique(ids: Sequence[str]) -> list[int]:
    """The positions of the first row of each ``item_id``, in order."""
    seen: set[str] = set()
    unique = []
    for i, item_id in enumerate(ids):
        if item_id not in seen:
            seen.add(item_id)
            unique.append(i)
    return unique


def _repeated_families(rows: Sequence[int], families: Sequence[tuple[str, str, str]],
                       prompts: Mapping[int, str]) -> list[dict[str, Any]]:
    """The families of ``rows`` (positions into ``families`` and ``prompts``) that :func:`dedupe`
    drops, in order of first appearance."""
    texts_of: dict[tuple[str, str, str], list[str]] = {}
    for i in rows:
        texts_of.setdefault(families[i], []).append(prompts[i])
    owner: dict[tuple[str, str], tuple[str, str, str]] = {}
    dropped: list[dict[str, Any]] = []
    for family, texts in texts_of.items():
        clash = next((t for t in texts if owner.get((family[0], t), family) != family), None)
        if clash is not None:
            first = owner[(family[0], clash)]
            dropped.append({"suite": family[0], "task": family[1], "family_id": family[2],
                            "duplicate_of_task": first[1], "duplicate_of_family": first[2], "prompt": clash})
            continue
        for t in texts:
            owner[(family[0], t)] = family
    return dropped


@functools.lru_cache(maxsize=4096)
def _figure_problem(template: str, config: str) -> str | None:
    from tasks.suites.geometry import figure_problem

    return figure_problem(template, json.loads(config))


def well_formed(row: dict[str, Any]) -> bool:
    """False for a generated geometry item whose figure is degenerate (its ``params`` hold the
    template and configuration); True for every other item."""
    if row.get("suite") != "geometry":
        return True
    params = row.get("params")
    params = json.loads(params) if isinstance(params, str) else (params or {})
    if "template" not in params or "points" not in (params.get("config") or {}):
        return True  # imported families carry no figure to check
    return _figure_problem(params["template"], json.dumps(params["config"], sort_keys=True)) is None


def families_per_prompt(rows: Sequence[dict[str, Any]]) -> list[int]:
    """For each row, the number of families of its suite whose items have its prompt (1 when the
    problem is distinct)."""
    families: dict[tuple[str, str], set[tuple[str, str, str]]] = {}
    for row in rows:
        families.setdefault((row["suite"], row["prompt"]), set()).add(_family(row))
    return [len(families[(row["suite"], row["prompt"])]) for row in rows]



class ValidatorCrashed(ValidationFailed):
    """The items could not be checked: Great Expectations' worker process died, or raised; the
    message says which (nothing was written: the items count as not validated)."""


class _Validator:
    """This process's Great Expectations worker (:mod:`tasks.items.ge_worker`): started once, on
    :func:`prepare` or the first validation, and used by every validation after; a new one
    after it died, or after it was stopped for being idle (``idle_s``). One request at a time."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._owner = 0  # the process that started it: a forked child starts its own
        self._lock = threading.Lock()
        self.idle_s: float | None = None  # stop the worker once this long without a validation
        self._idle: threading.Timer | None = None
        self._served = 0  # validations answered: an idle stop checks none came since it was armed

    def start(self) -> subprocess.Popen[bytes]:
        """The worker, started now unless it runs already (caller holds the lock or is alone)."""
        if self._proc is None or self._owner != os.getpid():
            self._proc = worker_process.spawn("tasks.items.ge_worker")
            if not self._owner:  # an exit that skips it (SIGKILL, os._exit) ends the worker too: its stdin ends
                atexit.register(self.stop)
            self._owner = os.getpid()
        return self._proc

    def failures(self, columns: dict[str, list[Any]], batch_name: str, distinct_problems: bool) -> list[str]:
        """What the worker answers for one chunk's ``columns``: a description of each failed expectation."""
        with self._lock:
            proc = self.start()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                pickle.dump((batch_name, distinct_problems, columns), proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                proc.stdin.flush()
                kind, answer = pickle.load(proc.stdout)
            except (OSError, EOFError, pickle.UnpicklingError):  # the worker is gone, or went mid-reply
                raise ValidatorCrashed(f"{batch_name} was not checked: {self._died(proc)}") from None
            self._after_request()
        if kind == "error":
            raise ValidatorCrashed(f"{batch_name} was not checked: Great Expectations raised, in its worker "
                                   f"process (pid {proc.pid}):\n{answer}")
        return answer

    def _after_request(self) -> None:
        # Re-armed after each validation, so that it fires only after the last of a run of them.
        self._served += 1
        if self._idle is not None:
            self._idle.cancel()
        if self.idle_s is not None:
            self._idle = threading.Timer(self.idle_s, self._stop_if_idle, args=(self._served,))
            self._idle.daemon = True
            self._idle.start()

    def _stop_if_idle(self, served: int) -> None:
        with self._lock:  # not while a validation is in flight; none came since the timer was armed
            if served == self._served:
                self.stop()
                self.idle_s = None  # the next worker, if any, lives as long as the process

    def _died(self, proc: subprocess.Popen[bytes]) -> str:
        # Its pipes are closed, so it is exiting: wait for the status that names the cause.
        self._proc = None
        cause = worker_process.exit_cause(worker_process.stop(proc))
        return (f"the Great Expectations worker process (pid {proc.pid}) died with {cause}; "
                "the next validation starts another")

    def stop(self, proc: subprocess.Popen[bytes] | None = None) -> None:
        """Stop the worker (``proc``, else this process's): its stdin closed ends it; killed if it
        does not end in time."""
        if proc is None:
            proc, self._proc = self._proc, None
        if proc is not None:
            worker_process.stop(proc)


_validator = _Validator()


def expected_columns(rows: Sequence[dict[str, Any]], distinct_problems: bool) -> dict[str, list[Any]]:
    """What the expectations read of ``rows`` (:func:`tasks.items.ge_worker.failures`), by column:
    :data:`~tasks.items.ge_worker.COLUMNS`, whether each is :func:`well_formed` and, with
    ``distinct_problems``, its :func:`families_per_prompt`."""
    columns = {c: [r[c] for r in rows] for c in COLUMNS}
    columns["well_formed"] = [well_formed(r) for r in rows]
    if distinct_problems:
        columns["families_per_prompt"] = families_per_prompt(rows)
    return columns


def prepare(idle_s: float | None = None) -> None:
    """Start Great Expectations' worker process now, not at the first validation: it imports
    Great Expectations (about 1.7 s of CPU) on another core while this process goes on (a sweep
    imports Prefect while Prefect's temporary server boots). ``idle_s``: stop this worker (and
    free its memory, about 0.3 GB) once that many seconds pass after a validation without another
    (a later validation starts one that lives as long as the process); for a command that
    validates everything first, a sweep."""
    with _validator._lock:
        if idle_s is not None:
            _validator.idle_s = idle_s
        _validator.start()


def validate_items(rows: Sequence[dict[str, Any]], batch_name: str = "items", *,
                   distinct_problems: bool = False) -> int:
    """Check item rows (a sweep's chunk, an import); returns the row count, raises ValidationFailed on any failure.

    With ``distinct_problems`` (the sweep, after :func:`dedupe`) a prompt shared by two families
    of a suite fails the check; imports leave it off, as a published file is what it is. The
    expectations run in Great Expectations' worker process (:mod:`tasks.items.ge_worker`), sent
    only the columns they read; when it dies or raises, :class:`ValidatorCrashed` says so.
    """
    if not rows:
        return 0
    failed = _validator.failures(expected_columns(rows, distinct_problems), batch_name, distinct_problems)
    if failed:
        raise ValidationFailed(
            f"{len(failed)} expectation(s) failed on {batch_name} ({len(rows)} items):\n"
            + "\n".join(f"  - {d}" for d in failed)
        )
    return len(rows)
