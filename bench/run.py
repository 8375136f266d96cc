"""``make bench``: measure the pipeline beside its floor and write ``bench/results.md``.

    python bench/run.py                      # every figure at full scale (about 5-6 hours on 2 cores)
    python bench/run.py --scale small        # everything at 1/100 (a few minutes): development
    python bench/run.py --only 1,7 --repeats 5

Every figure is the median of ``--repeats`` runs (at least 3) of child processes; figures are
measurements, never test assertions. Results go to ``bench/results.md`` (``results-small.md`` for
the small scale) with the command, the machine and each figure's target, and to a JSON file
beside it. Both are rewritten as each figure finishes, and a figure measured earlier at the same
scale is kept until it is measured again (each section says when, on which commit, at what
load): a stopped run loses only the figure it was in, and ``--only`` completes the file. Figures
2-3 (hours at full scale) lose less: each sweep is journaled when it ends, and ``--only 2`` on
code with no change since (see ``bench.common.code_version``) goes on from the first run
missing. Work files (warehouses, prompts, that journal) stay under ``--workdir`` (default
``bench/work/<scale>``, ignored by git) and the large warehouses are reused between runs.
See bench/README.md for what each figure runs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (BENCH, ROOT, SCALES, Figure, bench_script, fmt, last_json, run,  # noqa: E402
                          stop_on_sigterm)
from bench.figures import FIGURES, Context  # noqa: E402

TITLES = {
    1: "Call throughput against a loopback server (50 ms)", 2: "Pipeline overhead at zero model latency",
    3: "Ledger hits", 4: "Re-scoring", 5: "Views", 6: "Report", 7: "CLI start", 8: "Embedded model",
    9: "Memory", 10: "Several models at once (4 models / 1 model)",
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
        # The results files this harness rewrites as it goes are not a change to what it measures.
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)bench/results*"], cwd=ROOT, capture_output=True, text=True).stdout
        return out.stdout.strip() + (" (with uncommitted changes)" if dirty.strip() else "")
    except OSError:
        return "unknown"


_BOUND = re.compile(r"^\*\*What bounds figure (\d+)\*\*: ", re.MULTILINE)


def bounds(profile: str) -> dict[int, str]:
    """Each figure's "**What bounds figure N**: ..." paragraph of bench/PROFILE.md, joined to one line:
    the profile says once what bounds a figure, and results.md quotes it under a missed target."""
    out: dict[int, str] = {}
    for m in _BOUND.finditer(profile):
        paragraph = profile[m.end():].split("\n\n", 1)[0]
        out[int(m.group(1))] = " ".join(paragraph.split())
    return out


def render(figures: list[dict], failures: dict[int, str], sections: dict[int, dict], hot: list[dict],
           header: dict[str, str], bound: dict[int, str] | None = None) -> str:
    """The markdown of bench/results.md, from the stored figures (see :func:`store`); ``bound``
    (from :func:`bounds`) is said under each section with a missed target."""
    bound = bound or {}
    lines = ["# Benchmark results", ""]
    lines += [f"- **{k}**: {v}" for k, v in header.items()]
    lines += ["", "Each value is the median of the runs listed (seconds unless stated); *met* compares the "
              "median with the target; *CPU s* is the user + system time of the measured process tree, "
              "steadier than wall time on a shared machine. Each section says when it was measured: figures "
              "are measured one after another, and `--only` re-measures some. What bounds each figure, "
              "from profiles: bench/PROFILE.md.", ""]
    for number in sorted(TITLES):
        lines += [f"## {number}. {TITLES[number]}", ""]
        meta = sections.get(number)
        if meta:
            timing = (f", load average {meta['load']:.1f} at the start, {meta['minutes']:.1f} min"
                      if meta["load"] is not None else "")  # None: measured by a run that kept no timing
            lines += [f"Measured {meta['date']} on commit {meta['commit']}{timing} (`{meta['command']}`).", ""]
        if number in failures:
            lines += ["Not measured: the run failed.", "", "```", failures[number].strip()[-3000:], "```", ""]
        rows = [f for f in figures if f["number"] == number]
        if not rows and number not in failures:
            lines += [f"Not measured yet: `python bench/run.py --only {2 if number == 3 else number}`.", ""]
        if rows:
            lines += ["| measure | median | unit | runs | target | met | CPU s (median) |",
                      "|---|---:|---|---|---|---|---:|"]
            for f in rows:
                met = {True: "met", False: "**not met**", None: ""}[f["met"]]
                runs = ", ".join(fmt(v) for v in f["values"])
                cpu = fmt(statistics.median(f["cpu"])) if f["cpu"] else ""
                lines.append(f"| {f['name']} | {fmt(f['median'])} | {f['unit']} | {runs} | {f['target']} | {met} | {cpu} |")
            commands = sorted({f["command"] for f in rows if f["command"]})
            notes = [f"{f['name']}: {f['note']}" for f in rows if f["note"]]
            lines.append("")
            lines += [f"- command: `{c}`" for c in commands]
            lines += [f"- {n}" for n in notes]
            if any(f["met"] is False for f in rows):
                lines.append(f"- **what bounds it** (bench/PROFILE.md): "
                             f"{bound.get(number, 'not profiled yet')}")
            lines.append("")
    if hot:
        lines += ["## Hot paths (supporting figures, one run each)", "", "| measure | value | unit | n |",
                  "|---|---:|---|---:|"]
        lines += [f"| {h['figure']} | {fmt(h['value'])} | {h['unit']} | {h['n']} |" for h in hot]
        lines.append("")
    return "\n".join(lines)


def load(path: Path, scale: str) -> dict:
    """What an earlier run at the same scale stored in ``path`` (JSON), or an empty record."""
    empty = {"figures": [], "failures": {}, "sections": {}, "hot_paths": []}
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return empty
    header = old.get("header", {})
    if not str(header.get("scale", "")).startswith(scale):
        return empty
    old["failures"] = {int(k): v for k, v in old.get("failures", {}).items()}
    if "sections" not in old:  # written by a whole run before sections existed: its header says when
        meta = {"date": header.get("date", "?"), "commit": header.get("commit", "?"), "load": None,
                "minutes": None, "command": header.get("command", "?")}
        old["sections"] = {f["number"]: meta for f in old.get("figures", [])} | dict.fromkeys(old["failures"], meta)
    old["sections"] = {int(k): v for k, v in old["sections"].items()}
    return {**empty, **old}


# In results.md, what follows this line is written by hand (the test suite's timings, figures of
# scripts outside run.py) and kept as it is when the figures above it are written again.
HAND_WRITTEN = "<!-- Written by hand from here on: bench/run.py keeps it when it rewrites the figures above. -->"


def hand_written(out: Path) -> str:
    """The hand-written end of the markdown at ``out`` (from :data:`HAND_WRITTEN` on), or ''."""
    try:
        text = out.read_text(encoding="utf-8")
    except OSError:
        return ""
    return text[text.index(HAND_WRITTEN):] if HAND_WRITTEN in text else ""


def merge_section(out: Path, title: str, section: str) -> None:
    """Put ``section`` (a markdown section headed ``title``) in the hand-written end of ``out``,
    replacing the section of that title if there is one; the figures above are left alone."""
    text = out.read_text(encoding="utf-8") if out.exists() else "# Benchmark results\n"
    if HAND_WRITTEN not in text:
        text = text.rstrip("\n") + f"\n\n{HAND_WRITTEN}\n"
    start = text.find(title, text.index(HAND_WRITTEN))
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        after = text.find("\n## ", start + len(title))
        text = text[:start] + section + ("\n" + text[after + 1:] if after >= 0 else "")
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, out)


def store(out: Path, record: dict, header: dict[str, str]) -> None:
    """Write ``record`` as bench/results.md and .json; each file replaced whole (no half-written file),
    the markdown's hand-written end (see :data:`HAND_WRITTEN`) kept."""
    record["header"] = header
    profile = BENCH / "PROFILE.md"
    bound = bounds(profile.read_text(encoding="utf-8")) if profile.exists() else {}
    kept = hand_written(out)
    for path, text in ((out, render(record["figures"], record["failures"], record["sections"],
                                    record["hot_paths"], header, bound) + ("\n" + kept if kept else "")),
                       (out.with_suffix(".json"), json.dumps(record, indent=1, default=str, allow_nan=False))):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)


def as_dicts(figures: list[Figure]) -> list[dict]:
    return [{**asdict(f), "median": f.median, "met": f.met} for f in figures]


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
    stop_on_sigterm()
    if args.repeats < 3:
        parser.error("--repeats: at least 3 (each figure is a median)")
    known = set(FIGURES) | {3}
    named = [x.strip() for x in args.only.split(",") if x.strip()]
    unknown = [x for x in named if not (x.isdigit() and int(x) in known)]
    if unknown:
        parser.error(f"--only: no figure {', '.join(unknown)} (figures are {', '.join(map(str, sorted(known)))})")
    scale = SCALES[args.scale]
    workdir = (args.workdir or BENCH / "work" / scale.name).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    out = args.out or BENCH / ("results.md" if scale.name == "full" else f"results-{scale.name}.md")
    wanted = {int(x) for x in named} or known
    if 3 in wanted:
        wanted.add(2)

    started = time.perf_counter()
    command = "python bench/run.py " + shlex.join(sys.argv[1:]) if sys.argv[1:] else "make bench"
    header = {"command": command, "scale": f"{scale.name} ({scale.factor:g} of the issue's sizes)",
              "machine": machine()}
    record = load(out.with_suffix(".json"), scale.name)
    ctx = Context(scale=scale, workdir=workdir, repeats=args.repeats, log=lambda m: print(m, flush=True))
    # A first flow run creates the private Prefect database, so no figure pays its migrations.
    run([sys.executable, "-c", "from tasks.environment import apply_defaults\napply_defaults()\nfrom prefect import flow\n@flow\ndef warm(): pass\nwarm()"], workdir)
    failed = False
    for number, measure in FIGURES.items():
        if number not in wanted or number == 9:
            continue
        print(f"figure {number}: {TITLES[number]}", flush=True)
        began, load_at_start = time.perf_counter(), os.getloadavg()[0]
        numbers = {2, 3} if number == 2 else {number}
        failure = None
        try:
            figures = measure(ctx)
        except Exception:  # noqa: BLE001 - one failed figure must not lose the others
            failed, failure, figures = True, traceback.format_exc(), []
            print(failure, flush=True)
        meta = {"date": f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC", "commit": commit(),
                "load": load_at_start, "minutes": (time.perf_counter() - began) / 60, "command": command}
        # Figure 9 gathers the peak memory the others measured; an entry is replaced when re-measured.
        memory = as_dicts(FIGURES[9](ctx))
        replaced = {f["name"] for f in memory}
        record["figures"] = sorted(
            [f for f in record["figures"] if f["number"] not in numbers and f["name"] not in replaced]
            + as_dicts(figures) + memory, key=lambda f: f["number"])
        for n in numbers | ({9} if memory else set()):
            record["failures"].pop(n, None)
            record["sections"][n] = meta
        if failure:
            record["failures"].update(dict.fromkeys(numbers, failure))
        store(out, record, header)
    if not args.only:
        r = run(bench_script("hotpaths.py"), workdir)
        record["hot_paths"] = last_json(r.stdout)["figures"] if r.returncode == 0 else []
        store(out, record, header)
    print(f"written to {out} ({(time.perf_counter() - started) / 60:.1f} min)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
