"""The associativity protocol (issue 3) against a scripted OpenAI-compatible server on loopback.

Three linked requests per item: segment 1, segment 2, then ``a+b`` built from the model's own
parsed answers. The scripted provider answers segments by counting ones (optionally off by one
for a chosen segment length) and sums correctly, so the expected verdicts are known.
"""

from __future__ import annotations

import re

import pytest

from conftest import TEST_CLAIM_SETTLE_S, run_cli, write_config
from fakes import FakeProvider, FakeServer, last_user
from flows.sweep import sweep
from tasks.lake.lake import Lake
from tasks.lake.views import query

# Every test here runs whole sweeps through the flow (seconds of CPU each): make test-fast leaves them out.
pytestmark = pytest.mark.slow


def scripted(wrong_segment_length: int | None):
    """Count the ones of a segment (off by one for ``wrong_segment_length``); add two numbers right."""

    def respond(body: dict) -> str:
        expr = re.search(r"What is ([-\d+]+)\?", last_user(body)).group(1)
        terms = [int(t) for t in re.findall(r"-?\d+", expr)]
        if all(t == 1 for t in terms) and len(terms) == wrong_segment_length:
            return f"Answer: {len(terms) + 1}"
        return f"Answer: {sum(terms)}"

    return respond


def config(tmp_path, api_base):
    return write_config(tmp_path / "assoc.toml", {
        "warehouse": {"path": str(tmp_path / "wh")},
        "sweep": {"models": ["scripted"], "report": False, "claim_settle_s": TEST_CLAIM_SETTLE_S},
        'models."scripted"': {"model": "openai/scripted", "api_base": api_base, "retries": 0},
        "suites.symmetry": {"tasks": ["associativity"]},
        "suites.symmetry.params.associativity": {"n_min": 12, "n_max": 12, "groups": ["integers"],
                                                 "prompt_styles": ["direct"], "splits": ["split_3_8", "split_1_4"]},
    })


def verdicts(tmp_path):
    con = Lake(str(tmp_path / "wh" / "lake")).connect()
    try:
        return {r["variant"]: (r["status"], r["predicted"]) for r in query(
            con, "SELECT variant, status, predicted FROM trial_scores WHERE task = 'associativity'")}
    finally:
        con.close()


def test_correct_segments_score_right_and_rerun_is_cached(tmp_path):
    state = FakeProvider(responder=scripted(None))
    with FakeServer(state) as server:
        cfg = config(tmp_path, server.api_base)
        summary = sweep(str(cfg))
        assert summary["requests"] == 6 and len(state.seen) == 6
        combine = sorted(c.split("\n")[0] for c in state.contents() if re.search(r"What is \d+\+\d+\?", c))
        assert combine == ["What is 3+9?", "What is 5+7?"]
        assert verdicts(tmp_path) == {"split_3_8": ("correct", "12"), "split_1_4": ("correct", "12")}

        again = sweep(str(cfg))
        assert again["sent"] == 0 and len(state.seen) == 6


def test_chains_sharing_a_request_count_as_answered_and_the_rerun_runs_without_prefect(tmp_path):
    """A request id hashes what is sent, not the trial: every answer 1, both trials' combine step
    asks "What is 1+1?", one request for two trials. The rerun finds both chains answered and calls
    nothing, without a flow run (the ledger look-up reads each trial's steps from run_requests)."""
    state = FakeProvider(responder=lambda body: "Answer: 1")
    with FakeServer(state) as server:
        cfg = config(tmp_path, server.api_base)
        sweep(str(cfg))
        combine = [c for c in state.contents() if c.split("\n")[0] == "What is 1+1?"]
        assert len(combine) == 1, state.contents()
        seen = len(state.seen)
        again = run_cli("sweep", "--config", str(cfg))
        assert again.returncode == 0, again.stderr
        assert "prefect flow run: none (every answer was in the ledger)" in again.stdout
        assert len(state.seen) == seen


def test_wrong_segment_answer_propagates_into_the_third_request(tmp_path):
    # The 5-ones segment (split_3_8's first) is answered 6: the combine call must ask 6+7.
    state = FakeProvider(responder=scripted(wrong_segment_length=5))
    with FakeServer(state) as server:
        sweep(str(config(tmp_path, server.api_base)))
    combine = sorted(c.split("\n")[0] for c in state.contents() if re.search(r"What is \d+\+\d+\?", c))
    assert combine == ["What is 3+9?", "What is 6+7?"]
    assert verdicts(tmp_path) == {"split_3_8": ("wrong", "13"), "split_1_4": ("correct", "12")}

    con = Lake(str(tmp_path / "wh" / "lake")).connect()
    try:
        linked = query(con, """
            SELECT rr.step, count(*) AS n FROM run_requests rr JOIN items i USING (item_id)
            WHERE i.variant = 'split_3_8' GROUP BY rr.step ORDER BY rr.step""")
    finally:
        con.close()
    assert linked == [{"step": "combine", "n": 1}, {"step": "segment_1", "n": 1}, {"step": "segment_2", "n": 1}]


def test_unparsable_segment_makes_the_item_unparsable_not_wrong(tmp_path):
    def respond(body):
        if last_user(body).startswith("What is 1+1+1?"):
            return "I cannot say."
        return scripted(None)(body)

    state = FakeProvider(responder=respond)
    with FakeServer(state) as server:
        summary = sweep(str(config(tmp_path, server.api_base)))
    # split_1_4 stops after its unparsable first segment: 2 + 3 requests, no combine for it.
    assert summary["requests"] == 5
    assert verdicts(tmp_path) == {"split_3_8": ("correct", "12"), "split_1_4": ("unparsable", None)}


def test_a_segment_cut_at_the_token_limit_stops_the_chain_as_truncated(tmp_path):
    # split_1_4's first segment (1+1+1) repeats "1+" until the token limit and happens to end on 3,
    # its own gold: no stated answer, so nothing to build the combine request from.
    cut = "What is 1+1+1?"

    def respond(body):
        return "Adding: " + "1+" * 30 + "3" if last_user(body).startswith(cut) else scripted(None)(body)

    state = FakeProvider(responder=respond, finish_reason=lambda body: "length" if last_user(body).startswith(cut)
                         else "stop")
    with FakeServer(state) as server:
        summary = sweep(str(config(tmp_path, server.api_base)))
    assert summary["requests"] == 5  # split_1_4: its two segments, no combine
    assert verdicts(tmp_path) == {"split_3_8": ("correct", "12"), "split_1_4": ("truncated", None)}
    con = Lake(str(tmp_path / "wh" / "lake")).connect()
    try:
        steps = query(con, "SELECT variant, step, step_status FROM associativity_steps ORDER BY variant, step_order")
        calls = query(con, """SELECT step, n_truncated, n_not_run FROM associativity_calls
                               WHERE variant = 'split_1_4' AND step IN ('segment_1', 'combine', 'item') ORDER BY step""")
    finally:
        con.close()
    assert [(s["variant"], s["step"], s["step_status"]) for s in steps] == [
        ("split_1_4", "segment_1", "truncated"), ("split_1_4", "segment_2", "correct"),
        ("split_1_4", "combine", "not_run"), ("split_3_8", "segment_1", "correct"),
        ("split_3_8", "segment_2", "correct"), ("split_3_8", "combine", "correct")]
    assert calls == [{"step": "combine", "n_truncated": 0, "n_not_run": 1},
                     {"step": "item", "n_truncated": 1, "n_not_run": 0},
                     {"step": "segment_1", "n_truncated": 1, "n_not_run": 0}]
