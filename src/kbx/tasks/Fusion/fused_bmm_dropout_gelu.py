"""Fusion/fused_bmm_dropout_gelu: GELU(dropout(bmm(A, B))), judged by properties (random mask)."""

import math

import torch
import torch.nn.functional as F

from kbx.suite.checks import off_rate, pairs_agree
from kbx.suite.inputs import Draw
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)  # huge specials would let fp32 summation order decide
TOL = Tolerance(rtol=1e-4, atol=3e-4)  # on Z; kept values are judged with atol / (1 - p)


def reference(input1, input2, p=0.5, training=True, inplace=False, approximate="none", *, out=None):
    z = torch.bmm(input1, input2)
    o = F.gelu(F.dropout(z, p=p, training=training, inplace=inplace), approximate=approximate)
    if out is not None:
        out.copy_(o)
        return out
    return o


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (B, N, M, P): input1 (B, N, M) @ input2 (B, M, P); M is the contraction."""
    b, n, m, p = case.shape
    d = Draw(case, device)
    a, w = d.tensor((b, n, m), specials=SPECIALS), d.tensor((b, m, p), specials=SPECIALS)
    return Inputs((a, w), {"training": True, **case.params})


def check(inputs: Inputs, got: torch.Tensor) -> str | None:
    a, b = inputs.args
    p, approx = inputs.kwargs.get("p", 0.5), inputs.kwargs.get("approximate", "none")
    kept = F.gelu(torch.bmm(a.double(), b.double()) / (1 - p), approximate=approx)
    g = got.to(a.device).double()
    atol = TOL.atol / (1 - p)
    dropped = g.abs() <= atol  # gelu(0) = 0
    ok_kept = (g - kept).abs() <= atol + TOL.rtol * kept.abs()
    bad = ~(dropped | ok_kept)  # NaN lands here too
    if bad.any():
        err = torch.where(bad, (g - kept).abs().nan_to_num(math.inf), 0.0)
        i = tuple(int(v) for v in torch.unravel_index(err.argmax(), g.shape))
        return (
            f"{int(bad.sum())}/{g.numel()} elements are neither 0 (dropped) nor "
            f"gelu(Z/(1-p)) (kept, rtol={TOL.rtol:g} atol={atol:.3g}); worst at {i}: "
            f"got {g[i].item():.6g}, kept value {kept[i].item():.6g}"
        )
    clear = kept.abs() > 4 * atol  # elements where dropped and kept are distinguishable
    reason = off_rate(dropped[clear], p, "distinguishable elements are dropped")
    for dim, name in enumerate(("batch entries", "rows", "columns")):
        # Disjoint pairs along dim must agree (both dropped or both kept) as often as
        # independent draws do: catches a mask repeated across batches, rows, columns.
        if reason is None:
            reason = pairs_agree(dropped.movedim(dim, 0), clear.movedim(dim, 0), p, name)
    return reason


TASK = Task(
    entry="fused_bmm_dropout_gelu",
    signature=(
        "fused_bmm_dropout_gelu(input1, input2, p=0.5, training=True, inplace=False, "
        "approximate='none', *, out=None)"
    ),
    description=(
        "Batched matrix product, dropout and GELU in one pass: Z = bmm(input1, input2) with "
        "input1 (B, N, M) and input2 (B, M, P) contiguous float32; D = dropout(Z, p): each "
        "element independently zeroed with probability p, survivors scaled by 1/(1-p); "
        "O = gelu(D, approximate) ('none': exact erf form; 'tanh': the tanh approximation); "
        "return O, a new (B, N, P) float32 tensor (or write it into `out` when given). "
        "Every case uses training=True with p in {0.1, 0.3, 0.5} and both GELU forms; "
        "training=False (plain bmm + GELU), inplace and out are accepted but not exercised. "
        "The mask cannot match PyTorch's random bits and is judged by its properties: draw the "
        "kernel's seed from torch's default generator (e.g. seed = int(torch.randint(0, "
        "2**31 - 1, (1,)))), so that the same torch.manual_seed gives a bit-identical output "
        "and another seed gives a different mask. Each element must be 0 (dropped) or "
        "gelu(Z/(1-p)) (kept); the dropped fraction must be p within 5 binomial sigma, and "
        "decisions must look independent across batch entries, rows and columns."
    ),
    math=r"O = \mathrm{GELU}\big(\tfrac{m}{1-p} \odot A B\big),\quad m_{bij} \sim "
    r"\mathrm{Bernoulli}(1-p)",
    precision=(
        "float32 in and out; the bmm accumulates in float32 and TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee'). Kept elements must match gelu(Z/(1-p)) computed "
        "in float64 within rtol=1e-4, atol=3e-4/(1-p) (contraction length M of 129-231)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((3, 37, 129, 45), seed=1, params={"p": 0.5}),
        Case((2, 61, 200, 33), seed=2, dist="outlier", params={"p": 0.1, "approximate": "tanh"}),
        Case((4, 29, 150, 50), seed=3, dist="corner", params={"p": 0.3}),
        Case((5, 40, 177, 31), seed=4, params={"p": 0.3, "approximate": "tanh"}),
        Case((2, 50, 231, 64), seed=5, dist="outlier", params={"p": 0.1}),
    ),
    bench=(
        Case((32, 1024, 1024, 1536), seed=11, params={"p": 0.1}),
        Case((64, 512, 1024, 2048), seed=12, params={"p": 0.5, "approximate": "tanh"}),
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
