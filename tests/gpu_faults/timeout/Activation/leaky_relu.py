"""GPU fault: a kernel that never ends (it spins on a flag nobody sets)."""

import torch
import triton
import triton.language as tl


@triton.jit
def _spin_kernel(x_ptr, y_ptr, flag_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    while tl.load(flag_ptr, volatile=True) == 0:
        x = x * 1.0
    tl.store(y_ptr + offs, x, mask=mask)


def leaky_relu(input: torch.Tensor, negative_slope: float = 0.01, inplace: bool = False):
    x = input.contiguous()
    y = torch.empty_like(x)
    flag = torch.zeros(1, dtype=torch.int32, device=x.device)
    _spin_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, flag, x.numel(), BLOCK=1024)
    torch.cuda.synchronize()
    return y
