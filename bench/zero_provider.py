"""A zero-latency model behind litellm, in the calling process: the pipeline-overhead figures.

``ZeroLatency`` is a litellm custom provider (registered the way tasks/models/embedded_worker.py registers the
embedded models) that answers every request at once with a fixed Lissard-style answer, so what
a sweep then measures is the pipeline and litellm, never a model. Run the CLI with it registered:

    python bench/zero_provider.py sweep --config bench.toml     # any ``invarbench`` arguments

and name it in the configuration as ``model = "benchzero/echo"``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PROVIDER = "benchzero"
MODEL = f"{PROVIDER}/echo"
ANSWER = "Let me work through it.\nOutput: a b c"


def _handler():
    from litellm import CustomLLM
    from litellm.types.utils import ModelResponse

    class ZeroLatency(CustomLLM):
        """Answers at once; usage is a constant so token accounting still runs."""

        def completion(self, *args: Any, **kwargs: Any) -> ModelResponse:
            return ModelResponse(
                model=MODEL,
                choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ANSWER}}],
                usage={"prompt_tokens": 100, "completion_tokens": 8, "total_tokens": 108},
            )

        async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:
            return self.completion(*args, **kwargs)

    return ZeroLatency()


def register() -> None:
    """Make ``benchzero/<anything>`` routable through litellm in this process."""
    from tasks.environment import apply_defaults

    apply_defaults()  # offline environment defaults before litellm loads
    import litellm
    from litellm.utils import custom_llm_setup

    others = [p for p in (litellm.custom_provider_map or []) if p.get("provider") != PROVIDER]
    litellm.custom_provider_map = others + [{"provider": PROVIDER, "custom_handler": _handler()}]
    custom_llm_setup()


def main() -> None:
    """Run ``invarbench`` with the provider registered (arguments as for the CLI)."""
    register()
    from flows.cli import main as cli_main

    sys.argv = ["invarbench", *sys.argv[1:]]
    cli_main()


if __name__ == "__main__":
    main()
