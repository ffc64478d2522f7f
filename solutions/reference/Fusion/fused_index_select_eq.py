"""index_select + eq in Triton: a gather and a comparison per output element, no copy of S.

The input is seen as (A, L, B) with the indexed dim in the middle and the output as (A, K, B);
each program handles a block of output elements (a, k, b), loads index[k], gathers
input[a, index[k], b] and compares it with `other`, read through its broadcast strides over the
output's own shape or taken as a scalar. The result is stored as torch.bool.
"""

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 4096}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def _index_select_eq_kernel(
    x_ptr, idx_ptr, o_ptr, y_ptr, n, K, L, B, S1, S2, o_val, os0, os1, os2,
    O_TENSOR: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    b = offs % B  # unravel over the output (A, K, B)
    k = (offs // B) % K
    a = offs // (B * K)
    row = tl.load(idx_ptr + k, mask=ok, other=0).to(tl.int64)
    x = tl.load(x_ptr + (a * L + row) * B + b, mask=ok)
    o = o_val
    if O_TENSOR:
        i2 = offs % S2  # unravel over the output's own (padded 3-D) shape
        i1 = (offs // S2) % S1
        i0 = offs // (S2 * S1)
        o = tl.load(o_ptr + i0 * os0 + i1 * os1 + i2 * os2, mask=ok)
    tl.store(y_ptr + offs, x == o, mask=ok)


def fused_index_select_eq(input, dim, index, other, *, out=None):
    x = input.contiguous()
    idx = index.contiguous()
    d = dim % max(x.dim(), 1)
    K = idx.numel()
    shape = list(x.shape)
    if shape:
        shape[d] = K
    L = x.shape[d] if x.dim() else 1
    B = x.shape[d + 1 :].numel()
    y = torch.empty(shape, device=x.device, dtype=torch.bool)
    o_tensor = isinstance(other, torch.Tensor)
    if len(shape) > 3:
        raise NotImplementedError("at most 3 dims")
    shape3 = [1] * (3 - len(shape)) + shape
    if o_tensor:  # strides of `other` broadcast to the output, padded to 3 dims
        os_ = [0] * (3 - len(shape)) + list(other.expand(shape).stride())
        o_val = 0
    else:
        os_, o_val = [0, 0, 0], other
    n = y.numel()
    if n:
        _index_select_eq_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](
            x, idx, other if o_tensor else x, y, n, K, L, B, shape3[1], shape3[2], o_val, *os_,
            O_TENSOR=o_tensor,
        )  # fmt: skip
    if out is not None:
        out.copy_(y)
        return out
    return y
