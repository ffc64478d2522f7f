"""MatrixMultiply/tensordot_rsqrt: rsqrt(torch.tensordot(a, b, dims)), float32."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.shapes import tensordot_sizes
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30)


def reference(a: torch.Tensor, b: torch.Tensor, dims) -> torch.Tensor:
    return torch.rsqrt(torch.tensordot(a, b, dims=dims))


def make_inputs(case: Case, device: str) -> Inputs:
    """shape = a's shape; params: b (b's shape), dims (int or two tuples), negate (a slice
    index (dim, i) of a that is negated, so the outputs it feeds are negative: NaN)."""
    p = case.params
    d = Draw(case, device)
    # entries 1 + 0.5 N(0,1): the contractions are positive sums, well away from zero
    a = d.tensor(case.shape, specials=SPECIALS, scale=0.5, shift=1.0)
    b = d.tensor(p["b"], specials=SPECIALS, scale=0.5, shift=1.0)
    if "negate" in p:
        dim, i = p["negate"]
        a.select(dim, i).neg_()
    dims = p["dims"] if isinstance(p["dims"], int) else [list(x) for x in p["dims"]]
    return Inputs((a, b, dims))


def flops(c: Case) -> float:
    m, k, n = tensordot_sizes(c.shape, c.params["b"], c.params["dims"])
    return 2.0 * m * k * n + m * n  # the contraction, then one rsqrt per output


def bytes_moved(c: Case) -> float:
    m, _, n = tensordot_sizes(c.shape, c.params["b"], c.params["dims"])
    return 4.0 * (numel(c.shape) + numel(c.params["b"]) + m * n)


TASK = Task(
    entry="tensordot_rsqrt",
    signature="tensordot_rsqrt(a: torch.Tensor, b: torch.Tensor, dims) -> torch.Tensor",
    description=(
        "Element-wise reciprocal square root of torch.tensordot(a, b, dims) for contiguous "
        "float32 `a` and `b`, returning a new float32 tensor shaped like the tensordot (the "
        "free dims of a, then the free dims of b). `dims` is either an int d (contract the "
        "last d dims of a with the first d dims of b; the cases use 0, 1 and 2, where 0 is an "
        "outer product) or a pair of lists [dims_a, dims_b] of equal length (the cases "
        "contract non-trailing dims, one of them two dims in swapped order). Entries are "
        "1 + 0.5 N(0,1), so most contractions are positive; negative ones give NaN and +0 "
        "gives +inf, as torch.rsqrt."
    ),
    math=r"\mathrm{out}_{I,J} = \Big(\sum_{K} a_{I,K}\, b_{K,J}\Big)^{-1/2}",
    precision=(
        "float32 in and out, the contraction accumulated in float32. TF32 (or any "
        "reduced-mantissa input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee') or an exact fp32 emulation such as 'tf32x3'. "
        "Tolerance rtol=1e-5, atol=1e-6: fp32 sums of these positive-mean terms are good to "
        "~1e-6 and rsqrt to 2 ulp; TF32-rounded inputs move outputs by ~3e-5."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 24), seed=1, params={"b": (24, 45), "dims": 1}),
        Case((5, 7, 6, 4), seed=2, dist="outlier", params={"b": (6, 4, 9), "dims": 2}),
        Case((33, 20, 3), seed=3, params={"b": (20, 17), "dims": ((1,), (0,))}),
        Case(
            (4, 13, 5),
            seed=4,
            dist="corner",
            params={"b": (5, 11, 4), "dims": ((0, 2), (2, 0)), "negate": (1, 3)},
        ),
        Case((19,), seed=5, params={"b": (23,), "dims": 0}),
        Case((3, 29, 16), seed=6, dist="outlier", params={"b": (16, 31), "dims": 1}),
    ),
    bench=(
        Case((4096, 2048), seed=11, params={"b": (2048, 8192), "dims": 1}),
        Case((128, 64, 32, 64), seed=12, params={"b": (32, 64, 4096), "dims": 2}),
    ),
    flops=flops,
    bytes_moved=bytes_moved,
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
