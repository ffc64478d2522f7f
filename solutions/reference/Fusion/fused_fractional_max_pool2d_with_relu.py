"""ReLU + fractional max pooling in one Triton pass; the pooling regions come from the samples.

Each program owns BLOCK output pixels of one (n, c) plane. It turns the plane's two samples
into region starts exactly as PyTorch does, in float32: alpha = (L - k) / (O - 1) (divided on
the host and rounded to float32), start_i = int((i + u) * alpha) - int(u * alpha), and
L - k for the last region. It then scans the kh x kw window in row-major order, keeping the
first maximum of relu(x) (strict >, so ties keep the earliest element) and letting any NaN take
over, as PyTorch's kernels do, and stores the value and, if asked, the flat index row * W + col.
ReLU is where(x < 0, 0, x), which keeps NaN (a max(x, 0) instruction would drop it).
"""

import struct

import torch
import triton
import triton.language as tl


@triton.jit
def _frac_max_pool_relu_kernel(
    x_ptr,
    s_ptr,
    y_ptr,
    i_ptr,
    C,
    H,
    W,
    OH,
    OW,
    alpha_h,
    alpha_w,
    s_plane_stride,
    KH: tl.constexpr,
    KW: tl.constexpr,
    WITH_INDICES: tl.constexpr,
    BLOCK: tl.constexpr,
):
    plane = tl.program_id(1).to(tl.int64)  # n * C + c
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    o_ok = o < OH * OW
    oi = o // OW
    oj = o % OW
    sp = s_ptr + (plane // C) * s_plane_stride + (plane % C) * 2
    u_w = tl.load(sp)  # samples[n, c, 0]: columns
    u_h = tl.load(sp + 1)  # samples[n, c, 1]: rows
    # float32 region starts, truncating like a C cast; the last region ends at the border
    r0 = ((oi.to(tl.float32) + u_h) * alpha_h).to(tl.int32) - (u_h * alpha_h).to(tl.int32)
    c0 = ((oj.to(tl.float32) + u_w) * alpha_w).to(tl.int32) - (u_w * alpha_w).to(tl.int32)
    r0 = tl.where(oi == OH - 1, H - KH, r0)
    c0 = tl.where(oj == OW - 1, W - KW, c0)
    base = x_ptr + plane * H * W
    best = tl.full((BLOCK,), float("-inf"), tl.float32)
    best_i = r0 * W + c0
    for a in tl.static_range(KH):
        for b in tl.static_range(KW):
            pos = (r0 + a) * W + (c0 + b)
            x = tl.load(base + pos, mask=o_ok, other=0.0).to(tl.float32)
            x = tl.where(x < 0.0, 0.0, x)  # ReLU that keeps NaN (and -0.0, as torch.relu)
            take = (x > best) | (x != x)  # a strictly larger value, or a NaN
            best = tl.where(take, x, best)
            best_i = tl.where(take, pos, best_i)
    tl.store(y_ptr + plane * OH * OW + o, best, mask=o_ok)
    if WITH_INDICES:
        tl.store(i_ptr + plane * OH * OW + o, best_i.to(tl.int64), mask=o_ok)


def _pair(v):
    return (int(v), int(v)) if isinstance(v, (int, float)) else (int(v[0]), int(v[1]))


def _alpha(size, k, n_out):
    """float32(size - k) / float32(n_out - 1), rounded to float32 as PyTorch's C++ does. The
    quotient of two small integers rounded via float64 is the correctly rounded float32 one."""
    if n_out <= 1:
        return 0.0  # unused: a single region starts at size - k
    return struct.unpack("f", struct.pack("f", (size - k) / (n_out - 1)))[0]


def fused_fractional_max_pool2d_with_relu(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    x = input.contiguous()
    batched = x.dim() == 4
    C, H, W = x.shape[-3:]
    N = x.shape[0] if batched else 1
    kh, kw = _pair(kernel_size)
    if output_size is not None:
        OH, OW = _pair(output_size)
    else:
        rh, rw = (output_ratio, output_ratio) if isinstance(output_ratio, float) else output_ratio
        OH, OW = int(H * rh), int(W * rw)
    if OH + kh - 1 > H or OW + kw - 1 > W:
        raise ValueError("output size and kernel size do not fit the input")
    if _random_samples is None:
        raise NotImplementedError("pass _random_samples (float32 (N, C, 2) in [0, 1))")
    s = _random_samples.contiguous().to(torch.float32)
    shape = (N, C, OH, OW) if batched else (C, OH, OW)
    y = torch.empty(shape, device=x.device, dtype=torch.float32)
    idx = torch.empty(shape, device=x.device, dtype=torch.int64) if return_indices else y
    if N * C and OH * OW:
        BLOCK = min(triton.next_power_of_2(OH * OW), 256)
        _frac_max_pool_relu_kernel[(triton.cdiv(OH * OW, BLOCK), N * C)](
            x,
            s,
            y,
            idx,
            C,
            H,
            W,
            OH,
            OW,
            _alpha(H, kh, OH),
            _alpha(W, kw, OW),
            s.stride(0),
            KH=kh,
            KW=kw,
            WITH_INDICES=bool(return_indices),
            BLOCK=BLOCK,
        )
    return (y, idx) if return_indices else y
