"""index_select in Triton: 2-D tiles of (output rows, contiguous inner elements).

The contiguous input is viewed as (A, D, B) around `dim` and the output as (A, M, B), M being the
number of indices. Each program copies a [BLOCK_R, BLOCK_B] tile: BLOCK_R output rows (a, k), each
reading index[k] once, times BLOCK_B contiguous elements of the inner dims. Row gathers (B large)
get wide rows; gathers along the last dim (B = 1) get many rows per program.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _select_kernel(
    x_ptr, idx_ptr, out_ptr, M, D, B, R, BLOCK_R: tl.constexpr, BLOCK_B: tl.constexpr
):
    r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)  # output row = a*M + k
    b = tl.program_id(1).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B)
    rmask = r < R
    a = r // M
    k = r % M
    i = tl.load(idx_ptr + k, mask=rmask, other=0).to(tl.int64)  # source position along dim
    mask = rmask[:, None] & (b < B)[None, :]
    src = x_ptr + (a * D + i)[:, None] * B + b[None, :]
    vals = tl.load(src, mask=mask)
    tl.store(out_ptr + r[:, None] * B + b[None, :], vals, mask=mask)


def index_select(input: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    x = input.contiguous()
    nd = max(x.dim(), 1)
    dim = dim % nd
    shape = list(x.shape) or [1]
    idx = index.reshape(-1).contiguous()
    M, D = idx.numel(), shape[dim]
    A, B = math.prod(shape[:dim]), math.prod(shape[dim + 1 :])
    out_shape = list(input.shape)
    if out_shape:
        out_shape[dim] = M
    out = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    R = A * M
    if R * B == 0:
        return out
    BLOCK_B = min(1024, triton.next_power_of_2(B))
    BLOCK_R = max(1, 2048 // BLOCK_B)
    grid = (triton.cdiv(R, BLOCK_R), triton.cdiv(B, BLOCK_B))
    _select_kernel[grid](x, idx, out, M, D, B, R, BLOCK_R=BLOCK_R, BLOCK_B=BLOCK_B)
    return out
