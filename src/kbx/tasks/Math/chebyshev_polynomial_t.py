"""Math/chebyshev_polynomial_t: Chebyshev polynomial of the first kind T_n(x), element-wise."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, the ends of [-1, 1] (T_n(+-1) = (+-1)^n), cos-friendly points, a tiny value, NaN.
SPECIALS = (0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-30, float("nan"))


def reference(input: torch.Tensor, n: int, out: torch.Tensor | None = None) -> torch.Tensor:
    # Evaluated in float64 (torch's own algorithm) and rounded: the float32 truth.
    t = torch.special.chebyshev_polynomial_t(input.double(), n).to(input.dtype)
    if out is not None:
        out.copy_(t)
        return out
    return t


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS, scale=case.params["scale"])
    out = torch.zeros_like(x) if case.params.get("out") else None
    return Inputs((x, case.params["n"], out))


TASK = Task(
    entry="chebyshev_polynomial_t",
    signature=(
        "chebyshev_polynomial_t(input: torch.Tensor, n: int, out: torch.Tensor=None) "
        "-> torch.Tensor"
    ),
    description=(
        "Return T_n(x) for every element x of the float32 tensor `input` (any shape), with the "
        "degree n a Python int, as a new float32 tensor, following "
        "torch.special.chebyshev_polynomial_t: n < 0 gives 0; T_n(+-1) = (+-1)^n exactly; "
        "n = 0 gives 1 (even for NaN); n = 1 gives x; otherwise T_n(x) = cos(n acos x) for "
        "|x| < 1 (torch uses this form when n > 6) and the recurrence T_{k+1} = 2x T_k - "
        "T_{k-1} elsewhere (|x| > 1: T_n grows like (|x| + sqrt(x^2 - 1))^n); NaN gives NaN for "
        "n >= 1. If `out` is given, write into it and return it. Cases: degrees 5, 6, 7, 13, 20 "
        "and 30 on normal values scaled by 0.5 to 1.2 (both |x| < 1 and |x| > 1), outliers "
        "(with n = 6, so nothing overflows) and corner values (signed zeros, +-1, +-0.5, 1e-30, "
        "NaN); one case passes `out`. No case overflows float32."
    ),
    math=r"T_n(x) = \cos(n \arccos x)\ (|x| \le 1),\quad T_{k+1} = 2x\,T_k - T_{k-1}",
    precision=(
        "float32 in and out, computed in float32; judged against the float64 value rounded to "
        "float32 with rtol=2e-5, atol=2e-5. Float32 evaluation errors grow with n: at n = 30 "
        "torch's own float32 result is off by up to 1e-5 absolute on [-1, 1], the plain float32 "
        "recurrence by 1.3e-5; both pass."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, params={"n": 5, "scale": 1.0}),
        Case((37, 1023), seed=2, params={"n": 13, "scale": 0.5}),
        Case((3, 129, 65), seed=3, dist="corner", params={"n": 7, "scale": 0.7}),
        Case((2047, 5), seed=4, dist="outlier", params={"n": 6, "scale": 0.5}),
        Case((5, 7, 301), seed=5, params={"n": 30, "scale": 0.6, "out": True}),
        Case((611, 13), seed=6, params={"n": 20, "scale": 1.2}),
    ),
    bench=(
        Case((1 << 26,), seed=11, params={"n": 12, "scale": 0.6}),
        Case((8192, 16384), seed=12, params={"n": 5, "scale": 1.0}),
    ),
    flops=lambda c: 3.0 * c.params["n"] * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=2e-5, atol=2e-5),
    inplace=(2,),
)
