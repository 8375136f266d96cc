"""The figures of ``make bench``, one function each; every workload runs in child processes.

Each function takes a :class:`Context` and returns :class:`~bench.common.Figure` rows. Figures
1-3 and 8 run real sweeps (``invarbench sweep``) against a loopback server, the in-process
zero-latency provider or the embedded model; 4-6 work on warehouses written by
bench/warehouse.py; 7 times the CLI; 9 collects the peak memory measured along the way.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import (ROOT, Figure, Journal, Scale, bench_script, cli, code_version, last_json,
                          lissard_suites, run, sweep_config, write_config)

SERVER_LATENCY_S = 0.05
CONCURRENCY = 64
FIXED_COST_ITEMS = 100  # figure 2's smallest sweep, at every scale


@dataclass
class Context:
    """Where figures work, how big and how often; what they hand on to later figures."""

    scale: Scale
    workdir: Path
    repeats: int
    log: Any = print
    memory: dict[str, list[float]] = field(default_factory=dict)  # for figure 9

    def dir(self, name: str, fresh: bool = False) -> Path:
        path = self.workdir / name
        if fresh and path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True, exist_ok=True)
        return path


def _items_of(stdout: str, default: int) -> int:
    m = re.search(r"(\d+) items, (\d+) requests", stdout)
    return int(m.group(1)) if m else default


def _generate_prompts(ctx: Context, config: Path, out: Path) -> Path:
    run(cli("generate", "--suite", "lissard", "--config", str(config), "--out", str(out)), ctx.workdir).check("generate")
    return out


def _link_parquet(src: str, dst: str) -> None:
    """Copy one warehouse file: a hard link for lake files (never changed once written), a copy else."""
    if src.endswith(".parquet"):
        os.link(src, dst)
    else:
        shutil.copy2(src, dst)


def _hardlink_copy(src: Path, dst: Path, config: Path | None = None) -> Path:
    """A copy of warehouse ``src`` whose files are hard links (lake files are immutable); its config."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src / "lake", dst / "lake", copy_function=os.link)
    return write_config(config or dst / "bench.toml", {"warehouse": {"path": str(dst)}, "sweep": {"models": []}})


# --------------------------------------------------------------------------------------------
# 1. Call throughput against a loopback server (separate process, 50 ms)


class Loopback:
    """bench/loopback.py as a child process, for the duration of a ``with`` block."""

    def __init__(self, latency: float, port: int = 0):
        self.proc = subprocess.Popen(bench_script("loopback.py", "--latency", str(latency), "--port", str(port)),
                                     stdout=subprocess.PIPE, text=True)
        self.port = json.loads(self.proc.stdout.readline())["port"]
        self.api_base = f"http://127.0.0.1:{self.port}/v1"

    def _call(self, method: str, path: str) -> dict:
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                     data=b"" if method == "POST" else None)
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def reset(self) -> None:
        self._call("POST", "/reset")

    def stats(self) -> dict:
        return self._call("GET", "/stats")

    def __enter__(self) -> "Loopback":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def fig1_call_throughput(ctx: Context) -> list[Figure]:
    # At least 10 waves of the concurrency, or the window measures one round trip.
    n = ctx.scale.n(5000, minimum=10 * CONCURRENCY)
    base = ctx.dir("fig1", fresh=True)
    bare, call_rps, startup, wall, tail, cpu = [], [], [], [], [], []
    with Loopback(SERVER_LATENCY_S) as server:
        model = {"model": "openai/bench", "api_base": server.api_base, "concurrency": CONCURRENCY,
                 "timeout_s": 120.0, "retries": 0}
        config = sweep_config(base / "bench.toml", base / "wh", n, model)
        prompts = _generate_prompts(ctx, config, base / "prompts.jsonl")
        for rep in range(ctx.repeats):
            server.reset()
            r = run(bench_script("bare_loop.py", "--prompts", str(prompts), "--n", str(n), "--concurrency",
                                 str(CONCURRENCY), "--api-base", server.api_base), ctx.workdir).check("bare loop")
            s = server.stats()
            bare.append(s["served"] / (s["last_done"] - s["first_arrival"]))
            server.reset()
            rep_config = sweep_config(base / f"bench-{rep}.toml", base / f"wh-{rep}", n, model)
            launched = time.time()
            r = run(cli("sweep", "--config", str(rep_config)), ctx.workdir).check("sweep")
            ended = time.time()
            s = server.stats()
            window = s["last_done"] - s["first_arrival"]
            call_rps.append(s["served"] / window)
            startup.append(s["first_arrival"] - launched)
            tail.append(ended - s["last_done"])
            wall.append(r.seconds)
            cpu.append(r.cpu_s)
            ctx.log(f"  fig1 rep {rep}: bare {bare[-1]:.0f} req/s, sweep calls {call_rps[-1]:.0f} req/s, "
                    f"start-up {startup[-1]:.1f} s, wall {r.seconds:.1f} s")
    items = _items_of(r.stdout, n)
    ratio = [c / b for c, b in zip(call_rps, bare)]
    cmd = f"invarbench sweep (OpenAI-compatible loopback server, {SERVER_LATENCY_S * 1000:.0f} ms, concurrency {CONCURRENCY})"
    return [
        Figure(1, f"bare litellm.acompletion loop, {n} requests (first arrival to last answer, at the server)", "req/s",
               bare, command="bench/bare_loop.py --api-base"),
        Figure(1, f"sweep call stage ({items} items, first request to last answer)", "req/s", call_rps, command=cmd),
        Figure(1, "sweep call stage / bare loop", "ratio", ratio, target="≥ 0.90", bound=(">=", 0.9)),
        Figure(1, "sweep start-up (launch to first request: imports, Prefect, generate, validate, store items)",
               "s", startup),
        Figure(1, "sweep after the last answer (parse/score of the last batch, catalog, exit)", "s", tail),
        Figure(1, "whole sweep, wall", "s", wall, command=cmd, cpu=cpu),
    ]


# --------------------------------------------------------------------------------------------
# 2, 3. Pipeline overhead at zero latency; the same sweep answered from the ledger


def fig2_3_overhead(ctx: Context) -> list[Figure]:
    # The smallest sweep measures the fixed cost (start-up and wind-down) directly: the intercept of
    # the other two is no such cost, since the cost per item grows with the lake a sweep reads.
    sizes = [FIXED_COST_ITEMS, ctx.scale.n(20_000, minimum=200), ctx.scale.n(200_000, minimum=1000)]
    tiny, small, large = sizes
    base = ctx.dir("fig2")
    # Three rounds of a 20,000-, a 200,000-item and a cached sweep take hours: each run is
    # journaled when it ends, and `--only 2` on the same code goes on with the first run missing.
    version = code_version()
    journal = Journal(base / "journal.json", f"{version} {ctx.scale.name}" if version else None)
    if journal.runs:
        ctx.log(f"  fig2: going on with the {len(journal.runs)} run(s) measured on this code before")
    model = {"model": "benchzero/echo", "concurrency": CONCURRENCY, "retries": 0}

    def sweep(name: str, config: Path, wh: Path, copy_of: Path | None) -> dict[str, Any]:
        # On a fresh warehouse (a stopped run's ledger would answer this one), or on a hard-linked
        # copy, so that a stopped cached sweep leaves the cold one's warehouse as it was.
        shutil.rmtree(wh, ignore_errors=True)
        if copy_of is not None:
            shutil.copytree(copy_of, wh, copy_function=_link_parquet)
        r = run(bench_script("zero_provider.py", "sweep", "--config", str(config)), ctx.workdir).check(name)
        sent = re.search(r"requests:\s+(\d+)\s+sent", r.stdout)
        return {"seconds": r.seconds, "cpu_s": r.cpu_s, "tree_rss_mb": r.tree_rss_mb,
                "items": _items_of(r.stdout, 0), "sent": int(sent.group(1)) if sent else None}

    def measure(name: str, config: Path, wh: Path, copy_of: Path | None = None) -> dict[str, Any]:
        done = journal.once(name, lambda: sweep(name, config, wh, copy_of))
        ctx.log(f"  {name}: {done['items']} items in {done['seconds']:.1f} s, peak {done['tree_rss_mb']:.0f} MB")
        return done

    walls: dict[int, list[float]] = {n: [] for n in sizes}
    cpus: dict[int, list[float]] = {n: [] for n in sizes}
    items: dict[int, int] = {}
    cached: list[float] = []
    cached_cpu: list[float] = []
    for rep in range(ctx.repeats):
        cached_name = f"fig3 rep {rep}: cached sweep"
        for n in sizes:
            name, wh = f"fig2 rep {rep}: sweep of {n}", base / f"wh-{n}-{rep}"
            if n == large and journal.get(cached_name) is None and not wh.exists():
                journal.forget(name)  # its warehouse, which the cached sweep needs, is gone
            done = measure(name, sweep_config(base / f"bench-{n}-{rep}.toml", wh, n, model), wh)
            walls[n].append(done["seconds"])
            cpus[n].append(done["cpu_s"])
            items[n] = done["items"] or n
            ctx.memory.setdefault(f"sweep of {items[n]} items (zero latency)", []).append(done["tree_rss_mb"])
        again = base / f"wh-{large}-{rep}-again"
        config = sweep_config(base / f"bench-{large}-{rep}-again.toml", again, large, model)
        done = measure(cached_name, config, again, copy_of=base / f"wh-{large}-{rep}")
        if done["sent"] != 0:  # then figure 3 would time calls, not ledger hits
            raise RuntimeError(f"{cached_name}: {done['sent']} request(s) sent, not every answer from the ledger")
        cached.append(done["seconds"])
        cached_cpu.append(done["cpu_s"])
        ctx.memory.setdefault(f"sweep of {items[large]} items, all from the ledger", []).append(done["tree_rss_mb"])
        for wh in [again, *(base / f"wh-{n}-{rep}" for n in sizes)]:
            shutil.rmtree(wh, ignore_errors=True)
    n_small, n_large = items[small], items[large]
    per_item_ms = [1000 * (b - a) / (n_large - n_small) for a, b in zip(walls[small], walls[large])]
    per_item_cpu_ms = [1000 * (b - a) / (n_large - n_small) for a, b in zip(cpus[small], cpus[large])]
    fixed = walls[tiny]
    prompts = _generate_prompts(ctx, config, base / "prompts.jsonl")
    n_bare = min(n_large, ctx.scale.n(20_000, minimum=200))

    def bare_loop() -> dict[str, Any]:
        r = run(bench_script("bare_loop.py", "--prompts", str(prompts), "--n", str(n_bare), "--concurrency",
                             str(CONCURRENCY), "--zero"), ctx.workdir).check("bare loop")
        got = last_json(r.stdout)
        return {"ms_per_call": got["ms_per_call"], "cpu_ms_per_call": got["cpu_ms_per_call"]}

    bare = [journal.once(f"fig2 rep {rep}: bare loop", bare_loop) for rep in range(ctx.repeats)]
    litellm_ms, litellm_cpu_ms = [b["ms_per_call"] for b in bare], [b["cpu_ms_per_call"] for b in bare]
    # The sweep's calls go through litellm.acompletion (benchzero has no api_base, so the direct
    # path of tasks/models/direct.py does not serve it): litellm's own cost is the bare loop's, in
    # wall and, steadier on a shared machine, in CPU (the sweep's CPU is its process tree's).
    pipeline_ms = [p - statistics.median(litellm_ms) for p in per_item_ms]
    pipeline_cpu_ms = [p - statistics.median(litellm_cpu_ms) for p in per_item_cpu_ms]
    target = "< 0.5" if ctx.scale.factor == 1 else "< 0.5 (full scale)"
    after_startup = [c - f for c, f in zip(cached, fixed)]
    cmd = "bench/zero_provider.py sweep --config … (invarbench sweep with an in-process zero-latency model)"
    return [
        Figure(2, f"sweep of {n_small} items, wall", "s", walls[small], command=cmd, cpu=cpus[small]),
        Figure(2, f"sweep of {n_large} items, wall", "s", walls[large], command=cmd, cpu=cpus[large]),
        Figure(2, f"marginal cost per item ({n_small} → {n_large} items)", "ms/item", per_item_ms),
        Figure(2, "marginal CPU per item (user + system, the same runs)", "ms/item", per_item_cpu_ms),
        Figure(2, f"fixed cost of a sweep (a sweep of {items[tiny]} items: process, imports, Prefect, catalog, "
               "exit)", "s", fixed, cpu=cpus[tiny]),
        Figure(2, f"litellm's own cost per call (bare loop, {n_bare} calls, zero latency)", "ms/call", litellm_ms,
               command="bench/bare_loop.py --zero"),
        Figure(2, "litellm's own CPU per call (user + system, the same bare loops)", "ms/call", litellm_cpu_ms),
        Figure(2, "pipeline's share per item (marginal cost − litellm's)", "ms/item", pipeline_ms,
               target=target, bound=("<", 0.5)),
        Figure(2, "pipeline's CPU share per item (marginal CPU − litellm's CPU)", "ms/item", pipeline_cpu_ms,
               target=target, bound=("<", 0.5)),
        Figure(3, f"sweep of {n_large} items again, every answer from the ledger, wall", "s", cached, command=cmd,
               cpu=cached_cpu),
        Figure(3, "the same, after start-up (wall − fixed cost of figure 2)", "s", after_startup,
               target="< 15" if ctx.scale.factor == 1 else "< 15 (full scale)",
               bound=("<", 15.0)),
    ]


# --------------------------------------------------------------------------------------------
# Warehouses written directly


def warehouse(ctx: Context, rows: int) -> Path:
    """The warehouse of ``rows`` scored responses under the work folder (built once, then reused)."""
    out = ctx.workdir / f"wh-{rows}"
    done = out / "built.json"
    if not done.exists():
        if out.exists():
            shutil.rmtree(out)
        r = run(bench_script("warehouse.py", "--rows", str(rows), "--out", str(out)), ctx.workdir).check("warehouse")
        done.write_text(r.stdout)
        ctx.log(f"  warehouse of {rows} rows written in {last_json(r.stdout)['seconds']:.1f} s")
    # As a sweep leaves it: the materialised views refreshed, then the catalog of a reused warehouse,
    # which holds the views of the sql/ it was built with, brought up to date (the CLI rebuilds it
    # when sql/ changed or the refresh changed what its views read), since bench/views.py opens it directly.
    run(cli("refresh", "--config", str(out / "bench.toml")), ctx.workdir).check("refresh")
    run(cli("sql", "--config", str(out / "bench.toml"), "SELECT 1"), ctx.workdir).check("catalog")
    return out


def fig4_rescore(ctx: Context) -> list[Figure]:
    rows = ctx.scale.n(1_000_000, minimum=1000)
    src = warehouse(ctx, rows)
    base = ctx.dir("fig4", fresh=True)
    walls, cpu = [], []
    for rep in range(ctx.repeats):
        config = _hardlink_copy(src, base / f"wh-{rep}")
        r = run(cli("rescore", "--config", str(config)), ctx.workdir).check("rescore")
        walls.append(r.seconds)
        cpu.append(r.cpu_s)
        ctx.memory.setdefault(f"rescore of {rows} responses", []).append(r.tree_rss_mb)
        ctx.log(f"  fig4 rep {rep}: rescore {r.seconds:.1f} s ({r.stdout.strip().splitlines()[-1][:100]})")
        shutil.rmtree(base / f"wh-{rep}")
    return [Figure(4, f"rescore of {rows} stored responses (parser and scorer versions changed)", "s", walls,
                   target="< 30", bound=("<", 30.0), command="invarbench rescore --config …", cpu=cpu)]


def fig5_views(ctx: Context) -> list[Figure]:
    out = []
    for full_rows in (1_000_000, 10_000_000):
        rows = ctx.scale.n(full_rows, minimum=1000)
        wh = warehouse(ctx, rows)
        catalog = wh / "invarbench.duckdb"
        r = run(bench_script("views.py", "--catalog", str(catalog), "--repeats", str(ctx.repeats)),
                ctx.workdir).check("views")
        timed = last_json(r.stdout)
        ctx.memory.setdefault(f"every metric view on {rows} rows (one process)", []).append(r.max_rss_mb)
        at_1m = full_rows == 1_000_000
        for view, seconds in timed["views"].items():
            out.append(Figure(5, f"{rows} rows: {view}", "s", seconds,
                              target="< 1" if at_1m else "", bound=("<", 1.0) if at_1m else None,
                              command="bench/views.py (fresh read-only connection, fetch all rows)",
                              note=f"failed: {timed['failed'][view]}" if view in timed.get("failed", {}) else ""))
        if timed["missing"]:
            ctx.log(f"  fig5: views not in the catalog: {', '.join(timed['missing'])}")
        # The CLI on the views: all of them at 1M; at 10M the two most used (each is a full scan).
        for view in [v for v in timed["views"] if at_1m or v in ("accuracy_by_bin", "invariance")]:
            walls, note = [], ""
            for _ in range(ctx.repeats):
                r = run(cli("sql", "--config", str(wh / "bench.toml"), "--format", "csv", f"SELECT * FROM {view}"),
                        ctx.workdir)
                if not at_1m:
                    ctx.memory.setdefault(f"invarbench sql on {rows} rows", []).append(r.max_rss_mb)
                if r.returncode:
                    note = f"failed: exit {r.returncode} after {r.seconds:.0f} s: {r.stderr.strip().splitlines()[-1:]}"
                    break
                walls.append(r.seconds)
            out.append(Figure(5, f"{rows} rows: invarbench sql \"SELECT * FROM {view}\"", "s", walls,
                              target="< 1" if at_1m else "", bound=("<", 1.0) if at_1m else None, note=note))
    return out


# --------------------------------------------------------------------------------------------
# 6. Report; 7. CLI start


def smoke_warehouse(ctx: Context) -> Path:
    """The default configuration's smoke suites answered by two zero-latency stand-ins for the
    embedded models (built once): the shape of the warehouse ``make sweep`` leaves, its
    statistics computed by the sweep's stats task."""
    import tomllib

    out = ctx.workdir / "wh-smoke"
    config = out / "bench.toml"
    if (out / "built.json").exists():
        return config
    if out.exists():
        shutil.rmtree(out)
    suites = tomllib.loads((ROOT / "invarbench.toml").read_text(encoding="utf-8")).get("suites", {})
    sections: dict[str, dict[str, Any]] = {
        "warehouse": {"path": str(out)}, "sweep": {"models": ["smollm2", "gemma3-270m"]},
        'models."smollm2"': {"model": "benchzero/smollm2", "concurrency": CONCURRENCY},
        'models."gemma3-270m"': {"model": "benchzero/gemma3-270m", "concurrency": CONCURRENCY},
    }
    sections.update({f"suites.{name}": {k: v for k, v in s.items() if not isinstance(v, dict)}
                     for name, s in suites.items()})
    write_config(config, sections)
    r = run(bench_script("zero_provider.py", "sweep", "--config", str(config)), ctx.workdir).check("smoke sweep")
    (out / "built.json").write_text(json.dumps({"items": _items_of(r.stdout, 0)}))
    return config


def fig6_report(ctx: Context) -> list[Figure]:
    rows = ctx.scale.n(1_000_000, minimum=1000)
    base = ctx.dir("fig6", fresh=True)
    # bench/warehouse.py writes no statistics; a sweep's stats task would have. The first report
    # computes them (timed once, apart), the measured ones find them current, as after a sweep.
    src = _hardlink_copy(warehouse(ctx, rows), base / "wh-stats").parent
    first = run(cli("report", "--config", str(src / "bench.toml"), "--out", str(base / "report-first")),
                ctx.workdir).check("report")
    ctx.log(f"  fig6: first report on {rows} rows (statistics computed) {first.seconds:.1f} s")
    big, smoke, big_cpu, smoke_cpu = [], [], [], []
    for rep in range(ctx.repeats):
        # A report may write statistics into the lake: each run gets a fresh copy.
        config = _hardlink_copy(src, base / f"wh-{rep}")
        r = run(cli("report", "--config", str(config), "--out", str(base / f"report-{rep}")), ctx.workdir).check("report")
        big.append(r.seconds)
        big_cpu.append(r.cpu_s)
        ctx.memory.setdefault(f"report on {rows} rows", []).append(r.tree_rss_mb)
        ctx.log(f"  fig6 rep {rep}: report on {rows} rows {r.seconds:.1f} s")
        shutil.rmtree(base / f"wh-{rep}")
    smoke_config = smoke_warehouse(ctx)
    for rep in range(ctx.repeats):
        config = _hardlink_copy(smoke_config.parent, base / f"smoke-{rep}")
        r = run(cli("report", "--config", str(config), "--out", str(base / f"smoke-report-{rep}")),
                ctx.workdir).check("report")
        smoke.append(r.seconds)
        smoke_cpu.append(r.cpu_s)
        shutil.rmtree(base / f"smoke-{rep}")
    cmd = "invarbench report --config … --out …"
    return [
        Figure(6, f"report on {rows} scored responses, statistics current", "s", big, target="< 10",
               bound=("<", 10.0), command=cmd, cpu=big_cpu),
        Figure(6, f"report on {rows} scored responses computing the statistics first (once)", "s",
               [first.seconds], command=cmd, cpu=[first.cpu_s]),
        Figure(6, "report on the smoke warehouse", "s", smoke, target="< 3", bound=("<", 3.0), command=cmd,
               cpu=smoke_cpu),
    ]


def fig7_cli_start(ctx: Context) -> list[Figure]:
    config = str(smoke_warehouse(ctx))
    out = ctx.dir("fig7", fresh=True)
    commands = {
        "invarbench --help": cli("--help"),
        "invarbench generate --suite symmetry": cli("generate", "--suite", "symmetry", "--config", config,
                                                    "--out", str(out / "items.jsonl")),
        'invarbench sql "select 1"': cli("sql", "--config", config, "select 1"),
        "invarbench runs": cli("runs", "--config", config),
    }
    figures = []
    for name, cmd in commands.items():
        runs = [run(cmd, ctx.workdir).check(name) for _ in range(max(ctx.repeats, 3))]
        figures.append(Figure(7, name, "s", [r.seconds for r in runs], target="< 1.5", bound=("<", 1.5),
                              command=" ".join(cmd[1:]), cpu=[r.cpu_s for r in runs]))
    floor = [run([sys.executable, "-c", "pass"], ctx.workdir).seconds for _ in range(3)]
    figures.append(Figure(7, "python -c pass (the interpreter's own start, for scale)", "s", floor))
    return figures


# --------------------------------------------------------------------------------------------
# 8. Embedded model


def fig8_embedded(ctx: Context) -> list[Figure]:
    n = ctx.scale.n(200, minimum=14)
    base = ctx.dir("fig8", fresh=True)

    def config(path: Path, wh: Path) -> Path:
        return write_config(path, {
            "warehouse": {"path": str(wh)}, "sweep": {"models": ["local/smollm2"], "report": False},
            "suites.lissard": {"preset": "smoke"},
            **{f"suites.lissard.params.{t}": {"items_per_bin": max(1, n // 14)}
               for t in ("object_counting", "logic_grid", "dyck", "list_intersection", "last_letter_concat",
                         "repeat_copy_logic", "vowel_grouping")},
        })

    prompts = _generate_prompts(ctx, config(base / "bench.toml", base / "wh"), base / "prompts.jsonl")
    plain: dict[str, list[dict]] = {"as-generated": [], "prefix": []}
    sweep_tps = []
    for rep in range(ctx.repeats):
        for order in plain:
            r = run(bench_script("llm_loop.py", "--prompts", str(prompts), "--order", order), ctx.workdir).check("llm loop")
            plain[order].append(last_json(r.stdout))
        cfg = config(base / f"bench-{rep}.toml", base / f"wh-{rep}")
        run(cli("sweep", "--config", str(cfg)), ctx.workdir).check("embedded sweep")
        r = run(cli("sql", "--config", str(cfg), "--format", "json",
                    "SELECT sum(completion_tokens) AS tokens, "
                    "epoch(max(created_at)) - (SELECT epoch(min(created_at)) FROM run_requests) AS seconds "
                    "FROM responses WHERE status = 'ok'"), ctx.workdir).check("sql")
        got = json.loads(r.stdout.strip().splitlines()[-1])[0]
        sweep_tps.append(got["tokens"] / got["seconds"])
        ctx.log(f"  fig8 rep {rep}: plain {plain['as-generated'][-1]['tokens_per_s']:.1f} tok/s, "
                f"prefix-ordered {plain['prefix'][-1]['tokens_per_s']:.1f}, sweep {sweep_tps[-1]:.1f}")
    plain_tps = [p["tokens_per_s"] for p in plain["as-generated"]]
    prefix_tps = [p["tokens_per_s"] for p in plain["prefix"]]
    requests = plain["as-generated"][0]["requests"]
    return [
        Figure(8, f"plain llama-cpp-python loop, {requests} Lissard prompts in generation order", "tokens/s", plain_tps,
               command="bench/llm_loop.py", note=f"mean shared prefix {plain['as-generated'][0]['mean_shared_prefix_chars']:.0f} chars"),
        Figure(8, "plain loop, prompts ordered by shared prefix", "tokens/s", prefix_tps, command="bench/llm_loop.py --order prefix",
               note=f"mean shared prefix {plain['prefix'][0]['mean_shared_prefix_chars']:.0f} chars"),
        Figure(8, "prefix ordering / generation order (plain loop)", "ratio",
               [b / a for a, b in zip(plain_tps, prefix_tps)], target="> 1", bound=(">=", 1.0)),
        Figure(8, "invarbench sweep on local/smollm2, call stage (first request to last response)", "tokens/s",
               sweep_tps, command="invarbench sweep --config …"),
        Figure(8, "sweep / plain loop", "ratio", [s / p for s, p in zip(sweep_tps, plain_tps)],
               target="≥ 0.95", bound=(">=", 0.95)),
    ]


# --------------------------------------------------------------------------------------------
# 9. Memory


def fig9_memory(ctx: Context) -> list[Figure]:
    return [Figure(9, f"peak resident memory: {what}", "MB", values, target="< 2048", bound=("<", 2048.0))
            for what, values in ctx.memory.items()]


# --------------------------------------------------------------------------------------------
# 10. Several models in one sweep: four models against one model, the same items


MULTI_LATENCY_S = 0.2
MULTI_CONCURRENCY = 8
MULTI_MODELS = 4


def _multi_config(path: Path, warehouse: Path, n_models: int, api_base: str, n_items: int) -> Path:
    # Each model its own route (model name), so their requests differ and none answers another's.
    models = [f"bench-{chr(ord('a') + k)}" for k in range(n_models)]
    return write_config(path, {
        "warehouse": {"path": str(warehouse)},
        "sweep": {"models": models, "report": False},
        **{f'models."{m}"': {"model": f"openai/{m}", "api_base": api_base, "concurrency": MULTI_CONCURRENCY,
                             "timeout_s": 120.0, "retries": 0} for m in models},
        **lissard_suites(n_items),
    })


def fig10_multi_model(ctx: Context) -> list[Figure]:
    """Wall time of a cold sweep of four models and of one model on the same items (200 ms,
    concurrency 8 each, one loopback server); with ``BENCH_BEFORE=<checkout>``, the same with that
    checkout's code in the same rounds, side by side."""
    n = ctx.scale.n(2000, minimum=200)
    base = ctx.dir("fig10", fresh=True)
    before = os.environ.get("BENCH_BEFORE")
    codes = [("this code", ROOT)] + ([("before (" + Path(before).name + ")", Path(before))] if before else [])
    walls: dict[tuple[str, int], list[float]] = {(label, k): [] for label, _ in codes for k in (1, MULTI_MODELS)}
    cpus: dict[tuple[str, int], list[float]] = {key: [] for key in walls}
    with Loopback(MULTI_LATENCY_S) as server:
        for rep in range(ctx.repeats):
            for c, (label, code) in enumerate(codes):
                for k in (1, MULTI_MODELS):
                    config = _multi_config(base / f"c{c}-m{k}-{rep}.toml", base / f"wh-c{c}-m{k}-{rep}", k,
                                           server.api_base, n)
                    r = run(cli("sweep", "--config", str(config)), ctx.workdir, cwd=code,
                            extra_env={"PYTHONPATH": str(code)}).check(f"{label} sweep of {k} model(s)")
                    walls[(label, k)].append(r.seconds)
                    cpus[(label, k)].append(r.cpu_s)
                    ctx.log(f"  fig10 rep {rep} {label}: {k} model(s) {r.seconds:.1f} s, CPU {r.cpu_s:.1f} s")
    items = _items_of(r.stdout, n)
    figures = []
    for label, _ in codes:
        one, four = walls[(label, 1)], walls[(label, MULTI_MODELS)]
        cmd = (f"invarbench sweep, {items} Lissard items, loopback {MULTI_LATENCY_S * 1000:.0f} ms, "
               f"concurrency {MULTI_CONCURRENCY} per model")
        first = label == codes[0][0]
        figures += [
            Figure(10, f"{label}: one model, wall", "s", one, command=cmd, cpu=cpus[(label, 1)]),
            Figure(10, f"{label}: {MULTI_MODELS} models, wall", "s", four, command=cmd, cpu=cpus[(label, MULTI_MODELS)]),
            Figure(10, f"{label}: {MULTI_MODELS} models / one model", "ratio", [f / o for f, o in zip(four, one)],
                   target="< 1.3" if first else "", bound=("<", 1.3) if first else None),
        ]
    return figures


FIGURES = {
    1: fig1_call_throughput, 2: fig2_3_overhead, 4: fig4_rescore, 5: fig5_views, 6: fig6_report,
    7: fig7_cli_start, 8: fig8_embedded, 9: fig9_memory, 10: fig10_multi_model,
}
