"""Broadcasting multiply in Triton: one program per block of output elements.

The wrapper works out torch's broadcast shape and result dtype (type promotion) and passes
each operand's strides over that shape, with stride 0 along broadcast dims, so no operand is
ever expanded in memory. Shapes are padded to 4-D; the kernel splits each flat output index
into 4-D coordinates (skipped when both operands are contiguous and of the output's shape).
A Python-number `other` is passed as a kernel scalar.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _mul_kernel(
    a_ptr,
    b_ptr,
    out_ptr,
    n,
    scalar,
    d1,
    d2,
    d3,
    sa0,
    sa1,
    sa2,
    sa3,
    sb0,
    sb1,
    sb2,
    sb3,
    FLAT: tl.constexpr,
    B_SCALAR: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    if FLAT:
        a_off = offs
        b_off = offs
    else:  # 4-D coordinates of each output element, then strided offsets
        i3 = offs % d3
        rest = offs // d3
        i2 = rest % d2
        rest = rest // d2
        i1 = rest % d1
        i0 = rest // d1
        a_off = i0 * sa0 + i1 * sa1 + i2 * sa2 + i3 * sa3
        b_off = i0 * sb0 + i1 * sb1 + i2 * sb2 + i3 * sb3
    ty = out_ptr.dtype.element_ty
    a = tl.load(a_ptr + a_off, mask=mask, other=0).to(ty)  # promote to the result dtype
    if B_SCALAR:  # noqa: SIM108 - a constexpr branch: only one side is compiled
        b = scalar
    else:
        b = tl.load(b_ptr + b_off, mask=mask, other=0).to(ty)
    tl.store(out_ptr + offs, (a * b).to(ty), mask=mask)


def _strides4(t: torch.Tensor, shape: list[int]) -> list[int]:
    """Strides of `t` broadcast to `shape` (4-D), 0 along expanded dims."""
    v = t.expand(shape)
    return [s if n > 1 else 0 for s, n in zip(v.stride(), shape, strict=True)]


def mul(input, other, out=None):
    dtype = torch.result_type(input, other)
    b_scalar = not isinstance(other, torch.Tensor)
    shape = list(torch.broadcast_shapes(input.shape, () if b_scalar else other.shape))
    shape4 = [1] * (4 - len(shape)) + shape
    a = input.reshape([1] * (4 - input.dim()) + list(input.shape))
    b = a if b_scalar else other.reshape([1] * (4 - other.dim()) + list(other.shape))
    result = torch.empty(shape, dtype=dtype, device=input.device)
    n = result.numel()
    flat = (
        list(a.shape) == shape4
        and a.is_contiguous()
        and (b_scalar or (list(b.shape) == shape4 and b.is_contiguous()))
    )
    sa, sb = _strides4(a, shape4), _strides4(b, shape4)
    scalar = other if b_scalar else 0
    if b_scalar and not dtype.is_floating_point:
        scalar = int(other)
    BLOCK = 1024
    if n:
        _mul_kernel[(triton.cdiv(n, BLOCK),)](
            a,
            b,
            result,
            n,
            scalar,
            shape4[1],
            shape4[2],
            shape4[3],
            *sa,
            *sb,
            FLAT=flat,
            B_SCALAR=b_scalar,
            BLOCK=BLOCK,
        )
    if out is not None:
        out.resize_(result.shape)
        out.copy_(result)  # torch writes the result into `out` and returns it
        return out
    return result
