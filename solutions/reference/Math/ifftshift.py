"""ifftshift in Triton: a gather that rolls every shifted dim by -(n // 2).

The input is viewed as raw integers of its element width (complex64 as int64, float32 as
int32, ...), so values are copied bit for bit. Adjacent unshifted dims are merged and the
shape is padded to 5-D: (d0, d1, d2, d3, L). Each program copies BLOCK columns of one row:
the source row comes from four scalar modular shifts, the source columns are the contiguous
range shifted by sL with one wrap-around, so reads stay coalesced.
"""

import torch
import triton
import triton.language as tl

_INT_OF_SIZE = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@triton.jit
def _roll_kernel(
    x_ptr, y_ptr, L, n_cblocks, d1, d2, d3, s0, s1, s2, s3, sL, d0, BLOCK: tl.constexpr
):
    pid = tl.program_id(0)
    row = pid // n_cblocks
    cb = pid % n_cblocks
    # output row -> 4 leading coordinates -> shifted source coordinates
    i3 = row % d3
    r = row // d3
    i2 = r % d2
    r = r // d2
    i1 = r % d1
    i0 = r // d1
    j0 = (i0 + s0) % d0
    j1 = (i1 + s1) % d1
    j2 = (i2 + s2) % d2
    j3 = (i3 + s3) % d3
    src_row = ((j0 * d1 + j1) * d2 + j2) * d3 + j3
    cols = cb * BLOCK + tl.arange(0, BLOCK)
    mask = cols < L
    src = cols + sL
    src = tl.where(src >= L, src - L, src)  # one wrap-around, as 0 <= sL < L
    v = tl.load(x_ptr + src_row.to(tl.int64) * L + src, mask=mask)
    tl.store(y_ptr + row.to(tl.int64) * L + cols, v, mask=mask)


def ifftshift(input, dim=None):
    x = input.contiguous()
    out = torch.empty_like(x)
    if x.numel() == 0:
        return out.reshape(input.shape)
    if x.dim() == 0:  # nothing to roll: copy through a 1-element view
        x, out, dim = x.reshape(1), out.reshape(1), ()
    if x.dtype.itemsize == 16:  # complex128: two int64 per element, an unshifted last dim
        xs, ys = torch.view_as_real(x).view(torch.int64), torch.view_as_real(out).view(torch.int64)
    else:
        xs, ys = x.view(_INT_OF_SIZE[x.dtype.itemsize]), out.view(_INT_OF_SIZE[x.dtype.itemsize])
    nd = x.dim()
    dims = range(nd) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    shifted = {d % nd for d in dims}
    sizes = list(xs.shape)
    shifts = [sizes[d] // 2 if d in shifted else 0 for d in range(nd)] + [0] * (xs.dim() - nd)
    # merge neighbouring unshifted dims (row-major, so their product is one dim)
    merged: list[list[int]] = []
    for n, s in zip(sizes, shifts, strict=True):
        if merged and s == 0 and merged[-1][1] == 0:
            merged[-1][0] *= n
        else:
            merged.append([n, s])
    if len(merged) > 5:
        raise NotImplementedError("at most 5 dims after merging unshifted ones")
    merged = [[1, 0]] * (5 - len(merged)) + merged
    (d0, s0), (d1, s1), (d2, s2), (d3, s3), (L, sL) = merged
    BLOCK = min(4096, triton.next_power_of_2(L))
    n_cblocks = triton.cdiv(L, BLOCK)
    grid = (d0 * d1 * d2 * d3 * n_cblocks,)
    _roll_kernel[grid](xs, ys, L, n_cblocks, d1, d2, d3, s0, s1, s2, s3, sL, d0, BLOCK=BLOCK)
    return out.reshape(input.shape)
