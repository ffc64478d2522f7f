"""Quantization/matmul_w8a8: X @ W through symmetric int8 quantization (per row / per column)."""

import torch

from kbx.suite.inputs import Draw
from kbx.suite.quant import away_from_ties, quantize, scales
from kbx.suite.task import Case, Inputs, QuantStep, Steps, Task, Tolerance

# Corner values: mostly signed zeros and tiny values; a rare 1e4 takes over its row's scale.
SPECIALS = (0.0, -0.0, 1e-30, -1e-30) * 2 + (1e4,)


def reference(input: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    sx, sw = scales(input, 1), scales(weight, 0)  # (M, 1) and (1, N)
    xq, wq = quantize(input, sx), quantize(weight, sw)
    acc = (xq.double() @ wq.double()).to(torch.int32)  # exact: the int32 accumulation
    return (acc.float() * sx) * sw


def step(inputs: Inputs) -> Steps:
    """One unit of the int32 accumulator at the output's scale: sx[m] * sw[n]."""
    x, w = inputs.args
    return scales(x, 1), scales(w, 0)


QUANT = QuantStep(step, share=1e-5, unit="sx[m] * sw[n], one unit of the int32 sum")


def make_inputs(case: Case, device: str) -> Inputs:
    m, k, n = case.shape
    d = Draw.sized(case, device)
    x, w = d.tensor((m, k), specials=SPECIALS), d.tensor((k, n), specials=SPECIALS)
    if case.dist == "corner":  # an all-zero row and column: their scale is 1
        x[m // 2], w[:, n // 3] = 0.0, 0.0
    x, w = away_from_ties(x, scales(x, 1)), away_from_ties(w, scales(w, 0))
    return Inputs((x.to(device), w.to(device)))


TASK = Task(
    entry="matmul_w8a8",
    signature="matmul_w8a8(input: torch.Tensor, weight: torch.Tensor) -> torch.Tensor",
    description=(
        "W8A8 matrix product of `input` X (M, K) and `weight` W (K, N), both contiguous "
        "float32, returning Y (M, N) float32 computed by exactly this recipe (the reference "
        "simulates it): per-row activation scale sx[m] = max_k |X[m,k]| / 127 and per-column "
        "weight scale sw[n] = max_k |W[k,n]| / 127, in float32, with 1 in place of a zero "
        "scale (an all-zero row or column); Xq = clamp(round(X / sx), -127, 127) and "
        "Wq = clamp(round(W / sw), -127, 127) as int8, rounding half to even; "
        "acc[m,n] = sum_k Xq[m,k] * Wq[k,n] exactly, in int32; "
        "Y[m,n] = (float32(acc[m,n]) * sx[m]) * sw[n]. Inputs are drawn so that no X/sx or "
        "W/sw lies within 0.1 of a rounding tie: division or multiplication by the reciprocal "
        "give the same int8 values. Cases include outliers (a few entries 10-20x larger) and "
        "all-zero rows and columns. The result is close to, but not, the float product X @ W."
    ),
    math=r"Y_{mn} = s^x_m s^w_n \sum_k \mathrm{rnd}(X_{mk}/s^x_m)\,\mathrm{rnd}(W_{kn}/s^w_n),"
    r"\quad s^x_m = \max_k |X_{mk}|/127,\ s^w_n = \max_k |W_{kn}|/127",
    precision=(
        "float32 in and out; int8 operands; the K-sum is exact (int32, or any exact "
        "equivalent). Only the float32 rounding of the scales and of the final two products "
        "may differ (rtol=1e-5). A plain float X @ W differs from the recipe by the "
        "quantization error (about 1% of |Y|) and fails. " + QUANT.text()
    ),
    reference=reference,
    make_inputs=make_inputs,
    version=2,  # benchmark inputs derived on the GPU, not on the CPU (2026-11-30)
    cases=(
        Case((37, 203, 45), seed=1),
        Case((64, 251, 33), seed=2, dist="outlier"),
        Case((29, 130, 71), seed=3, dist="corner"),
        Case((50, 177, 96), seed=4, dist="outlier"),
        Case((3, 300, 17), seed=5),
    ),
    bench=(
        Case((4096, 4096, 4096), seed=11),
        Case((16384, 1024, 4096), seed=12, dist="outlier"),
    ),
    flops=lambda c: 2.0 * c.shape[0] * c.shape[1] * c.shape[2],
    bytes_moved=lambda c: (
        4.0 * (c.shape[0] * c.shape[1] + c.shape[1] * c.shape[2] + c.shape[0] * c.shape[2])
    ),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    quant=QUANT,
)
