"""kbx.run.twins: a task's identical code is evaluated once per Evaluator and every twin is
answered from that result, in the same batch (real children on the CPU) and in later ones;
kbx's own faults and verdicts another candidate may have caused are not remembered."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pytest

from kbx.core.candidate import Candidate
from kbx.core.config import Limits, Tuning
from kbx.core.result import Result
from kbx.run.evaluator import Evaluator
from kbx.suite.verdict import START_FAILED, Verdict
from tests.conftest import BAD, REFERENCE

TUNING = Tuning(jobs=2, limits=Limits(import_s=60, case_s=60))


class Counting:
    """A backend in front of another: the candidates it was given to evaluate."""

    def __init__(self, inner) -> None:
        self.inner, self.given = inner, []

    def submit(self, candidates: Iterable[Candidate], on_baseline=None):
        def seen() -> Iterator[Candidate]:
            for cand in candidates:
                self.given.append(cand)
                yield cand

        return self.inner.submit(seen(), on_baseline)

    def close(self, cancel: bool = False) -> None:
        self.inner.close(cancel)


def candidates() -> list[Candidate]:
    """Three distinct codes, two of them sent three and two times, one a mismatch."""
    relu = (REFERENCE / "Activation" / "relu.py").read_text()
    add = (REFERENCE / "Math" / "add.py").read_text()
    wrong = (BAD / "mismatch" / "Activation" / "relu.py").read_text()
    sent = [("relu", relu), ("add", add), ("relu", relu), ("wrong", wrong), ("relu", relu)]
    sent += [("wrong", wrong)]
    task = {"relu": "Activation/relu", "add": "Math/add", "wrong": "Activation/relu"}
    return [
        Candidate(f"group:{i}", task[name], code, meta={"sample": i})
        for i, (name, code) in enumerate(sent)
    ]


@pytest.mark.parametrize("on", [True, False])
def test_each_distinct_code_is_evaluated_once_and_every_twin_gets_its_verdict(on):
    """Six candidates, three distinct codes: three children with twins on, every twin the
    verdict and detail of its first, its own source and meta, ``answered_from`` the first's
    source; a second batch of the same codes is answered without a child.  Off: six."""
    sent = candidates()
    with Evaluator("cpu", baselines=None, tuning=TUNING.model_copy(update={"twins": on})) as ev:
        ev.start()
        backend = ev.backend = Counting(ev.backend)
        got = {c.source: r for c, r in ev.pairs(sent)}
        evaluated = [c.source for c in backend.given]
        again = {c.source: r for c, r in ev.pairs(sent[:2])}
    assert set(got) == {c.source for c in sent}
    assert evaluated == (["group:0", "group:1", "group:3"] if on else [c.source for c in sent])
    for cand in sent:
        result = got[cand.source]
        want = Verdict.MISMATCH if cand.source in ("group:3", "group:5") else Verdict.PASSED
        assert result.verdict == want, result.detail
        assert result.source == cand.source and result.meta["sample"] == cand.meta["sample"]
        assert result.candidate_sha256 == cand.sha256
        first = {"group:2": "group:0", "group:4": "group:0", "group:5": "group:3"}.get(cand.source)
        assert result.meta.get("answered_from") == (first if on else None)
        if first and on:
            assert result.detail == got[first].detail and result.duration_s == 0.0
            assert result.stage_s == {}
    assert [r.verdict for r in again.values()] == [Verdict.PASSED, Verdict.PASSED]
    if on:
        assert len(backend.given) == 3  # answered from the first batch
        assert again["group:0"].meta["answered_from"] == "group:0"


class Scripted:
    """A backend whose results follow a script by source: (verdict, detail) for each call."""

    def __init__(self, script: dict[str, list[tuple[Verdict, str]]], device: str = "cpu") -> None:
        self.script, self.device, self.given = script, device, []

    def submit(self, candidates, on_baseline=None):
        for cand in candidates:
            self.given.append(cand.source)
            verdict, detail = self.script[cand.source].pop(0)
            yield cand, Result.of(cand, self.device, verdict, detail, "done")

    def close(self, cancel: bool = False) -> None:
        pass


def twin(source: str, code: str = "x = 1") -> Candidate:
    return Candidate(source, "Math/add", code)


def test_a_suspect_first_is_evaluated_again_before_its_twins_are_answered():
    wall = "no progress for 41 s (wall clock) during cases 0"
    backend = Scripted({"a": [(Verdict.TIMEOUT, wall), (Verdict.PASSED, "alone")]})
    with Evaluator("cpu", backend=backend) as ev:
        results = list(ev.pairs([twin("a"), twin("b")]))
    assert backend.given == ["a", "a"]
    assert [(c.source, r.verdict) for c, r in results] == [
        ("a", Verdict.PASSED),
        ("b", Verdict.PASSED),
    ]
    assert results[1][1].meta["answered_from"] == "a"
    assert results[1][1].rerun["verdict"] == "timeout"


def test_kbx_s_own_fault_and_a_suspect_verdict_are_not_remembered_for_later_batches():
    script = {
        "a": [(Verdict.HARNESS_ERROR, f"{START_FAILED} (exit 70): no module named x")],
        "b": [(Verdict.PASSED, "ok")],
        "c": [(Verdict.OUT_OF_MEMORY, "CUDA out of memory")],  # suspect on a GPU
        "d": [(Verdict.PASSED, "ok")],
    }
    backend = Scripted(script, device="cuda")
    with Evaluator("cpu", backend=backend, tuning=Tuning(rerun_alone=False)) as ev:
        first = list(ev.pairs([twin("a"), twin("c", "y = 2")]))
        later = list(ev.pairs([twin("b"), twin("d", "y = 2")]))
    assert [r.verdict for _, r in first] == [Verdict.HARNESS_ERROR, Verdict.OUT_OF_MEMORY]
    assert [r.verdict for _, r in later] == [Verdict.PASSED, Verdict.PASSED]
    assert not any("answered_from" in r.meta for _, r in later)
    assert backend.given == ["a", "c", "b", "d"]
