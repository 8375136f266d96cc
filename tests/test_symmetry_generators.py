"""Generators of the symmetry suite, checked against independent readings of the rendered text.

Golds are never compared with the generator's own arithmetic: the expression found in the prompt
is evaluated by the small parser below, words are counted, and the increments stated in a story's
sentences are summed.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from tasks.records import canonical_json
from tasks.suites import get_task, suite_tasks
from tasks.suites.base import GeneratorError

TASK_NAMES = {"closure", "identity", "inverse", "associativity", "counting_words", "word_problems"}
EXPRESSION_TASKS = ["closure", "identity", "inverse", "associativity"]
GROUPS = ["integers", "mod7"]
QUESTION = re.compile(r"What is (\S+?)(?: modulo (\d+))?\?")
NUMBERS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split()
)}


def evaluate(expression: str) -> int:
    """Sum of a ``1+1-1+0`` expression, read character by character (signed integer terms only)."""
    total, i = 0, 0
    if not expression:
        raise ValueError("empty expression")
    while i < len(expression):
        sign = 1
        if expression[i] in "+-":
            if i == 0 and expression[i] == "+":
                raise ValueError(f"leading '+' in {expression!r}")
            sign = -1 if expression[i] == "-" else 1
            i += 1
        elif i != 0:
            raise ValueError(f"missing operator at {i} in {expression!r}")
        start = i
        while i < len(expression) and expression[i].isdigit():
            i += 1
        if start == i:
            raise ValueError(f"missing number at {start} in {expression!r}")
        total += sign * int(expression[start:i])
    return total


def terms(expression: str) -> list[int]:
    """The signed terms of an expression, in order."""
    return [int(t) for t in re.findall(r"[+-]?\d+", expression)]


def read_question(text: str) -> tuple[str, int | None]:
    """(expression, modulus or None) from the first line of a prompt."""
    match = QUESTION.fullmatch(text.splitlines()[0])
    assert match, f"no question in {text!r}"
    return match.group(1), int(match.group(2)) if match.group(2) else None


def value_of(text: str) -> int:
    """The answer the question in ``text`` asks for, computed from the text alone."""
    expression, modulus = read_question(text)
    value = evaluate(expression)
    return value if modulus is None else value % modulus


def sentences(story: str) -> list[str]:
    return re.split(r"(?<=[.?!])\s+", story.strip())


def stated_counts(text: str, noun: str, nouns: str) -> list[int]:
    """Every count written before the story's object, in order (words or digits)."""
    pattern = rf"\b({'|'.join(NUMBERS)}|\d+) (?:{re.escape(nouns)}|{re.escape(noun)})\b"
    return [NUMBERS[m] if m in NUMBERS else int(m) for m in re.findall(pattern, text)]


def generate(task: str, seed: int = 0, **params):
    return get_task("symmetry", task).run(params, seed)


# ---- registry and specs ---------------------------------------------------------------------


def test_suite_exposes_every_task_with_version_defaults_and_smoke():
    tasks = suite_tasks("symmetry")
    assert set(tasks) == TASK_NAMES
    for name, spec in tasks.items():
        assert spec.name == name and spec.suite == "symmetry" and spec.version
        assert set(spec.smoke) <= set(spec.defaults)
        smoke = spec.run(spec.smoke, 0)
        assert 1 <= len(smoke) <= 12, f"{name}: smoke slice has {len(smoke)} items"
        assert all(item.answer_type == "integer" for item in smoke)


# ---- golds, independently ---------------------------------------------------------------------


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("task", ["closure", "identity", "inverse"])
def test_expression_gold_equals_independent_evaluation(task, group):
    items = generate(task, groups=[group])
    assert items
    for item in items:
        expression, modulus = read_question(item.prompt)
        assert (modulus is None) == (group == "integers")
        assert item.gold == str(value_of(item.prompt)), item.prompt
        assert terms(expression).count(1) == item.key_entities


@pytest.mark.parametrize("group", GROUPS)
def test_inverse_gold_is_ones_minus_inverses_and_zero_when_balanced(group):
    for item in generate("inverse", groups=[group], ratios=[1.0, 0.5]):
        t = terms(read_question(item.prompt)[0])
        assert set(t) == {1, -1}
        if item.params["ratio"] == 1.0:
            assert t.count(-1) == t.count(1) and item.gold == "0"
        else:
            assert t.count(-1) == item.key_entities // 2 < t.count(1)


@pytest.mark.parametrize("group", GROUPS)
def test_identity_adds_floor_ratio_times_n_zeros(group):
    for item in generate("identity", groups=[group]):
        t = terms(read_question(item.prompt)[0])
        assert t.count(0) == int(item.params["ratio"] * item.key_entities)
        assert set(t) == {0, 1}


@pytest.mark.parametrize("group", GROUPS)
def test_associativity_chain_reaches_gold_from_its_segments(group):
    for item in generate("associativity", groups=[group]):
        first, second, combine = item.steps
        a, b = value_of(first.template), value_of(second.template)
        filled = combine.template.replace("{segment_1.value}", str(a)).replace("{segment_2.value}", str(b))
        assert str(value_of(filled)) == item.gold
        assert item.gold == str(value_of(item.messages[-1][1]))


def test_counting_words_gold_is_the_number_of_words():
    for item in generate("counting_words"):
        words_line, question = item.prompt.splitlines()[:2]
        words = words_line.split()
        assert set(words) == {item.variant}
        assert str(len(words)) == item.gold == str(item.key_entities)
        assert question.startswith("How many ") and question.split()[2].startswith(item.variant[:-1])


def test_counting_words_defaults_cover_both_attractor_ranges():
    counts = {item.key_entities for item in generate("counting_words")}
    assert counts == set(range(40, 61)) | set(range(90, 111))
    assert {item.variant for item in generate("counting_words")} == {"apple", "orange", "banana"}


def test_word_problem_gold_is_the_sum_of_stated_counts():
    items = generate("word_problems")
    assert items
    for item in items:
        story = item.prompt.splitlines()[0]
        counts = stated_counts(story, item.params["object"], item.params["objects"])
        assert str(sum(counts)) == item.gold, story
        # One start count and one count per adding sentence; irrelevant sentences add none.
        assert len(counts) == item.key_entities + 1
        parts = sentences(story)
        assert parts[-1].startswith("How many ") and parts[-1].endswith("?")


# ---- placements -------------------------------------------------------------------------------


def _placement_terms(task, group, seed=0, n=20, ratio=0.5):
    items = generate(task, seed, groups=[group], n_min=n, n_max=n, ratios=[ratio], prompt_styles=["direct"])
    return {item.variant: terms(read_question(item.prompt)[0]) for item in items}


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("task,filler", [("identity", 0), ("inverse", -1)])
@pytest.mark.parametrize("n", [7, 20])
def test_placement_semantics(task, filler, group, n):
    by_placement = _placement_terms(task, group, n=n)
    k = int(0.5 * n)
    assert set(by_placement) == {"end", "begin", "middle", "random"}
    assert by_placement["end"] == [1] * n + [filler] * k
    begin = by_placement["begin"]
    assert all(t == filler for t in begin[: begin.index(1)]) and begin.count(filler) == k
    assert begin.index(1) == k
    middle = by_placement["middle"]
    assert middle == [1] * (n // 2) + [filler] * k + [1] * (n - n // 2)
    assert sorted(by_placement["random"]) == sorted(by_placement["end"])


@pytest.mark.parametrize("task", ["identity", "inverse"])
def test_random_placement_is_seeded(task):
    same = [_placement_terms(task, "integers", seed=3, n=40)["random"] for _ in range(2)]
    assert same[0] == same[1]
    others = {tuple(_placement_terms(task, "integers", seed=s, n=40)["random"]) for s in range(4)}
    assert len(others) == 4


def test_both_groups_share_the_random_expression():
    a = _placement_terms("identity", "integers", seed=5, n=30)["random"]
    b = _placement_terms("identity", "mod7", seed=5, n=30)["random"]
    assert a == b


# ---- families and prompt styles ---------------------------------------------------------------


def test_placements_share_a_family_per_group_n_ratio_and_style_is_not_part_of_it():
    items = generate("identity", n_min=10, n_max=20)
    families: dict[str, set[tuple[str, str]]] = {}
    for item in items:
        families.setdefault(item.family_id, set()).add((item.variant, item.prompt_style))
        assert item.bin == ("5-30" if item.key_entities < 30 else "30-55")
    assert len(families) == 3 * 4 * 2  # n in {10, 15, 20} x ratios x groups
    for variants in families.values():
        assert variants == {(p, s) for p in ("end", "begin", "middle", "random") for s in ("direct", "cot")}


def test_prompt_styles_ask_for_the_answer_line():
    for item in generate("closure", n_min=5, n_max=5):
        last = item.prompt.splitlines()[-1]
        assert "Answer: <number>" in last
        assert ("step by step" in last) == (item.prompt_style == "cot")


def test_associativity_families_are_its_own_and_point_at_the_closure_baseline():
    closure = {(i.params["group"], i.key_entities): i.family_id for i in generate("closure")}
    assoc = generate("associativity")
    for item in assoc:
        baseline = item.params["baseline"]
        assert baseline["task"] == "closure" and baseline["variant"] == "none"
        assert baseline["family_id"] == closure[(item.params["group"], item.key_entities)]
        assert item.family_id not in closure.values()
    per_family = Counter(item.family_id for item in assoc)
    assert set(per_family.values()) == {4}  # two splits x two prompt styles


def test_counting_words_share_a_family_per_count():
    per_family = Counter(item.family_id for item in generate("counting_words", prompt_styles=["direct"]))
    assert set(per_family.values()) == {3}


# ---- associativity steps ----------------------------------------------------------------------


@pytest.mark.parametrize("split,a,b", [("split_3_8", 3, 8), ("split_1_4", 1, 4)])
def test_associativity_segment_lengths_match_the_split(split, a, b):
    items = [i for i in generate("associativity", groups=["integers"]) if i.variant == split]
    assert {i.key_entities for i in items} == set(range(5, 151, 5))
    for item in items:
        n = item.key_entities
        expected = max(1, (2 * n * a + b) // (2 * b))  # n·a/b rounded half up
        first, second, combine = item.steps
        assert item.solver == "chain"
        assert [s.name for s in item.steps] == ["segment_1", "segment_2", "combine"]
        assert terms(read_question(first.template)[0]) == [1] * expected
        assert terms(read_question(second.template)[0]) == [1] * (n - expected)
        assert "{segment_1.value}" in combine.template and "{segment_2.value}" in combine.template
        assert all(s.answer_type == "integer" for s in item.steps)


def test_associativity_rejects_a_single_one():
    with pytest.raises(GeneratorError, match="n_min"):
        generate("associativity", n_min=1, n_max=5)


# ---- word problem variants --------------------------------------------------------------------


def _by_family(items):
    families: dict[str, dict[str, list[str]]] = {}
    for item in items:
        if item.prompt_style == "direct":
            families.setdefault(item.family_id, {})[item.variant] = sentences(item.prompt.splitlines()[0])
    return families


def test_permuted_word_problems_fix_first_and_last_and_differ():
    families = _by_family(generate("word_problems"))
    assert len(families) == 5 * 4  # n in 3,5,7,9,11 x stories_per_n
    for variants in families.values():
        original = variants["original"]
        permuted = [variants[f"permuted_{k}"] for k in range(1, 6)]
        assert len(permuted) == 5 and "permuted_6" not in variants
        for p in permuted:
            assert p[0] == original[0] and p[-1] == original[-1]
            assert sorted(p[1:-1]) == sorted(original[1:-1])
            assert p != original
        assert len({tuple(p) for p in permuted}) == 5


def test_three_sentences_give_every_other_order():
    families = _by_family(generate("word_problems", n_min=3, n_max=3, stories_per_n=2))
    for variants in families.values():
        orders = {tuple(v[1:-1]) for name, v in variants.items() if name.startswith("permuted_")}
        assert len(orders) == 5 and tuple(variants["original"][1:-1]) not in orders


def test_too_many_permutations_is_an_error():
    with pytest.raises(GeneratorError, match="permutations"):
        generate("word_problems", n_min=2, n_max=2)


def test_irrelevant_variant_adds_only_sentences_without_counts_of_the_object():
    items = generate("word_problems", irrelevant_sentences=4)
    families = _by_family(items)
    objects = {i.family_id: i.params["object"] for i in items}
    for family, variants in families.items():
        original, noisy = variants["original"], variants["irrelevant"]
        assert noisy[0] == original[0] and noisy[-1] == original[-1]
        added = Counter(noisy) - Counter(original)
        assert sum(added.values()) == 4 and not Counter(original) - Counter(noisy)
        head = objects[family].split()[-1]
        assert all(head not in s.lower() for s in added)


def test_irrelevant_sentences_never_name_the_story_object():
    import random

    from tasks.suites.symmetry.word_problems import Frame, Story, irrelevant_sentences, with_irrelevant

    dogs = Frame(
        id="ann_dogs",
        subject="Ann",
        object="toy dog",
        objects="toy dogs",
        start="Ann has {things}.",
        question="How many toy dogs does Ann have now?",
        verbs=("She found {things}.",),
    )
    story = Story(dogs, 2, ((0, 1),))
    naming = [s for s in irrelevant_sentences() if "dog" in s.lower()]
    assert naming, "the bank should hold a sentence about dogs for this check to mean something"
    usable = len(irrelevant_sentences()) - len(naming)
    _, extra = with_irrelevant(story, usable, random.Random(0))
    assert len(extra) == usable and not any("dog" in s.lower() for s in extra)
    with pytest.raises(GeneratorError, match="irrelevant_sentences"):
        with_irrelevant(story, usable + 1, random.Random(0))


def test_word_problem_variants_share_the_story_family():
    items = generate("word_problems", n_min=5, n_max=5, stories_per_n=3)
    per_family = Counter(item.family_id for item in items)
    assert set(per_family.values()) == {7 * 2}  # original, 5 permuted, irrelevant x two styles
    assert {i.key_entities for i in items} == {5} and {i.bin for i in items} == {"3-6"}


# ---- data banks -------------------------------------------------------------------------------


def test_story_bank_and_irrelevant_bank():
    from tasks.suites.symmetry.word_problems import DATA

    frames = json.loads((DATA / "story_frames.json").read_text())["frames"]
    irrelevant = json.loads((DATA / "irrelevant_sentences.json").read_text())["sentences"]
    assert len(frames) >= 20 and len(irrelevant) >= 30
    assert len({f["id"] for f in frames}) == len(frames)
    assert len(set(irrelevant)) == len(irrelevant)
    number = re.compile(rf"\b({'|'.join(NUMBERS)}|\d+)\b", re.IGNORECASE)
    for f in frames:
        assert f["subject"] and f["object"] and f["objects"] and len(f["verbs"]) >= 11
        for template in [f["start"], *f["verbs"]]:
            assert template.count("{things}") == 1, template
            assert not number.search(template), template
            assert len(sentences(template)) == 1 and template.endswith(".")
        assert f["objects"] in f["question"] and f["question"].endswith("?")
    for s in irrelevant:
        assert len(sentences(s)) == 1 and s.endswith(".")


# ---- bins, determinism, parameters ------------------------------------------------------------


def test_bins_hold_their_key_entities_and_out_of_range_values_get_their_own():
    for name in TASK_NAMES:
        for item in get_task("symmetry", name).run(get_task("symmetry", name).smoke, 0):
            assert item.bin_lo <= item.key_entities <= item.bin_hi
            assert item.bin == (str(item.bin_lo) if item.bin_lo == item.bin_hi else f"{item.bin_lo}-{item.bin_hi}")
    far = generate("closure", n_min=200, n_max=200, groups=["integers"], prompt_styles=["direct"])
    assert [i.bin for i in far] == ["200"]
    last = generate("closure", n_min=150, n_max=150, groups=["integers"], prompt_styles=["direct"])
    assert [i.bin for i in last] == ["130-150"]


@pytest.mark.parametrize("task", sorted(TASK_NAMES))
def test_same_params_and_seed_give_byte_identical_items(task):
    spec = get_task("symmetry", task)
    first, second = spec.run(spec.smoke, 11), spec.run(spec.smoke, 11)
    assert [i.item_id for i in first] == [i.item_id for i in second]
    assert [canonical_json(i.identity()) for i in first] == [canonical_json(i.identity()) for i in second]
    assert len({i.item_id for i in first}) == len(first)


def test_different_seeds_change_the_drawn_stories():
    a = [i.prompt for i in generate("word_problems", 1)]
    b = [i.prompt for i in generate("word_problems", 2)]
    assert a != b


@pytest.mark.parametrize("task", sorted(TASK_NAMES))
def test_unknown_parameter_is_an_error_naming_it(task):
    with pytest.raises(GeneratorError, match="n_ones_max"):
        generate(task, n_ones_max=3)


@pytest.mark.parametrize(
    "task,params,name",
    [
        ("closure", {"groups": ["mod2"]}, "groups"),
        ("closure", {"groups": ["reals"]}, "groups"),
        ("closure", {"n_min": 0}, "n_min"),
        ("closure", {"prompt_styles": ["socratic"]}, "prompt_styles"),
        ("identity", {"placements": ["sideways"]}, "placements"),
        ("identity", {"n_min": 2, "ratios": [0.25]}, "ratios"),
        ("inverse", {"ratios": [1.5]}, "ratios"),
        ("associativity", {"splits": ["halves"]}, "splits"),
        ("counting_words", {"ranges": [[10, 5]]}, "ranges"),
        ("counting_words", {"words": ["Apple pie"]}, "words"),
        ("word_problems", {"n_max": 40}, "n_max"),
        ("word_problems", {"variants": ["shuffled"]}, "variants"),
    ],
)
def test_bad_values_are_errors_naming_the_parameter(task, params, name):
    with pytest.raises(GeneratorError, match=name):
        generate(task, **params)
