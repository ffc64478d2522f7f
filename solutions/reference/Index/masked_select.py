"""masked_select in Triton: a three-kernel stream compaction (count, scan, scatter).

1. One program per block of BLOCK elements counts its True mask values.
2. A single program turns the block counts into exclusive prefix offsets (a sequential carry
   over chunks of tl.cumsum) and writes the total.
3. The host reads the total (the output length must be known to allocate it), and each block
   writes its selected values at its offset plus the in-block exclusive prefix sum of the mask,
   which keeps row-major order.
Broadcast operands are expanded and made contiguous first.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _count_kernel(m_ptr, counts_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = tl.load(m_ptr + offs, mask=offs < n, other=0).to(tl.int32)
    tl.store(counts_ptr + pid, tl.sum(m, axis=0))


@triton.jit
def _scan_kernel(counts_ptr, offsets_ptr, nblocks, CHUNK: tl.constexpr):
    carry = tl.zeros((), tl.int64)
    for start in range(0, nblocks, CHUNK):
        i = start + tl.arange(0, CHUNK)
        c = tl.load(counts_ptr + i, mask=i < nblocks, other=0).to(tl.int64)
        incl = tl.cumsum(c, axis=0)
        tl.store(offsets_ptr + i, carry + incl - c, mask=i < nblocks)  # exclusive offsets
        carry += tl.sum(c, axis=0)
    tl.store(offsets_ptr + nblocks, carry)  # total number of selected elements


@triton.jit
def _compact_kernel(x_ptr, m_ptr, offsets_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < n
    m = tl.load(m_ptr + offs, mask=valid, other=0).to(tl.int32)
    pos = tl.cumsum(m, axis=0) - m  # rank of each selected element inside the block
    base = tl.load(offsets_ptr + pid)
    keep = valid & (m != 0)
    x = tl.load(x_ptr + offs, mask=keep)
    tl.store(out_ptr + base + pos.to(tl.int64), x, mask=keep)


def masked_select(input: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    shape = torch.broadcast_shapes(input.shape, mask.shape)
    x = input.expand(shape).contiguous().reshape(-1)
    m = mask.expand(shape).contiguous().reshape(-1)
    n = x.numel()
    BLOCK = 2048
    nblocks = triton.cdiv(n, BLOCK)
    if n == 0:
        return torch.empty(0, dtype=input.dtype, device=input.device)
    counts = torch.empty(nblocks, dtype=torch.int32, device=x.device)
    offsets = torch.empty(nblocks + 1, dtype=torch.int64, device=x.device)
    _count_kernel[(nblocks,)](m, counts, n, BLOCK=BLOCK)
    _scan_kernel[(1,)](counts, offsets, nblocks, CHUNK=1024)
    total = int(offsets[nblocks].item())  # host sync: the output length
    out = torch.empty(total, dtype=input.dtype, device=input.device)
    if total:
        _compact_kernel[(nblocks,)](x, m, offsets, out, n, BLOCK=BLOCK)
    return out
