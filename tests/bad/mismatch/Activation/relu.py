"""Known-bad: a correct Triton ReLU that caches its result by input address and returns the cached
tensor when called again on the same buffer.  kbx refills each case's buffers with other inputs
and calls again, so the stale result is caught (`mismatch`)."""
import torch
import triton
import triton.language as tl

_cache = {}


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)


def relu(input, inplace=False):
    key = (input.data_ptr(), tuple(input.shape))
    if key in _cache:
        return _cache[key]
    x = input.contiguous()
    y = x if inplace else torch.empty_like(x)
    _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    _cache[key] = y
    return y
