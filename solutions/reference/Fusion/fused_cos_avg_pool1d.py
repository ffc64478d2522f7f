"""cos followed by 1-D average pooling, fused: the cosines are never written to memory.

The input is viewed as R = N * C rows of length L. Each program owns BLOCK_R rows and BLOCK_O
output positions; for each of the kernel_size taps it loads the tap's input column (masked where
it falls in the padding), takes its cosine and adds it to the window sums. The divisor follows
avg_pool1d: the window length cut at L + padding (count_include_pad) or the number of real
positions. With stride < kernel_size neighbouring windows recompute a few cosines, which is
cheaper than a second pass over memory.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_R": 4, "BLOCK_O": 256}, num_warps=4),
        triton.Config({"BLOCK_R": 8, "BLOCK_O": 512}, num_warps=8),
        triton.Config({"BLOCK_R": 2, "BLOCK_O": 1024}, num_warps=8),
    ],
    key=["R", "L", "L_out"],
)
@triton.jit
def _cos_avg_pool1d_kernel(
    x_ptr,
    y_ptr,
    R,
    L,
    L_out,
    stride,
    pad,
    K: tl.constexpr,
    COUNT_PAD: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_O: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    outs = tl.program_id(1) * BLOCK_O + tl.arange(0, BLOCK_O)
    row_ok = rows < R
    out_ok = outs < L_out
    start = outs * stride - pad  # first position of each window (may be negative)
    end = tl.minimum(start + K, L + pad)  # windows are cut at the end of the right padding
    lo = tl.maximum(start, 0)
    hi = tl.minimum(end, L)
    base = x_ptr + rows.to(tl.int64)[:, None] * L
    acc = tl.zeros((BLOCK_R, BLOCK_O), dtype=tl.float32)
    for t in tl.static_range(K):
        pos = start + t
        ok = (pos >= lo) & (pos < hi) & out_ok  # real (not padded) input positions
        m = row_ok[:, None] & ok[None, :]
        x = tl.load(base + pos[None, :], mask=m, other=0.0).to(tl.float32)
        acc += tl.where(m, libdevice.cos(x), 0.0)
    div = end - start if COUNT_PAD else hi - lo  # avg_pool1d's two divisors
    y = acc / div.to(tl.float32)[None, :]
    tl.store(
        y_ptr + rows.to(tl.int64)[:, None] * L_out + outs[None, :],
        y,
        mask=row_ok[:, None] & out_ok[None, :],
    )


def fused_cos_avg_pool1d(
    input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True
):
    k = int(kernel_size[0] if isinstance(kernel_size, (tuple, list)) else kernel_size)
    s = stride if stride is not None else k
    s = int(s[0] if isinstance(s, (tuple, list)) else s)
    pad = int(padding[0] if isinstance(padding, (tuple, list)) else padding)
    if pad > k // 2:
        raise ValueError("padding should be at most half the kernel size")
    x = input.contiguous()
    *lead, L = x.shape
    span = L + 2 * pad - k
    L_out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (L_out - 1) * s >= L + pad:
        L_out -= 1  # a last window starting in the right padding is dropped
    y = torch.empty((*lead, L_out), device=x.device, dtype=torch.float32)
    R = x.numel() // L if L else 0
    if R and L_out > 0:
        grid = lambda meta: (triton.cdiv(R, meta["BLOCK_R"]), triton.cdiv(L_out, meta["BLOCK_O"]))  # noqa: E731
        _cos_avg_pool1d_kernel[grid](
            x, y, R, L, L_out, s, pad, K=k, COUNT_PAD=bool(count_include_pad)
        )
    return y
