"""Unit tests of the foundation's small pure parts: integer parsing, config, hashing, features, store."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields

import pytest
from conftest import REPO, run_cli

from tasks.config import load_config
from tasks.errors import ConfigError
from tasks.items.features import SurfaceFeatures, surface_features
from tasks.items.generate import generate_task
from tasks.lake.lake import Lake
from tasks.lake.schemas import FEATURE_NAMES, SCHEMAS
from tasks.lake.views import query
from tasks.lake.writes import write_rows
from tasks.models.call import StepUnavailable, fill_template
from tasks.records import Request, Route
from tasks.scoring.parse.numeric import matches, parse
from tasks.suites.base import GeneratorError, bins_from_edges, find_bin


@pytest.mark.parametrize("text,value", [
    ("Answer: 42", "42"),
    ("1+1+1 = 3.\nAnswer: **17**", "17"),
    ("The answer is 7.", "7"),
    ("forty two", "42"),
    ("I count one hundred and five apples", "105"),
    ("Total: 1,000", "1000"),
    ("Answer: -3", "-3"),
    ("Answer: minus five", "-5"),
    ("so 12.0 in all", "12"),
    ("Step 1: 1+1 = 2\nStep 2: 2+1 = 3\nFinal answer: 3", "3"),
])
def test_integer_parse(text, value):
    parsed = parse(text)
    assert parsed.status == "ok" and parsed.value == value


@pytest.mark.parametrize("text", ["no idea", "", "Answer: <number>", "2.5 apples"])
def test_integer_unparsable(text):
    assert parse(text).status == "unparsable"


def test_integer_matches():
    assert matches("5", "5") and not matches("4", "5") and not matches("x", "5")


def test_request_hash_covers_route_messages_sampling_and_sample_idx():
    base = dict(trial_id="t", item_id="i", model="m", step="main", route=Route("openai", "openai/x", "http://a"),
                messages=(("user", "hi"),), sampling={"temperature": 0.0}, sample_idx=0)
    h = Request(**base).request_id
    assert len(h) == 64 and Request(**base).request_id == h
    for change in ({"route": Route("openai", "openai/x", "http://b")}, {"messages": (("user", "hi!"),)},
                   {"sampling": {"temperature": 0.1}}, {"sample_idx": 1}):
        assert Request(**{**base, **change}).request_id != h
    # The trial and model names are bookkeeping, not part of what the provider sees.
    assert Request(**{**base, "trial_id": "other", "model": "alias"}).request_id == h


def test_fill_template_substitutes_and_stops_on_missing_values():
    answers = {"segment_1": {"value": "3", "text": "Answer: 3"}, "segment_2": {"value": None, "text": "?"}}
    assert fill_template("What is {segment_1.value}+4? {\"json\": 1}", answers) == "What is 3+4? {\"json\": 1}"
    with pytest.raises(StepUnavailable):
        fill_template("{segment_1.value}+{segment_2.value}", answers)


def test_same_config_and_seed_give_identical_items():
    params = {"n_min": 5, "n_max": 40, "groups": ["integers"]}
    d1, a = generate_task("symmetry", "closure", params, 3)
    d2, b = generate_task("symmetry", "closure", params, 3)
    assert d1 == d2 and [i.identity() for i in a] == [i.identity() for i in b]
    assert [i.item_id for i in a] == [i.item_id for i in b]
    d3, _ = generate_task("symmetry", "closure", {**params, "n_step": 10}, 3)
    assert d3 != d1


def test_bins_are_half_open_with_last_closed():
    bins = bins_from_edges([[1, 7], [7, 12], [12, 17]])
    assert [b.label for b in bins] == ["1-7", "7-12", "12-17"]
    assert find_bin(7, bins).label == "7-12" and find_bin(17, bins).label == "12-17"
    assert find_bin(40, bins).label == "40"
    with pytest.raises(GeneratorError):
        bins_from_edges([[1, 7], [5, 12]])


def test_config_errors_name_the_key(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[models."x"]\nmodel = "openai/x"\ntemperature = 9\n')
    with pytest.raises(ConfigError, match=r"models.x.temperature"):
        load_config(bad)
    bad.write_text("[sweep\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.toml")
    cfg = load_config(None, {"sweep": {"models": ["local/smollm2"]}})
    assert cfg.model("local/smollm2").temperature == 0.0


def test_reading_commands_load_the_configuration_without_the_suites_generators(tmp_path):
    """load_config(suites=False) leaves the suites' tasks unchecked and imports no generator
    (geometry's sympy); the default checks them."""
    config = tmp_path / "geo.toml"
    config.write_text('[suites.geometry]\ntasks = ["lenght"]\n')
    with pytest.raises(ConfigError, match="unknown task 'lenght'"):
        load_config(config)
    script = (f"import sys; from tasks.config import load_config; load_config({str(config)!r}, suites=False); "
              "print('sympy' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_generate_checks_only_the_suite_it_generates(tmp_path):
    """`invarbench generate --suite symmetry` neither fails on nor imports another configured
    suite (geometry's sympy); generating the misconfigured suite still fails, naming the task."""
    config = tmp_path / "geo.toml"
    config.write_text('[suites.symmetry]\npreset = "smoke"\ntasks = ["closure"]\n\n'
                      '[suites.geometry]\ntasks = ["lenght"]\n')
    out = tmp_path / "items.jsonl"
    script = ("import sys, runpy; sys.argv = ['invarbench'] + sys.argv[1:]\n"
              "try:\n    runpy.run_module('flows.cli', run_name='__main__')\n"
              "finally:\n    print('sympy loaded:', 'sympy' in sys.modules)")
    ok = subprocess.run([sys.executable, "-c", script, "generate", "--suite", "symmetry", "--config", str(config),
                         "--out", str(out)], cwd=REPO, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "sympy loaded: False" in ok.stdout
    assert out.read_text(encoding="utf-8").count("\n") > 0
    bad = run_cli("generate", "--suite", "geometry", "--config", str(config), "--out", str(tmp_path / "geo.jsonl"))
    assert bad.returncode != 0 and "unknown task 'lenght'" in bad.stdout + bad.stderr
    assert not (tmp_path / "geo.jsonl").exists()


def test_a_name_listed_twice_is_a_configuration_error(tmp_path):
    """A task, model or dataset listed twice would generate (and store) the same items twice;
    the configuration is rejected naming the key and the name, and `generate` writes nothing."""
    config = tmp_path / "twice.toml"
    config.write_text('[suites.symmetry]\npreset = "smoke"\ntasks = ["closure", "identity", "closure"]\n')
    with pytest.raises(ConfigError, match=r"suites.symmetry.tasks: listed more than once: closure"):
        load_config(config)
    with pytest.raises(ConfigError, match=r"sweep.models: listed more than once: local/smollm2"):
        load_config(None, {"sweep": {"models": ["local/smollm2", "local/gemma3-270m", "local/smollm2"]}})
    with pytest.raises(ConfigError, match=r"sweep.datasets: listed more than once: d1"):
        load_config(None, {"sweep": {"datasets": ["d1", "d1"]}})
    out = tmp_path / "items.jsonl"
    bad = run_cli("generate", "--suite", "symmetry", "--config", str(config), "--out", str(out))
    assert bad.returncode == 2 and "listed more than once: closure" in bad.stdout + bad.stderr
    assert not out.exists()


def test_surface_features_count_what_they_say():
    f = surface_features("In triangle ABC, AB = 3.5 and BC = 4; find AC.")
    assert f.n_chars == 46 and f.n_words == 12
    assert f.n_numbers == 2 and f.n_operators == 2 and f.n_points == 3
    assert f.n_symbols == 6 and abs(f.symbol_density - 6 / 46) < 1e-12
    assert f.n_tokens > 5


def test_every_surface_feature_has_its_column_in_the_items_table():
    assert tuple(f.name for f in fields(SurfaceFeatures)) == FEATURE_NAMES
    assert set(FEATURE_NAMES) <= set(SCHEMAS["items"].names)


def test_write_rows_is_readable_and_rejects_unknown_columns(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    snapshot = write_rows(lake, "parses", [{"response_id": "r", "request_id": "q", "answer_type": "text",
                                             "parser_version": "text/1", "status": "ok", "value": "None"}])
    # the string "None" stays a string (never a null) in the lake table itself and in the views
    assert lake.read("SELECT value FROM lake.parses WHERE value IS NOT NULL") == [{"value": "None"}]
    assert snapshot == lake.read("SELECT max(snapshot_id) AS s FROM ducklake_snapshots('lake')")[0]["s"]
    con = lake.connect()
    assert query(con, "SELECT value FROM all_parses") == [{"value": "None"}]
    with pytest.raises(KeyError):
        write_rows(lake, "parses", [{"nope": 1}])


def test_random_ids_are_uuid4_hex_and_a_forked_process_draws_its_own():
    """Response ids come from a pool of random bytes (tasks.records.random_id), in uuid4().hex's form."""
    import os
    import uuid

    from tasks.records import random_id, uuid4_hex

    for raw in (bytes(16), b"\xff" * 16, bytes(range(16)), os.urandom(16)):
        assert uuid4_hex(raw) == uuid.UUID(bytes=raw, version=4).hex
    ids = [random_id() for _ in range(1000)]  # several refills of the pool
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 32 and uuid.UUID(i).version == 4 and uuid.UUID(i).variant == uuid.RFC_4122 for i in ids)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first id must not be one its parent draws
        os.write(write, random_id().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    os.close(read)
    assert len(child) == 32 and child not in {random_id() for _ in range(300)}
