"""Known-bad: a Triton kernel that writes zeros of the right shape and dtype."""
import torch
import triton
import triton.language as tl


@triton.jit
def _zeros(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)


def sum(input, dim, keepdim=False, dtype=None):
    dims = {d % input.dim() for d in (dim if isinstance(dim, list | tuple) else [dim])}
    shape = [1 if i in dims else n for i, n in enumerate(input.shape) if keepdim or i not in dims]
    y = torch.empty(shape, dtype=dtype or input.dtype, device=input.device)
    _zeros[(triton.cdiv(max(y.numel(), 1), 1024),)](y, y.numel(), BLOCK=1024)
    return y
