"""GELU(input - alpha * other) in one Triton pass; broadcasting is done through strides.

Both operands are seen as 4-D views broadcast to the output shape: a broadcast dim has stride 0,
so nothing is materialised. Each program takes BLOCK consecutive output elements, unravels the
flat index into four coordinates, gathers both operands and evaluates GELU in float32. A Python
number `other` arrives as a scalar argument. tanh(u) is written as 1 - 2 / (exp(2u) + 1), which
saturates cleanly to +-1 for large |u|.
"""

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 2048}, num_warps=8),
        triton.Config({"BLOCK": 4096}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def _sub_gelu_kernel(
    x_ptr,
    o_ptr,
    y_ptr,
    n,
    alpha,
    other_value,
    S1,
    S2,
    S3,  # sizes of dims 1..3 of the 4-D output
    xs0,
    xs1,
    xs2,
    xs3,
    os0,
    os1,
    os2,
    os3,  # broadcast strides of input and other
    SCALAR_OTHER: tl.constexpr,
    APPROX_TANH: tl.constexpr,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i3 = offs % S3  # unravel the flat index of the contiguous output
    rest = offs // S3
    i2 = rest % S2
    rest = rest // S2
    i1 = rest % S1
    i0 = rest // S1
    x = tl.load(x_ptr + i0 * xs0 + i1 * xs1 + i2 * xs2 + i3 * xs3, mask=mask, other=0.0)
    if SCALAR_OTHER:
        o = other_value
    else:
        o = tl.load(o_ptr + i0 * os0 + i1 * os1 + i2 * os2 + i3 * os3, mask=mask, other=0.0)
    s = x - alpha * o
    if APPROX_TANH:
        u = 0.7978845608028654 * (s + 0.044715 * s * s * s)  # sqrt(2/pi) (s + c s^3)
        y = 0.5 * s * (2.0 - 2.0 / (tl.exp(2.0 * u) + 1.0))  # 0.5 s (1 + tanh(u))
    else:
        y = 0.5 * s * (1.0 + tl.math.erf(s * 0.7071067811865476))  # s * Phi(s)
    tl.store(y_ptr + offs, y, mask=mask)


def _strides4(t, shape):
    """Strides of t broadcast to `shape`, left-padded to 4 dims (0 on broadcast dims)."""
    st = list(t.expand(shape).stride())
    return [0] * (4 - len(st)) + st


def fused_sub_gelu(input, other, alpha=1, approximate="none", out=None):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    scalar = not isinstance(other, torch.Tensor)
    if scalar:
        shape = tuple(input.shape)
    else:
        shape = tuple(torch.broadcast_shapes(input.shape, other.shape))
    if len(shape) > 4:
        raise NotImplementedError("up to 4-D operands")
    sizes = [1] * (4 - len(shape)) + list(shape)
    if out is not None and tuple(out.shape) == shape and out.is_contiguous():
        y = out
    else:
        y = torch.empty(shape, device=input.device, dtype=torch.float32)
    n = y.numel()
    if n:
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
        _sub_gelu_kernel[grid](
            input,
            input if scalar else other,
            y,
            n,
            float(alpha),
            float(other) if scalar else 0.0,
            sizes[1],
            sizes[2],
            sizes[3],
            *_strides4(input, shape),
            *([0] * 4 if scalar else _strides4(other, shape)),
            SCALAR_OTHER=scalar,
            APPROX_TANH=approximate == "tanh",
        )
    if out is not None and y is not out:
        out.copy_(y)
        return out
    return y
