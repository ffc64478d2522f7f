"""1-D average pooling in Triton: one program per (row, block of output positions).

Each output position i reads the kernel_size inputs starting at i * stride - padding; positions
outside [0, L) are the zero padding (masked loads with other=0), and the sum is always divided by
kernel_size (count_include_pad=True). The input is read once per window element; neighbouring
windows overlap in cache when stride < kernel_size.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _avg_pool1d_kernel(
    x_ptr, y_ptr, L, L_out, stride, padding, K: tl.constexpr, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)  # one (n, c) row
    i = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    omask = i < L_out
    start = i * stride - padding
    acc = tl.zeros((BLOCK,), tl.float32)
    for m in range(K):
        pos = start + m
        valid = omask & (pos >= 0) & (pos < L)  # outside [0, L) is padding: contributes 0
        acc += tl.load(x_ptr + row * L + pos, mask=valid, other=0.0).to(tl.float32)
    y = acc / K
    tl.store(y_ptr + row * L_out + i, y.to(y_ptr.dtype.element_ty), mask=omask)


def _one(v, name):
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise ValueError(f"avg_pool1d: {name} must be an int or a 1-tuple")
        v = v[0]
    return int(v)


def avg_pool1d(input, kernel_size, stride=None, padding=0):
    k = _one(kernel_size, "kernel_size")
    s = (
        k
        if stride is None or (isinstance(stride, (tuple, list)) and not stride)
        else _one(stride, "stride")
    )
    p = _one(padding, "padding")
    if p > k // 2:
        raise ValueError("avg_pool1d: padding must be at most half the kernel size")
    x = input.contiguous()
    N, C, L = x.shape
    L_out = (L + 2 * p - k) // s + 1
    if L_out <= 0:
        raise ValueError("avg_pool1d: output size would be empty")
    y = torch.empty((N, C, L_out), dtype=x.dtype, device=x.device)
    BLOCK = min(1024, triton.next_power_of_2(L_out))
    _avg_pool1d_kernel[(N * C, triton.cdiv(L_out, BLOCK))](x, y, L, L_out, s, p, K=k, BLOCK=BLOCK)
    return y
