"""Fusion/fused_relu_sqrt: sqrt(relu(x)) element-wise, optionally updating the input in place."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, negatives, huge and tiny values, infinities and NaN.
SPECIALS = (0.0, -0.0, -1.0, -1e30, 1e30, 1e-30, float("inf"), float("-inf"), float("nan"))


def reference(input, inplace=False, out=None):
    r = torch.nn.functional.relu(input, inplace=inplace)
    return torch.sqrt(r, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    """params: scale of the draws, inplace, out (a zero tensor to write into)."""
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS, scale=case.params.get("scale", 1.0))
    # `out` travels positionally so that its final contents are judged too.
    out = torch.zeros_like(x) if case.params.get("out") else None
    return Inputs((x, bool(case.params.get("inplace", False)), out))


TASK = Task(
    entry="fused_relu_sqrt",
    signature="fused_relu_sqrt(input: Tensor, inplace: bool=False, out: Tensor=None) -> Tensor",
    description=(
        "Element-wise square root of the rectified input: y = sqrt(max(x, 0)) for a float32 "
        "tensor `input` of any shape, returned as a float32 tensor of the same shape. Semantics "
        "are those of torch.sqrt(torch.nn.functional.relu(x, inplace)): negatives and -inf give "
        "0, +inf gives +inf, NaN stays NaN, signed zeros may come out with either sign. With "
        "inplace=True the ReLU overwrites `input` (its final contents must be relu(x), as in "
        "PyTorch); with inplace=False `input` must be left unchanged. If `out` (a float32 tensor "
        "of the input's shape) is given, the square roots are written into it and it is "
        "returned. The final contents of `input` and `out` are judged as well as the returned "
        "tensor. Cases: odd 1-D to 3-D shapes, normal, outlier and corner values (signed zeros, "
        "+-1e30, 1e-30, +-inf, NaN), inplace=True, `out`, and both together."
    ),
    math=r"y_i = \sqrt{\max(x_i, 0)}",
    precision=(
        "float32 in and out, computed in float32 (a correctly rounded or 1-ulp sqrt); "
        "rtol=1e-5, atol=1e-6. NaN must appear exactly where torch puts it."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier", params={"inplace": True}),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2047, 5), seed=4, dist="corner", params={"out": True, "inplace": True}),
        Case((257, 31), seed=5, params={"out": True, "scale": 1e-3}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8192, 8192), seed=12, params={"inplace": True}),
    ),
    flops=lambda c: 2.0 * numel(c.shape),
    bytes_moved=lambda c: (12.0 if c.params.get("inplace") else 8.0) * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(0, 2),
)
