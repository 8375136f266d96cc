"""What a SIGKILL in bench/chaos.py cut off, seen from both sides: the fault server's log of the
answers it had written before the kill, against what the killed sweep had taken in by then (the
answers in the spool segments it left, tasks/models/spool.py, and those committed to the lake).

An answer the server had written but the sweep had neither spooled nor stored was not in flight
at the server (its call had ended there) and yet never reached the sweep's code: it sat in the
socket or in the event loop's queue, not yet read and parsed, when the process died. The next
sweep pays for it again. An answer that was spooled or stored and still paid again would be a bug.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from fakes import last_user

from tasks.lake.lake import Lake
from tasks.models.spool import spool_dir

Request = tuple[str, str]  # (model, md5 of the prompt's last user message): one request of the chaos sweep


@dataclass
class Kill:
    """The sweep's side at a SIGKILL: its moment (``time.monotonic``), and the requests whose ok
    answer it had spooled or committed."""

    at: float
    taken_in: set[Request]


def request_of(body: dict) -> Request:
    """The request a call's body is, as :func:`after_kill` reads it from the lake (the model's
    configured name, which the server receives; the prompt's hash, which keeps the CLI's answer small)."""
    return body["model"], hashlib.md5(last_user(body).encode()).hexdigest()


def after_kill(lake_path: Path, at: float, sql) -> Kill:
    """Read what the sweep killed at ``at`` had taken in, before the next sweep replays its spool:
    its spool segments (every one left: the killed sweep's are the only ones) and the lake, queried
    through ``sql`` (the CLI: a query of the lake's views, returning rows as dicts)."""
    rows = sql("""SELECT DISTINCT q.request_id, q.model, md5(json_extract_string(q.messages, '$[#-1].content')) AS prompt,
                         r.request_id IS NOT NULL AS stored
                  FROM requests q LEFT JOIN (SELECT DISTINCT request_id FROM responses WHERE status = 'ok') r
                  USING (request_id)""")  # the chaos prompts are one user message each
    named = {r["request_id"]: (r["model"], r["prompt"]) for r in rows}
    taken = {named[r["request_id"]] for r in rows if r["stored"]}
    for segment in spool_dir(Lake(str(lake_path))).glob("*.jsonl"):
        for line in segment.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by the kill: never whole, so never taken in
            if row["status"] == "ok" and row["request_id"] in named:
                taken.add(named[row["request_id"]])
    return Kill(at, taken)


def explain(kill: Kill, answered: list[tuple[Request, float]], again: set[Request]) -> dict[str, float]:
    """The kill's figures: ``unread``, the answers the server had written before it (``answered``:
    each answer of the killed sweep and its moment) that the sweep had not taken in; how many of
    the requests ``again`` (first paid by the killed sweep, paid again later) were unread, were in
    flight at the server (answered after the kill), or had been taken in (a bug); the oldest unread
    answer's age at the kill (ms)."""
    before = {request: at for request, at in answered if at < kill.at}
    unread = set(before) - kill.taken_in
    return {"unread": len(unread), "again_unread": len(again & unread), "again_in_flight": len(again - set(before)),
            "again_taken_in": len(again & kill.taken_in),
            "oldest_unread_ms": round(max((kill.at - before[r] for r in unread), default=0) * 1000)}
