"""The life of a run in the ``runs`` table: started, alive, and how it ended.

A run appends a row at each change of state and the latest row (by ``updated_at``) is its state
(the ``runs`` view). :class:`Run` writes ``running`` when it starts, again every
:data:`HEARTBEAT_SECONDS` from a background thread while it works (the heartbeat), and
``completed``, ``failed`` (with a message) or ``cancelled`` (stopped on request: a signal or a
cancellation in Prefect, tasks.runs.stopping) at the end.

A process that is killed (SIGKILL, out of memory, power loss) writes nothing more, so its run
would read ``running`` for ever. A run of a kind that heartbeats has lost its process when its
latest row is ``running`` and either older than :data:`STALE_AFTER` (no heartbeat: true on any
machine) or written on this machine (same ``host``: host name, boot and process namespace) by a
process id that no longer exists (known at once, without waiting for the heartbeat to age).
:func:`list_runs` shows such a run as ``crashed``, and :func:`mark_stale_crashed` (called by every
sweep before it starts, and while a sweep waits for requests another run has claimed) appends a
``crashed`` row for it and marks its Prefect flow run Crashed if that is still Running.

Every kind of run (sweep, rescore, both imports) begins with :func:`begin` (a new id, this Prefect
flow run's id, the ``running`` row), runs its work inside ``with`` the :class:`Run` it returns and
ends with :func:`rebuild_catalog` (which refreshes the materialised views first), so they differ
only in their work.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import logging
import os
import socket
import sys
import threading
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any, Iterator, Sequence

import duckdb

from tasks.lake import ducklake
from tasks.lake.catalog import ensure_catalog, held_elsewhere
from tasks.lake.config import WarehouseSettings
from tasks.lake.engine import connect
from tasks.lake.lake import Lake
from tasks.lake.refresh import refresh
from tasks.lake.writes import write_rows
from tasks.records import canonical_json, now_utc
from tasks.runs import stopping

# A live run writes a heartbeat row this often...
HEARTBEAT_SECONDS = 60.0
# ...so one without a row for this long is gone (ten missed heartbeats: a loaded machine or a slow
# shared lake delays a write, never by minutes).
STALE_AFTER = dt.timedelta(minutes=10)
# Kinds of run that heartbeat; a run of another kind is never judged by its age.
HEARTBEAT_KINDS = ("sweep",)

log = logging.getLogger(__name__)


@functools.cache
def this_host() -> str:
    """This machine and process namespace: the host name, the kernel's boot id and the pid
    namespace. A process id means the same process only under one such key: containers share a
    kernel (and may share a host name) but not their pid namespace, and a reboot reuses ids."""
    def first(path: str) -> str:
        try:
            return Path(path).read_text(encoding="ascii").strip()
        except OSError:
            return ""

    try:
        pid_ns = str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        pid_ns = ""
    return f"{socket.gethostname()}/{first('/proc/sys/kernel/random/boot_id')}/{pid_ns}"


def process_gone(pid: int | None) -> bool:
    """True when no process ``pid`` exists on this machine (False when unsure)."""
    if not pid or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists but belongs to someone else
        return False
    return False


def new_run_id() -> str:
    """A new run id: UTC start time to the second, then 8 random hex digits (``20250101T120000-1a2b3c4d``),
    so ids sort by start and two runs started in one second differ."""
    return f"{now_utc():%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


def flow_run_id() -> str:
    """The id of the Prefect flow run this code runs in, or ``""`` outside one."""
    if "prefect" not in sys.modules:  # a sweep run without Prefect (flows.cli.sweep) imports none of it
        return ""
    from prefect.runtime import flow_run

    return str(flow_run.get_id() or "")


def rebuild_catalog(cfg: WarehouseSettings) -> Path:
    """Bring the materialised views up to date with what the run wrote (``tasks.lake.refresh``),
    then rebuild the catalog when it is not current; returns its path. Neither may fail the run,
    whose lake is complete: a refresh that fails leaves the views reading the raw lake (the same
    answers, slower) until the next one, and a catalog held open elsewhere (a user's DuckDB
    shell, another connection of this process) is left as it is."""
    with rebuilding_catalog(cfg) as catalog:
        pass
    return catalog


@contextlib.contextmanager
def rebuilding_catalog(cfg: WarehouseSettings) -> Iterator[Path]:
    """:func:`rebuild_catalog`, whose catalog is checked and rebuilt in a thread while the block
    runs: the refresh is done when the block starts (its reads see the views up to date), the
    catalog when it ends (its error raised there, unless the block raised one of its own).

    The catalog is DuckDB's work (binding every view of ``sql/``: 0.2 s of CPU on a new lake),
    which runs without the GIL beside the block's Python: a sweep's summary is read meanwhile.
    What the block may write does not change the catalog: its views and stamp depend on the
    tables the lake has, ``sql/`` and the materialised tables' sources (items, requests, parses,
    scores), none of which the end of a run writes (``runs``, the statistics)."""
    lake = Lake.of(cfg)
    # One DuckDB for both: the check reads the catalog's stamp beside the lake the refresh
    # attached, instead of opening the catalog and attaching the lake again (0.1-0.2 s of CPU).
    con = connect(limits=lake.limits)
    try:
        try:
            refresh(lake, con=con)
        except duckdb.Error as exc:
            log.warning("materialised views not refreshed (%s); invarbench refresh completes it", exc)
    except BaseException:
        con.close()
        raise
    failed: list[BaseException] = []
    worker = threading.Thread(target=_ensure_catalog, args=(cfg.catalog_path, lake, con, failed),
                              name="catalog", daemon=True)
    worker.start()
    try:
        yield cfg.catalog_path
    finally:
        worker.join()
    if failed:
        raise failed[0]


def _ensure_catalog(catalog: Path, lake: Lake, con: duckdb.DuckDBPyConnection, failed: list[BaseException]) -> None:
    """The catalog checked on ``con`` (closed here) and rebuilt when not current; an error other
    than the catalog being held elsewhere is put in ``failed``."""
    try:
        # Rebuilt only when its views would differ (a new table, another sql/, the materialised
        # tables' currency: tasks.lake.catalog): recreating every view costs more than checking.
        ensure_catalog(catalog, lake, con if ducklake.attached(con) else None)
    except duckdb.Error as exc:
        if held_elsewhere(exc):
            log.warning("catalog %s not rebuilt (%s); the lake is complete", catalog, exc)
        else:
            failed.append(exc)
    except BaseException as exc:  # noqa: BLE001 - raised in the run's thread, where it is handled
        failed.append(exc)
    finally:
        con.close()


class Run:
    """One run's rows in the ``runs`` table; use :meth:`start`, then :meth:`finish` or :meth:`fail`.

    ``counts`` (``n_items``, ``n_requests``, ...) given to any method are kept and repeated in
    every later row, heartbeats included. As a context manager (``with Run(...).start() as run:``)
    an exception ends the run ``failed`` with its message (``cancelled`` when a stop was requested),
    and a block that did not end the run ends it ``completed``.
    """

    def __init__(self, lake: Lake, run_id: str, kind: str, *, config: str, models: str, flow_run_id: str = "",
                 heartbeat_s: float = HEARTBEAT_SECONDS):
        self.lake, self.run_id, self.kind = lake, run_id, kind
        self.config, self.models, self.flow_run_id = config, models, flow_run_id
        self.heartbeat_s = heartbeat_s
        self.started_at: dt.datetime | None = None
        self.status: str | None = None
        self._counts: dict[str, Any] = {}
        # Serialises row writes, so that no heartbeat lands after the final row.
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _write(self, status: str, message: str | None = None, **counts: Any) -> None:
        self._counts.update(counts)
        self.status = status
        write_rows(self.lake, "runs", [{
            "run_id": self.run_id, "flow_run_id": self.flow_run_id, "kind": self.kind, "status": status,
            "started_at": self.started_at, "updated_at": now_utc(), "config": self.config,
            "models": self.models, "message": message, **self._counts,
            "host": this_host(), "pid": os.getpid(),
        }])

    def start(self, **counts: Any) -> "Run":
        """Write the ``running`` row and start the heartbeat thread."""
        with self._lock:
            self.started_at = now_utc()
            self._write("running", **counts)
        if self.kind in HEARTBEAT_KINDS:
            self._thread = threading.Thread(target=self._beat, daemon=True, name=f"heartbeat-{self.run_id}")
            self._thread.start()
        return self

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        # Without the failed row the run would read `running` until its heartbeat went stale.
        if exc is not None:
            self.end_with(exc)
        else:
            self.finish()  # nothing when the block already ended the run

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            try:
                self.heartbeat()
            except Exception:  # noqa: BLE001 - a missed heartbeat must not end the run; the next may land
                log.warning("run %s: heartbeat not written", self.run_id, exc_info=True)

    def count(self, **counts: Any) -> None:
        """Keep ``counts`` for every later row, the final one included, without writing a row now."""
        with self._lock:
            self._counts.update(counts)

    def heartbeat(self, **counts: Any) -> None:
        """Write a ``running`` row now (the background thread does this every ``heartbeat_s``)."""
        with self._lock:
            if self.status == "running":
                self._write("running", **counts)

    def finish(self, message: str | None = None, **counts: Any) -> None:
        """Write the ``completed`` row and stop the heartbeat."""
        self._end("completed", message, counts)

    def wait(self, message: str, **counts: Any) -> None:
        """Write the ``waiting`` row (requests left in provider batch jobs) and stop the heartbeat."""
        self._end("waiting", message, counts)

    def fail(self, message: str, **counts: Any) -> None:
        """Write the ``failed`` row with ``message`` (why) and stop the heartbeat."""
        self._end("failed", message[:2000], counts)

    def cancel(self, message: str, **counts: Any) -> None:
        """Write the ``cancelled`` row (stopped on request; ``message`` says by whom and what is
        left) and stop the heartbeat."""
        self._end("cancelled", message[:2000], counts)

    def end_with(self, exc: BaseException, **counts: Any) -> None:
        """End the run on ``exc``: ``cancelled`` when a stop was requested (the exception is how the
        work stopped), else ``failed`` with the exception as its message."""
        if stopping.requested():
            how = str(exc) if isinstance(exc, stopping.StopNow) else "stopped"
            self.cancel(f"{stopping.reason()}: {how}; the next sweep sends only what has no answer", **counts)
        else:
            self.fail(f"{type(exc).__name__}: {exc}", **counts)

    def _end(self, status: str, message: str | None, counts: dict[str, Any]) -> None:
        self._stop.set()
        with self._lock:
            if self.status == "running":
                self._write(status, message, **counts)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()


def begin(lake: Lake, kind: str, *, config: str, models: Sequence[str], run_id: str | None = None,
          **counts: Any) -> Run:
    """A new run of ``kind`` (id ``run_id``, else :func:`new_run_id`) in this Prefect flow run,
    started with ``counts``; ``config`` is its configuration as canonical JSON. Used as ``with
    begin(...) as run:``, the block's exception ends the run ``failed`` (``cancelled`` when a stop
    was requested) and a block that did not end it ends it ``completed``."""
    run = Run(lake, run_id or new_run_id(), kind, config=config, models=canonical_json(list(models)),
              flow_run_id=flow_run_id())
    return run.start(**counts)


def stale_runs(lake: Lake) -> list[dict[str, Any]]:
    """The runs whose latest row is ``running`` but whose process is gone: no heartbeat for
    STALE_AFTER, or started on this machine by a process that no longer exists."""
    kinds = ", ".join(f"'{k}'" for k in HEARTBEAT_KINDS)
    # SELECT *: lakes written before runs had host and pid columns have none to name
    running = lake.read(f"SELECT * FROM runs WHERE status = 'running' AND kind IN ({kinds}) ORDER BY started_at")
    cutoff = now_utc() - STALE_AFTER
    return [r for r in running
            if r["updated_at"] < cutoff or (r.get("host") == this_host() and process_gone(r.get("pid")))]


def list_runs(lake: Lake, limit: int) -> list[dict[str, Any]]:
    """The ``limit`` most recent runs for people: a run whose process is gone shows ``crashed``."""
    return lake.read("""
        WITH per_model AS (
            SELECT run_id, sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens,
                   sum(cost_usd) AS cost_usd,
                   string_agg(model || ': ' || coalesce(prompt_tokens + completion_tokens, 0) || ' tokens, '
                              || coalesce(printf('%.6f', cost_usd) || ' USD', 'cost unknown'), '; ' ORDER BY model)
                       AS cost_by_model
            FROM cost_by_run GROUP BY run_id)
        SELECT r.run_id, r.kind,
               CASE WHEN list_contains($crashed::VARCHAR[], r.run_id) THEN 'crashed' ELSE r.status END AS status,
               r.flow_run_id, r.models, r.n_items, r.n_requests, r.n_sent, r.n_cached, r.n_errors, c.prompt_tokens, c.completion_tokens, c.cost_usd, c.cost_by_model,
               strftime(r.started_at, '%Y-%m-%d %H:%M:%S') AS started_utc,
               strftime(r.updated_at, '%Y-%m-%d %H:%M:%S') AS updated_utc, r.message
        FROM runs r LEFT JOIN per_model c USING (run_id) ORDER BY r.started_at DESC LIMIT $limit""",
                {"crashed": [r["run_id"] for r in stale_runs(lake)], "limit": limit})


def mark_stale_crashed(lake: Lake) -> list[dict[str, Any]]:
    """Append a ``crashed`` row for every run whose process is gone (:func:`stale_runs`), and mark
    its Prefect flow run Crashed where the API knows it and it is still Running (best effort).
    Returns the crashed rows written."""
    rows = []
    for run in stale_runs(lake):
        if run["updated_at"] < now_utc() - STALE_AFTER:
            message = (f"no heartbeat since {run['updated_at']:%Y-%m-%d %H:%M:%S} UTC (more than "
                       f"{int(STALE_AFTER.total_seconds() // 60)} minutes): its process is gone")
        else:
            message = f"its process (pid {run['pid']} on this machine) is gone: killed or crashed"
        rows.append({**run, "status": "crashed", "updated_at": now_utc(), "message": message})
        if run["flow_run_id"]:
            mark_flow_run_crashed(run["flow_run_id"], f"invarbench run {run['run_id']}: {message}")
    write_rows(lake, "runs", rows)
    return rows


def mark_flow_run_crashed(flow_run_id: str, message: str) -> bool:
    """Set a Prefect flow run Crashed if it is still Running; False when not done (not found, no
    API, another state). Best effort: nothing here may stop the run that calls it."""
    from prefect.client.orchestration import get_client
    from prefect.states import Crashed

    try:
        with get_client(sync_client=True) as client:
            flow_run = client.read_flow_run(uuid.UUID(flow_run_id))
            if flow_run.state is None or not flow_run.state.is_running():
                return False
            result = client.set_flow_run_state(flow_run.id, Crashed(message=message))
            return result.state is not None and result.state.is_crashed()
    except Exception:  # noqa: BLE001 - an unknown id, another Prefect server, an API error
        log.info("flow run %s not marked crashed", flow_run_id, exc_info=True)
        return False
