"""input * other_mul - alpha * other_sub in Triton: one program per block of output elements.

Tensor operands are read through their broadcast strides (a broadcast row or column is never
expanded in memory): the output is seen as 4-D and each flat output index is unravelled into
four coordinates that every operand dots with its own (possibly zero) strides. Python numbers
are passed as scalars and selected with constexpr flags.
"""

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 2048}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def _mul_sub_kernel(
    x_ptr, m_ptr, s_ptr, y_ptr, n, m_val, s_val, alpha,
    S1, S2, S3,
    xs0, xs1, xs2, xs3, ms0, ms1, ms2, ms3, ss0, ss1, ss2, ss3,
    M_TENSOR: tl.constexpr, S_TENSOR: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    i3 = offs % S3  # unravel the flat output index over the 4-D output shape
    i2 = (offs // S3) % S2
    i1 = (offs // (S3 * S2)) % S1
    i0 = offs // (S3 * S2 * S1)
    x = tl.load(x_ptr + i0 * xs0 + i1 * xs1 + i2 * xs2 + i3 * xs3, mask=ok, other=0.0)
    if M_TENSOR:
        m = tl.load(m_ptr + i0 * ms0 + i1 * ms1 + i2 * ms2 + i3 * ms3, mask=ok, other=0.0)
    else:
        m = m_val
    if S_TENSOR:
        s = tl.load(s_ptr + i0 * ss0 + i1 * ss1 + i2 * ss2 + i3 * ss3, mask=ok, other=0.0)
    else:
        s = s_val
    tl.store(y_ptr + offs, x * m - alpha * s, mask=ok)


def _strides4(t, shape):
    """Strides of t broadcast to `shape` (4-D), zeros on broadcast dims."""
    return list(t.expand(shape).stride())


def fused_mul_sub(input, other_mul, other_sub, alpha=1, out=None):
    tensors = [t for t in (input, other_mul, other_sub) if isinstance(t, torch.Tensor)]
    shape = torch.broadcast_shapes(*(t.shape for t in tensors))
    if len(shape) > 4:
        raise NotImplementedError("at most 4 dims")
    shape4 = (1,) * (4 - len(shape)) + tuple(shape)
    y = torch.empty(shape, device=input.device, dtype=torch.float32)
    n = y.numel()
    x_st = _strides4(input.reshape((1,) * (4 - input.dim()) + tuple(input.shape)), shape4)
    m_t, s_t = isinstance(other_mul, torch.Tensor), isinstance(other_sub, torch.Tensor)
    ops, vals = [], []
    for t, is_t in ((other_mul, m_t), (other_sub, s_t)):
        if is_t:
            ops.append(t)
            vals.append(0.0)
            t4 = t.reshape((1,) * (4 - t.dim()) + tuple(t.shape))
            ops.append(_strides4(t4, shape4))
        else:
            ops.append(input)  # any pointer: unused
            vals.append(float(t))
            ops.append([0, 0, 0, 0])
    if n:
        _mul_sub_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](
            input, ops[0], ops[2], y, n, vals[0], vals[1], float(alpha),
            shape4[1], shape4[2], shape4[3], *x_st, *ops[1], *ops[3],
            M_TENSOR=m_t, S_TENSOR=s_t,
        )  # fmt: skip
    if out is not None:
        out.copy_(y)
        return out
    return y
