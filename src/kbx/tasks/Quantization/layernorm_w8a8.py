"""Quantization/layernorm_w8a8: layer norm of int8-quantized activations with an int8 weight."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.quant import away_from_ties, quantize, scales
from kbx.suite.task import Case, Inputs, QuantStep, Steps, Task, Tolerance

# Corner values: mostly signed zeros and tiny values; a rare 1e4 takes over its row's scale.
SPECIALS = (0.0, -0.0, 1e-30, -1e-30) * 2 + (1e4,)


def reference(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    dims = tuple(range(-len(shape), 0))
    g = numel(shape)
    sx = scales(input, dims)
    xq = quantize(input, sx)
    q = xq.to(torch.int64)  # exact integer statistics of the int8 row
    s1, s2 = q.sum(dims, keepdim=True), (q * q).sum(dims, keepdim=True)
    mean = s1.float() / g
    var = (g * s2 - s1 * s1).float() / (g * g)  # exact numerator, one float32 rounding
    y = (xq - mean) * sx / torch.sqrt(sx * sx * var + eps)
    if weight is not None:
        sw = scales(weight, tuple(range(weight.dim())))
        y = y * (quantize(weight, sw) * sw)  # the dequantized int8 weight
    return y if bias is None else y + bias


def step(inputs: Inputs) -> Steps:
    """One step of the quantized activation carried to the output: sx / sqrt(sx^2 var + eps)
    of the row, times |wq * sw| of the element (1 without a weight)."""
    x, normalized_shape, weight = inputs.args[:3]
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    dims = tuple(range(-len(shape), 0))
    sx = scales(x, dims)
    q = quantize(x, sx).to(torch.float64)
    var = q.var(dims, correction=0, keepdim=True)
    rstd = 1 / torch.sqrt(sx.double() ** 2 * var + inputs.kwargs.get("eps", 1e-5))
    if weight is None:
        return sx * rstd
    sw = scales(weight, tuple(range(weight.dim())))
    return sx * rstd, (quantize(weight, sw) * sw).abs()


QUANT = QuantStep(step, share=1e-5, unit="sx / sqrt(sx^2 var + eps) * |wq sw|, one step of xq")


def make_inputs(case: Case, device: str) -> Inputs:
    """shape = input's shape; params: ns (normalized_shape), affine ("wb", "w", "b", ""), eps,
    shift (added to the input: rows with a mean far from zero)."""
    p = case.params
    ns = p["ns"]
    shape = (ns,) if isinstance(ns, int) else tuple(ns)
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS, shift=p.get("shift", 0.0))
    affine = p.get("affine", "wb")
    w = d.tensor(shape, dist="normal", scale=0.5, shift=1.0) if "w" in affine else None
    b = d.tensor(shape, dist="normal") if "b" in affine else None
    if case.dist == "corner":  # an all-zero row (scale 1, output = bias) and a constant row
        rows = x.reshape(-1, numel(shape))
        rows[1], rows[2] = 0.0, 3.0
    dims = tuple(range(-len(shape), 0))
    x = away_from_ties(x, scales(x, dims))
    if w is not None:
        w = away_from_ties(w, scales(w, tuple(range(w.dim()))))
    args = [t if t is None else t.to(device) for t in (x, w, b)]
    kwargs = {"eps": p["eps"]} if "eps" in p else {}
    return Inputs((args[0], ns, args[1], args[2]), kwargs)


TASK = Task(
    entry="layernorm_w8a8",
    signature=(
        "layernorm_w8a8(input: torch.Tensor, normalized_shape, weight: torch.Tensor = None, "
        "bias: torch.Tensor = None, eps: float = 1e-5) -> torch.Tensor"
    ),
    description=(
        "Layer normalization over the trailing dims `normalized_shape` (an int or a tuple; G "
        "elements per row) of a float32 `input`, with int8-quantized activations and weight, "
        "computed by this recipe (the reference simulates it): per-row scale sx = max |x| / 127 "
        "over the row, in float32, 1 for an all-zero row; xq = clamp(round(x / sx), -127, 127) "
        "as int8, rounding half to even; the row statistics come exactly from integers: "
        "S1 = sum xq, S2 = sum xq^2, mean = S1 / G, var = (G*S2 - S1^2) / G^2 (the numerator "
        "is an exact integer: use int64 or exact int32 partial sums); then "
        "y = (xq - mean) * sx / sqrt(sx^2 * var + eps). The optional float32 `weight` (shape "
        "normalized_shape) is quantized per tensor, sw = max |weight| / 127 (1 if all zero), "
        "wq = clamp(round(weight / sw), -127, 127), and y is multiplied by wq * sw; the "
        "optional float32 `bias` is added unquantized. Output float32, shaped like input. "
        "Inputs are drawn so that no x/sx or weight/sw lies within 0.1 of a rounding tie. "
        "Cases: 1-D and 2-D normalized_shape, weight and bias each present or None, a "
        "non-default eps, outliers (a spike takes over its row's scale), rows with a mean far "
        "from zero, an all-zero row and a constant row (var = 0: output = bias)."
    ),
    math=r"y = \frac{(x_q - \bar{x}_q)\, s_x}{\sqrt{s_x^2 \sigma_q^2 + \epsilon}}\,"
    r"(w_q s_w) + b,\quad \bar{x}_q = \frac{S_1}{G},\ \sigma_q^2 = \frac{G S_2 - S_1^2}{G^2}",
    precision=(
        "float32 in and out; int8 activations and weight; S1, S2 and G*S2 - S1^2 exact; the "
        "normalization itself in float32 in any order (rtol=1e-5, atol=1e-5). A plain float "
        "layer norm (unquantized x and weight) differs by the quantization error (~1e-2 of "
        "the output) and fails. " + QUANT.text()
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((8, 37, 96), seed=1, params={"ns": 96}),
        Case((6, 130), seed=2, dist="outlier", params={"ns": (130,), "affine": "w", "eps": 1e-3}),
        Case((4, 5, 7, 24), seed=3, dist="corner", params={"ns": (7, 24)}),
        Case((3, 50, 64), seed=4, params={"ns": [64], "affine": "", "shift": 20.0}),
        Case((64, 200), seed=5, dist="outlier", params={"ns": 200, "affine": "b"}),
    ),
    bench=(
        Case((8192, 4096), seed=11, params={"ns": 4096}),
        Case((64, 2048, 1024), seed=12, dist="outlier", params={"ns": (1024,), "affine": "w"}),
    ),
    flops=lambda c: 10.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-5),
    quant=QUANT,
)
