"""signbit and (int(x) & y) in Triton: one pass over both inputs writes both outputs.

The sign bit is read by reinterpreting the float32 as an int32 (x < 0 would miss -0.0);
the conversion to other's dtype truncates toward zero like torch's cast, and for a bool
`other` the conversion is x != 0 and the AND a logical one. Bool tensors are passed as uint8
views.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _signbit_and_kernel(
    x_ptr, y_ptr, sign_ptr, and_ptr, n, IS_BOOL: tl.constexpr, BLOCK: tl.constexpr
):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0)
    neg = x.to(tl.int32, bitcast=True) < 0  # the sign bit itself
    tl.store(sign_ptr + offs, neg.to(tl.uint8), mask=mask)
    if IS_BOOL:  # noqa: SIM108 - a constexpr branch: only one side is compiled
        r = ((x != 0.0) & (y != 0)).to(tl.uint8)
    else:
        r = x.to(y.dtype) & y  # float -> int truncates toward zero
    tl.store(and_ptr + offs, r, mask=mask)


def signbit_bitwise_and(input: torch.Tensor, other: torch.Tensor):
    x = input.contiguous()
    y = other.expand(x.shape).contiguous()
    is_bool = y.dtype == torch.bool
    sign = torch.empty(x.shape, dtype=torch.bool, device=x.device)
    anded = torch.empty(x.shape, dtype=other.dtype, device=x.device)
    n = x.numel()
    BLOCK = 1024
    if n:
        _signbit_and_kernel[(triton.cdiv(n, BLOCK),)](
            x,
            y.view(torch.uint8) if is_bool else y,
            sign.view(torch.uint8),
            anded.view(torch.uint8) if is_bool else anded,
            n,
            IS_BOOL=is_bool,
            BLOCK=BLOCK,
        )
    return sign, anded
