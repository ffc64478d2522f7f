"""Quantization/conv2d_w8a8: conv2d through symmetric int8 quantization (per image / channel)."""

import torch.nn.functional as F

from kbx.suite.inputs import Draw
from kbx.suite.quant import away_from_ties, quantize, scales
from kbx.suite.shapes import conv_hw
from kbx.suite.task import Case, Inputs, QuantStep, Steps, Task, Tolerance

# Corner values: mostly signed zeros and tiny values; a rare 1e4 takes over its image's scale.
SPECIALS = (0.0, -0.0, 1e-30, -1e-30) * 2 + (1e4,)
DIMS = (1, 2, 3)  # a scale per image (X) and per output channel (W)


def reference(input, weight, bias=None, stride=1, padding=0):
    sx, sw = scales(input, DIMS), scales(weight, DIMS)
    xq, wq = quantize(input, sx), quantize(weight, sw)
    acc = F.conv2d(xq.double(), wq.double(), None, stride, padding)  # exact integer sums
    y = (acc.float() * sx.reshape(-1, 1, 1, 1)) * sw.reshape(1, -1, 1, 1)
    return y if bias is None else y + bias.reshape(1, -1, 1, 1)


def step(inputs: Inputs) -> Steps:
    """One unit of the int32 accumulator at the output's scale: sx[n] * sw[o]."""
    x, w = inputs.args[:2]
    return scales(x, DIMS).reshape(-1, 1, 1, 1), scales(w, DIMS).reshape(1, -1, 1, 1)


QUANT = QuantStep(step, share=1e-5, unit="sx[n] * sw[o], one unit of the int32 sum")


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C_in, H, W); params: cout, k (square kernel), bias, stride, padding."""
    p = case.params
    n, cin = case.shape[:2]
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    w = d.tensor((p["cout"], cin, p["k"], p["k"]), specials=SPECIALS)
    b = d.tensor((p["cout"],), dist="normal") if p.get("bias") else None
    if case.dist == "corner":  # an all-zero image and output channel: their scale is 1
        x[n - 1], w[p["cout"] // 2] = 0.0, 0.0
    args = tuple(away_from_ties(t, scales(t, DIMS)).to(device) for t in (x, w))
    args += (None if b is None else b.to(device),)
    return Inputs(args, {a: p[a] for a in ("stride", "padding") if a in p})


def flops(c: Case) -> float:
    oh, ow = conv_hw(c)
    return 2.0 * c.shape[0] * c.params["cout"] * oh * ow * c.shape[1] * c.params["k"] ** 2


def bytes_moved(c: Case) -> float:
    n, cin, h, w = c.shape
    oh, ow = conv_hw(c)
    cout, k = c.params["cout"], c.params["k"]
    return 4.0 * (n * cin * h * w + cout * cin * k * k + n * cout * oh * ow)


TASK = Task(
    entry="conv2d_w8a8",
    signature=(
        "conv2d_w8a8(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor = None, "
        "stride: int = 1, padding: int = 0) -> torch.Tensor"
    ),
    description=(
        "W8A8 2-D convolution (cross-correlation) of a contiguous float32 NCHW `input` X "
        "(N, C_in, H, W) with float32 `weight` W (C_out, C_in, k, k) and optional float32 "
        "`bias` (C_out,); `stride` and zero `padding` are ints for both spatial dims (no "
        "dilation, no groups). Output (N, C_out, OH, OW) float32, OH = (H + 2*padding - k) // "
        "stride + 1, computed by exactly this recipe (the reference simulates it): per-image "
        "scale sx[n] = max |X[n]| / 127 and per-output-channel scale sw[o] = max |W[o]| / 127, "
        "in float32, with 1 in place of a zero scale; Xq = clamp(round(X / sx), -127, 127) and "
        "Wq = clamp(round(W / sw), -127, 127) as int8, rounding half to even; acc = conv2d(Xq, "
        "Wq) summed exactly in int32 (padding contributes 0); Y = (float32(acc) * sx[n]) * "
        "sw[o] + bias[o], the bias added in float after dequantization. Inputs are drawn so "
        "that no X/sx or W/sw lies within 0.1 of a rounding tie. Cases cover bias and none, "
        "stride 1-3, padding, 1x1, 3x3 and 5x5 kernels, outliers, a 1e4 spike that takes over "
        "its image's scale, and an all-zero image and output channel."
    ),
    math=r"Y_{n,o,i,j} = s^x_n s^w_o \sum_{c,u,v} \mathrm{rnd}(X_{n,c,si-p+u,sj-p+v}/s^x_n)\,"
    r"\mathrm{rnd}(W_{o,c,u,v}/s^w_o) + b_o",
    precision=(
        "float32 in and out; int8 operands; the sum over (c, u, v) is exact (int32, or any "
        "exact equivalent). Only the float32 rounding of the scales, the two products and the "
        "bias add may differ (rtol=1e-5, atol=1e-5). A plain float conv2d differs from the "
        "recipe by the quantization error (about 1% of |Y|) and fails. " + QUANT.text()
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 8, 17, 19), seed=1, params={"cout": 12, "k": 3, "bias": True, "padding": 1}),
        Case(
            (3, 6, 23, 21),
            seed=2,
            dist="outlier",
            params={"cout": 10, "k": 5, "stride": 2, "padding": 2},
        ),
        Case(
            (3, 12, 15, 13),
            seed=3,
            dist="corner",
            params={"cout": 16, "k": 3, "bias": True, "padding": 2},
        ),
        Case((1, 9, 31, 29), seed=4, params={"cout": 7, "k": 3, "stride": 3}),
        Case((4, 16, 12, 10), seed=5, dist="outlier", params={"cout": 24, "k": 1, "bias": True}),
    ),
    bench=(
        Case((32, 256, 56, 56), seed=11, params={"cout": 256, "k": 3, "bias": True, "padding": 1}),
        Case(
            (64, 64, 112, 112),
            seed=12,
            dist="outlier",
            params={"cout": 128, "k": 3, "stride": 2, "padding": 1},
        ),
    ),
    flops=flops,
    bytes_moved=bytes_moved,
    tolerance=Tolerance(rtol=1e-5, atol=1e-5),
    quant=QUANT,
)
