"""Task and Case validate themselves."""

import pytest
import torch

from kbx.suite.inputs import Draw
from kbx.suite.task import Case, Inputs, Task, Tolerance


def make_task(**over):
    fields = dict(
        entry="f",
        signature="f(x)",
        description="d",
        precision="p",
        reference=lambda x: x,
        make_inputs=lambda c, d: Inputs((torch.zeros(c.shape),)),
        cases=(Case((3,), seed=1),),
        bench=(),
        flops=lambda c: 0.0,
        bytes_moved=lambda c: 0.0,
        tolerance=Tolerance(0.0, 0.0),
    )
    fields.update(over)
    return Task(**fields)


def test_case_rejects_bad_values():
    with pytest.raises(ValueError):
        Case((0, 3), seed=1)
    with pytest.raises(ValueError):
        Case((3,), seed=1, dist="lognormal")


def test_task_rejects_duplicate_seeds_and_missing_checker():
    with pytest.raises(ValueError, match="distinct"):
        make_task(cases=(Case((3,), seed=1), Case((4,), seed=1)))
    with pytest.raises(ValueError, match="checker"):
        make_task(random=True)
    with pytest.raises(ValueError, match="at least one"):
        make_task(cases=())


def test_case_label_is_readable():
    c = Case((37, 1023), seed=2, dist="outlier", params={"approximate": "tanh"})
    assert c.label() == "37x1023 float32 outlier approximate=tanh"


def test_draws_are_deterministic_and_sequential():
    case = Case((100,), seed=5)
    a, b = Draw(case, "cpu"), Draw(case, "cpu")
    x1, x2 = a.tensor((100,)), a.tensor((100,))
    assert torch.equal(x1, b.tensor((100,))) and not torch.equal(x1, x2)


def test_corner_distribution_contains_special_values():
    x = Draw(Case((4000,), seed=9, dist="corner"), "cpu").tensor((4000,))
    assert (x == 0).any() and (x.abs() >= 1e4).any()
    assert torch.signbit(x[x == 0]).any()  # -0.0 is there too


def test_outlier_distribution_has_large_values():
    x = Draw(Case((20000,), seed=3, dist="outlier"), "cpu").tensor((20000,))
    assert x.abs().max() > 8


def test_sized_draws_put_only_large_cases_on_the_gpu():
    small, large = Case((64, 64), seed=1), Case((4096, 4096), seed=2)
    assert Draw.sized(small, "cuda").device == "cpu"
    assert Draw.sized(large, "cuda").device == "cuda"
    assert Draw.sized(large, "cpu").device == "cpu"
    a, b = Draw.sized(small, "cuda").tensor((8,)), Draw(small, "cpu").tensor((8,))
    assert torch.equal(a, b)  # correctness sizes: the same numbers as a CPU run
