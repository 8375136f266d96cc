"""Issue #26's cold sweep, this checkout beside another copy of the code: figure 1's sweep (3,000
Lissard requests, bench/loopback.py at 50 ms, concurrency 64) run from each copy in turn.

    python bench/cold_pairs.py --workdir DIR --pairs 4 --vs /path/to/main

Each run on a fresh warehouse, each side with a Prefect home of its own kept between its runs (the
first pair is its warm-up: count from the second). One JSON line per run: wall and CPU (the sweep's
process and the Prefect server it waited for), start-up (launch to the server's first request),
calls (first request to last answer) and tail (last answer to exit) as figure 1 takes them, peak RSS
of the sweep's process, the load average at its start; then per measure the medians and the paired
ratios (this / vs) over the pairs after the first.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, cli, run, stop_on_sigterm, sweep_config  # noqa: E402
from bench.figures import CONCURRENCY, SERVER_LATENCY_S, Loopback  # noqa: E402

REQUESTS = 3000
MEASURES = ("cpu_s", "wall_s", "startup_s", "calls_s", "tail_s", "peak_rss_mb")


def one_run(workdir: Path, side: str, code: Path, server: Loopback) -> dict:
    """One cold sweep of ``side`` (its code at ``code``) on a fresh warehouse."""
    wh = workdir / f"wh-{side}"
    shutil.rmtree(wh, ignore_errors=True)
    model = {"model": "openai/bench", "api_base": server.api_base, "concurrency": CONCURRENCY,
             "timeout_s": 120.0, "retries": 0}
    config = sweep_config(workdir / f"bench-{side}.toml", wh, REQUESTS, model)
    server.reset()
    load = os.getloadavg()[0]
    launched = time.time()
    r = run(cli("sweep", "--config", str(config)), workdir, cwd=code,
            extra_env={"PYTHONPATH": str(code), "PREFECT_HOME": str(workdir / f"prefect-{side}")}).check(side)
    ended = time.time()
    s = server.stats()
    sent = re.search(r"requests: (\d+) sent", r.stdout)
    return {"side": side, "load": round(load, 2), "wall_s": round(r.seconds, 2), "cpu_s": round(r.cpu_s, 2),
            "startup_s": round(s["first_arrival"] - launched, 2), "calls_s": round(s["last_done"] - s["first_arrival"], 2),
            "tail_s": round(ended - s["last_done"], 2), "peak_rss_mb": round(r.max_rss_mb),
            "sent": int(sent[1]) if sent else None, "server_saw": s["served"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--vs", type=Path, required=True, help="the other copy of the code")
    args = parser.parse_args()
    stop_on_sigterm()
    args.workdir.mkdir(parents=True, exist_ok=True)
    runs: list[dict] = []
    with Loopback(SERVER_LATENCY_S) as server:
        for _ in range(args.pairs):
            for side, code in (("this", ROOT), ("vs", args.vs.resolve())):
                runs.append(one_run(args.workdir, side, code, server))
                print(json.dumps(runs[-1]), flush=True)
    this, vs = ([r for r in runs if r["side"] == side][1:] for side in ("this", "vs"))
    for key in MEASURES if this else ():
        print(json.dumps({"measure": key, "this": statistics.median(r[key] for r in this),
                          "vs": statistics.median(r[key] for r in vs),
                          "ratios": [round(a[key] / b[key], 2) for a, b in zip(this, vs)],
                          "paired_median": round(statistics.median(a[key] / b[key] for a, b in zip(this, vs)), 2)}))


if __name__ == "__main__":
    main()
