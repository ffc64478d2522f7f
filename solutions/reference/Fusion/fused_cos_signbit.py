"""cos and signbit(cos) in one Triton pass: one program per block of elements.

The cosine is libdevice's full-range cos (float32); the sign bit is read from the bits of the
result (bit 31 of its int32 view), so it is exactly torch.signbit of the stored cosine.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 2048}, num_warps=8),
        triton.Config({"BLOCK": 4096}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def _cos_signbit_kernel(x_ptr, c_ptr, s_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    c = libdevice.cos(x)
    sign = c.to(tl.int32, bitcast=True) < 0  # the sign bit is the int32 sign
    tl.store(c_ptr + offs, c, mask=mask)
    tl.store(s_ptr + offs, sign.to(tl.int8), mask=mask)  # bool tensors hold one byte 0/1


def fused_cos_signbit(input: torch.Tensor):
    x = input.contiguous()
    c = torch.empty(x.shape, device=x.device, dtype=torch.float32)
    s = torch.empty(x.shape, device=x.device, dtype=torch.bool)
    n = x.numel()
    if n:
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
        _cos_signbit_kernel[grid](x, c, s.view(torch.int8), n)
    return c, s
