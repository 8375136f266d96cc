"""Issue #26's call figures side by side, without rewriting bench/results.md: figure 1's bare
``litellm.acompletion`` loop and a cold ``invarbench sweep`` (direct path) against the same loopback
server, at 3,000 requests (50 ms, concurrency 64), ``--repeats`` rounds in turn.

    python bench/stream_cost.py --repeats 3 --workdir /tmp/stream-cost

Prints each figure (median and every run) as JSON; the ratios are taken round by round.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Scale  # noqa: E402
from bench.figures import Context, fig1_call_throughput  # noqa: E402

REQUESTS = 3000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", type=Path, required=True)
    args = parser.parse_args()
    # figure 1 sends 5,000 requests at full scale
    ctx = Context(Scale("stream-cost", REQUESTS / 5000), args.workdir, args.repeats, log=lambda m: print(m, flush=True))
    figures = fig1_call_throughput(ctx)
    walls = next(f for f in figures if f.name == "whole sweep, wall")
    bare = figures[0]
    # whole cold sweep / bare loop, round by round: requests per second of each, start to exit for the sweep
    whole = [(REQUESTS / w) / b for w, b in zip(walls.values, bare.values)]
    for f in figures:
        print(json.dumps({"name": f.name, "unit": f.unit, "median": statistics.median(f.values),
                          "values": [round(v, 3) for v in f.values], "cpu": [round(c, 2) for c in f.cpu]}))
    print(json.dumps({"name": "whole cold sweep / bare loop", "unit": "ratio", "median": statistics.median(whole),
                      "values": [round(v, 3) for v in whole]}))


if __name__ == "__main__":
    main()
