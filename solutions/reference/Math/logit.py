"""Logit in Triton: one program per block of elements.

The clamp is written with comparisons and tl.where, not min/max, so that NaN inputs fall
through unchanged like torch's `x < lo ? lo : (x > hi ? hi : x)`; the bounds are formed in
float32 inside the kernel exactly as torch forms them. log(z / (1 - z)) then gives -inf at 0,
+inf at 1 and NaN outside [0, 1].
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _logit_kernel(x_ptr, y_ptr, n, eps, CLAMP: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    z = tl.load(x_ptr + offs, mask=mask, other=0.5).to(tl.float32)
    if CLAMP:
        lo = tl.full((BLOCK,), eps, tl.float32)  # eps as a float32 vector
        hi = 1.0 - lo  # rounded in float32, as torch does
        z = tl.where(z < lo, lo, tl.where(z > hi, hi, z))
    y = tl.log(z / (1.0 - z))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def logit(input: torch.Tensor, eps: float = None, out: torch.Tensor = None) -> torch.Tensor:
    x = input.contiguous()
    if out is not None and out.shape == x.shape and out.is_contiguous():
        y = out  # write straight into the caller's tensor
    else:
        y = torch.empty_like(x)
    n = x.numel()
    BLOCK = 1024
    clamp = eps is not None and eps >= 0  # torch treats a negative eps like None
    _logit_kernel[(triton.cdiv(n, BLOCK),)](
        x, y, n, float(eps) if clamp else 0.0, CLAMP=clamp, BLOCK=BLOCK
    )
    if out is not None and y is not out:
        out.resize_(x.shape)  # torch resizes a mismatched `out`, then copies into it
        out.copy_(y)
        return out
    return y
