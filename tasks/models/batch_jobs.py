"""Provider batch jobs: a call stage's ledger misses as one job of the OpenAI files/batches API.

For a model with ``batch = true`` the requests this run claimed go out as one JSONL file
(``custom_id`` = request id, the same body a direct call sends) through ``litellm.acreate_file``
and ``litellm.acreate_batch``. The job id is written to the lake (``batch_jobs``) right after
the job is created and before any waiting, so a crash or a restart polls that job again instead
of paying for a second one: a call stage first looks up the open jobs that hold its requests.
Jobs are polled (``litellm.aretrieve_batch``) with a delay that starts at ``batch_poll_s`` and
doubles up to ten minutes, until the run's ``batch_max_wait_h`` (counted from the run's start)
has passed. A finished job's output and error files (``litellm.afile_content``) become response
rows exactly like a direct call's: ``ok`` with the text and tokens, or ``error`` with the
provider's message; a request the job returned no line for, and every request of a failed or
expired job, gets an ``error`` row, which the next sweep sends again. Each state a job passes
through is a row in the lake and a Prefect artifact (key ``batch-job-<id>``).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from tasks.lake.lake import Lake
from tasks.lake.writes import write_rows
from tasks.models.call import lookup_ledger
from tasks.models.cost import Budget, estimate_cost
from tasks.models.pricing import price
from tasks.models.routes import Caller
from tasks.records import Request, Response, now_utc
from tasks.runs import stopping

TERMINAL = {"completed", "failed", "expired", "cancelled"}
STORED = "stored"  # our own final state: the job's lines are in the ledger
MAX_POLL_S = 600.0


@dataclass
class BatchResult:
    """What the batch path did for one call stage."""

    responses: list[Response] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)  # request ids in jobs still running
    jobs: int = 0  # jobs submitted by this stage


def _provider_kwargs(caller: Caller) -> dict[str, Any]:
    return {"custom_llm_provider": "openai", **caller.server(caller.api_key())}


def jsonl(caller: Caller, requests: Sequence[Request]) -> bytes:
    """The batch input file: one chat-completions request per line, ``custom_id`` = request id."""
    lines = [json.dumps({"custom_id": r.request_id, "method": "POST", "url": "/v1/chat/completions",
                         "body": caller.body(r)}, ensure_ascii=False) for r in requests]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _job_row(caller: Caller, job: Any, request_ids: Sequence[str], status: str | None = None,
             message: str = "") -> dict[str, Any]:
    return {
        "batch_id": job.id, "run_id": caller.run_id, "model": caller.name, "api_base": caller.cfg.api_base,
        "request_ids": list(request_ids), "input_file_id": getattr(job, "input_file_id", None),
        "status": status or job.status, "output_file_id": getattr(job, "output_file_id", None),
        "error_file_id": getattr(job, "error_file_id", None), "message": message, "updated_at": now_utc(),
    }


async def _artifact(row: dict[str, Any]) -> None:
    from prefect.artifacts import acreate_markdown_artifact

    key = "batch-job-" + re.sub(r"[^a-z0-9-]+", "-", row["batch_id"].lower()).strip("-")
    await acreate_markdown_artifact(
        key=key[:100],
        markdown=(f"# Batch job `{row['batch_id']}`\n\n| model | status | requests | run | updated (UTC) |\n"
                  f"|---|---|---|---|---|\n| {row['model']} | **{row['status']}** | {len(row['request_ids'])} | "
                  f"{row['run_id']} | {row['updated_at']:%Y-%m-%d %H:%M:%S} |\n\n{row['message']}\n"),
        description=f"invarbench batch job {row['batch_id']}: {row['status']}")


async def record(lake: Lake, row: dict[str, Any]) -> None:
    """Write one state of a job to the lake, then show it as a Prefect artifact."""
    write_rows(lake, "batch_jobs", [row])
    await _artifact(row)


def open_jobs(lake: Lake, model: str, api_base: str, request_ids: Sequence[str]) -> list[dict[str, Any]]:
    """Jobs of this model and server, not yet stored, that hold any of ``request_ids``."""
    if not request_ids:
        return []
    return lake.read("""
        SELECT * FROM batch_jobs
        WHERE model = ? AND coalesce(api_base, '') = ? AND status <> ?
          AND list_has_any(request_ids, ?::VARCHAR[])
        ORDER BY updated_at""", [model, api_base, STORED, list(request_ids)])


def run_started(lake: Lake, run_id: str) -> dt.datetime:
    """When the run started (now when it has no row, e.g. a call stage run on its own)."""
    rows = lake.read("SELECT started_at FROM runs WHERE run_id = ?", [run_id])
    return rows[0]["started_at"] if rows and rows[0]["started_at"] else now_utc()


async def _content(caller: Caller, file_id: str | None) -> list[dict[str, Any]]:
    from tasks.models.llm import litellm

    if not file_id:
        return []
    got = await litellm.afile_content(file_id=file_id, **_provider_kwargs(caller))
    return [json.loads(line) for line in got.content.decode("utf-8").splitlines() if line.strip()]


def _line_response(caller: Caller, line: dict[str, Any], latency_s: float) -> Response:
    rid = line["custom_id"]
    resp = line.get("response") or {}
    body = resp.get("body") or {}
    if resp.get("status_code") == 200 and not line.get("error"):
        try:
            choice = body["choices"][0]
            text = choice["message"]["content"]
        except (KeyError, IndexError, TypeError):
            text = None
        if text is not None:
            usage = body.get("usage") or {}
            return caller.response(rid, "ok", text, None, 1, latency_s, usage.get("prompt_tokens"),
                                   usage.get("completion_tokens"), price(caller.cfg, batch=True),
                                   choice.get("finish_reason"))
    error = line.get("error") or body.get("error") or {"message": "the line has no message content"}
    message = error.get("message", json.dumps(error)) if isinstance(error, dict) else str(error)
    return caller.response(rid, "error", None, f"batch line (HTTP {resp.get('status_code')}): {message}"[:2000],
                           1, latency_s, None, None, None)


async def collect(caller: Caller, lake: Lake, job: Any, request_ids: Sequence[str]) -> list[Response]:
    """Turn a finished job into response rows (one per request of the job) and store them."""
    created = getattr(job, "created_at", None)
    latency = max(0.0, time.time() - created) if isinstance(created, (int, float)) else 0.0
    answered = lookup_ledger(lake, request_ids)  # a collection interrupted after its responses were stored
    lines = {}
    if job.status != "failed":
        for line in await _content(caller, job.output_file_id) + await _content(caller, job.error_file_id):
            lines.setdefault(line.get("custom_id"), line)
    if job.status == "failed":
        errors = getattr(getattr(job, "errors", None), "data", None) or []
        why = "; ".join(getattr(e, "message", str(e)) or "" for e in errors) or "no reason given"
        missing = f"batch job {job.id} failed: {why}"
    else:
        missing = f"batch job {job.id} ended {job.status} without a line for this request"
    out = []
    for rid in request_ids:
        if rid in answered:
            continue
        if rid in lines:
            out.append(_line_response(caller, lines[rid], latency))
        else:
            out.append(caller.response(rid, "error", None, missing[:2000], 1, latency, None, None, None))
    write_rows(lake, "responses", [r.row() for r in out])
    return out


async def _submit(caller: Caller, lake: Lake, requests: Sequence[Request]) -> dict[str, Any]:
    from tasks.models.llm import litellm

    kwargs = _provider_kwargs(caller)
    upload = await litellm.acreate_file(file=(f"invarbench-{caller.run_id}.jsonl", jsonl(caller, requests)),
                                        purpose="batch", **kwargs)
    job = await litellm.acreate_batch(completion_window="24h", endpoint="/v1/chat/completions",
                                      input_file_id=upload.id, metadata={"invarbench_run": caller.run_id}, **kwargs)
    row = _job_row(caller, job, [r.request_id for r in requests], message="submitted")
    await record(lake, row)  # before any waiting: a restart finds this job instead of paying again
    return row


async def run_batch(caller: Caller, lake: Lake, requests: Sequence[Request], budget: Budget) -> BatchResult:
    """Answer ``requests`` through batch jobs: collect open ones, submit the rest, wait up to the deadline."""
    from tasks.models.llm import litellm

    result = BatchResult()
    ids = [r.request_id for r in requests]
    jobs = {j["batch_id"]: j for j in open_jobs(lake, caller.name, caller.cfg.api_base, ids)}
    covered = {rid for j in jobs.values() for rid in j["request_ids"]}
    fresh = []
    estimates: dict[str, float] = {}
    batch_price = price(caller.cfg, batch=True)
    for r in requests:
        if r.request_id in covered:
            continue
        estimate = estimate_cost(batch_price, caller.messages(r), caller.cfg.max_tokens)
        if not budget.reserve(estimate):
            break
        estimates[r.request_id] = estimate
        fresh.append(r)
    if fresh:
        row = await _submit(caller, lake, fresh)
        jobs[row["batch_id"]] = row
        result.jobs += 1
    deadline = run_started(lake, caller.run_id) + dt.timedelta(hours=caller.cfg.batch_max_wait_h)
    delay = caller.cfg.batch_poll_s
    kwargs = _provider_kwargs(caller)
    first = True
    # A stopped sweep leaves its jobs to the provider: the next sweep collects them.
    while jobs and not stopping.requested():
        if not first:
            left = (deadline - now_utc()).total_seconds()
            if left <= 0:
                break
            await stopping.sleep(min(delay, left))
            delay = min(delay * 2, MAX_POLL_S)
        first = False
        for batch_id, row in list(jobs.items()):
            job = await litellm.aretrieve_batch(batch_id=batch_id, **kwargs)
            if job.status != row["status"]:
                row = _job_row(caller, job, row["request_ids"], message=f"polled by run {caller.run_id}")
                await record(lake, row)
                jobs[batch_id] = row
            if job.status in TERMINAL:
                got = await collect(caller, lake, job, row["request_ids"])
                for resp in got:
                    if resp.request_id in estimates:
                        budget.settle(estimates.pop(resp.request_id), resp.cost_usd if resp.status == "ok" else 0.0)
                result.responses.extend(got)
                await record(lake, {**row, "status": STORED, "updated_at": now_utc(),
                              "message": f"{len(got)} response(s) stored by run {caller.run_id} (job {job.status})"})
                del jobs[batch_id]
    result.waiting = [rid for j in jobs.values() for rid in j["request_ids"]]
    return result
