"""Fusion/fused_dropout_sigmoid_linear: dropout(sigmoid(linear(x))), judged by properties."""

import math

import torch
import torch.nn.functional as F

from kbx.suite.checks import off_rate, pairs_agree
from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)  # huge values would let fp32 summation order decide
TOL = Tolerance(rtol=1e-4, atol=1e-5)  # on sigmoid(z); kept values are judged with atol/(1-p)


def reference(input, weight, bias=None, p=0.5, training=True, inplace=False):
    s = torch.sigmoid(F.linear(input, weight, bias))
    return F.dropout(s, p=p, training=training, inplace=inplace)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (*lead, in_features, out_features); params: bias, p."""
    p = dict(case.params)
    *lead, k, n = case.shape
    d = Draw(case, device)
    x = d.tensor((*lead, k), specials=SPECIALS)
    w = d.tensor((n, k), dist="normal", scale=2 * k**-0.5)
    b = d.tensor((n,), dist="normal") if p.pop("bias", True) else None
    return Inputs((x, w, b), {"training": True, **p})


def check(inputs: Inputs, got: torch.Tensor) -> str | None:
    x, w, b = (t.double() if t is not None else None for t in inputs.args)
    p = inputs.kwargs["p"]
    kept = torch.sigmoid(F.linear(x, w, b)) / (1 - p)  # float64 value of a kept element
    g = got.to(kept.device).double()
    atol = TOL.atol / (1 - p)
    dropped = g.abs() <= atol
    bad = ~(dropped | ((g - kept).abs() <= atol + TOL.rtol * kept.abs()))  # NaN lands here too
    if bad.any():
        err = torch.where(bad, (g - kept).abs().nan_to_num(math.inf), 0.0)
        i = tuple(int(v) for v in torch.unravel_index(err.argmax(), g.shape))
        return (
            f"{int(bad.sum())}/{g.numel()} elements are neither 0 (dropped) nor "
            f"sigmoid(z)/(1-p) (kept, rtol={TOL.rtol:g} atol={atol:.3g}); worst at {i}: got "
            f"{g[i].item():.6g}, kept value {kept[i].item():.6g}"
        )
    clear = kept > 4 * atol  # dropped and kept are distinguishable
    reason = off_rate(dropped[clear], p, "distinguishable elements are dropped")
    d2, c2 = dropped.reshape(-1, g.shape[-1]), clear.reshape(-1, g.shape[-1])
    for name, (d, c) in (("rows", (d2, c2)), ("columns", (d2.T, c2.T))):
        # disjoint pairs agree as often as independent draws: no repeated masks
        if reason is None:
            reason = pairs_agree(d, c, p, name)
    return reason


TASK = Task(
    entry="fused_dropout_sigmoid_linear",
    signature=(
        "fused_dropout_sigmoid_linear(input: torch.Tensor, weight: torch.Tensor, bias=None, "
        "p=0.5, training=True, inplace=False) -> torch.Tensor"
    ),
    description=(
        "Linear layer, sigmoid and dropout: z = input @ weight^T + bias with `input` a "
        "contiguous float32 (*, in_features) tensor (2-D or 3-D), `weight` float32 "
        "(out_features, in_features) and `bias` float32 (out_features,) or None; "
        "s = sigmoid(z); then dropout: each element independently zeroed with probability p, "
        "survivors scaled by 1/(1-p). Returns a new float32 (*, out_features) tensor. Every case "
        "uses training=True with p in {0.1, 0.3, 0.5, 0.7}; training=False (no dropout) and "
        "inplace are accepted but not exercised. The mask cannot match PyTorch's random bits and "
        "is judged by its properties: draw the kernel's seed from torch's default generator "
        "(e.g. seed = int(torch.randint(0, 2**31 - 1, (1,)))), so the same torch.manual_seed "
        "gives a bit-identical output and another seed a different mask. Each element must be "
        "0 (dropped) or sigmoid(z)/(1-p) (kept, z in float64); among elements where the two are "
        "distinguishable the dropped fraction must be p within 5 binomial sigma, and "
        "neighbouring rows and columns must not share their decisions more than chance."
    ),
    math=r"y = \tfrac{m}{1-p} \odot \sigma(x W^\top + b),\quad m_{ij} \sim "
    r"\mathrm{Bernoulli}(1-p)",
    precision=(
        "float32 in and out; the matmul accumulates in float32 and TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee'). Kept elements must match sigmoid(z)/(1-p) "
        "computed in float64 within rtol=1e-4, atol=1e-5/(1-p)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((67, 129, 45), seed=1, params={"p": 0.5}),
        Case((2, 61, 200, 33), seed=2, dist="outlier", params={"p": 0.1, "bias": False}),
        Case((4, 29, 150, 50), seed=3, dist="corner", params={"p": 0.3}),
        Case((83, 231, 64), seed=4, params={"p": 0.7}),
    ),
    bench=(
        Case((8192, 4096, 4096), seed=11, params={"p": 0.1}),
        Case((16, 1024, 2048, 8192), seed=12, params={"p": 0.5}),
    ),
    flops=lambda c: 2.0 * numel(c.shape[:-2]) * c.shape[-2] * c.shape[-1],
    bytes_moved=lambda c: (
        4.0 * (numel(c.shape[:-1]) + c.shape[-2] * c.shape[-1] + numel(c.shape[:-2]) * c.shape[-1])
    ),
    tolerance=TOL,
    check=check,
    random=True,
    version=2,  # masks judged at distances 1 to 4 along each dim, not 1 alone (2026-12-06)
)
