"""Known-bad: a plain float matmul (no quantization), copied out by a Triton kernel so that the
Triton rule is met.  The recipe's int8 rounding makes the true answer differ by ~1%: mismatch."""
import torch
import triton
import triton.language as tl


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def matmul_w8a8(input, weight):
    ref = torch.matmul(input, weight).contiguous()
    out = torch.empty_like(ref)
    _copy[(triton.cdiv(ref.numel(), 1024),)](ref, out, ref.numel(), BLOCK=1024)
    return out
