"""Channel-wise cosine similarity followed by 2-D average pooling, in two Triton kernels.

Kernel 1 reads x1 and x2 once: each program owns BLOCK_P pixels of one image and walks the
channels in BLOCK_C chunks, accumulating <a, b>, ||a||^2 and ||b||^2 in float32 (loads are
coalesced along the pixels). The similarity uses torch's eps rule: each norm is clamped to eps
separately. The (N, H, W) map is 1/C of the input, so writing and re-reading it costs little
and avoids recomputing overlapping windows. Kernel 2 average-pools the map: padded cells are
zeros that count in the k*k divisor (count_include_pad=True, floor output size).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _cosine_map_kernel(
    a_ptr, b_ptr, s_ptr, C, HW, eps, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr
):
    n = tl.program_id(1).to(tl.int64)
    pix = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    pix_ok = pix < HW
    dot = tl.zeros((BLOCK_C, BLOCK_P), dtype=tl.float32)
    aa = tl.zeros((BLOCK_C, BLOCK_P), dtype=tl.float32)
    bb = tl.zeros((BLOCK_C, BLOCK_P), dtype=tl.float32)
    for c0 in range(0, C, BLOCK_C):
        ch = c0 + tl.arange(0, BLOCK_C)
        m = (ch < C)[:, None] & pix_ok[None, :]
        off = n * C * HW + ch[:, None] * HW + pix[None, :]
        a = tl.load(a_ptr + off, mask=m, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + off, mask=m, other=0.0).to(tl.float32)
        dot += a * b
        aa += a * a
        bb += b * b
    na = tl.maximum(tl.sqrt(tl.sum(aa, axis=0)), eps)  # each norm clamped on its own
    nb = tl.maximum(tl.sqrt(tl.sum(bb, axis=0)), eps)
    tl.store(s_ptr + n * HW + pix, tl.sum(dot, axis=0) / (na * nb), mask=pix_ok)


@triton.jit
def _avg_pool2d_kernel(
    s_ptr,
    y_ptr,
    H,
    W,
    OH,
    OW,
    sh,
    sw,
    ph,
    pw,
    inv_area,
    KH: tl.constexpr,
    KW: tl.constexpr,
    BLOCK: tl.constexpr,
):
    n = tl.program_id(1).to(tl.int64)
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    o_ok = o < OH * OW
    oh = o // OW
    ow = o % OW
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for kh in tl.static_range(KH):
        ih = oh * sh - ph + kh
        for kw in tl.static_range(KW):
            iw = ow * sw - pw + kw
            ok = o_ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)  # padding reads as 0
            acc += tl.load(s_ptr + n * H * W + ih * W + iw, mask=ok, other=0.0)
    tl.store(y_ptr + n * OH * OW + o, acc * inv_area, mask=o_ok)


def _pair(v):
    return (int(v), int(v)) if isinstance(v, (int, float)) else (int(v[0]), int(v[1]))


def fused_avg_pool2d_cosine_similarity(x1, x2, kernel_size, stride=None, padding=0, eps=1e-08):
    a, b = x1.contiguous(), x2.contiguous()
    if a.shape != b.shape or a.dim() != 4:
        raise NotImplementedError("x1 and x2 must both be (N, C, H, W)")
    N, C, H, W = a.shape
    kh, kw = _pair(kernel_size)
    sh, sw = _pair(stride) if stride is not None else (kh, kw)
    ph, pw = _pair(padding)
    OH, OW = (H + 2 * ph - kh) // sh + 1, (W + 2 * pw - kw) // sw + 1
    y = torch.empty((N, 1, OH, OW), device=a.device, dtype=torch.float32)
    if N == 0 or OH <= 0 or OW <= 0:
        return y
    sim = torch.empty((N, H, W), device=a.device, dtype=torch.float32)
    BLOCK_P, BLOCK_C = 128, min(triton.next_power_of_2(C), 16)
    _cosine_map_kernel[(triton.cdiv(H * W, BLOCK_P), N)](
        a, b, sim, C, H * W, float(eps), BLOCK_P=BLOCK_P, BLOCK_C=BLOCK_C
    )
    BLOCK = 256
    _avg_pool2d_kernel[(triton.cdiv(OH * OW, BLOCK), N)](
        sim, y, H, W, OH, OW, sh, sw, ph, pw, 1.0 / (kh * kw), KH=kh, KW=kw, BLOCK=BLOCK
    )
    return y
