"""Known-bad: returns sqrt(x) instead of 1/sqrt(x).  It must get `mismatch` and change no other
verdict.  (Patching torch's comparisons at import as well, as it once did, is `forbidden` since
the child's snapshot: tests/exploits/patch_tensor_method, tests/exploits/patch_builtin.)"""
import torch
import triton
import triton.language as tl


@triton.jit
def _sqrt(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.sqrt(tl.load(x_ptr + offs, mask=mask, other=1.0)), mask=mask)


def rsqrt(input, out=None):
    x = input.contiguous()
    y = torch.empty_like(x)
    _sqrt[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y
