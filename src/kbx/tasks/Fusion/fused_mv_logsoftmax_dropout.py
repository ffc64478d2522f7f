"""Fusion/fused_mv_logsoftmax_dropout: dropout(log_softmax(input @ vec)), judged by properties."""

import math
from dataclasses import replace

import torch
import torch.nn.functional as F

from kbx.suite.checks import off_rate, pairs_agree
from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)
TOL = Tolerance(rtol=1e-5, atol=1e-5)  # on log_softmax(z); kept values: atol / (1 - p)
# The runner seeds torch with case.seed, the seed Draw uses too: on the CPU, PyTorch's own dropout
# mask would then come from the very stream that drew the input.
INPUT_SEED_SHIFT = 1_000_003


def reference(input, vec, p=0.5, training=True, inplace=False, dim=0, *, out=None):
    s = F.log_softmax(torch.mv(input, vec), dim=dim)
    y = F.dropout(s, p=p, training=training, inplace=inplace)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (n, m); vec is scaled by 2/sqrt(m), so the logits spread ~N(0, 4)."""
    d = Draw(replace(case, seed=case.seed + INPUT_SEED_SHIFT), device)
    a = d.tensor(case.shape, specials=SPECIALS)
    v = d.tensor(case.shape[1:], dist="normal", scale=2 / math.sqrt(case.shape[1]))
    return Inputs((a, v), {"training": True, **case.params})


def check(inputs: Inputs, got: torch.Tensor) -> str | None:
    a, v = inputs.args
    p = inputs.kwargs.get("p", 0.5)
    kept = F.log_softmax(a.double() @ v.double(), dim=0) / (1 - p)  # float64 kept value
    g = got.to(a.device).double()
    atol = TOL.atol / (1 - p)
    dropped = g.abs() <= atol
    bad = ~(dropped | ((g - kept).abs() <= atol + TOL.rtol * kept.abs()))  # NaN lands here
    if bad.any():
        err = torch.where(bad, (g - kept).abs().nan_to_num(math.inf), 0.0)
        i = int(err.argmax())
        return (
            f"{int(bad.sum())}/{g.numel()} elements are neither 0 (dropped) nor "
            f"log_softmax(z)/(1-p) (kept, rtol={TOL.rtol:g} atol={atol:.3g}); worst at {i}: "
            f"got {g[i].item():.8g}, kept value {kept[i].item():.8g}"
        )
    clear = kept.abs() > 4 * atol  # dropped and kept are distinguishable
    reason = off_rate(dropped[clear], p, "distinguishable elements are dropped")
    if reason is None:  # disjoint pairs: no repeated decisions
        reason = pairs_agree(dropped.reshape(-1), clear.reshape(-1), p, "elements")
    return reason


TASK = Task(
    entry="fused_mv_logsoftmax_dropout",
    signature=(
        "fused_mv_logsoftmax_dropout(input, vec, p=0.5, training=True, inplace=False, dim=0, *, "
        "out=None)"
    ),
    description=(
        "z = input @ vec (torch.mv) with `input` a contiguous float32 (n, m) matrix and `vec` "
        "float32 (m,); s = log_softmax(z) over the whole vector (dim 0 or -1: both are "
        "exercised) = z - max - log(sum(exp(z - max))); y = dropout(s, p): each element zeroed "
        "with probability p, survivors scaled by 1/(1-p). Returns a new float32 (n,) tensor. "
        "Every case uses training=True with p in {0.1, 0.3, 0.5, 0.7}; training=False, "
        "inplace and out are accepted but not exercised. The mask cannot match PyTorch's "
        "random bits and is judged by its properties: draw the kernel's seed from torch's "
        "default generator (e.g. seed = int(torch.randint(0, 2**31 - 1, (1,)))), so that the "
        "same torch.manual_seed gives a bit-identical output and another seed another mask. "
        "Dropout is the last step, so each element must be 0 or s/(1-p) with s computed in "
        "float64; the dropped fraction must be p within 5 binomial sigma and neighbouring "
        "elements must not share their decisions more often than independent draws."
    ),
    math=r"y = \tfrac{m}{1-p} \odot \big(z - \log\textstyle\sum_j e^{z_j}\big),\quad z = A v,"
    r"\quad m \sim \mathrm{Bernoulli}(1-p)",
    precision=(
        "float32 in and out; dot products accumulate in float32 (no TF32 or other "
        "reduced-precision products). Kept elements must match the float64 value within "
        f"rtol={TOL.rtol:g}, atol={TOL.atol:g}/(1-p)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((3001, 64), seed=1, params={"p": 0.5}),
        Case((2048, 129), seed=2, dist="outlier", params={"p": 0.1, "dim": -1}),
        Case((4097, 33), seed=3, dist="corner", params={"p": 0.3}),
        Case((2500, 100), seed=4, params={"p": 0.7, "dim": -1}),
    ),
    bench=(
        Case((16384, 16384), seed=11, params={"p": 0.1}),
        Case((65536, 4096), seed=12, params={"p": 0.5}),
    ),
    flops=lambda c: 2.0 * numel(c.shape) + 5.0 * c.shape[0],
    bytes_moved=lambda c: 4.0 * (numel(c.shape) + c.shape[1] + c.shape[0]),
    tolerance=TOL,
    check=check,
    random=True,
    version=2,  # masks judged at distances 1 to 4 along each dim, not 1 alone (2026-12-06)
)
