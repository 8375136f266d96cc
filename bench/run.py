"""``make bench``: measure the pipeline beside its floor and write ``bench/results.md``.

    python bench/run.py                      # every figure at full scale (about 2-3 hours on 2 cores)
    python bench/run.py --scale small        # everything at 1/100 (a few minutes): development
    python bench/run.py --only 1,7 --repeats 5

Every figure is the median of ``--repeats`` runs (at least 3) of child processes; figures are
measurements, never test assertions. Results go to ``bench/results.md`` (``results-small.md`` for
the small scale) with the command, the machine and each figure's target, and to a JSON file
beside it. Work files (warehouses, prompts) stay under ``--workdir`` (default
``bench/work/<scale>``, ignored by git) and the large warehouses are reused between runs.
See bench/README.md for what each figure runs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BENCH, ROOT, SCALES, Figure, bench_script, fmt, last_json, run  # noqa: E402
from bench.figures import FIGURES, Context  # noqa: E402

TITLES = {
    1: "Call throughput against a loopback server (50 ms)", 2: "Pipeline overhead at zero model latency",
    3: "Ledger hits", 4: "Re-scoring", 5: "Views", 6: "Report", 7: "CLI start", 8: "Embedded model",
    9: "Memory",
}


def machine() -> str:
    """CPU model and count, memory, Python: the context every figure depends on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kib / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{os.cpu_count()} cores ({cpu}){mem}; Python {platform.python_version()}; "
            f"load average {load:.1f} at the start")


def commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
        return out.stdout.strip() + (" (with uncommitted changes)" if dirty.strip() else "")
    except OSError:
        return "unknown"


def render(figures: list[Figure], failures: dict[int, str], hot: list[dict], header: dict[str, str]) -> str:
    """The markdown of bench/results.md."""
    lines = ["# Benchmark results", ""]
    lines += [f"- **{k}**: {v}" for k, v in header.items()]
    lines += ["", "Each value is the median of the runs listed (seconds unless stated); *met* compares the "
              "median with the target; *CPU s* is the user + system time of the measured process tree, "
              "steadier than wall time on a shared machine. What bounds each figure, from profiles: "
              "bench/PROFILE.md.", ""]
    numbers = sorted({f.number for f in figures} | set(failures))
    for number in numbers:
        lines += [f"## {number}. {TITLES.get(number, '')}", ""]
        if number in failures:
            lines += ["Not measured: the run failed.", "", "```", failures[number].strip()[-3000:], "```", ""]
        rows = [f for f in figures if f.number == number]
        if rows:
            lines += ["| measure | median | unit | runs | target | met | CPU s (median) |",
                      "|---|---:|---|---|---|---|---:|"]
            for f in rows:
                met = {True: "met", False: "**not met**", None: ""}[f.met]
                runs = ", ".join(fmt(v) for v in f.values)
                cpu = fmt(statistics.median(f.cpu)) if f.cpu else ""
                lines.append(f"| {f.name} | {fmt(f.median)} | {f.unit} | {runs} | {f.target} | {met} | {cpu} |")
            commands = sorted({f.command for f in rows if f.command})
            notes = [f"{f.name}: {f.note}" for f in rows if f.note]
            lines.append("")
            lines += [f"- command: `{c}`" for c in commands]
            lines += [f"- {n}" for n in notes]
            lines.append("")
    if hot:
        lines += ["## Hot paths (supporting figures, one run each)", "", "| measure | value | unit | n |",
                  "|---|---:|---|---:|"]
        lines += [f"| {h['figure']} | {fmt(h['value'])} | {h['unit']} | {h['n']} |" for h in hot]
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    """Command line; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default=os.environ.get("BENCH_SCALE") or "full")
    parser.add_argument("--only", default="", help="comma-separated figure numbers (3 comes with 2, 9 with the rest)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None, help="markdown results (default bench/results.md, "
                        "bench/results-small.md at the small scale)")
    args = parser.parse_args()
    if args.repeats < 3:
        parser.error("--repeats: at least 3 (each figure is a median)")
    scale = SCALES[args.scale]
    workdir = (args.workdir or BENCH / "work" / scale.name).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    out = args.out or BENCH / ("results.md" if scale.name == "full" else f"results-{scale.name}.md")
    wanted = {int(x) for x in args.only.split(",") if x.strip()} or set(FIGURES) | {3}
    if 3 in wanted:
        wanted.add(2)

    started = time.perf_counter()
    header = {
        "command": "python bench/run.py " + shlex.join(sys.argv[1:]) if sys.argv[1:] else "make bench",
        "scale": f"{scale.name} ({scale.factor:g} of the issue's sizes)",
        "machine": machine(), "commit": commit(), "date": f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC",
    }
    ctx = Context(scale=scale, workdir=workdir, repeats=args.repeats, log=lambda m: print(m, flush=True))
    # A first flow run creates the private Prefect database, so no figure pays its migrations.
    run([sys.executable, "-c", "from tasks.environment import apply_defaults\napply_defaults()\nfrom prefect import flow\n@flow\ndef warm(): pass\nwarm()"], workdir)
    figures: list[Figure] = []
    failures: dict[int, str] = {}
    for number, measure in FIGURES.items():
        if number not in wanted or number == 9:
            continue
        print(f"figure {number}: {TITLES[number]}", flush=True)
        try:
            figures += measure(ctx)
        except Exception:  # noqa: BLE001 - one failed figure must not lose the others
            failures[number] = traceback.format_exc()
            print(failures[number], flush=True)
    if 9 in wanted:
        figures += FIGURES[9](ctx)
    hot = []
    if not args.only:
        r = run(bench_script("hotpaths.py"), workdir)
        hot = last_json(r.stdout)["figures"] if r.returncode == 0 else []
    header["duration"] = f"{(time.perf_counter() - started) / 60:.1f} min"
    out.write_text(render(figures, failures, hot, header), encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps({
        "header": header, "failures": failures, "hot_paths": hot,
        "figures": [{**asdict(f), "median": f.median, "met": f.met} for f in figures],
    }, indent=1, default=str), encoding="utf-8")
    print(f"written to {out}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
