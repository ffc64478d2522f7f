"""Out-of-place scatter in Triton: a copy kernel, then one program per block of index elements.

Tensors of up to 4 dimensions are padded to 4 with leading size-1 dimensions. Each index element
decomposes its flat position into 4 coordinates (index shape), reads index[p] and src[p] through
their strides, and stores into the output at the same coordinates with `dim` replaced by index[p].
Where indices repeat, the stores race and one of the src values wins, as in PyTorch on a GPU.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def _scatter_kernel(
    out_ptr, idx_ptr, src_ptr, n,
    s1, s2, s3,  # index shape (dims 1..3; dim 0 is implied by n)
    is0, is1, is2, is3,  # index strides
    ss0, ss1, ss2, ss3,  # src strides
    os0, os1, os2, os3,  # output strides
    DIM: tl.constexpr, BLOCK: tl.constexpr,
):
    p = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = p < n
    c3 = p % s3
    c2 = (p // s3) % s2
    c1 = (p // (s3 * s2)) % s1
    c0 = p // (s3 * s2 * s1)
    idx = tl.load(idx_ptr + c0 * is0 + c1 * is1 + c2 * is2 + c3 * is3, mask=mask, other=0)
    val = tl.load(src_ptr + c0 * ss0 + c1 * ss1 + c2 * ss2 + c3 * ss3, mask=mask)
    # the coordinate along DIM is replaced by the index value
    t0 = tl.where(DIM == 0, idx, c0)
    t1 = tl.where(DIM == 1, idx, c1)
    t2 = tl.where(DIM == 2, idx, c2)
    t3 = tl.where(DIM == 3, idx, c3)
    dst = out_ptr + t0 * os0 + t1 * os1 + t2 * os2 + t3 * os3
    tl.store(dst, val.to(out_ptr.dtype.element_ty), mask=mask)


def _pad4(values, fill):
    return [fill] * (4 - len(values)) + list(values)


def scatter(input: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    nd = input.dim()
    if nd > 4 or index.dim() != nd or src.dim() != nd:
        raise ValueError("input, index and src must have the same number of dimensions (<= 4)")
    dim = dim % nd
    x = input.contiguous()
    out = torch.empty_like(x)
    BLOCK = 1024
    n = x.numel()
    if n:
        _copy_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
    m = index.numel()
    if m:
        ishape = _pad4(index.shape, 1)
        _scatter_kernel[(triton.cdiv(m, BLOCK),)](
            out, index, src, m, ishape[1], ishape[2], ishape[3],
            *_pad4(index.stride(), 0), *_pad4(src.stride(), 0), *_pad4(out.stride(), 0),
            DIM=dim + 4 - nd, BLOCK=BLOCK,
        )
    return out
