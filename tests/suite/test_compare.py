"""compare(): structure, shape, dtype and value rules, and details a person can act on."""

import math

import pytest
import torch

from kbx.suite import tensors
from kbx.suite.compare import OneStep, as_tensors, compare
from kbx.suite.task import Tolerance
from kbx.suite.tensors import Unstored
from kbx.suite.verdict import Reject, Verdict

TOL = Tolerance(rtol=1e-5, atol=1e-6)
EXACT = Tolerance(rtol=0.0, atol=0.0)


def verdict_of(got, want, tol=TOL):
    try:
        compare(got, want, tol)
    except Reject as r:
        return r.verdict, r.detail
    return Verdict.PASSED, ""


def test_equal_tensors_pass_and_nan_equals_nan():
    want = torch.tensor([1.0, math.nan, math.inf, -math.inf, 0.0])
    assert verdict_of(want.clone(), want)[0] == Verdict.PASSED


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1.0001])
def test_special_values_must_match(bad):
    want = torch.tensor([1.0, 2.0])
    got = torch.tensor([bad, 2.0])
    v, detail = verdict_of(got, want)
    assert v == Verdict.MISMATCH
    assert "1/2 elements" in detail and "worst at (0,)" in detail


def test_inf_sign_matters():
    v, _ = verdict_of(torch.tensor([-math.inf]), torch.tensor([math.inf]))
    assert v == Verdict.MISMATCH


def test_shape_dtype_and_structure():
    want = torch.zeros(3, 4)
    assert verdict_of(torch.zeros(12), want)[0] == Verdict.WRONG_SHAPE
    assert verdict_of(torch.zeros(3, 4, dtype=torch.float64), want)[0] == Verdict.WRONG_DTYPE
    assert verdict_of((want, want), want)[0] == Verdict.WRONG_SHAPE
    assert verdict_of(want, (want, want))[0] == Verdict.WRONG_SHAPE
    assert verdict_of("<object of type Foo>", want)[0] == Verdict.WRONG_SHAPE


def test_tolerance_is_relative_plus_absolute():
    want = torch.tensor([1000.0, 0.0])
    assert verdict_of(torch.tensor([1000.009, 5e-7]), want)[0] == Verdict.PASSED
    assert verdict_of(torch.tensor([1000.02, 0.0]), want)[0] == Verdict.MISMATCH


def test_integers_compare_exactly():
    want = torch.tensor([1, 2, 3])
    assert verdict_of(torch.tensor([1, 2, 4]), want, Tolerance(1.0, 1.0))[0] == Verdict.MISMATCH


def test_nested_outputs_name_the_element():
    want = (torch.ones(2), torch.ones(3))
    v, detail = verdict_of((torch.ones(2), torch.zeros(3)), want)
    assert v == Verdict.MISMATCH and detail.startswith("output[1]")


def test_complex_outputs_use_the_tolerance():
    want = torch.tensor([1 + 1j, 2 - 1j], dtype=torch.complex64)
    assert verdict_of(want * (1 + 1e-7), want)[0] == Verdict.PASSED
    assert verdict_of(want * 1.01, want)[0] == Verdict.MISMATCH


def test_python_scalars_compare_as_tensors():
    assert verdict_of(2.0, torch.tensor(2.0))[0] == Verdict.PASSED


def test_structure_alone_against_meta_tensors():
    """``values=False`` (a property checker judges the values): shapes, dtypes and sequence
    lengths still count, against the meta tensors of ``reference.output_structure``."""
    want = (torch.empty(3, 4, device="meta"), torch.empty(4, dtype=torch.int64, device="meta"))
    compare((torch.full((3, 4), float("nan")), torch.arange(4)), want, EXACT, values=False)
    for got, verdict in (
        ((torch.zeros(3, 5), torch.arange(4)), Verdict.WRONG_SHAPE),
        ((torch.zeros(3, 4), torch.arange(4, dtype=torch.int32)), Verdict.WRONG_DTYPE),
        ((torch.zeros(3, 4),), Verdict.WRONG_SHAPE),
    ):
        with pytest.raises(Reject) as caught:
            compare(got, want, EXACT, values=False)
        assert caught.value.verdict == verdict


def test_a_tensor_subclass_is_named_in_the_detail():
    class Lazy(torch.Tensor):
        pass

    got = tensors.to_cpu(torch.zeros(2).as_subclass(Lazy))
    v, detail = verdict_of(got, torch.zeros(2))
    assert v == Verdict.WRONG_SHAPE
    assert detail == "output: expected a tensor, got tensor subclass Lazy"


STEP_TOL = Tolerance(rtol=1e-4, atol=1e-5)


def stepped(got, want, size=0.5, share=1e-5, tol=STEP_TOL):
    """``verdict_of`` with a quantization step of ``size`` (a number or a tensor)."""
    try:
        compare(got, want, tol, step=OneStep(lambda: size, share))
    except Reject as r:
        return r.verdict, r.detail
    return Verdict.PASSED, ""


def test_a_few_elements_one_step_off_pass():
    """At most 1 in 100,000 elements (at least one) may be up to one step off beyond the
    tolerance; without the step the same output is a mismatch."""
    want = torch.linspace(-1, 1, 300_000)
    got = want.clone()
    got[[5, 70_000, 299_999]] += torch.tensor([0.5, -0.5, 0.49])  # within one step of 0.5
    assert verdict_of(got, want, STEP_TOL)[0] == Verdict.MISMATCH
    assert stepped(got, want) == (Verdict.PASSED, "")
    # the step is per element: a tensor that broadcasts to the output
    rows = torch.full((3, 100_000), 0.5)
    assert stepped(got.reshape(3, -1), want.reshape(3, -1), rows[:, :1])[0] == Verdict.PASSED


def test_two_steps_off_fails_and_says_so():
    want = torch.linspace(-1, 1, 1000)
    got = want.clone()
    got[7] += 1.0  # two steps of 0.5
    v, detail = stepped(got, want)
    assert v == Verdict.MISMATCH
    assert "plus one quantization step" in detail and "one step there is 0.5" in detail
    assert "worst at (7,)" in detail


def test_too_many_elements_one_step_off_fail():
    want = torch.linspace(-1, 1, 300_000)
    got = want.clone()
    got[:4] += 0.25  # 4 elements: more than the 3 allowed
    v, detail = stepped(got, want)
    assert v == Verdict.MISMATCH
    assert "4/300000 elements" in detail and "only 3 may be" in detail
    got[3] = want[3]
    assert stepped(got, want)[0] == Verdict.PASSED


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_nan_or_inf_never_hides_in_a_step(bad):
    want = torch.linspace(-1, 1, 1000)
    got = want.clone()
    got[3] = bad
    v, detail = stepped(got, want, size=1e30)
    assert v == Verdict.MISMATCH and "worst at (3,)" in detail
    nan_want = want.clone()
    nan_want[3] = math.nan
    assert stepped(want, nan_want, size=1e30)[0] == Verdict.MISMATCH  # finite where NaN is due


def test_int8_codes_one_step_off():
    """An int8 output compares exactly, but for one code on a few elements."""
    want = torch.arange(-100, 100, dtype=torch.int8)
    got = want.clone()
    got[10] += 1
    assert verdict_of(got, want, EXACT)[0] == Verdict.MISMATCH
    assert stepped(got, want, size=1.0, tol=EXACT)[0] == Verdict.PASSED
    got[10] += 1
    assert stepped(got, want, size=1.0, tol=EXACT)[0] == Verdict.MISMATCH


def test_steps_as_factors_never_multiplied_out():
    """A step given as factors (a row scale and a column scale) is their product."""
    want = torch.zeros(4, 5)
    got = want.clone()
    got[2, 3] = 0.59
    rows, cols = torch.tensor([[1.0], [1.0], [2.0], [1.0]]), torch.full((1, 5), 0.3)
    assert stepped(got, want, (rows, cols))[0] == Verdict.PASSED  # step 0.6 there
    assert stepped(got, want, (rows, cols[:, :1] * 0.9))[0] == Verdict.MISMATCH  # 0.54


@pytest.mark.parametrize(
    ("got", "verdict", "detail"),
    [
        (2**63, Verdict.WRONG_SHAPE, "output: expected a tensor, got int"),
        (-(2**63) - 1, Verdict.WRONG_SHAPE, "output: expected a tensor, got int"),
        (
            Unstored("a torch.uint32 tensor", "torch.uint32", (2,)),
            Verdict.WRONG_DTYPE,
            "output: dtype torch.uint32 (a torch.uint32 tensor), expected torch.float32",
        ),
        (
            Unstored("a sparse tensor", "torch.float32", (2,)),
            Verdict.WRONG_SHAPE,
            "output: expected a tensor, got a sparse tensor",
        ),
        (
            Unstored("a torch.uint32 tensor", "torch.uint32", (3,)),
            Verdict.WRONG_SHAPE,
            "output: expected a tensor, got a torch.uint32 tensor",
        ),
        (Unstored("outputs nested deeper than 16"), Verdict.WRONG_SHAPE, "nested deeper"),
    ],
)
def test_what_kbx_could_not_store_or_make_a_tensor_of_is_a_verdict(got, verdict, detail):
    """Outputs the child could not store (placeholders) and ints no tensor holds are the
    candidate's wrong shape or dtype, never an exception of kbx's comparison."""
    for values in (True, False):
        with pytest.raises(Reject) as caught:
            compare(got, torch.zeros(2), TOL, values=values)
        assert caught.value.verdict == verdict and detail in caught.value.detail
    assert verdict_of((got,), (torch.zeros(2),))[0] == verdict


def test_scalars_become_the_tensors_they_stand_for_through_sequences():
    got = as_tensors((1.5, [2, True], None, 2**70, "x"))
    assert isinstance(got, tuple) and isinstance(got[1], list)
    assert got[0].dtype == torch.float32 and got[1][0].dtype == torch.int64
    assert got[1][1].dtype == torch.bool and got[2:] == (None, 2**70, "x")
