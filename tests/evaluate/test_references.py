"""The judge's reference outputs: computed ahead while the candidate runs, the same as computed
on demand."""

import threading

import pytest
import torch

from kbx.evaluate import check as reference
from kbx.evaluate import references
from kbx.evaluate.references import References
from kbx.gpu.placement import CPU, Placement
from kbx.suite import find
from kbx.suite.verdict import Reject, Verdict
from tests.conftest import keyed

TIMED_CPU = Placement(timed=True)


def test_prefetched_outputs_are_the_ones_computed_on_demand():
    refs = References()
    task = find("Math/add")
    refs.prefetch(task, CPU)
    got = [refs.expected(task, "cases", i) for i in range(len(task.cases))]
    refs.forget(task)
    refs.cache.clear()
    for i, (inputs, want) in enumerate(got):
        inputs_now, want_now = refs.compute(task, "cases", i)
        assert reference.outputs_equal(want, want_now)
        assert reference.outputs_equal(inputs.args, inputs_now.args)


def test_what_the_judge_needs_is_computed_once_and_leftovers_are_dropped(monkeypatch):
    task = find("LinearAlgebra/det")
    calls: list[tuple[str, int]] = []
    release = threading.Event()

    def compute(task, kind, index, place=CPU):
        release.wait(5)
        calls.append((kind, index))
        return None, (kind, index)

    refs = References()
    monkeypatch.setattr(refs, "compute", compute)
    refs.prefetch(task, TIMED_CPU, budget=1 << 40)  # ahead_bytes
    ahead = {k[2:] for k in refs.ahead if k[0] == task.id}
    want = {(k, i) for k in ("cases", "refill") for i in range(len(task.cases))}
    assert ahead == want | {("timed_refill", i) for i in range(len(task.bench))}
    release.set()
    assert refs.expected(task, "timed_refill", 0) == (None, ("timed_refill", 0))
    assert calls.count(("timed_refill", 0)) == 1  # taken from the prefetch, not computed again
    refs.forget(task)
    assert not [k for k in refs.ahead if k[0] == task.id]


def test_benchmark_cases_are_computed_ahead_only_within_the_byte_budget(monkeypatch):
    task = find("LinearAlgebra/det")
    sizes = [task.held_bytes(c) for c in task.bench]
    release = threading.Event()

    def compute(task, kind, index, place=CPU):
        release.wait(5)
        return None, (kind, index)

    refs = References()
    monkeypatch.setattr(refs, "compute", compute)
    refs.prefetch(task, TIMED_CPU, budget=sizes[0])  # the first only
    timed = {k[3] for k in refs.ahead if k[0] == task.id and k[2] == "timed_refill"}
    assert timed == {0}
    assert sum(refs.ahead_bytes.values()) == sizes[0]
    release.set()
    refs.expected(task, "timed_refill", 0)
    assert not refs.ahead_bytes  # taken: its bytes are free for the next task's cases
    refs.forget(task)


def test_a_failed_prefetch_is_computed_again_on_demand(monkeypatch):
    task = find("Math/add")
    failing = {"yes": True}
    refs = References()
    original = refs.compute

    def compute(task, kind, index, place=CPU):
        if failing["yes"]:
            raise RuntimeError("out of memory, say")
        return original(task, kind, index, place)

    refs = References()
    monkeypatch.setattr(refs, "compute", compute)
    refs.prefetch(task, CPU)
    key = (task.id, "cpu", "cases", 0)
    refs.ahead[key].exception(timeout=5)  # it has failed
    failing["yes"] = False
    _, want = refs.expected(task, "cases", 0)
    assert want is not None
    refs.forget(task)


def test_references_and_the_judge_wait_while_the_process_loads(monkeypatch):
    """Their first torch operations would import what the process is loading (``gpuops``)."""
    from kbx.gpu import gpuops

    refs = References()
    task = find("Math/add")
    got: list[object] = []
    gpuops.begin_loading()
    try:
        workers = [
            threading.Thread(target=lambda: got.append(refs.compute(task, "cases", 0))),
            threading.Thread(target=lambda: got.append(reference.judge(task, {}, refs=refs))),
        ]
        for w in workers:
            w.start()
        workers[0].join(0.3)
        assert not got and all(w.is_alive() for w in workers)
    finally:
        gpuops.done_loading()
    for w in workers:
        w.join(30)
    assert len(got) == 2


def test_the_judge_tells_how_long_each_kind_of_output_took():
    from kbx.sandbox.child.runner import Plan

    task = find("Activation/gelu")
    plan = Plan.build(task, CPU, False)
    outputs = {
        "cases": [[references.run_reference(task, i, c.torch_seed, "cpu")] for c, i in plan.cases],
        "refill": [[] for _ in plan.cases],  # none: not judged, not timed
    }
    spent: dict[str, float] = {}
    reference.judge(task, keyed(outputs), CPU, spent)
    assert set(spent) == {"cases", "reference"} and spent["cases"] > 0
    assert 0 < spent["reference"] <= spent["cases"]  # a part of it: the reference's outputs


def test_checked_tasks_output_structures_match_their_references():
    """For every task judged by a property checker, the structure worked out on fake tensors
    (what the judge uses at benchmark sizes instead of running the reference) is the
    reference's own on each correctness case, or None where the reference reads values (the
    reference then runs)."""
    from kbx.suite import select

    checked = [t for t in select() if t.check is not None]
    worked = 0
    for task in checked:
        for i, case in enumerate(task.cases):
            inputs = task.make_inputs(case, "cpu")
            got = references.output_structure(task, inputs)
            if got is None:
                continue
            want = references.run_reference(task, inputs, case.torch_seed, "cpu")
            assert structure(got) == structure(want), (task.id, i)
            worked += 1
    assert worked >= 0.9 * sum(len(t.cases) for t in checked)


def structure(x):
    if isinstance(x, tuple | list):
        return tuple(structure(v) for v in x)
    if isinstance(x, torch.Tensor):
        return tuple(x.shape), x.dtype
    return x


def test_a_checked_benchmark_case_is_judged_without_running_the_reference(monkeypatch):
    task = find("LinearAlgebra/svd")

    def no_run(*args, **kwargs):
        raise AssertionError("the reference ran")

    monkeypatch.setattr(references, "run_reference", no_run)
    inputs, want = References().compute(task, "timed", 0)
    assert all(t.device.type == "meta" for t in want)
    u, s, vh = (torch.empty(t.shape, dtype=t.dtype) for t in want)
    with pytest.raises(Reject) as caught:  # the structure is still demanded
        reference.verdict_on(task, inputs, want, [(u, s[..., :-1], vh)])
    assert caught.value.verdict == Verdict.WRONG_SHAPE


def test_a_stale_timed_output_says_which_contents_it_fits(monkeypatch):
    """A final timed call's output that fails its check but fits the other contents of its
    buffers is still a mismatch, and the detail says so; one that fits neither says nothing
    more."""
    task = find("Math/rsqrt")
    fits = {"timed_refill"}  # the output is right for the redrawn contents only
    asked = []

    def judge_case(task, kind, index, runs, place=CPU, refs=None, spent=None):
        asked.append(kind)
        if kind not in fits:
            raise Reject(Verdict.MISMATCH, "values differ")

    monkeypatch.setattr(reference, "judge_case", judge_case)
    outputs = {"timed": [[object()]], "timed_variant": [0]}  # the call saw the case's contents
    with pytest.raises(Reject) as got:
        reference.judge(task, keyed(outputs))
    assert got.value.verdict is Verdict.MISMATCH and asked == ["timed", "timed_refill"]
    assert "right for the other contents" in got.value.detail

    fits.clear()
    with pytest.raises(Reject) as got:
        reference.judge(task, keyed(outputs))
    assert "values differ" in got.value.detail and "other contents" not in got.value.detail


def test_only_a_random_task_s_reference_seeds_the_global_generator():
    """A deterministic task's reference leaves torch's generator as it was: its seed, taken
    without ``SEEDED``, landed between ``Random/rand``'s seed and draw in a thread beside it, and
    two different seeds then drew the same output (`kbx validate` under load)."""
    task = find("Math/rsqrt")
    torch.manual_seed(5)
    before = torch.get_rng_state()
    references.run_reference(task, task.make_inputs(task.cases[0], "cpu"), 123, "cpu")
    assert torch.equal(torch.get_rng_state(), before)
    rand = find("Random/rand")
    one = references.run_reference(rand, rand.make_inputs(rand.cases[2], "cpu"), 7, "cpu")
    two = references.run_reference(rand, rand.make_inputs(rand.cases[2], "cpu"), 7, "cpu")
    assert torch.equal(one, two)
    assert not torch.equal(torch.get_rng_state(), before)
