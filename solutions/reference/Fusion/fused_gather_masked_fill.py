"""gather + masked_fill in Triton: one gather and one select per output element.

The output has index's shape, seen as 3-D (padded with leading 1s). Each program takes a block
of output elements, unravels them into (i0, i1, i2), loads index at its own strides and reads
input at the same coordinates with the `dim` coordinate replaced by the index value; the mask,
read through its broadcast strides, then picks `value` instead. Values are copied bit for bit.
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
def _gather_fill_kernel(
    x_ptr, i_ptr, m_ptr, y_ptr, n, value, S1, S2,
    xs0, xs1, xs2, is0, is1, is2, ms0, ms1, ms2,
    DIM: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    i2 = offs % S2  # unravel over index's (padded 3-D) shape
    i1 = (offs // S2) % S1
    i0 = offs // (S2 * S1)
    idx = tl.load(i_ptr + i0 * is0 + i1 * is1 + i2 * is2, mask=ok, other=0)
    if DIM == 0:  # replace the gathered dim's coordinate by the index value
        src = idx * xs0 + i1 * xs1 + i2 * xs2
    elif DIM == 1:
        src = i0 * xs0 + idx * xs1 + i2 * xs2
    else:
        src = i0 * xs0 + i1 * xs1 + idx * xs2
    x = tl.load(x_ptr + src, mask=ok)
    m = tl.load(m_ptr + i0 * ms0 + i1 * ms1 + i2 * ms2, mask=ok, other=0) != 0
    tl.store(y_ptr + offs, tl.where(m, value, x).to(x.dtype), mask=ok)


def _pad3(t):
    return t.reshape((1,) * (3 - t.dim()) + tuple(t.shape))


def fused_gather_masked_fill(input, dim, index, mask, value, *, sparse_grad=False, out=None):
    # sparse_grad only concerns the backward pass.
    if input.dim() > 3 or index.dim() != input.dim():
        raise NotImplementedError("input and index of the same rank, at most 3")
    nd = max(input.dim(), 1)
    d = dim % nd + (3 - nd)  # the gathered dim in the padded 3-D view
    x3, i3 = _pad3(input), _pad3(index)
    shape3 = tuple(i3.shape)
    m3 = mask.reshape((1,) * (3 - mask.dim()) + tuple(mask.shape)).expand(shape3)
    y = torch.empty(index.shape, device=input.device, dtype=input.dtype)
    n = y.numel()
    fill = float(value) if input.is_floating_point() else int(value)
    if n:
        _gather_fill_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](
            input, index, mask, y, n, fill, shape3[1], shape3[2],
            *x3.stride(), *i3.stride(), *m3.stride(), DIM=d,
        )  # fmt: skip
    if out is not None:
        out.copy_(y)
        return out
    return y
