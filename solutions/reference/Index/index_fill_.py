"""index_fill_ in Triton: a 2-D grid of (index entry, block of its slice) writing `value`.

The contiguous tensor is viewed as (A, D, B) around `dim`. Program (k, j) reads index[k] once,
wraps a negative index, and stores `value` into elements j*BLOCK ... of the A*B-element slice.
Repeated indices write the same value, so their races are harmless.
"""

import math

import triton
import triton.language as tl


@triton.jit
def _fill_kernel(x_ptr, idx_ptr, value, D, B, AB, BLOCK: tl.constexpr):
    k = tl.program_id(0)
    i = tl.load(idx_ptr + k).to(tl.int64)
    i = tl.where(i < 0, i + D, i)  # negative indices count from the end
    j = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = j < AB
    a = j // B
    b = j % B
    vals = tl.full((BLOCK,), value, tl.float32).to(x_ptr.dtype.element_ty)
    tl.store(x_ptr + (a * D + i) * B + b, vals, mask=mask)


def index_fill_(dim, x, index, value):
    if not x.is_contiguous():
        raise ValueError("x must be contiguous")
    nd = max(x.dim(), 1)
    dim = dim % nd
    shape = list(x.shape) or [1]
    D = shape[dim]
    A, B = math.prod(shape[:dim]), math.prod(shape[dim + 1 :])
    m = index.numel()
    if m == 0 or x.numel() == 0:
        return x
    BLOCK = min(1024, triton.next_power_of_2(A * B))
    grid = (m, triton.cdiv(A * B, BLOCK))
    _fill_kernel[grid](x, index.reshape(-1), float(value), D, B, A * B, BLOCK=BLOCK)
    return x
