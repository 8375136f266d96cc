"""Benchmark: what running an embedded model in its worker process costs, against in-process.

The pipeline runs each embedded model in a worker process of its own (tasks/models/embedded.py), so
that a crash in llama.cpp's native code cannot take the sweep down. This measures the price on
the same prompts, greedy, in rounds, each prompt through every way back to back, so that the noise of a
shared machine falls on all of them alike:

- ``in-process``: a plain loop over llama-cpp-python in this process (``embedded_worker.generate``);
- ``worker``: the same calls through the worker process (``embedded.Worker.generate``: a JSON
  line each way over a pipe);
- ``litellm in-process``: litellm with a custom provider calling llama-cpp-python in this
  process, as the pipeline did before;
- ``litellm worker``: the route the pipeline uses now, ``local/<name>``.

Since a loaded machine moves those figures by more than the pipe costs, the pipe's own cost is
measured apart too: the round trip of a request that the worker rejects at once (a malformed
parameter, so llama.cpp does no work), as a share of the mean in-process generation time.

Throughput is completion tokens per second of wall time (prompt evaluation included). Figures
are measurements, never assertions. Run ``python bench/embedded.py [--model smollm2] [--rounds 3]``
(``make bench`` runs it); the table is printed and written to ``bench/results/embedded.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tasks.environment import apply_defaults  # noqa: E402

apply_defaults()  # offline environment defaults before litellm or Prefect load
from tasks.records import now_utc  # noqa: E402

PROMPTS = [
    "What is 1+1+1+1+1+1+1? Give the final answer as 'Answer: <number>'.",
    "What is 1+1-1+1+0+1+1-1+1? Give the final answer as 'Answer: <number>'.",
    "Count the words in this sentence: the quick brown fox jumps over the lazy dog.",
    "Repeat the word apple five times, separated by commas.",
    "In triangle ABC, AB = 3, BC = 4 and the angle ABC is 90 degrees. Find AC.",
    "Sort these letters alphabetically: q, d, a, m, z, c.",
    "Alice has 3 apples and gives Bob 1. Bob had 2. How many apples does Bob have now?",
    "Name the days of the week in order.",
]

ROUND_TRIPS = 200


def _litellm_in_process():
    """A litellm route ``inproc/<name>`` answered by llama-cpp-python in this process (the old way)."""
    import litellm
    from litellm import CustomLLM
    from litellm.types.utils import ModelResponse
    from litellm.utils import custom_llm_setup

    from tasks.models import embedded_worker

    class InProcess(CustomLLM):
        def completion(self, *args, **kwargs):
            text, p, c, _ = embedded_worker.generate(kwargs["model"].split("/", 1)[-1], kwargs["messages"],
                                            dict(kwargs.get("optional_params") or {}))
            return ModelResponse(choices=[{"index": 0, "message": {"role": "assistant", "content": text}}],
                                 usage={"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c})

    litellm.custom_provider_map = [*(litellm.custom_provider_map or []),
                                   {"provider": "inproc", "custom_handler": InProcess()}]
    custom_llm_setup()


def ways(name: str, max_tokens: int) -> dict:
    """The ways of calling, each a function of one prompt returning its completion tokens."""
    import litellm

    from tasks.models import embedded, embedded_worker

    embedded.register()
    _litellm_in_process()
    params = {"max_tokens": max_tokens, "temperature": 0.0}
    worker = embedded.worker(name)

    def via_litellm(route: str):
        def call(prompt: str) -> int:
            out = litellm.completion(model=route, messages=[{"role": "user", "content": prompt}], **params)
            return out.usage.completion_tokens
        return call

    return {
        "in-process": lambda p: embedded_worker.generate(name, [{"role": "user", "content": p}], params)[2],
        "worker": lambda p: worker.generate([{"role": "user", "content": p}], params)[2],
        "litellm in-process": via_litellm(f"inproc/{name}"),
        "litellm worker": via_litellm(f"local/{name}"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2", help="embedded model name (default smollm2)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the prompts per way (default 3)")
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()

    from tasks.models import embedded

    calls = ways(args.model, args.max_tokens)
    try:
        for call in calls.values():  # loads the model in both processes; not timed
            call(PROMPTS[0])
        rates: dict[str, list[float]] = {w: [] for w in calls}
        call_s: list[float] = []
        for _ in range(args.rounds):
            tokens = dict.fromkeys(calls, 0)
            seconds = dict.fromkeys(calls, 0.0)
            # Every prompt goes through every way back to back, in a rotating order, so that a
            # burst of load from elsewhere falls on all of them alike.
            for k, prompt in enumerate(PROMPTS):
                order = list(calls)[k % len(calls):] + list(calls)[:k % len(calls)]
                for way in order:
                    started = time.perf_counter()
                    tokens[way] += calls[way](prompt)
                    seconds[way] += time.perf_counter() - started
            for way in calls:
                rates[way].append(tokens[way] / seconds[way])
            call_s.append(seconds["in-process"] / len(PROMPTS))
        worker = embedded.worker(args.model)
        started = time.perf_counter()
        for _ in range(ROUND_TRIPS):
            try:
                worker.generate([{"role": "user", "content": PROMPTS[0]}], {"max_tokens": "rejected"})
            except RuntimeError:
                pass  # the rejection is the whole point: a round trip without generation
        round_trip_s = (time.perf_counter() - started) / ROUND_TRIPS
    finally:
        embedded.stop_all()

    def median(way: str) -> float:
        return statistics.median(rates[way])

    lines = [
        f"# Embedded model local/{args.model}: in-process vs. worker process",
        "",
        f"{now_utc():%Y-%m-%d %H:%M} UTC; {len(PROMPTS)} prompts x {args.rounds} rounds per way, greedy, "
        f"max_tokens {args.max_tokens}; completion tokens per second of wall time (median of rounds); "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end, "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}.",
        "",
        "| way | tokens/s (median) | rounds | vs. in-process |",
        "|---|---|---|---|",
    ]
    for way in calls:
        base = median("litellm in-process" if way.startswith("litellm") else "in-process")
        lines.append(f"| {way} | {median(way):.1f} | {', '.join(f'{x:.1f}' for x in rates[way])} | "
                     f"{100 * (median(way) / base - 1):+.1f}% |")
    mean_call = statistics.mean(call_s)
    lines += ["", f"Pipe round trip without generation: {round_trip_s * 1000:.3f} ms per call (mean of "
                  f"{ROUND_TRIPS}), {100 * round_trip_s / mean_call:.3f}% of a mean in-process call "
                  f"({mean_call * 1000:.0f} ms)."]
    text = "\n".join(lines) + "\n"
    out = ROOT / "bench" / "results" / "embedded.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(text + f"\nwritten to {out}")


if __name__ == "__main__":
    main()
