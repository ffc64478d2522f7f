"""MatrixMultiply/addmm: beta * input + alpha * (mat1 @ mat2) with a broadcast float32 `input`."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Matmul operands: zeros and tiny values only (a huge special would let the fp32 summation order
# decide the result). The added `input` may hold NaN and Inf: they propagate unless beta == 0.
SPECIALS = (0.0, -0.0, 1e-30, -1e-30)
INPUT_SPECIALS = (0.0, -0.0, float("nan"), float("inf"), float("-inf"), 1e4)


def reference(input, mat1, mat2, beta=1, alpha=1, out=None):
    return torch.addmm(input, mat1, mat2, beta=beta, alpha=alpha, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (M, K, N); params: `bias` = shape of `input` ("mn", "n", "m1", "1n"), beta, alpha."""
    m, k, n = case.shape
    p = case.params
    d = Draw(case, device)
    a = d.tensor((m, k), specials=SPECIALS)
    b = d.tensor((k, n), specials=SPECIALS)
    shape = {"mn": (m, n), "n": (n,), "m1": (m, 1), "1n": (1, n)}[p.get("bias", "mn")]
    c = d.tensor(shape, specials=INPUT_SPECIALS)
    return Inputs((c, a, b), {x: p[x] for x in ("beta", "alpha") if x in p})


def _bytes(c: Case) -> float:
    """mat1, mat2, `input` (its own shape; not read at all with beta = 0, as torch ignores it)
    and the output."""
    m, k, n = c.shape
    shape = {"mn": (m, n), "n": (n,), "m1": (m, 1), "1n": (1, n)}[c.params.get("bias", "mn")]
    bias = numel(shape) if c.params.get("beta", 1) != 0 else 0
    return 4.0 * (m * k + k * n + bias + m * n)


TASK = Task(
    entry="addmm",
    signature=(
        "addmm(input: torch.Tensor, mat1: torch.Tensor, mat2: torch.Tensor, beta: float=1, "
        "alpha: float=1, out: torch.Tensor=None) -> torch.Tensor"
    ),
    description=(
        "torch.addmm: out = beta * input + alpha * (mat1 @ mat2) for float32 `mat1` (M, K) and "
        "`mat2` (K, N), returning a new float32 (M, N) tensor. `input` is float32 and "
        "broadcastable to (M, N): the cases pass (M, N), (N,), (1, N) and (M, 1). `beta` and "
        "`alpha` are Python floats (default 1, the cases also use negative and fractional "
        "values). When beta == 0, `input` is ignored entirely: NaN and Inf in it must not reach "
        "the output (the beta=0 case holds them); otherwise NaN/Inf in `input` propagate as in "
        "torch. `out` is never passed."
    ),
    math=r"\mathrm{out}_{ij} = \beta\,\mathrm{input}_{ij} + \alpha \sum_k A_{ik} B_{kj}",
    precision=(
        "float32 in and out, products accumulated in float32. TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee') or an exact fp32 emulation such as 'tf32x3'. The "
        "tolerance (rtol=1e-4, atol=2e-3, for K of 150-260 with N(0,1) entries and |alpha| <= 2) "
        "admits any fp32 summation order and rejects TF32-rounded inputs."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((97, 211, 83), seed=1),
        Case(
            (130, 257, 61), seed=2, dist="outlier", params={"bias": "n", "beta": 0.5, "alpha": 2.0}
        ),
        Case(
            (45, 199, 77), seed=3, dist="corner", params={"bias": "m1", "beta": -1.5, "alpha": 0.75}
        ),
        Case((63, 230, 50), seed=4, dist="corner", params={"beta": 0.0, "alpha": -1.25}),
        Case((29, 153, 95), seed=5, dist="outlier", params={"bias": "1n", "alpha": 1.5}),
    ),
    bench=(
        Case((8192, 2048, 8192), seed=11, params={"bias": "n"}),
        Case((4096, 4096, 4096), seed=12, params={"beta": 0.5, "alpha": 2.0}),
    ),
    flops=lambda c: 2.0 * c.shape[0] * c.shape[1] * c.shape[2] + 3.0 * c.shape[0] * c.shape[2],
    bytes_moved=_bytes,
    tolerance=Tolerance(rtol=1e-4, atol=2e-3),
)
