"""Fusion/fused_gelu_conv2d: GELU(conv2d(input, weight, bias)), exact or tanh GELU."""

import math

import torch.nn.functional as F

from kbx.suite.inputs import Draw
from kbx.suite.shapes import contraction, conv_geometry, pair
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)  # huge values would let fp32 summation order decide
CALL_ARGS = ("stride", "padding", "dilation", "groups", "approximate")


def reference(
    input,
    weight,
    bias=None,
    stride=1,
    padding=0,
    dilation=1,
    groups=1,
    approximate="none",
    out=None,
):
    y = F.gelu(
        F.conv2d(input, weight, bias, stride, padding, dilation, groups), approximate=approximate
    )
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C_in, H, W); params: cout, k (int or (kH, kW)), bias and the call's arguments.
    Weights are scaled by 1/sqrt(contraction length), so the convolution is ~N(0, 1) and both
    sides of GELU's bend matter."""
    q = case.params
    kh, kw = pair(q["k"])
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    k_len = contraction(case)
    weight = d.tensor(
        (q["cout"], case.shape[1] // q.get("groups", 1), kh, kw),
        dist="normal",
        scale=1 / math.sqrt(k_len),
    )
    bias = d.tensor((q["cout"],), dist="normal", scale=0.5) if q.get("bias") else None
    return Inputs((x, weight, bias), {a: q[a] for a in CALL_ARGS if a in q})


TASK = Task(
    entry="fused_gelu_conv2d",
    signature=(
        "fused_gelu_conv2d(input: Tensor, weight: Tensor, bias: Optional[Tensor]=None, stride: "
        "Union[int, Tuple[int, int]]=1, padding: Union[int, Tuple[int, int], str]=0, dilation: "
        "Union[int, Tuple[int, int]]=1, groups: int=1, approximate: str='none', out: "
        "Optional[Tensor]=None) -> Tensor"
    ),
    description=(
        "2-D convolution (cross-correlation, as torch.nn.functional.conv2d) of a contiguous "
        "float32 NCHW `input` (N, C_in, H, W) with `weight` (C_out, C_in/groups, kH, kW) and "
        "optional `bias` (C_out,), followed by GELU ('none': x * Phi(x) with the exact erf; "
        "'tanh': the tanh approximation). stride, padding and dilation are ints or (h, w) "
        "pairs; padding may also be 'valid' (0) or 'same' (stride 1; output size = input size, "
        "any odd extra padding on the bottom/right). Output size OH = (H + 2 pH - dH (kH - 1) - "
        "1) // sH + 1, likewise OW. Returns a new float32 (N, C_out, OH, OW) tensor; `out` is "
        "not passed. Cases cover bias and none, both GELU forms, stride 2 and (1, 2), padding "
        "0-2, (1, 2), 'same' and 'valid', dilation 2, rectangular kernels, groups=2 and a "
        "depthwise convolution with channel multiplier 2; weights are scaled to give a ~N(0, 1) "
        "convolution."
    ),
    math=r"y_{n,o,i,j} = \mathrm{GELU}\Big(b_o + \sum_{c,u,v} x_{n,c,s_h i - p_h + d_h u,\,"
    r"s_w j - p_w + d_w v}\,w_{o,c,u,v}\Big)",
    precision=(
        "float32 in and out, products accumulated in float32. TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee') or plain fp32 multiply-adds. rtol=1e-4, atol=1e-4 "
        "(TF32 errors are ~4e-4 here, float32 ones ~1e-6)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 8, 17, 19), seed=1, params={"cout": 12, "k": 3, "bias": True, "padding": 1}),
        Case(
            (3, 6, 23, 21),
            seed=2,
            dist="outlier",
            params={"cout": 10, "k": 5, "stride": 2, "padding": 2, "approximate": "tanh"},
        ),
        Case(
            (2, 12, 15, 13),
            seed=3,
            dist="corner",
            params={"cout": 16, "k": 3, "bias": True, "padding": 2, "dilation": 2, "groups": 2},
        ),
        Case(
            (2, 16, 20, 22),
            seed=4,
            params={
                "cout": 32,
                "k": (3, 5),
                "bias": True,
                "stride": (1, 2),
                "padding": (1, 2),
                "groups": 16,
            },
        ),
        Case(
            (1, 9, 31, 29),
            seed=5,
            dist="outlier",
            params={"cout": 7, "k": 4, "padding": "same", "approximate": "tanh"},
        ),
        Case((2, 5, 12, 16), seed=6, params={"cout": 9, "k": (2, 3), "padding": "valid"}),
    ),
    bench=(
        Case((64, 64, 112, 112), seed=11, params={"cout": 128, "k": 3, "bias": True, "padding": 1}),
        Case(
            (64, 128, 56, 56),
            seed=12,
            params={"cout": 256, "k": 3, "padding": 1, "approximate": "tanh"},
        ),
    ),
    flops=lambda c: 2.0 * c.shape[0] * c.params["cout"] * math.prod(conv_geometry(c)),
    bytes_moved=lambda c: (
        4.0
        * (
            math.prod(c.shape)
            + c.params["cout"] * conv_geometry(c)[2]
            + c.shape[0] * c.params["cout"] * math.prod(conv_geometry(c)[:2])
        )
    ),
    tolerance=Tolerance(rtol=1e-4, atol=1e-4),
)
