"""masked_select + add + GELU in Triton: a stream compaction with the arithmetic on the way.

The broadcast index space of (input, mask) is cut into blocks of BLOCK elements. Pass 1 counts
each block's selected elements; pass 2 (one program) turns the counts into exclusive prefix
sums, i.e. each block's first output position, and the total K; pass 3 recomputes each
element's rank inside its block with tl.cumsum and writes gelu(x + alpha * other) at block
offset + rank, reading `other` at that output position (or as a broadcast (1,) tensor or a
number). Row-major order is preserved, as torch.masked_select requires. Operands broadcast
through zero strides over a 4-D view; K is read back to size the output, as torch does.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

BLOCK = 1024


@triton.jit
def _coords(offs, S1, S2, S3):
    i3 = offs % S3
    i2 = (offs // S3) % S2
    i1 = (offs // (S3 * S2)) % S1
    i0 = offs // (S3 * S2 * S1)
    return i0, i1, i2, i3


@triton.jit
def _count_kernel(m_ptr, cnt_ptr, n, S1, S2, S3, ms0, ms1, ms2, ms3, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    i0, i1, i2, i3 = _coords(offs, S1, S2, S3)
    m = tl.load(m_ptr + i0 * ms0 + i1 * ms1 + i2 * ms2 + i3 * ms3, mask=ok, other=0)
    tl.store(cnt_ptr + tl.program_id(0), tl.sum((m != 0).to(tl.int64), axis=0))


@triton.jit
def _scan_kernel(cnt_ptr, start_ptr, total_ptr, nblocks, CHUNK: tl.constexpr):
    carry = tl.zeros((1,), tl.int64)
    for c0 in range(0, nblocks, CHUNK):
        offs = c0 + tl.arange(0, CHUNK)
        c = tl.load(cnt_ptr + offs, mask=offs < nblocks, other=0)
        incl = tl.cumsum(c, axis=0)
        tl.store(start_ptr + offs, carry + incl - c, mask=offs < nblocks)  # exclusive
        carry += tl.sum(c, axis=0)
    tl.store(total_ptr + tl.arange(0, 1), carry)


@triton.jit
def _select_kernel(
    x_ptr, m_ptr, o_ptr, start_ptr, y_ptr, n, S1, S2, S3,
    xs0, xs1, xs2, xs3, ms0, ms1, ms2, ms3, o_step, o_val, alpha,
    O_TENSOR: tl.constexpr, APPROX_TANH: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    i0, i1, i2, i3 = _coords(offs, S1, S2, S3)
    m = tl.load(m_ptr + i0 * ms0 + i1 * ms1 + i2 * ms2 + i3 * ms3, mask=ok, other=0) != 0
    m = m & ok
    rank = tl.cumsum(m.to(tl.int64), axis=0) - m.to(tl.int64)  # exclusive, within the block
    pos = tl.load(start_ptr + tl.program_id(0)) + rank
    x = tl.load(x_ptr + i0 * xs0 + i1 * xs1 + i2 * xs2 + i3 * xs3, mask=m, other=0.0)
    o = o_val
    if O_TENSOR:
        o = tl.load(o_ptr + pos * o_step, mask=m, other=0.0)  # o_step = 0 for a (1,) tensor
    s = x + alpha * o
    if APPROX_TANH:
        g = 0.5 * s * (1.0 + libdevice.tanh(0.7978845608028654 * (s + 0.044715 * s * s * s)))
    else:
        g = 0.5 * s * (1.0 + tl.math.erf(s * 0.7071067811865476))  # s * Phi(s)
    tl.store(y_ptr + pos, g, mask=m)


def _strides4(t, shape):
    t4 = t.reshape((1,) * (4 - t.dim()) + tuple(t.shape))
    return list(t4.expand(shape).stride())


def fused_masked_select_add_gelu(input, mask, other, *, alpha=1, approximate="none", out=None):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    shape = torch.broadcast_shapes(input.shape, mask.shape)
    if len(shape) > 4:
        raise NotImplementedError("at most 4 dims")
    shape4 = (1,) * (4 - len(shape)) + tuple(shape)
    n = shape.numel()
    dev = input.device
    xs, ms = _strides4(input, shape4), _strides4(mask, shape4)
    nblocks = max(triton.cdiv(n, BLOCK), 1)
    counts = torch.empty((nblocks,), device=dev, dtype=torch.int64)
    starts = torch.empty((nblocks,), device=dev, dtype=torch.int64)
    total = torch.zeros((1,), device=dev, dtype=torch.int64)
    if n:
        _count_kernel[(nblocks,)](mask, counts, n, *shape4[1:], *ms, BLOCK=BLOCK)
        _scan_kernel[(1,)](counts, starts, total, nblocks, CHUNK=1024)
    k = int(total[0])  # the output's length: read back, as torch.masked_select does
    y = torch.empty((k,), device=dev, dtype=torch.float32)
    o_tensor = isinstance(other, torch.Tensor)
    if o_tensor and other.numel() not in (1, k):
        raise ValueError(f"other of shape {tuple(other.shape)} does not broadcast to ({k},)")
    if k:
        _select_kernel[(nblocks,)](
            input, mask, other if o_tensor else y, starts, y, n, *shape4[1:], *xs, *ms,
            (1 if other.numel() == k and k > 1 else 0) if o_tensor else 0,
            0.0 if o_tensor else float(other), float(alpha),
            O_TENSOR=o_tensor, APPROX_TANH=approximate == "tanh", BLOCK=BLOCK,
        )  # fmt: skip
    if out is not None:
        out.copy_(y)
        return out
    return y
