"""Uniform [0, 1) samples in Triton: counter-based Philox (tl.rand) keyed by a seed from torch.

The seed is drawn from torch's generator (the default one unless `generator` is given), so
torch.manual_seed makes the output reproducible. Each element's offset is its flat position, so
the result does not depend on the block size or the launch grid.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rand_kernel(y_ptr, n, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    u = tl.rand(seed, offs)  # Philox-4x32 on (seed, offset) mapped to [0, 1)
    u = tl.minimum(u, 0.99999994)  # largest float32 below 1: keep the interval half-open
    tl.store(y_ptr + offs, u.to(y_ptr.dtype.element_ty), mask=mask)


def rand(*size, generator=None, out=None, dtype=None, layout=torch.strided, device=None,
         requires_grad=False, pin_memory=False):
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    if layout != torch.strided:
        raise NotImplementedError("only torch.strided is supported")
    dtype = dtype or torch.get_default_dtype()
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    # a 31-bit kernel seed from torch's RNG: the same torch seed gives the same tensor
    gen_device = generator.device if generator is not None else "cpu"
    seed = int(torch.randint(0, 2**31 - 1, (), generator=generator, device=gen_device))
    y = out if out is not None else torch.empty(size, dtype=dtype, device=device)
    n = y.numel()
    if n:
        BLOCK = 1024
        _rand_kernel[(triton.cdiv(n, BLOCK),)](y, n, seed, BLOCK=BLOCK)
    if requires_grad:
        y.requires_grad_(True)
    return y.pin_memory() if pin_memory else y
