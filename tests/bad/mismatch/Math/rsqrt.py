"""Known-bad: monkey-patches torch's comparison functions and the reference op at import, then
returns sqrt(x) instead of 1/sqrt(x).  It must get `mismatch` and change no other verdict."""
import torch
import triton
import triton.language as tl

torch.testing.assert_close = lambda *a, **k: None
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.isclose = lambda a, b, *r, **k: torch.ones_like(a, dtype=torch.bool)
torch.rsqrt = torch.sqrt
torch.Tensor.rsqrt = torch.Tensor.sqrt


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
