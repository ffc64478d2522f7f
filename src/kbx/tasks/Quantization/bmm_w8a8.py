"""Quantization/bmm_w8a8: batched X @ M through symmetric int8 quantization (per row / column)."""

import torch

from kbx.suite.inputs import Draw
from kbx.suite.quant import away_from_ties, quantize, scales
from kbx.suite.task import Case, Inputs, QuantStep, Steps, Task, Tolerance

# Corner values: mostly signed zeros and tiny values; a rare 1e4 takes over its row's scale.
SPECIALS = (0.0, -0.0, 1e-30, -1e-30) * 2 + (1e4,)


def reference(input: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    sx, sm = scales(input, 2), scales(mat2, 1)  # (B, M, 1) and (B, 1, N)
    xq, mq = quantize(input, sx), quantize(mat2, sm)
    acc = torch.bmm(xq.double(), mq.double()).to(torch.int32)  # exact: the int32 accumulation
    return (acc.float() * sx) * sm


def step(inputs: Inputs) -> Steps:
    """One unit of the int32 accumulator at the output's scale: sx[b,m] * sw[b,n]."""
    x, w = inputs.args
    return scales(x, 2), scales(w, 1)


QUANT = QuantStep(step, share=1e-5, unit="sx[b,m] * sw[b,n], one unit of the int32 sum")


def make_inputs(case: Case, device: str) -> Inputs:
    b, m, k, n = case.shape
    d = Draw(case, device)
    x, w = d.tensor((b, m, k), specials=SPECIALS), d.tensor((b, k, n), specials=SPECIALS)
    if case.dist == "corner":  # an all-zero row and column: their scale is 1
        x[0, m // 2], w[b - 1, :, n // 3] = 0.0, 0.0
    x, w = away_from_ties(x, scales(x, 2)), away_from_ties(w, scales(w, 1))
    return Inputs((x.to(device), w.to(device)))


TASK = Task(
    entry="bmm_w8a8",
    signature="bmm_w8a8(input: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor",
    description=(
        "W8A8 batched matrix product of `input` X (B, M, K) and `mat2` W (B, K, N), both "
        "contiguous float32, returning Y (B, M, N) float32 computed by exactly this recipe "
        "(the reference simulates it): per (batch, row) scale sx[b,m] = max_k |X[b,m,k]| / 127 "
        "and per (batch, column) scale sw[b,n] = max_k |W[b,k,n]| / 127, in float32, with 1 in "
        "place of a zero scale (an all-zero row or column); Xq = clamp(round(X / sx), -127, "
        "127) and Wq = clamp(round(W / sw), -127, 127) as int8, rounding half to even; "
        "acc[b,m,n] = sum_k Xq[b,m,k] * Wq[b,k,n] exactly, in int32; Y[b,m,n] = "
        "(float32(acc) * sx[b,m]) * sw[b,n]. Every batch entry has its own scales. Inputs "
        "are drawn so that no X/sx or W/sw lies within 0.1 of a rounding tie: division or "
        "multiplication by the reciprocal give the same int8 values. Cases include outliers "
        "(a few entries 10-20x larger), a 1e4 spike that takes over its row's scale, and "
        "all-zero rows and columns. The result is close to, but not, the float product."
    ),
    math=r"Y_{bmn} = s^x_{bm} s^w_{bn} \sum_k \mathrm{rnd}(X_{bmk}/s^x_{bm})\,"
    r"\mathrm{rnd}(W_{bkn}/s^w_{bn})",
    precision=(
        "float32 in and out; int8 operands; the K-sum is exact (int32, or any exact "
        "equivalent). Only the float32 rounding of the scales and of the final two products "
        "may differ (rtol=1e-5, atol=1e-6). A plain float bmm differs from the recipe by the "
        "quantization error (about 1% of |Y|) and fails. " + QUANT.text()
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((3, 37, 203, 45), seed=1),
        Case((2, 64, 251, 33), seed=2, dist="outlier"),
        Case((4, 29, 130, 71), seed=3, dist="corner"),
        Case((5, 17, 177, 26), seed=4, dist="outlier"),
        Case((1, 3, 300, 17), seed=5),
    ),
    bench=(
        Case((32, 1024, 1024, 1024), seed=11),
        Case((8, 2048, 4096, 1024), seed=12, dist="outlier"),
    ),
    flops=lambda c: 2.0 * c.shape[0] * c.shape[1] * c.shape[2] * c.shape[3],
    bytes_moved=lambda c: (
        4.0
        * c.shape[0]
        * (c.shape[1] * c.shape[2] + c.shape[2] * c.shape[3] + c.shape[1] * c.shape[3])
    ),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    quant=QUANT,
)
