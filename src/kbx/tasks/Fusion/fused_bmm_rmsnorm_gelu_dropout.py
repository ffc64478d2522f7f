"""Fusion/fused_bmm_rmsnorm_gelu_dropout: dropout(GELU(RMSNorm(bmm(A, B)))), random mask."""

import math

import torch
import torch.nn.functional as F

from kbx.suite.checks import off_rate, pairs_agree
from kbx.suite.inputs import Draw
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)  # huge values would let fp32 summation order decide
TOL = Tolerance(rtol=1e-4, atol=5e-5)  # on GELU(RMSNorm(Z)); kept values: atol / (1 - p)


def reference(
    input1,
    input2,
    normalized_shape,
    dropout_p=0.1,
    eps=1e-05,
    training=True,
    approximate="none",
    *,
    out=None,
):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
    z = F.rms_norm(torch.bmm(input1, input2), shape, eps=eps)
    y = F.dropout(F.gelu(z, approximate=approximate), p=dropout_p, training=training)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (B, N, M, P): input1 (B, N, M) @ input2 (B, M, P); params: norm ('int' | 'list' |
    'two' = (N, P)) and the call's keywords."""
    b, n, m, p = case.shape
    kw = dict(case.params)
    d = Draw(case, device)
    a, w = d.tensor((b, n, m), specials=SPECIALS), d.tensor((b, m, p), specials=SPECIALS)
    norm = {"int": p, "list": [p], "two": (n, p)}[kw.pop("norm", "int")]
    return Inputs((a, w, norm), {"training": True, **kw})


def check(inputs: Inputs, got: torch.Tensor) -> str | None:
    a, b, shape = inputs.args
    kw = inputs.kwargs
    p, approx = kw.get("dropout_p", 0.1), kw.get("approximate", "none")
    shape = (shape,) if isinstance(shape, int) else shape
    z = F.rms_norm(torch.bmm(a.double(), b.double()), shape, eps=kw.get("eps", 1e-5))
    kept = F.gelu(z, approximate=approx) / (1 - p)  # float64 value of a kept element
    g = got.to(kept.device).double()
    atol = TOL.atol / (1 - p)
    dropped = g.abs() <= atol  # gelu(0) = 0
    bad = ~(dropped | ((g - kept).abs() <= atol + TOL.rtol * kept.abs()))  # NaN lands here
    if bad.any():
        err = torch.where(bad, (g - kept).abs().nan_to_num(math.inf), 0.0)
        i = tuple(int(v) for v in torch.unravel_index(err.argmax(), g.shape))
        return (
            f"{int(bad.sum())}/{g.numel()} elements are neither 0 (dropped) nor "
            f"gelu(rmsnorm(Z))/(1-p) (kept, rtol={TOL.rtol:g} atol={atol:.3g}); worst at {i}: "
            f"got {g[i].item():.6g}, kept value {kept[i].item():.6g}"
        )
    clear = kept.abs() > 4 * atol  # dropped and kept are distinguishable
    reason = off_rate(dropped[clear], p, "distinguishable elements are dropped")
    for dim, name in enumerate(("batch entries", "rows", "columns")):
        # disjoint pairs along dim agree as often as independent draws: no repeated masks
        if reason is None:
            reason = pairs_agree(dropped.movedim(dim, 0), clear.movedim(dim, 0), p, name)
    return reason


TASK = Task(
    entry="fused_bmm_rmsnorm_gelu_dropout",
    signature=(
        "fused_bmm_rmsnorm_gelu_dropout(input1, input2, normalized_shape, dropout_p=0.1, "
        "eps=1e-05, training=True, approximate='none', *, out=None)"
    ),
    description=(
        "Batched matmul, RMS normalization, GELU and dropout: Z = bmm(input1, input2) with "
        "input1 (B, N, M) and input2 (B, M, P) contiguous float32; R = Z / sqrt(mean(Z^2) + eps) "
        "with the mean over the trailing dims given by `normalized_shape` (P as an int or [P]: "
        "per row; (N, P): per batch entry), no weight; G = gelu(R, approximate) ('none': exact "
        "erf form, 'tanh': tanh approximation); then dropout(G, dropout_p): each element "
        "independently zeroed with probability p, survivors scaled by 1/(1-p). Returns a new "
        "(B, N, P) float32 tensor. Every case uses training=True with p in {0.1, 0.3, 0.5}, "
        "both GELU forms, all three normalized_shape forms and eps 1e-5 or 1e-2; training=False "
        "and out are accepted but not exercised. The mask cannot match PyTorch's random bits: "
        "draw the kernel's seed from torch's default generator (e.g. seed = "
        "int(torch.randint(0, 2**31 - 1, (1,)))), so that the same torch.manual_seed gives a "
        "bit-identical output and another seed another mask. Dropout is the last step, so each "
        "element must be 0 (dropped) or G/(1-p) with G computed in float64 (kept); the dropped "
        "fraction, among elements where the two are distinguishable, must be p within 5 "
        "binomial sigma, and neighbouring batch entries, rows and columns must not share "
        "decisions more than chance."
    ),
    math=r"Y = \tfrac{m}{1-p} \odot \mathrm{GELU}\!\left(\frac{Z}{\sqrt{\overline{Z^2}+\epsilon}}"
    r"\right),\quad Z = AB,\quad m \sim \mathrm{Bernoulli}(1-p)",
    precision=(
        "float32 in and out; the bmm accumulates in float32 and TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee'). Kept elements must match the float64 value within "
        "rtol=1e-4, atol=5e-5/(1-p) (contraction lengths 129-231)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((3, 37, 129, 45), seed=1, params={"dropout_p": 0.5}),
        Case(
            (2, 61, 200, 33),
            seed=2,
            dist="outlier",
            params={"dropout_p": 0.1, "approximate": "tanh", "norm": "list"},
        ),
        Case((4, 29, 150, 50), seed=3, dist="corner", params={"dropout_p": 0.3, "norm": "two"}),
        Case(
            (5, 40, 177, 31), seed=4, params={"dropout_p": 0.3, "approximate": "tanh", "eps": 1e-2}
        ),
        Case((2, 50, 231, 64), seed=5, dist="outlier", params={"norm": "two"}),
    ),
    bench=(
        Case((32, 1024, 1024, 1536), seed=11, params={"dropout_p": 0.1}),
        Case((64, 512, 1024, 2048), seed=12, params={"dropout_p": 0.5, "approximate": "tanh"}),
    ),
    flops=lambda c: 2.0 * c.shape[0] * c.shape[1] * c.shape[2] * c.shape[3],
    bytes_moved=lambda c: (
        4.0
        * c.shape[0]
        * (c.shape[1] * c.shape[2] + c.shape[2] * c.shape[3] + c.shape[1] * c.shape[3])
    ),
    tolerance=TOL,
    check=check,
    random=True,
    version=2,  # masks judged at distances 1 to 4 along each dim, not 1 alone (2026-12-06)
)
