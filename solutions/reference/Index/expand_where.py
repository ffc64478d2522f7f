"""expand_where in Triton: a strided element-wise select over the broadcast output.

The three operands are expanded (views with stride 0 on broadcast dims) to the output shape,
padded to 4 dims. Programs own one output row (the first three dims, decomposed once per program
as scalars) and a block of the last dim, so the per-element work is a strided load of each operand
and one contiguous store.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _where_kernel(
    x_ptr,
    c_ptr,
    o_ptr,
    out_ptr,
    S1,
    S2,
    S3,
    xs0,
    xs1,
    xs2,
    xs3,
    cs0,
    cs1,
    cs2,
    cs3,
    os0,
    os1,
    os2,
    os3,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    i2 = row % S2  # scalar coordinates of this output row
    i1 = (row // S2) % S1
    i0 = row // (S2 * S1)
    j = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = j < S3
    x = tl.load(x_ptr + i0 * xs0 + i1 * xs1 + i2 * xs2 + j * xs3, mask=mask)
    c = tl.load(c_ptr + i0 * cs0 + i1 * cs1 + i2 * cs2 + j * cs3, mask=mask, other=0)
    o = tl.load(o_ptr + i0 * os0 + i1 * os1 + i2 * os2 + j * os3, mask=mask)
    tl.store(out_ptr + row * S3 + j, tl.where(c != 0, x, o), mask=mask)


def _pad4(values, fill):
    return [fill] * (4 - len(values)) + list(values)


def expand_where(input, target_sizes, cond, other):
    expanded = input.expand(*target_sizes)
    shape = torch.broadcast_shapes(expanded.shape, cond.shape, other.shape)
    if len(shape) > 4:
        raise ValueError("at most 4 dimensions are supported")
    x, c, o = (t.expand(shape) for t in (expanded, cond, other))  # views: stride 0 broadcasts
    out = torch.empty(shape, dtype=torch.result_type(input, other), device=input.device)
    if out.numel() == 0:
        return out
    s = _pad4(shape, 1)
    BLOCK = min(1024, triton.next_power_of_2(s[3]))
    grid = (s[0] * s[1] * s[2], triton.cdiv(s[3], BLOCK))
    _where_kernel[grid](
        x,
        c,
        o,
        out,
        s[1],
        s[2],
        s[3],
        *_pad4(x.stride(), 0),
        *_pad4(c.stride(), 0),
        *_pad4(o.stride(), 0),
        BLOCK=BLOCK,
    )
    return out
