"""A sweep's plan key, and the earlier run a sweep of the same plan can be recorded from.

A sweep's items and requests follow from a few keys of its configuration (the selected tasks with
their parameters and order, the seed, the samples, each model's route and sampling) and from the
code that generates and asks (generators, prompt templates, the request and trial hashes, the
ledger's rule, the parsers a chain's later step is built from). :func:`plan_key` hashes both: the
code as a digest of every source file of the package (``tasks/``, ``flows/``, ``sql/``) and its
version, so any change of code gives another key. Broader than what strictly matters, on purpose:
a key that missed a module would record a run from rows the current code would not make; a key
that changes too often only costs one ordinary sweep.

A **template** is the latest run of the same key that can stand for what a sweep would record now
(:func:`find_template`): a ``sweep`` that ended ``completed`` (not running, waiting, failed,
cancelled or crashed: those may lack requests) whose request rows are all still there (as many
as it counted), each answered (``ok``) in the ledger now by a response the template itself saw
(its own, or one made before it started), so that each later step of a chain it recorded is the
one built from that answer (:data:`TEMPLATE_GAPS`). :func:`record_requests` then records a new run's requests from the
template's in one set-based INSERT … SELECT. Runs written before plan keys existed have none, and
a sweep of stored datasets (whose membership may grow) records none.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import importlib.metadata
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tasks.config import Config
from tasks.lake.engine import sql_literal
from tasks.lake.lake import Lake
from tasks.lake.schemas import SCHEMAS
from tasks.models.routes import route_for
from tasks.records import canonical_json, content_hash

# The package's source trees: what the code digest covers.
ROOT = Path(__file__).resolve().parents[2]
CODE_TREES = ("tasks", "flows", "sql")
CODE_SUFFIXES = (".py", ".sql", ".json")


def code_digest(root: Path = ROOT) -> str:
    """sha256 over the path and bytes of every source file under ``root``'s :data:`CODE_TREES`."""
    digest = hashlib.sha256()
    for tree in CODE_TREES:
        for path in sorted((root / tree).rglob("*")):
            if path.suffix in CODE_SUFFIXES and "__pycache__" not in path.parts and path.is_file():
                digest.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def this_code() -> str:
    """The digest of this process's code (:func:`code_digest`) and the package version."""
    try:
        version = importlib.metadata.version("invarbench")
    except importlib.metadata.PackageNotFoundError:
        version = ""
    return f"{version}+{code_digest()}"


def plan_key(cfg: Config, code: str | None = None) -> str | None:
    """The key of what ``cfg``'s sweep generates and asks, with ``code`` (default: :func:`this_code`);
    None for a sweep of stored datasets."""
    if cfg.sweep.datasets:
        return None
    models = {m: {"route": asdict(route_for(cfg.model(m))), "sampling": cfg.model(m).sampling()}
              for m in cfg.sweep.models}
    return content_hash({
        "code": this_code() if code is None else code, "seed": cfg.sweep.seed, "samples": cfg.sweep.samples,
        "tasks": [[suite, task, cfg.task_params(suite, task)] for suite, task in cfg.selected_tasks()],
        "models": models,
    }, length=0)


@dataclass(frozen=True)
class Template:
    """An earlier run a sweep can be recorded from: its id, start, plan key, items and the
    families its items dropped (JSON)."""

    run_id: str
    started_at: dt.datetime
    plan_key: str
    n_items: int
    dropped_families: str

    @property
    def dropped(self) -> list[dict[str, Any]]:
        """The families dropped for repeating a prompt of another (the run summary lists them)."""
        return json.loads(self.dropped_families)


# The template's request rows, and those the ledger does not answer as they were answered for it:
# no ok response now, or an ok response it did not see (neither its own nor made before it
# started): a chain's later step is built from the earlier one's answer, and each trial was
# parsed and scored over the answers it saw.
TEMPLATE_GAPS = """
    SELECT (SELECT count(*) FROM run_requests WHERE run_id = $run_id) AS recorded, count(*) AS gaps
    FROM (SELECT DISTINCT request_id FROM run_requests WHERE run_id = $run_id) t
    LEFT JOIN ledger l USING (request_id)
    WHERE l.status IS DISTINCT FROM 'ok' OR (l.run_id IS DISTINCT FROM $run_id AND l.created_at >= $started_at)"""


def find_template(lake: Lake, key: str | None) -> Template | None:
    """The latest completed sweep of plan ``key`` whose request rows are all there (as many as it
    counted: none set aside since, ``tasks.lake.quarantine``) and answered in the ledger as it saw
    them (:data:`TEMPLATE_GAPS`); None when there is none (the sweep then takes its ordinary path)."""
    if key is None:
        return None
    found = lake.read("SELECT run_id, started_at, plan_key, n_items, n_requests, "
                      "coalesce(dropped_families, '[]') AS dropped_families "
                      "FROM runs WHERE plan_key = $key AND kind = 'sweep' AND status = 'completed' "
                      "ORDER BY started_at DESC LIMIT 1", {"key": key})
    if not found:
        return None
    n_requests = found[0].pop("n_requests")
    template = Template(**found[0])
    check = lake.read(TEMPLATE_GAPS, {"run_id": template.run_id, "started_at": template.started_at})[0]
    return template if check["gaps"] == 0 and check["recorded"] == n_requests else None


def record_requests(lake: Lake, template: Template, run_id: str, created_at: dt.datetime) -> None:
    """Record the template's requests as run ``run_id``'s (one commit, INSERT … SELECT in DuckDB)."""
    columns = [name for name in SCHEMAS["requests"].names if name not in ("run_id", "created_at")]
    lake.commit_select("requests", f"""
        SELECT {sql_literal(run_id)} AS run_id, {', '.join(columns)},
               {sql_literal(created_at.isoformat())}::TIMESTAMPTZ AS created_at
        FROM run_requests WHERE run_id = {sql_literal(template.run_id)}""", run_id)


def plan_columns(key: str | None, dropped_families: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``runs`` columns a sweep's plan is stored in (kept on every row of its run)."""
    return {"plan_key": key, "dropped_families": canonical_json(dropped_families)}
