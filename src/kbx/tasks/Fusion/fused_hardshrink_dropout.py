"""Fusion/fused_hardshrink_dropout: hardshrink(dropout(input, p)), judged by properties (random)."""

import math
from dataclasses import replace

import torch
import torch.nn.functional as F

from kbx.suite.checks import off_rate, pairs_agree
from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = Tolerance(rtol=1e-6, atol=0.0)  # kept values: x / (1 - p) rounded once or twice in fp32
# The runner seeds torch with case.seed, the seed Draw uses too: on the CPU, PyTorch's own dropout
# mask would then come from the very stream that drew the input, and be correlated with it.
INPUT_SEED_SHIFT = 1_000_003


def reference(input, p=0.5, training=True, inplace=False, lambd=0.5):
    return F.hardshrink(F.dropout(input, p=p, training=training, inplace=inplace), lambd=lambd)


def make_inputs(case: Case, device: str) -> Inputs:
    d = Draw(replace(case, seed=case.seed + INPUT_SEED_SHIFT), device)
    x = d.tensor(case.shape, scale=case.params.get("scale", 1.0))
    kw = {k: v for k, v in case.params.items() if k in ("p", "lambd")}
    return Inputs((x,), {"training": True, **kw})


def check(inputs: Inputs, got: torch.Tensor) -> str | None:
    x = inputs.args[0]
    p, lambd = inputs.kwargs.get("p", 0.5), inputs.kwargs.get("lambd", 0.5)
    kept = x.double() / (1 - p)  # value of a kept element before the shrink
    g = got.to(x.device).double()
    edge = (kept.abs() - lambd).abs() <= 1e-6 * lambd  # shrunk or not depends on rounding
    big = (kept.abs() > lambd) & ~edge  # survives the shrink when kept
    ok_kept = (g - kept).abs() <= TOL.rtol * kept.abs()
    bad = ~((g == 0) | ((big | edge) & ok_kept))  # NaN lands here
    if bad.any():
        err = torch.where(bad, (g - kept).abs().nan_to_num(math.inf), 0.0)
        i = tuple(int(v) for v in torch.unravel_index(err.argmax(), g.shape))
        return (
            f"{int(bad.sum())}/{g.numel()} elements are neither 0 (dropped or shrunk) nor "
            f"x/(1-p) with |x/(1-p)| > lambd (rtol={TOL.rtol:g}); worst at {i}: got "
            f"{g[i].item():.8g}, x/(1-p) = {kept[i].item():.8g}"
        )
    dropped = g == 0
    reason = off_rate(dropped[big], p, "elements that survive the shrink are dropped")
    for dim in range(g.dim()):
        # disjoint pairs along dim agree as often as independent draws do
        if reason is None:
            reason = pairs_agree(
                dropped.movedim(dim, 0), big.movedim(dim, 0), p, f"dim {dim}'s entries"
            )
    return reason


TASK = Task(
    entry="fused_hardshrink_dropout",
    signature=(
        "fused_hardshrink_dropout(input: torch.Tensor, p: float=0.5, training: bool=True, "
        "inplace: bool=False, lambd: float=0.5) -> torch.Tensor"
    ),
    description=(
        "Dropout then hard shrinkage: D = dropout(input, p) (each element zeroed with "
        "probability p, survivors scaled by 1/(1-p)), y = D where |D| > lambd, else 0. `input` "
        "is a contiguous float32 tensor (1-D to 4-D, N(0,1) or with outliers); returns a new "
        "float32 tensor of its shape. Every case uses training=True with p in {0.1, 0.3, 0.5, "
        "0.7} and lambd in {0, 0.2, 0.5, 1.5}; training=False (hardshrink only) and inplace "
        "are accepted but not exercised. The mask cannot match PyTorch's random bits and is "
        "judged by its properties: draw the kernel's seed from torch's default generator (e.g. "
        "seed = int(torch.randint(0, 2**31 - 1, (1,)))), so that the same torch.manual_seed gives "
        "a bit-identical output and another seed another mask. Each element must be 0 or "
        "x/(1-p) with |x/(1-p)| > lambd (either is accepted within 1e-6 of the threshold); among "
        "elements whose kept value clearly survives the shrink, the dropped fraction must be p "
        "within 5 binomial sigma, and neighbouring elements along every dim must not share "
        "their decisions more often than independent draws."
    ),
    math=r"y = \tfrac{m}{1-p}x\ \text{if}\ \left|\tfrac{m}{1-p}x\right| > \lambda\ \text{else}\ 0,"
    r"\quad m \sim \mathrm{Bernoulli}(1-p)",
    precision=(
        "float32 in and out; kept elements must equal x/(1-p) within rtol=1e-6 (x * (1/(1-p)) "
        "in float32 is fine)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((173, 129), seed=1, params={"p": 0.5}),
        Case((7, 61, 53), seed=2, dist="outlier", params={"p": 0.1, "lambd": 1.5}),
        Case((3, 5, 37, 41), seed=3, dist="corner", params={"p": 0.3, "lambd": 0.2}),
        Case((30001,), seed=4, params={"p": 0.7, "lambd": 0.0}),
        Case((97, 211), seed=5, params={"p": 0.3, "scale": 3.0}),
    ),
    bench=(
        Case((8192, 8192), seed=11, params={"p": 0.1}),
        Case((16, 64, 256, 256), seed=12, params={"p": 0.5, "lambd": 1.0}),
    ),
    flops=lambda c: 4.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=TOL,
    check=check,
    random=True,
    version=2,  # masks judged at distances 1 to 4 along each dim, not 1 alone (2026-12-06)
)
