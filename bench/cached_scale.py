"""Issue #26's figures of a sweep whose every answer is in the ledger, at scale: its wall and CPU
after start-up and its peak memory, this checkout beside another copy of the code (``--vs``).

    python bench/cached_scale.py --workdir DIR --items 200000 --fixed-items 3000 --repeats 3 --vs /path/to/main

Set-up, once per ``--workdir`` and size (kept, reused by later calls): a cold ``invarbench sweep``
of the five Lissard tasks (bench/common.py, ``lissard_suites``) on ``openai/bench`` at
bench/loopback.py with zero latency on ``--port`` (a request's id holds its ``api_base``, so every
later run uses the same port), then ``invarbench check``, which must pass. This checkout then
runs one unmeasured cached sweep at the path the measured runs use, so that its catalog is built
for that path, and the result is kept as their template.

Measured, ``--repeats`` rounds: per size and side in turn, the template copied to that path
(lake files as hard links: never changed once written) and ``invarbench sweep`` run on it. One JSON
line per run: wall, CPU (user + system), peak RSS (the sweep's process, as ``/usr/bin/time -v``),
requests the sweep sent and those the loopback server saw (both must be 0) and the load average at
its start; then the medians,
and "after start-up": the wall of ``--items`` minus that of ``--fixed-items`` of the same side and
round (the start-up and fixed work of a cached sweep, as measured at that size). With ``--items``
equal to ``--fixed-items`` that one size alone is measured: issue #26's "3,000-request sweep, all
answers in the ledger, start to exit" is ``--items 3000 --fixed-items 3000``.

A sweep whose earlier completed run of the same plan (configuration and code: tasks/runs/plan.py)
is in the lake is recorded from it (flows/known_sweep.py); the template's warm-up sweep is that
run for the measured ones when it was made by this checkout's code. After a change of code under
``tasks/``, ``flows/`` or ``sql/``, delete ``items-N/runs/ready`` to have the template made again,
or the measured runs take the ordinary cached path.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, cli, run, stop_on_sigterm, sweep_config  # noqa: E402
from bench.figures import Loopback, _link_parquet  # noqa: E402


def model(port: int) -> dict[str, Any]:
    """The model every sweep of this benchmark calls (its route is part of every request id)."""
    return {"model": "openai/bench", "api_base": f"http://127.0.0.1:{port}/v1", "concurrency": 64, "retries": 0}


def server_on(port: int) -> contextlib.AbstractContextManager[Loopback]:
    """bench/loopback.py at zero latency on ``port``: the one already serving there, else a new one."""
    running = Loopback.__new__(Loopback)
    running.port = port
    try:
        running.stats()
    except OSError:
        return Loopback(0.0, port)
    return contextlib.nullcontext(running)


def set_up(workdir: Path, n: int, port: int) -> Path:
    """The answered warehouse of ``n`` items (made once: a cold sweep, then ``invarbench check``)."""
    base = workdir / f"items-{n}"
    wh = base / "wh"
    if (base / "ready").exists():
        return wh
    shutil.rmtree(base, ignore_errors=True)
    config = sweep_config(base / "bench.toml", wh, n, model(port))
    cold = run(cli("sweep", "--config", str(config)), base, timeout=4 * 3600).check(f"cold sweep of {n} items")
    run(cli("check", "--config", str(config)), base).check(f"invarbench check of {n} items")
    (base / "ready").write_text(json.dumps({"cold_wall_s": cold.seconds, "cold_cpu_s": cold.cpu_s}))
    return wh


def copy_warehouse(src: Path, dst: Path) -> None:
    """``dst`` replaced by a copy of warehouse ``src``: its catalog file too, lake files hard-linked."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, copy_function=_link_parquet)


def template(workdir: Path, src: Path, n: int, port: int) -> Path:
    """The ``n``-item warehouse as every measured run starts from it: a copy at the path the runs
    use, after one cached sweep of this checkout there (so its catalog is built for that path;
    made once). Both sides start from it: their catalogs are alike while their sql/ is."""
    base = workdir / f"items-{n}" / "runs"
    if (base / "ready").exists():
        return base / "template"
    copy_warehouse(src, base / "wh")
    config = sweep_config(base / "bench.toml", base / "wh", n, model(port))
    run(cli("sweep", "--config", str(config)), base).check(f"warm-up at {n} items")
    copy_warehouse(base / "wh", base / "template")
    (base / "ready").write_text("")
    return base / "template"


def measure(workdir: Path, side: str, code: Path, n: int, server: Loopback, prefix: list[str]) -> dict[str, Any]:
    """One cached sweep of side ``side`` (its code at ``code``) on a fresh copy of the template."""
    base = workdir / f"items-{n}" / "runs"
    copy_warehouse(base / "template", base / "wh")
    load = os.getloadavg()[0]
    before = server.stats()["served"]
    r = run([*prefix, *cli("sweep", "--config", str(base / "bench.toml"))], base, cwd=code,
            extra_env={"PYTHONPATH": str(code)}).check(f"cached sweep of {side} at {n} items")
    counts = re.search(r"(\d+) requests: (\d+) sent, (\d+) from the ledger", r.stdout)
    return {"side": side, "items": n, "wall_s": round(r.seconds, 2), "cpu_s": round(r.cpu_s, 2),
            "peak_rss_mb": round(r.max_rss_mb), "load": load,
            # what the sweep says it sent, and what the server saw meanwhile (anything else using it counts too)
            "sent": int(counts[2]) if counts else None, "server_saw": server.stats()["served"] - before}


def summary(runs: list[dict[str, Any]], sides: list[str], big: int, fixed: int) -> list[dict[str, Any]]:
    """Per side: medians at each size, and after start-up (big − fixed, round by round)."""
    out = []
    for side in sides:
        at = {n: [r for r in runs if r["side"] == side and r["items"] == n] for n in (fixed, big)}
        for n, done in at.items():
            out.append({"side": side, "items": n, "walls": [r["wall_s"] for r in done],
                        "cpus": [r["cpu_s"] for r in done], "loads": [r["load"] for r in done],
                        **{k: statistics.median(r[k] for r in done) for k in ("wall_s", "cpu_s", "peak_rss_mb")}})
        for key in ("wall_s", "cpu_s") if big != fixed else ():  # one size: its start-to-exit figures only
            after = [b[key] - f[key] for b, f in zip(at[big], at[fixed])]
            out.append({"side": side, f"after_start_up_{key}": statistics.median(after), "runs": after})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--fixed-items", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--port", type=int, default=45209)
    parser.add_argument("--vs", type=Path, help="another copy of the code, measured in turn with this one")
    parser.add_argument("--profile", type=Path, help="also one run of this checkout at --items under py-spy, "
                                                     "raw output to this file (PY_SPY: the py-spy binary)")
    args = parser.parse_args()
    stop_on_sigterm()
    args.workdir.mkdir(parents=True, exist_ok=True)
    sides = {"this": ROOT, **({"vs": args.vs.resolve()} if args.vs else {})}
    with server_on(args.port) as server:
        sizes = list(dict.fromkeys((args.fixed_items, args.items)))  # --items = --fixed-items: that size alone
        for n in sizes:
            template(args.workdir, set_up(args.workdir, n, args.port), n, args.port)
        runs = []
        for _ in range(args.repeats):
            for n in sizes:
                for side, code in sides.items():
                    runs.append(measure(args.workdir, side, code, n, server, []))
                    print(json.dumps(runs[-1]), flush=True)
        for line in summary(runs, list(sides), args.items, args.fixed_items) if runs else []:
            print(json.dumps(line), flush=True)
        if args.profile:
            spy = [os.environ.get("PY_SPY", "py-spy"), "record", "--rate", "50", "--nonblocking", "--format", "raw",
                   "-o", str(args.profile), "--"]
            print(json.dumps({"profile": str(args.profile),
                              **measure(args.workdir, "this", ROOT, args.items, server, spy)}), flush=True)


if __name__ == "__main__":
    main()
