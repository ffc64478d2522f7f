"""GPU fault: fills the GPU in 4 GiB pieces until an allocation fails, holding what it got."""

import torch
import triton
import triton.language as tl


@triton.jit
def _selu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = 1.0507009873554805 * tl.where(x > 0, x, 1.6732632423543772 * (tl.exp(x) - 1.0))
    tl.store(y_ptr + offs, y, mask=mask)


HELD: list[torch.Tensor] = []


def selu(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    x = input.contiguous()
    y = torch.empty_like(x)
    _selu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    while True:
        HELD.append(torch.empty(4 << 30, dtype=torch.uint8, device=x.device))
