"""GPU fault: after a kernel, one allocation of a terabyte, more than the GPU has."""

import torch
import triton
import triton.language as tl


@triton.jit
def _gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476)), mask=mask)


def gelu(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    x = input.contiguous()
    y = torch.empty_like(x)
    _gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    scratch = torch.empty(1 << 40, dtype=torch.uint8, device=x.device)
    return y + scratch[:1]
