"""Math/pow: element-wise power with a scalar or a broadcast tensor exponent."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, +-1, a huge value, tiny and infinite values, NaN (both for bases and exponents).
SPECIALS = (0.0, -0.0, 1.0, -1.0, 0.5, 1e4, float("inf"), float("-inf"), float("nan"))


def reference(input_tensor, exponent, out=None):
    return torch.pow(input_tensor, exponent, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    p = case.params
    x = draw.tensor(case.shape, specials=SPECIALS, scale=p.get("scale", 1.0))
    if p.get("positive"):
        x = x.abs()
    e = p.get("exponent")
    if e is None:  # a tensor exponent, broadcast against the base
        e = draw.tensor(p.get("e_shape", case.shape), specials=SPECIALS, scale=2.0)
        if p.get("integral"):
            e = e.round()  # negative bases give finite results
    # `out` travels as a positional argument so that its final contents are judged too.
    out = torch.zeros_like(x) if p.get("out") else None
    return Inputs((x, e, out))


TASK = Task(
    entry="pow",
    signature="pow(input_tensor, exponent, out=None)",
    description=(
        "Raise every element of the float32 tensor `input_tensor` to `exponent`, a Python "
        "number or a float32 tensor broadcastable against the base, as torch.pow; return a "
        "float32 tensor. C99 pow semantics (as torch): a negative base with a non-integer "
        "exponent gives NaN, pow(x, 0) = 1 even for NaN x, pow(1, y) = 1, 0 to a negative "
        "power gives +inf (-inf for -0.0 and an odd integer exponent), infinite bases and "
        "exponents follow the C rules. One deviation of torch is kept by avoiding it: with a "
        "scalar exponent of +-0.5 torch uses (r)sqrt, so no -inf base is drawn there. If `out` "
        "(a float32 tensor of the result's shape) is given, write the result into it and "
        "return it. Cases: scalar exponents 2.5, 2, 3, -1.5, 0.5 and -2; tensor exponents of "
        "the base's shape, a broadcast row of integer-valued exponents with negative bases, "
        "and corner values in both base and exponent (signed zeros, +-1, 0.5, 1e4, +-inf, NaN)."
    ),
    math=r"y_i = x_i^{e}\ \text{or}\ x_i^{e_i}",
    precision=(
        "float32 in, float32 out, computed in float32 with an accurate pow (libdevice's is "
        "about 2 ulp); rtol=1e-5, atol=1e-6 (exp2(e * log2(x)) in plain float32 loses about "
        "|e log2 x| ulp and may fail). NaN and +-inf must appear exactly where torch.pow puts "
        "them."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, params={"positive": True, "exponent": 2.5}),
        Case((37, 1023), seed=2, dist="outlier", params={"exponent": 2}),
        Case((3, 129, 65), seed=3, dist="corner", params={"exponent": 3}),
        Case((2047, 5), seed=4, dist="corner", params={"exponent": -1.5, "out": True}),
        Case((257, 31), seed=5, params={"positive": True}),
        Case((129, 65), seed=6, params={"e_shape": (65,), "integral": True, "scale": 2.0}),
        Case((33, 65), seed=7, dist="corner", params={"positive": True, "exponent": 0.5}),
        Case((9, 5, 67), seed=8, dist="corner", params={"exponent": -2}),
        Case((63, 63), seed=9, dist="corner"),
    ),
    bench=(
        Case((1 << 26,), seed=11, params={"positive": True, "exponent": 2.5}),
        Case((8192, 8192), seed=12, params={"positive": True}),
        Case((1 << 27,), seed=13, params={"exponent": 3}),
    ),
    flops=lambda c: 20.0 * numel(c.shape),
    bytes_moved=lambda c: (
        4.0
        * (
            2 * numel(c.shape)
            + (0 if "exponent" in c.params else numel(c.params.get("e_shape", c.shape)))
        )
    ),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(2,),
)
