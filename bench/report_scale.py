"""The report's drawing part at scale (issue #27): where its time and memory go, and what it shows.

    python bench/report_scale.py --config <warehouse>/bench.toml --out <folder> [--queries] [--dump frames.pkl]

Without ``--queries``: ``build_report(refresh_stats=False)`` as ``invarbench report`` runs it once
the statistics are stored (so compute them once first), printing each phase with the wall and CPU
seconds so far, then the process's totals and peak resident memory (``ru_maxrss``). ``--queries``:
instead, the report's data step alone (``tasks.report.data``) on the connection it opens, one line
per step (the consistent state it takes, then each query of ``QUERIES``): wall and CPU seconds,
rows, and the peak memory so far. ``--dump``: the frames the report draws from, pickled (rows as
tuples with floats to 9 digits, and column types), to compare two codes' reports.
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _peak_mib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


class Clock:
    """Wall and CPU seconds (the process's: every DuckDB thread) since it was made."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def since(self) -> dict[str, float]:
        """The wall and CPU seconds so far."""
        return {"wall_s": round(time.perf_counter() - self.wall, 3), "cpu_s": round(time.process_time() - self.cpu, 3)}


def plain(value):
    """A cell comparable across runs: floats to 9 digits, NaN as a string, lists as tuples."""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else round(value, 9)
    if isinstance(value, (list, tuple)):
        return tuple(plain(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, plain(v)) for k, v in value.items()))
    return value


def dump(frames, path: Path) -> None:
    """The frames as (columns, types, rows in their order) per name, pickled."""
    out = {name: (frame.columns, [str(t) for t in frame.dtypes], [plain(r) for r in frame.rows()])
           for name, frame in frames.items()}
    path.write_bytes(pickle.dumps(out))


def query_steps(cfg, dump_to: Path | None) -> None:
    """The report's data step, timed step by step: its connection, the views it takes once, each query."""
    from tasks.lake.lake import Lake
    from tasks.report import data

    clock = Clock()

    def step(name: str, frame=None) -> None:
        print(json.dumps({"step": name, "rows": None if frame is None else frame.height, **clock.since(),
                          "peak_mib": _peak_mib()}), flush=True)

    lake = Lake.of(cfg)
    if hasattr(data, "connect"):
        con = data.connect(lake)
    else:  # the code before the report pinned a snapshot
        con = lake.connect(" ".join([*data.SNAPSHOT, *data.QUERIES.values()]))
    step("connect")
    data.snapshot_intermediates(con)
    step("snapshot_intermediates")
    frames = {}
    for name, sql in data.QUERIES.items():
        frames[name] = data._frame(con, sql, [cfg.sweep.breaking_threshold] if name == "breaking" else None)
        step(name, frames[name])
    con.close()
    if dump_to:
        dump(frames, dump_to)


def whole_report(cfg, out: Path, dump_to: Path | None) -> None:
    """build_report as the product runs it, its phases timed."""
    from tasks.report import html

    clock = Clock()
    kept = {}
    if dump_to:  # keep what the report drew from
        load = html.load

        def keeping(*args, **kwargs):
            kept.update(load(*args, **kwargs))
            return kept
        html.load = keeping
    path = html.build_report(cfg, out_dir=out, refresh_stats=False,
                             progress=lambda m: print(json.dumps({"step": m, **clock.since(), "peak_mib": _peak_mib()}),
                                                      flush=True))
    print(json.dumps({"step": "done", "html": str(path), **clock.since(), "peak_mib": _peak_mib()}), flush=True)
    if dump_to:
        dump(kept, dump_to)


def main() -> None:
    from tasks.config import load_config

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--out", type=Path, help="report folder (whole report)")
    parser.add_argument("--queries", action="store_true", help="time the data step's queries one by one")
    parser.add_argument("--dump", type=Path, help="pickle the frames the report draws from here")
    args = parser.parse_args()
    cfg = load_config(args.config, suites=False)
    if args.queries:
        query_steps(cfg, args.dump)
    else:
        whole_report(cfg, args.out or Path("report-scale"), args.dump)


if __name__ == "__main__":
    main()
