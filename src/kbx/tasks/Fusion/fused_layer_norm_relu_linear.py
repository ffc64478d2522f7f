"""Fusion/fused_layer_norm_relu_linear: layer_norm(relu(linear(input, weight, bias)))."""

import math

import torch.nn.functional as F

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)  # huge values would let fp32 summation order decide


def reference(input, weight, bias=None, normalized_shape=None, eps=1e-5, elementwise_affine=True):
    # elementwise_affine: a fresh LayerNorm's weight is 1 and its bias 0, so it changes nothing
    y = F.relu(F.linear(input, weight, bias))
    if normalized_shape is None:
        normalized_shape = y.shape[-1]
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return F.layer_norm(y, tuple(normalized_shape), eps=eps)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (*batch, K); params: n (out_features), bias, norm (how normalized_shape is passed:
    None, 'int', 'list' or 'two' = the last two dims), zero_rows, and eps/elementwise_affine."""
    q = case.params
    k, n = case.shape[-1], q["n"]
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    if q.get("zero_rows"):  # every 5th row is 0: without bias its ReLU row is constant
        x[..., ::5, :] = 0.0
    w = d.tensor((n, k), dist="normal", scale=1 / math.sqrt(k))
    b = d.tensor((n,), dist="normal", scale=0.5) if q.get("bias") else None
    form = q.get("norm")
    shape = {None: None, "int": n, "list": [n], "two": (case.shape[-2], n)}[form]
    kw = {a: q[a] for a in ("eps", "elementwise_affine") if a in q}
    return Inputs((x, w, b, shape), kw)


def groups(c: Case) -> int:
    return c.params["n"] * (c.shape[-2] if c.params.get("norm") == "two" else 1)


TASK = Task(
    entry="fused_layer_norm_relu_linear",
    signature=(
        "fused_layer_norm_relu_linear(input: torch.Tensor, weight: torch.Tensor, bias: "
        "torch.Tensor=None, normalized_shape: torch.Size=None, eps: float=1e-05, "
        "elementwise_affine: bool=True) -> torch.Tensor"
    ),
    description=(
        "Linear layer, ReLU, layer normalization. Z = relu(input @ weight^T + bias) with "
        "`input` a contiguous float32 (*, K) tensor (2-D or 3-D), `weight` float32 (N, K), "
        "`bias` (N,) or None. Then layer_norm over the trailing dims given by normalized_shape "
        "(an int, a list/tuple/torch.Size of the last one or two dims of Z, or None meaning "
        "(N,)): each group is normalised by its own mean and biased variance, "
        "(z - mean) / sqrt(var + eps), without weight or bias (elementwise_affine=True stands "
        "for a fresh LayerNorm, whose weight is 1 and bias 0, so it changes nothing). Returns a "
        "new float32 tensor of Z's shape. Cases: bias and none, every form of "
        "normalized_shape, eps=1e-3, elementwise_affine=False, and zero input rows, whose ReLU "
        "rows are constant (output 0)."
    ),
    math=r"y = \frac{z - \mu}{\sqrt{\sigma^2 + \epsilon}},\quad z = \max(0, x W^T + b)",
    precision=(
        "float32 in and out; the matmul accumulates in float32 and TF32 (or any "
        "reduced-mantissa input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee'); statistics in float32 or wider with a stable "
        "method. rtol=1e-4, atol=1e-4 (TF32 errors are ~1e-3 here, float32 ones ~1e-6)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 129), seed=1, params={"n": 45, "bias": True}),
        Case((3, 29, 200), seed=2, dist="outlier", params={"n": 33, "norm": "int"}),
        Case((61, 64), seed=3, dist="corner", params={"n": 100, "norm": "list", "zero_rows": True}),
        Case((4, 17, 77), seed=4, params={"n": 50, "bias": True, "norm": "two", "eps": 1e-3}),
        Case(
            (45, 96),
            seed=5,
            dist="outlier",
            params={"n": 130, "bias": True, "elementwise_affine": False},
        ),
    ),
    bench=(
        Case((8192, 4096), seed=11, params={"n": 2048, "bias": True}),
        Case((64, 256, 2048), seed=12, params={"n": 2048, "norm": "two"}),
    ),
    flops=lambda c: 2.0 * numel(c.shape) * c.params["n"],
    bytes_moved=lambda c: (
        4.0
        * (
            numel(c.shape)
            + c.params["n"] * (c.shape[-1] + bool(c.params.get("bias")))
            + numel(c.shape[:-1]) * c.params["n"]
        )
    ),
    tolerance=Tolerance(rtol=1e-4, atol=1e-4),
)
