"""Adaptive 2-D average pooling in Triton.

Output cells are flattened over (plane, oh, ow); each program handles BLOCK_O of them. Cell
(oh, ow) averages rows [floor(oh*H/OH), ceil((oh+1)*H/OH)) and the analogous columns. The kernel
walks the window one row at a time (up to the largest window height, found on the host) and
reads BLOCK_KW consecutive columns of every cell's window per step, so neighbouring cells load
neighbouring memory. Positions beyond a cell's own window are masked out (tl.where, not a
multiply, so an inf elsewhere cannot leak in as NaN).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _adaptive_avg_kernel(
    x_ptr,
    y_ptr,
    total,
    H,
    W,
    OH,
    OW,
    KH_MAX,
    KW_MAX,
    BLOCK_O: tl.constexpr,
    BLOCK_KW: tl.constexpr,
):
    pid = tl.program_id(0)
    o = pid.to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
    o_ok = o < total
    plane = o // (OH * OW)
    oh = (o // OW) % OH
    ow = o % OW
    h0 = (oh * H) // OH  # window start: floor
    h1 = ((oh + 1) * H + OH - 1) // OH  # window end: ceil
    w0 = (ow * W) // OW
    w1 = ((ow + 1) * W + OW - 1) // OW
    base = x_ptr + plane * H * W

    acc = tl.zeros((BLOCK_O, BLOCK_KW), dtype=tl.float32)
    for dh in range(0, KH_MAX):
        h = h0 + dh
        row_ok = o_ok & (h < h1)
        for dw0 in range(0, KW_MAX, BLOCK_KW):
            w = w0[:, None] + dw0 + tl.arange(0, BLOCK_KW)[None, :]
            ok = row_ok[:, None] & (w < w1[:, None])
            v = tl.load(base[:, None] + h[:, None] * W + w, mask=ok, other=0.0)
            acc += tl.where(ok, v, 0.0)
    count = ((h1 - h0) * (w1 - w0)).to(tl.float32)
    tl.store(y_ptr + o, tl.sum(acc, axis=1) / count, mask=o_ok)


def adaptive_avg_pool2d(input, output_size):
    x = input.contiguous()
    *lead, H, W = x.shape
    size = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    OH = H if size[0] is None else int(size[0])
    OW = W if size[1] is None else int(size[1])
    y = torch.empty((*lead, OH, OW), device=x.device, dtype=x.dtype)
    total = y.numel()
    # Largest window extent along each axis (windows differ by at most one).
    kh_max = max(((i + 1) * H + OH - 1) // OH - (i * H) // OH for i in range(OH))
    kw_max = max(((j + 1) * W + OW - 1) // OW - (j * W) // OW for j in range(OW))
    BLOCK_KW = min(triton.next_power_of_2(kw_max), 64)
    BLOCK_O = max(2048 // BLOCK_KW, 16)
    _adaptive_avg_kernel[(triton.cdiv(total, BLOCK_O),)](
        x, y, total, H, W, OH, OW, kh_max, kw_max, BLOCK_O=BLOCK_O, BLOCK_KW=BLOCK_KW
    )
    return y
