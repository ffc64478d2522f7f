"""The trusted judge: whatever a candidate hands back, the verdict is the candidate's
(``mismatch``, ``wrong_shape``, ``wrong_dtype``) with a reason, never an exception of kbx's
(``harness_error``); and on quantized outputs a right kernel one quantization step away from
torch on one element passes (Quantization/attention_w8a8 on an H100) while a wrong one does not."""

import dataclasses
import math

import pytest
import torch

from kbx.evaluate import check
from kbx.evaluate.check import judge_case
from kbx.evaluate.references import References
from kbx.suite import find
from kbx.suite.tensors import Unstored, leaves
from kbx.suite.verdict import Reject, Verdict
from tests.conftest import REFERENCE

REFS = References()


def verdict(task, runs, index=0):
    try:
        check.judge_case(task, "cases", index, runs, refs=REFS)
    except Reject as r:
        return r.verdict, r.detail
    return Verdict.PASSED, ""


def test_a_random_stream_that_ignores_the_seed_but_in_a_few_elements_is_a_mismatch():
    """A random task's third run (another torch seed) must change at least ``MIN_SEED_CHANGE``
    of the elements: one element keyed by the seed and the rest a fixed stream is the same
    output whatever the seed (tests/exploits/seed_tweak_stream); a fresh stream passes."""
    task = find("Random/rand")
    shape = task.cases[0].shape
    fixed = torch.rand(shape, generator=torch.Generator().manual_seed(3))
    tweaked = fixed.clone()
    tweaked.view(-1)[0] = 0.5 if float(fixed.view(-1)[0]) != 0.5 else 0.25
    got, detail = verdict(task, [fixed, fixed.clone(), tweaked])
    assert got == Verdict.MISMATCH and "change with torch's seed" in detail, detail
    fresh = torch.rand(shape, generator=torch.Generator().manual_seed(4))
    assert verdict(task, [fixed, fixed.clone(), fresh]) == (Verdict.PASSED, "")


def test_a_lattice_stream_for_rand_is_a_mismatch():
    """frac(s + i * a) with a = (3 - sqrt(3)) / 6 has a uniform's moments, histogram and lag-1
    correlation, and follows the seed (tests/exploits/lattice_rand): its correlations at other
    lags and its pairs of consecutive values give it away; torch's own stream passes."""
    task = find("Random/rand")
    shape = task.cases[0].shape
    step = round((3 - math.sqrt(3)) / 6 * 2**32)

    def lattice(seed: int) -> torch.Tensor:
        v = (seed + torch.arange(math.prod(shape), dtype=torch.int64) * step) & 0xFFFFFFFF
        return ((v >> 8).to(torch.float32) * 2.0**-24).reshape(shape)

    got, detail = verdict(task, [lattice(5), lattice(5), lattice(2**30 + 17)])
    assert got == Verdict.MISMATCH and "correlated" in detail, detail
    fresh = [torch.rand(shape, generator=torch.Generator().manual_seed(s)) for s in (4, 4, 9)]
    assert verdict(task, fresh) == (Verdict.PASSED, "")


def single_matrix_case(task):
    return next(i for i, c in enumerate(task.cases) if len(c.params.get("shape", (0, 0))) == 2)


def test_a_python_scalar_reaches_a_tasks_check_as_the_tensor_it_stands_for():
    """det's check calls ``.to()`` on the output: a Python float for its 0-d float32 output is
    judged on its value (here wrong), not an AttributeError in kbx's judge."""
    task = find("LinearAlgebra/det")
    index = single_matrix_case(task)
    inputs, want = REFS.expected(task, "cases", index)
    assert want.dim() == 0
    got, detail = verdict(task, [0.0], index)
    assert got == Verdict.MISMATCH and "det" in detail
    assert verdict(task, [want.item()], index)[0] == Verdict.PASSED


def test_an_exception_in_a_tasks_check_is_the_outputs_mismatch_naming_it():
    def fragile(inputs, got):
        raise ValueError("no such layout")

    task = dataclasses.replace(find("LinearAlgebra/det"), check=fragile)
    got, detail = verdict(task, [torch.zeros(())], single_matrix_case(task))
    assert got == Verdict.MISMATCH
    assert detail == "the check cannot judge these outputs (ValueError: no such layout)"


def test_kbx_running_out_of_memory_in_a_check_stays_kbxs_fault():
    def hungry(inputs, got):
        raise MemoryError

    task = dataclasses.replace(find("LinearAlgebra/det"), check=hungry)
    with pytest.raises(MemoryError):
        verdict(task, [torch.zeros(())], single_matrix_case(task))


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (2**63, Verdict.WRONG_SHAPE),
        ("<object of type Foo>", Verdict.WRONG_SHAPE),
        (Unstored("a torch.uint32 tensor", "torch.uint32", (4099,)), Verdict.WRONG_DTYPE),
        (Unstored("outputs nested deeper than 16"), Verdict.WRONG_SHAPE),
        ((torch.zeros(4099),), Verdict.WRONG_SHAPE),
        (torch.zeros(4099, dtype=torch.float64), Verdict.WRONG_DTYPE),
    ],
)
def test_odd_outputs_of_an_element_wise_task_are_the_candidates_verdicts(output, expected):
    task = find("Activation/gelu")
    assert verdict(task, [output])[0] == expected


SPECIAL = {"nan": math.nan, "inf": math.inf}


def constant_like(want, inputs, kind):
    """Outputs of the reference's structure, shapes and dtypes: every tensor all zeros, all ones,
    all NaN or all infinity (floating tensors; zeros otherwise), or (``identity``) a copy of the
    first input tensor of its shape and dtype (zeros where there is none); Python numbers 0 or 1
    (NaN or infinity for a float)."""
    if isinstance(want, tuple | list):
        return type(want)(constant_like(w, inputs, kind) for w in want)
    if isinstance(want, torch.Tensor):
        if kind == "identity":
            same = [
                t
                for t in leaves((inputs.args, list(inputs.kwargs.values())))
                if t.shape == want.shape and t.dtype == want.dtype
            ]
            if same:
                return same[0].detach().clone()
        if kind in SPECIAL and (want.dtype.is_floating_point or want.dtype.is_complex):
            return torch.full(want.shape, SPECIAL[kind], dtype=want.dtype)
        fill = torch.ones if kind == "ones" else torch.zeros
        return fill(want.shape, dtype=want.dtype)
    if isinstance(want, float) and kind in SPECIAL:
        return SPECIAL[kind]
    if isinstance(want, bool | int | float):
        return type(want)(kind == "ones")
    return want


def test_no_constant_or_identity_output_passes_any_deterministic_task():
    """All-zero, all-one, all-NaN, all-infinity and identity outputs (a constant answer on every
    task, this year's public exploit; a property check that compares with ``>`` lets NaN by)
    fail every deterministic task of the suite: some case of each rejects each, judged
    in-process by the trusted judge alone (no children)."""
    from kbx.suite import load_suite

    passing = []
    for task in load_suite():
        task = find(task) if isinstance(task, str) else task
        if task.random:
            continue
        for kind in ("zeros", "ones", "identity", *SPECIAL):
            for index in range(len(task.cases)):
                inputs, want = REFS.expected(task, "cases", index)
                output = constant_like(want, inputs, kind)
                if verdict(task, [output], index)[0] != Verdict.PASSED:
                    break
            else:
                passing.append(f"{task.id}: {kind}")
        REFS.forget(task)
    assert not passing, passing


TASK = find("Quantization/attention_w8a8")
ONE_OFF = """

@triton.jit
def _nudge(o_ptr):
    tl.store(o_ptr, tl.load(o_ptr) + 1e-3)  # within one step of V (max_j sv[j] >= 0.01 here)


def attention_w8a8(query, key, value):  # the reference solution, one element 1e-3 off
    out = _solution(query, key, value)
    _nudge[(1,)](out)
    return out
"""


def judged(output, index=0, refs=None):
    try:
        judge_case(TASK, "cases", index, [output], refs=refs)
    except Reject as r:
        return r.verdict, r.detail
    return Verdict.PASSED, ""


@pytest.fixture(scope="module")
def refs():
    return References()


def test_the_h100_mismatch_one_element_at_5_8e_4_relative_passes(refs):
    """What the H100 saw on the reference solution: 1 element at 5.8e-4 relative against rtol
    1e-4.  It passes now; two such elements in a case of 14,208 (1 allowed) do not."""
    _, want = refs.expected(TASK, "cases", 0)
    got = want.clone()
    flat, big = got.view(-1), torch.topk(want.abs().reshape(-1), 2).indices
    flat[big[0]] *= 1 + 5.8e-4
    assert judged(got, refs=refs) == (Verdict.PASSED, "")
    flat[big[1]] *= 1 + 5.8e-4
    verdict, detail = judged(got, refs=refs)
    assert verdict == Verdict.MISMATCH and "only 1 may be" in detail


@pytest.mark.parametrize("wrong", ["zeros", "noise", "float attention"])
def test_wrong_outputs_still_fail(refs, wrong):
    inputs, want = refs.expected(TASK, "cases", 0)
    q, k, v = inputs.args
    got = {
        "zeros": lambda: torch.zeros_like(want),
        "noise": lambda: want + 0.01 * torch.randn(want.shape, generator=torch.Generator()),
        "float attention": lambda: torch.softmax(q @ k.transpose(-1, -2) / 8, -1) @ v,
    }[wrong]()
    assert judged(got, refs=refs)[0] == Verdict.MISMATCH


def test_the_reference_solution_one_element_one_step_off_passes(run_source, tmp_path):
    """The Triton reference solution, through the real pipeline on the CPU, with one output
    element moved within one step of V: passed (a mismatch before the step was in the
    contract)."""
    source = (REFERENCE / "Quantization" / "attention_w8a8.py").read_text()
    folder = tmp_path / "one_off" / "Quantization"
    folder.mkdir(parents=True)
    solution = source.replace("def attention_w8a8(", "def _solution(")
    (folder / "attention_w8a8.py").write_text(solution + ONE_OFF)
    (record,) = run_source(folder.parent, jobs=1)
    assert record["verdict"] == "passed", record["detail"]
