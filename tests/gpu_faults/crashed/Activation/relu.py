"""GPU fault: a kernel stores far outside its output (an illegal address), so CUDA fails."""

import torch
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    far = offs + (1 << 40)  # a terabyte past the output: no allocation is there
    tl.store(y_ptr + far, tl.where(x < 0, 0.0, x), mask=mask)


def relu(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    x = input.contiguous()
    y = torch.empty_like(x)
    _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    torch.cuda.synchronize()
    return y
