"""Claims: leases in the lake on the requests a sweep is sending, so overlapping sweeps pay once.

Before sending its ledger misses, a sweep writes a ``claims`` row per request (its run id, when
it claimed, when the claim expires) and renews the claims of requests still unanswered every
third of the lease. Another sweep that finds a *live* claim (view ``live_claims``, table macro
``live_claims_of``: not expired, not yet answered by its run, and its run still ``running``) does
not send that request: it waits and reads the ledger again, and takes the request over only when
the claim stops being live without an ``ok`` answer (the claiming sweep died, failed, or got an
error).

Two sweeps may claim the same request at the same moment, each before seeing the other's row.
Both then wait ``claim_settle_s`` and read the claims again: the claim made first wins, ties go
to the lower run id, and both compute the same winner, so exactly one of them sends. The settle
pause must exceed the time a claim file takes to become visible to the other sweep (milliseconds
on a local disk; raise it for slow object stores).

A sweep alone on a local lake skips the pause (1 s of a cold sweep's start-up, idle): when the
read that follows its claims' commit finds no other run ``running``, no other sweep can claim
those requests at the same moment. A sweep claims only inside its run, after that run's
``running`` row is committed (flows.sweep_run.start_run; dispatched units inside their sweep's
run), and reads the claims only after that. So any other sweep's ``running`` row committed after
this read, and its first read of the claims, later still, sees this sweep's claims (a read sees
every commit that returned before it began) and leaves the requests to it. The argument needs
that visibility at once, which a local folder gives; on an object store (a ``s3://`` lake), where
a written file may take a while to read, and whenever another run is ``running``, the pause is
kept, counted from the claims' commit.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field
from typing import Sequence

from tasks.lake.lake import Lake
from tasks.lake.writes import write_rows
from tasks.models.call import USABLE_LEDGER_ROWS
from tasks.records import now_utc


@dataclass
class ClaimResult:
    """One claiming round: what this run may send, what another live sweep holds, what is answered."""

    mine: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)
    answered: list[str] = field(default_factory=list)


@dataclass
class Claims:
    """This run's claims on one lake."""

    lake: Lake
    run_id: str
    lease_s: float
    settle_s: float
    claimed_at: dict[str, dt.datetime] = field(default_factory=dict)

    @property
    def poll_s(self) -> float:
        """How often to look again at requests another sweep holds."""
        return max(0.2, min(5.0, self.lease_s / 10))

    def _state(self, ids: Sequence[str], ledger: bool = True,
               running: bool = True) -> tuple[set[str], dict[str, list[tuple[dt.datetime, str]]], bool]:
        """What the ledger answers of ``ids`` (nothing read when not ``ledger``), their live claims
        by request, and whether another run than this one is ``running`` (False, unread, when not
        ``running``: each table a query names costs its planning and catalog reads, the view
        ``runs`` about 12 ms). The live claims are ``live_claims_of`` (the view ``live_claims``' one
        definition) for ``ids`` at a time given as a value, so the read skips the responses older
        than the live claims."""
        answers = (f"SELECT 'ok' AS kind, request_id, NULL AS run_id, NULL AS claimed_at FROM ({USABLE_LEDGER_ROWS}) "
                   "UNION ALL" if ledger else "")
        others = ("UNION ALL (SELECT 'run', NULL, run_id, NULL FROM runs WHERE status = 'running' AND run_id <> $3 LIMIT 1)"
                  if running else "")
        rows = self.lake.read(f"""
            {answers}
            SELECT 'claim' AS kind, request_id, run_id, claimed_at FROM live_claims_of($1::VARCHAR[], $2::TIMESTAMPTZ)
            {others}""", [list(ids), now_utc(), *([self.run_id] if running else [])])
        answered = {r["request_id"] for r in rows if r["kind"] == "ok"}
        live: dict[str, list[tuple[dt.datetime, str]]] = {}
        for r in rows:
            if r["kind"] == "claim":
                live.setdefault(r["request_id"], []).append((r["claimed_at"], r["run_id"]))
        return answered, live, any(r["kind"] == "run" for r in rows)

    def _write(self, ids: Sequence[str]) -> None:
        now = now_utc()
        expires = now + dt.timedelta(seconds=self.lease_s)
        for rid in ids:
            self.claimed_at.setdefault(rid, now)
        write_rows(self.lake, "claims", [
            {"request_id": rid, "run_id": self.run_id, "claimed_at": self.claimed_at[rid], "expires_at": expires}
            for rid in ids])

    def claim(self, ids: Sequence[str], looked_up: bool = False) -> ClaimResult:
        """Claim what no live sweep holds; after the settle pause (none for a sweep alone on a local
        lake: the module's docstring) keep only the claims this run won.

        ``looked_up``: the caller found ``ids`` unanswered in the ledger just before (the stream's
        look-up of a chunk), so the first read here reads only the claims: a request answered
        since is claimed, then found answered by the read after the claims' commit, as when its
        answer lands a moment later; one held by another sweep is asked again at the next poll.
        That read of the ledger was a scan of every responses file for the chunk's requests."""
        out = ClaimResult()
        if not ids:
            return out
        answered, live, _ = self._state(ids, ledger=not looked_up, running=False)
        free = []
        for rid in ids:
            if rid in answered:
                out.answered.append(rid)
            elif rid in live and min(live[rid])[1] != self.run_id:  # another run's claim wins
                out.others.append(rid)
            else:
                free.append(rid)
        if not free:
            return out
        self._write(free)
        written = time.monotonic()
        answered, live, others_running = self._state(free)
        if others_running or self.lake.is_url:  # another sweep may be claiming them too: let its claims land
            time.sleep(max(0.0, self.settle_s - (time.monotonic() - written)))
            answered, live, _ = self._state(free, running=False)
        for rid in free:
            if rid in answered:  # answered by a sweep whose claim ended just before ours
                out.answered.append(rid)
            elif min(live.get(rid, [(dt.datetime.max.replace(tzinfo=dt.timezone.utc), "")]))[1] == self.run_id:
                out.mine.append(rid)
            else:
                out.others.append(rid)
        return out

    def renew(self, ids: Sequence[str]) -> None:
        """Extend this run's claims on ``ids`` by one lease from now."""
        if ids:
            self._write(list(ids))
