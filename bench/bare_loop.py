"""The floor of the call stage: a bare ``litellm.acompletion`` loop under a semaphore.

    python bench/bare_loop.py --prompts items.jsonl --n 5000 --concurrency 64 --api-base URL
    python bench/bare_loop.py --prompts items.jsonl --n 20000 --concurrency 64 --zero

The prompts are the ``messages`` of items written by ``invarbench generate`` (the same prompts the
sweep sends, cycled when ``--n`` exceeds them); the sampling parameters are the pipeline's defaults.
With ``--zero``, one untimed call first, so litellm's lazy set-up is not counted; against a server
there is none, so that the server's own window (first arrival to last answer, ``GET /stats`` of
bench/loopback.py) measures the loop exactly as it measures a sweep's call stage. Prints one JSON line: requests, seconds, requests/s, milliseconds per call, and CPU milliseconds per call
(user + system of this process, every thread: litellm hands finished calls to a thread pool), the
figure to subtract from a sweep's marginal CPU on a shared machine, where wall time is the load's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


async def loop(prompts: list[list[dict]], n: int, concurrency: int, kwargs: dict,
               warm_up: bool) -> tuple[float, float]:
    """Send ``n`` requests, at most ``concurrency`` at once; returns the seconds they took, wall and CPU."""
    import litellm

    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            result = await litellm.acompletion(messages=prompts[i % len(prompts)], **kwargs)
            if result.choices[0].message.content is None:
                raise RuntimeError("empty answer")

    if warm_up:
        await one(0)
    started, cpu_started = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(i) for i in range(n)))
    return time.perf_counter() - started, time.process_time() - cpu_started


def main() -> None:
    """Command line; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", required=True, type=Path, help="items written by `invarbench generate` (.jsonl)")
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--concurrency", type=int, default=64)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--api-base", help="an OpenAI-compatible server")
    target.add_argument("--zero", action="store_true", help="the in-process zero-latency provider")
    args = parser.parse_args()

    from tasks.environment import apply_defaults

    apply_defaults()  # offline environment defaults before litellm loads
    import litellm

    litellm.suppress_debug_info = True
    litellm.drop_params = True
    prompts = [json.loads(line)["messages"] for line in args.prompts.read_text(encoding="utf-8").splitlines() if line]
    kwargs = {"temperature": 0.0, "max_tokens": 96, "top_p": 1.0, "timeout": 120, "num_retries": 0, "max_retries": 0}
    if args.zero:
        from bench.zero_provider import MODEL, register

        register()
        kwargs["model"] = MODEL
    else:
        kwargs.update(model="openai/bench", api_base=args.api_base, api_key="no-key")
    seconds, cpu_s = asyncio.run(loop(prompts, args.n, args.concurrency, kwargs, warm_up=args.zero))
    print(json.dumps({"requests": args.n, "seconds": seconds, "rps": args.n / seconds,
                      "ms_per_call": 1000 * seconds / args.n, "cpu_ms_per_call": 1000 * cpu_s / args.n}))


if __name__ == "__main__":
    main()
