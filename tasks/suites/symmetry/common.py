"""What the symmetry tasks share: prompt styles and the items asked in them, parameter checks,
number words."""

from __future__ import annotations

from typing import Any, Sequence

from tasks.records import Item, Step
from tasks.suites import ANSWER_TYPES
from tasks.suites.base import Bin, GeneratorError, TaskSpec, make_item

SUITE = "symmetry"
ANSWER_TYPE = ANSWER_TYPES[SUITE]

# Both styles end on the same answer line, so one integer parser reads either.
PROMPT_STYLES: dict[str, str] = {
    "direct": "Give only the final answer, on one line of the form: Answer: <number>",
    "cot": "Think step by step, then end with a final line of the form: Answer: <number>",
}

_NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
).split()


def styled(question: str, prompt_style: str) -> str:
    """The user message: the question followed by the prompt style's answer instruction."""
    return f"{question}\n{PROMPT_STYLES[prompt_style]}"


def styled_items(
    spec: TaskSpec,
    question: str,
    styles: Sequence[str],
    *,
    family: str,
    variant: str,
    key_entities: int,
    bin: Bin,
    gold: Any,
    seed: int,
    params: dict[str, Any],
    category: str = "",
    chain: Sequence[tuple[str, str]] = (),
) -> list[Item]:
    """One item per prompt style, the same question :func:`styled` in each, with an integer gold.

    ``chain`` (step name, question) pairs make the item a chain whose steps are styled the same
    way; ``question`` is then the unsplit question, for readers of the item table.
    """
    return [
        make_item(
            spec,
            family=family,
            variant=variant,
            prompt_style=style,
            key_entities=key_entities,
            bin=bin,
            user=styled(question, style),
            gold=gold,
            answer_type=ANSWER_TYPE,
            seed=seed,
            params=params,
            steps=[Step(step, styled(q, style), answer_type=ANSWER_TYPE) for step, q in chain],
            category=category,
        )
        for style in styles
    ]


def number_word(value: int) -> str:
    """A count as English words up to twenty (as the paper's stories write them), digits above."""
    return _NUMBER_WORDS[value] if 0 <= value < len(_NUMBER_WORDS) else str(value)


def choices(params: dict[str, Any], name: str, known: Sequence[str]) -> list[str]:
    """The non-empty list ``params[name]``, every entry one of ``known`` (else an error naming it)."""
    values = list(params[name])
    if not values:
        raise GeneratorError(f"{name}: at least one value is needed; known: {', '.join(known)}")
    unknown = [v for v in values if v not in known]
    if unknown:
        raise GeneratorError(f"{name}: unknown value(s) {', '.join(map(str, unknown))}; known: {', '.join(known)}")
    return values


def int_range(params: dict[str, Any], prefix: str, lowest: int = 1) -> list[int]:
    """``range(<prefix>_min, <prefix>_max + 1, <prefix>_step)`` after checking the three values."""
    lo, hi, step = (int(params[f"{prefix}_{k}"]) for k in ("min", "max", "step"))
    if lo < lowest:
        raise GeneratorError(f"{prefix}_min: {lo} is below {lowest}")
    if hi < lo:
        raise GeneratorError(f"{prefix}_max: {hi} is below {prefix}_min {lo}")
    if step < 1:
        raise GeneratorError(f"{prefix}_step: {step} must be at least 1")
    return list(range(lo, hi + 1, step))


def positive_ratios(params: dict[str, Any], name: str, at_most: float | None = None) -> list[float]:
    """The non-empty list ``params[name]`` of ratios in ``(0, at_most]``."""
    ratios = [float(r) for r in params[name]]
    if not ratios:
        raise GeneratorError(f"{name}: at least one ratio is needed")
    for r in ratios:
        if r <= 0 or (at_most is not None and r > at_most):
            bound = f"(0, {at_most}]" if at_most is not None else "above 0"
            raise GeneratorError(f"{name}: ratio {r} must be {bound}")
    return ratios
