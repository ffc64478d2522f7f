"""Quantized GELU in Triton: int8 codes in, int8 codes out, arithmetic in float32.

Each program dequantizes a block of codes (q * input_scale), applies GELU (erf form, or the tanh
form with tanh(y) = 1 - 2 / (exp(2y) + 1), which saturates cleanly), requantizes with
round-half-to-even (libdevice rint), saturates to [-128, 127] and stores int8.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _gelu_int8_kernel(
    x_ptr, y_ptr, n, in_scale, inv_out_scale, APPROX_TANH: tl.constexpr, BLOCK: tl.constexpr
):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    q = tl.load(x_ptr + offs, mask=mask, other=0)
    x = q.to(tl.float32) * in_scale  # dequantize
    if APPROX_TANH:
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        y = 0.5 * x * (2.0 - 2.0 / (tl.exp(2.0 * inner) + 1.0))  # 0.5 x (1 + tanh(inner))
    else:
        y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    r = libdevice.rint(y * inv_out_scale)  # round half to even
    r = tl.minimum(tl.maximum(r, -128.0), 127.0)  # saturate: the cast below is then exact
    tl.store(y_ptr + offs, r.to(tl.int8), mask=mask)


def gelu_int8(input, approximate="none", input_scale=1.0, output_scale=1.0):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    x = input.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    BLOCK = 4096
    _gelu_int8_kernel[(triton.cdiv(n, BLOCK),)](
        x,
        y,
        n,
        float(input_scale),
        1.0 / float(output_scale),
        APPROX_TANH=approximate == "tanh",
        BLOCK=BLOCK,
    )
    return y
