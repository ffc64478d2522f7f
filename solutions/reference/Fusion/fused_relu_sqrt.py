"""sqrt(relu(x)) in one Triton pass: each program handles BLOCK consecutive elements.

relu is written as where(x < 0, 0, x), which keeps NaN (a NaN compares false) exactly as torch's
relu does; tl.sqrt_rn is the correctly rounded square root. With inplace=True the same pass also
stores relu(x) back into the input, as torch's in-place ReLU leaves it.
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
def _relu_sqrt_kernel(x_ptr, y_ptr, n, INPLACE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    r = tl.where(x < 0, 0.0, x)  # relu that propagates NaN
    if INPLACE:
        tl.store(x_ptr + offs, r, mask=mask)
    tl.store(y_ptr + offs, tl.sqrt_rn(r), mask=mask)


def fused_relu_sqrt(input, inplace=False, out=None):
    x = input if input.is_contiguous() else input.contiguous()
    if out is not None and out.shape == x.shape and out.is_contiguous():
        y = out  # write straight into the caller's tensor
    else:
        y = torch.empty_like(x)
    n = x.numel()
    if n:
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
        _relu_sqrt_kernel[grid](x, y, n, INPLACE=bool(inplace))
    if inplace and x is not input:
        input.copy_(x)  # non-contiguous input: hand the ReLU back through a view copy
    if out is not None and y is not out:
        out.copy_(y)
        return out
    return y
