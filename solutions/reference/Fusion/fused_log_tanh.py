"""tanh(log(x)) in Triton: one program per block of elements, both functions in registers.

libdevice's log and tanh are accurate to a few ulp and follow IEEE at the edges (log(+-0) = -inf,
log(x < 0) = NaN, tanh(+-inf) = +-1), so no special cases are needed. The closed form
(x^2 - 1) / (x^2 + 1) is avoided: x^2 overflows for x > ~1.8e19.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 2048}, num_warps=8),
        triton.Config({"BLOCK": 4096}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def _log_tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    x = tl.load(x_ptr + offs, mask=ok, other=1.0)
    y = libdevice.tanh(libdevice.log(x))
    tl.store(y_ptr + offs, y, mask=ok)


def fused_log_tanh(input, out=None):
    x = input.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        _log_tanh_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
    if out is not None:
        out.copy_(y)
        return out
    return y
