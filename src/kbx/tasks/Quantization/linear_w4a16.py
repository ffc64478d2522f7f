"""Quantization/linear_w4a16: fp16 X @ W^T + b with W quantized to int4, group-wise scales."""

import torch
import torch.nn.functional as F

from kbx.suite.inputs import Draw, numel
from kbx.suite.quant import away_from_ties
from kbx.suite.task import Case, Inputs, QuantStep, Steps, Task, Tolerance

GROUP = 128  # consecutive k that share one scale (the last group of a row may be shorter)
SPECIALS = (0.0, -0.0, 30.0, -30.0, 1e-4)  # activations only: weights get zeros and tiny values
W_SPECIALS = (0.0, -0.0, 1e-4, -1e-4)


def group_scales(w: torch.Tensor) -> torch.Tensor:
    """(N, K) float32 -> (N, K) float32: each element's group scale max |w| / 7 (1 if zero)."""
    n, k = w.shape
    groups = F.pad(w.abs(), (0, -k % GROUP)).reshape(n, -1, GROUP)
    s = groups.amax(dim=2) / 7  # float32 division, correctly rounded
    s = torch.where(s == 0, torch.ones_like(s), s)
    return s.repeat_interleave(GROUP, dim=1)[:, :k]


def reference(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor = None):
    w = weight.float()
    s = group_scales(w)
    wq = torch.clamp(torch.round(w / s), -8, 7)  # int4 values, rounding half to even
    y = F.linear(input.float(), wq * s)  # dequantized weight, float32 accumulation
    if bias is not None:
        y = y + bias.float()
    return y.half()


def step(inputs: Inputs) -> Steps:
    """One int4 step of a weight carried to the output, at most: max_k |X[., k]| of the row
    times the largest group scale of output feature n."""
    x, weight = inputs.args[:2]
    return x.float().abs().amax(dim=-1, keepdim=True), group_scales(weight.float()).amax(dim=1)


QUANT = QuantStep(step, share=1e-5, unit="max_k |X[., k]| * max_g s[n, g], one int4 step of W")


def make_inputs(case: Case, device: str) -> Inputs:
    """shape = input's shape (..., K); params: n (out features), bias."""
    p = case.params
    k, n = case.shape[-1], p["n"]
    d = Draw(case, device)
    x = d.tensor(case.shape, dtype=torch.float16, specials=SPECIALS)
    w = d.tensor((n, k), dtype=torch.float16, specials=W_SPECIALS, scale=k**-0.5)
    b = d.tensor((n,), dtype=torch.float16, dist="normal") if p.get("bias") else None
    if case.dist == "corner":  # an all-zero weight group: scale 1, all int4 values 0
        w[n // 2, :GROUP] = 0.0
    # fp16 weights: a moved value is rounded to fp16, which shifts w/scale by < 0.004
    w = away_from_ties(w.float(), group_scales(w.float())).half()
    return Inputs((x.to(device), w.to(device), None if b is None else b.to(device)))


TASK = Task(
    entry="linear_w4a16",
    signature=(
        "linear_w4a16(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor = None) "
        "-> torch.Tensor"
    ),
    description=(
        "Weight-only int4 linear layer, Y = X @ Wd^T + b, for float16 `input` X (..., K), "
        "float16 `weight` W (N, K) and optional float16 `bias` (N,), returning float16 "
        "(..., N). The entry receives the float16 weight and quantizes it itself, by exactly "
        "this recipe (the reference simulates it): along each row of W, groups of 128 "
        "consecutive k (the last group shorter when K is not a multiple of 128) share the "
        "scale s = max |W| / 7 over the group, computed in float32 (1 for an all-zero group); "
        "Wq = clamp(round(W / s), -8, 7) in float32, rounding half to even: signed int4 "
        "values, in practice -7..7. Wd = Wq * s. Y = float16(sum_k float32(X) * Wd + "
        "float32(b)). How the int4 values are stored inside the implementation is free (two "
        "per byte, or one per int8): only their values matter. Weights are drawn so that no "
        "W/s lies within ~0.1 of a rounding tie. Cases: 2-D and 3-D inputs, K below, equal to "
        "and not a multiple of 128, bias and none, outliers, and an all-zero group."
    ),
    math=r"Y_{\cdot n} = \sum_k X_{\cdot k}\, q_{nk} s_{n,\lfloor k/128 \rfloor} + b_n,\quad"
    r"q_{nk} = \mathrm{rnd}(W_{nk}/s_{n,g}),\ s_{n,g} = \max_{k \in g} |W_{nk}| / 7",
    precision=(
        "float16 in and out; int4 weights with float32 group scales; products accumulated in "
        "float32, one rounding to float16 at the end. The scale may be applied per element "
        "(float32 Wd) or to the float32 sum of a group's exact products X * Wq (int4 values "
        "are exact in float16, so a float16 tensor-core dot of X and Wq is fine); rounding Wd "
        "itself to float16 is not the recipe and fails where large activations cancel. "
        "Tolerance rtol=2e-3, atol=1e-3: one float16 ulp of the output plus float32 "
        "reassociation. A plain float16 linear with the unquantized weight differs by the int4 "
        "error (~10% of |Y|) and fails. " + QUANT.text()
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 37, 200), seed=1, dtype=torch.float16, params={"n": 83, "bias": True}),
        Case((61, 256), seed=2, dtype=torch.float16, dist="outlier", params={"n": 96}),
        Case(
            (3, 5, 130), seed=3, dtype=torch.float16, dist="corner", params={"n": 50, "bias": True}
        ),
        Case((40, 96), seed=4, dtype=torch.float16, params={"n": 33}),
        Case((7, 300), seed=5, dtype=torch.float16, dist="outlier", params={"n": 77, "bias": True}),
    ),
    bench=(
        Case((4096, 4096), seed=11, dtype=torch.float16, params={"n": 8192, "bias": True}),
        Case((16, 8192), seed=12, dtype=torch.float16, params={"n": 16384}),
    ),
    flops=lambda c: 2.0 * numel(c.shape) * c.params["n"],
    bytes_moved=lambda c: (
        2.0
        * (
            numel(c.shape)
            + c.params["n"] * c.shape[-1]
            + numel(c.shape[:-1]) * c.params["n"]
            + c.params["n"]
        )
    ),
    tolerance=Tolerance(rtol=2e-3, atol=1e-3),
    quant=QUANT,
)
