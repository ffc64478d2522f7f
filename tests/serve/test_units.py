"""The service's parts without HTTP: the queue's order, once-only completion and recovery; the
tiers' Evaluator settings; the tokens file."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kbx.core.config import Tuning
from kbx.serve.auth import TokenError, Tokens, digest
from kbx.serve.queue import NewJob, Queue, content_key
from kbx.serve.tiers import THOROUGH_REL_CI, profile


def new(code: str, priority: int = 0) -> NewJob:
    key = content_key("Activation/relu", code, "quick", 1, "0", "cpu")
    return NewJob("Activation/relu", code, "quick", priority, {}, key)


def test_jobs_are_claimed_by_priority_then_age_and_twins_wait(tmp_path: Path) -> None:
    q = Queue(tmp_path / "q.sqlite")
    ids = [a.id for a in q.add("b", [new("a"), new("b", priority=3), new("c"), new("b", 3)])]
    first = q.claim()
    assert first is not None and first.id == ids[1]
    second = q.claim()
    assert second is not None and second.id == ids[0]  # ids[3] waits: its key is running
    answered = q.complete(first, {"verdict": "passed"}, cache=True)
    assert [i for i, _ in answered] == [ids[1], ids[3]]
    assert q.job(ids[3])["cached_from"] == ids[1]  # type: ignore[index]
    assert q.complete(first, {"verdict": "mismatch"}, cache=True) == []  # once only
    assert q.add("c", [new("b")])[0].cached


def test_recover_requeues_what_was_running(tmp_path: Path) -> None:
    q = Queue(tmp_path / "q.sqlite")
    q.add("b", [new("a")])
    job = q.claim()
    assert job is not None and q.count("running") == 1
    assert Queue(tmp_path / "q.sqlite").recover() == 1
    assert q.count("queued") == 1 and q.complete(job, {}, cache=False) == []
    again = q.claim()
    assert again is not None and again.id == job.id
    assert q.job(job.id)["attempts"] == 2  # type: ignore[index]


def test_tiers_choose_timing_and_its_precision() -> None:
    base = Tuning()
    assert not profile("quick", "cuda", base).perf
    standard, thorough = profile("standard", "cuda", base), profile("thorough", "cuda", base)
    assert standard.perf and standard.tuning == base
    assert thorough.perf and thorough.tuning.timing_rel_ci == THOROUGH_REL_CI < base.timing_rel_ci
    assert profile("thorough", "cpu", base) == profile("quick", "cpu", base)  # nothing timed
    with pytest.raises(ValueError, match="no tier 'fast'"):
        profile("fast", "cuda", base)


def test_tokens_are_kept_hashed_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"# comment\n\nplain-token\nsha256:{digest('hashed-token')}\n")
    tokens = Tokens.read(path)
    assert "plain-token" not in tokens.digests
    assert tokens.allows("Bearer plain-token") and tokens.allows("bearer hashed-token")
    assert not tokens.allows("Bearer other") and not tokens.allows(None)
    assert not tokens.allows("plain-token") and not tokens.allows("Basic plain-token")
    path.write_text("sha256:xyz\n")
    with pytest.raises(TokenError, match="tokens:1: not a sha256 digest"):
        Tokens.read(path)
    path.write_text("# none\n")
    with pytest.raises(TokenError, match="no tokens"):
        Tokens.read(path)


def test_the_thorough_knobs_reach_the_child_and_tighten_the_timing() -> None:
    from kbx.core.config import EvalConfig
    from kbx.gpu import clock
    from kbx.sandbox import childenv

    tuning = profile("thorough", "cuda", Tuning()).tuning
    child = childenv.settings(EvalConfig(device="cuda", tuning=tuning))
    assert (child.timing_rel_ci, child.timing_budget_ms) == (
        tuning.timing_rel_ci,
        tuning.timing_budget_ms,
    )

    def reps(rel_ci: float) -> int:
        rng = random.Random(0)  # a clock with 10% noise, in ms
        timing = clock.measure([lambda: None], lambda call: rng.gauss(1.0, 0.1), rel_ci=rel_ci)
        return timing.reps

    assert reps(0.1) == 10 < reps(0.01) < reps(THOROUGH_REL_CI)  # tighter: more calls
