"""Dropout + hardshrink in Triton: one program per block of elements, mask drawn in registers.

Each element draws one uniform number with tl.rand(seed, flat index) (Philox: a pure function of
seed and index, so the mask does not depend on the block size); elements whose number is below
p are zeroed, the rest scaled by 1/(1-p), then values with |v| <= lambd are zeroed too. The seed
is drawn from torch's default generator, so torch.manual_seed fixes the mask.
"""

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 4096}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def _hardshrink_dropout_kernel(
    x_ptr, y_ptr, n, p, scale, lambd, seed, TRAINING: tl.constexpr, BLOCK: tl.constexpr
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    v = tl.load(x_ptr + offs, mask=ok, other=0.0)
    if TRAINING:
        keep = tl.rand(seed, offs) >= p  # uniform in [0, 1): dropped with probability p
        v = tl.where(keep, v * scale, 0.0)
    v = tl.where(tl.abs(v) > lambd, v, 0.0)
    tl.store(y_ptr + offs, v, mask=ok)


def fused_hardshrink_dropout(input, p=0.5, training=True, inplace=False, lambd=0.5):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    x = input.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    # The dropout seed comes from torch's default generator: torch.manual_seed fixes the mask.
    seed = int(torch.randint(0, 2**31 - 1, (1,))) if training else 0
    scale = 1.0 / (1.0 - p) if p < 1.0 else 0.0
    if n:
        _hardshrink_dropout_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](
            x, y, n, float(p), scale, float(lambd), seed, TRAINING=bool(training)
        )
    return y  # `inplace` would only let dropout overwrite an intermediate, never materialised
