"""Adaptive average pooling of two tensors + their p-norm distance, in one Triton kernel.

Each program owns BLOCK_R output rows r = (plane, i) and all ow pooled columns of each: a
BLOCK_R x BLOCK_W tile. Adaptive windows differ in size from cell to cell, so the kernel walks
the largest window (MAX_KH x MAX_KW offsets, computed on the host) and masks the offsets that
fall outside each cell's own window; x1 and x2 are summed side by side and divided by the
window's size. The distance then reduces the tile's rows in registers: |a - b + eps| summed
(p = 1), squared and square-rooted (p = 2), maximised (p = inf) or raised to p and back. The
pooled tensors are never written to memory.
"""

import math

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _pool_dist_kernel(
    x1_ptr, x2_ptr, y_ptr, R, H, W, OH, OW, MAX_KH, MAX_KW, p, eps,
    NORM: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_W: tl.constexpr,
):  # fmt: skip
    r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    j = tl.arange(0, BLOCK_W)
    r_ok = r < R
    j_ok = j < OW
    plane = r // OH
    i = r % OH
    h0 = (i * H) // OH  # window rows [h0, h1): floor(i H / OH) .. ceil((i + 1) H / OH)
    h1 = ((i + 1) * H + OH - 1) // OH
    w0 = (j * W) // OW
    w1 = ((j + 1) * W + OW - 1) // OW
    base = plane * H * W
    ok = r_ok[:, None] & j_ok[None, :]
    s1 = tl.zeros((BLOCK_R, BLOCK_W), tl.float32)
    s2 = tl.zeros((BLOCK_R, BLOCK_W), tl.float32)
    for kh in range(0, MAX_KH):
        row_ok = (h0 + kh) < h1
        for kw in range(0, MAX_KW):
            m = ok & row_ok[:, None] & ((w0 + kw) < w1)[None, :]
            addr = base[:, None] + (h0 + kh)[:, None] * W + (w0 + kw)[None, :]
            s1 += tl.load(x1_ptr + addr, mask=m, other=0.0)
            s2 += tl.load(x2_ptr + addr, mask=m, other=0.0)
    count = ((h1 - h0)[:, None] * (w1 - w0)[None, :]).to(tl.float32)
    d = tl.abs(s1 / count - s2 / count + eps)
    d = tl.where(ok, d, 0.0)
    if NORM == 1:
        y = tl.sum(d, axis=1)
    elif NORM == 2:
        y = tl.sqrt(tl.sum(d * d, axis=1))
    elif NORM == 3:  # p = inf
        y = tl.max(d, axis=1)
    else:
        y = libdevice.pow(tl.sum(tl.where(ok, libdevice.pow(d, p), 0.0), axis=1), 1.0 / p)
    tl.store(y_ptr + r, y, mask=r_ok)


def _max_window(size, out):
    return max(((i + 1) * size + out - 1) // out - (i * size) // out for i in range(out))


def fused_pairwise_distance_adaptive_avg_pool2d(
    x1, x2, output_size, p=2.0, eps=1e-6, keepdim=False
):
    a, b = x1.contiguous(), x2.contiguous()
    if a.shape != b.shape:
        raise NotImplementedError("x1 and x2 of the same shape")
    H, W = a.shape[-2:]
    oh, ow = (output_size, output_size) if isinstance(output_size, int) else output_size
    oh, ow = oh if oh is not None else H, ow if ow is not None else W
    lead = a.shape[:-2]
    R = lead.numel() * oh
    y = torch.empty((*lead, oh), device=a.device, dtype=torch.float32)
    norm = {1.0: 1, 2.0: 2, math.inf: 3}.get(float(p), 4)
    BLOCK_W = triton.next_power_of_2(ow)
    BLOCK_R = max(1, min(64, 2048 // BLOCK_W))
    if R:
        _pool_dist_kernel[(triton.cdiv(R, BLOCK_R),)](
            a, b, y, R, H, W, oh, ow, _max_window(H, oh), _max_window(W, ow), float(p),
            float(eps), NORM=norm, BLOCK_R=BLOCK_R, BLOCK_W=BLOCK_W,
        )  # fmt: skip
    return y.unsqueeze(-1) if keepdim else y
