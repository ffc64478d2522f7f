"""sigmoid(adaptive_avg_pool2d(x)) in one Triton kernel.

Each program owns one (n, c) plane and BLOCK_O output cells of it. The adaptive window of cell
(i, j) is rows [floor(iH/OH), ceil((i+1)H/OH)) x columns [floor(jW/OW), ceil((j+1)W/OW)); all
windows fit in a MAX_KH x MAX_KW box, whose positions are enumerated as a flat index k and
walked in BLOCK_K chunks, so a program loads a [BLOCK_O, BLOCK_K] tile per step (masked to its
true window). This keeps every lane busy both for many small windows (BLOCK_O large) and for a
few large ones (global pooling: BLOCK_O = 1, BLOCK_K large). The mean goes through the sigmoid
in registers.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _pool_sigmoid_kernel(
    x_ptr,
    y_ptr,
    H,
    W,
    OH,
    OW,
    n_oblocks,
    MAX_KW,
    n_k,
    BLOCK_O: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    plane = pid // n_oblocks
    cells = (pid % n_oblocks) * BLOCK_O + tl.arange(0, BLOCK_O)
    cell_ok = cells < OH * OW
    i = cells // OW
    j = cells % OW
    h0 = (i * H) // OH  # floor
    h1 = ((i + 1) * H + OH - 1) // OH  # ceil
    w0 = (j * W) // OW
    w1 = ((j + 1) * W + OW - 1) // OW
    base = plane.to(tl.int64) * H * W
    acc = tl.zeros((BLOCK_O,), tl.float32)
    for k0 in range(0, n_k, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        h = h0[:, None] + (k // MAX_KW)[None, :]
        w = w0[:, None] + (k % MAX_KW)[None, :]
        ok = cell_ok[:, None] & (k < n_k)[None, :] & (h < h1[:, None]) & (w < w1[:, None])
        acc += tl.sum(tl.load(x_ptr + base + h * W + w, mask=ok, other=0.0), axis=1)
    mean = acc / ((h1 - h0) * (w1 - w0)).to(tl.float32)
    y = 1.0 / (1.0 + tl.exp(-mean))
    tl.store(y_ptr + plane.to(tl.int64) * OH * OW + cells, y, mask=cell_ok)


def _max_window(n, o):
    return max(((i + 1) * n + o - 1) // o - (i * n) // o for i in range(o))


def fused_sigmoid_adaptive_avg_pool2d(input, output_size):
    x = input.contiguous()
    H, W = x.shape[-2:]
    size = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    OH = H if size[0] is None else int(size[0])
    OW = W if size[1] is None else int(size[1])
    y = torch.empty((*x.shape[:-2], OH, OW), device=x.device, dtype=x.dtype)
    planes = x.numel() // max(H * W, 1)
    if y.numel() == 0:
        return y
    max_kh, max_kw = _max_window(H, OH), _max_window(W, OW)
    n_k = max_kh * max_kw
    BLOCK_O = min(triton.next_power_of_2(OH * OW), 64)
    BLOCK_K = max(min(triton.next_power_of_2(n_k), 2048 // BLOCK_O), 1)
    n_oblocks = triton.cdiv(OH * OW, BLOCK_O)
    _pool_sigmoid_kernel[(planes * n_oblocks,)](
        x, y, H, W, OH, OW, n_oblocks, max_kw, n_k, BLOCK_O=BLOCK_O, BLOCK_K=BLOCK_K
    )
    return y
