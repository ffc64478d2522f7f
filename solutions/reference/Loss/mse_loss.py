"""MSE loss in Triton: one element-wise pass, then a deterministic block reduction.

Each program squares BLOCK differences in float32. With reduction='none' they are stored;
otherwise each program stores its block's sum, and one program adds the partial sums in a fixed
order, scaling by 1/n for 'mean'.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _mse_kernel(x_ptr, y_ptr, out_ptr, n, REDUCE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    d = x - y
    loss = d * d
    if REDUCE:
        tl.store(out_ptr + pid, tl.sum(loss, axis=0))  # masked lanes are 0
    else:
        tl.store(out_ptr + offs, loss, mask=mask)


@triton.jit
def _sum_kernel(part_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n, BLOCK):  # fixed order: deterministic
        i = start + tl.arange(0, BLOCK)
        acc += tl.load(part_ptr + i, mask=i < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) * scale)


def mse_loss(input, target, reduction="mean"):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"unknown reduction {reduction!r}")
    x, y = input.contiguous(), target.contiguous()
    n = x.numel()
    BLOCK = 4096
    nblocks = triton.cdiv(n, BLOCK)
    if reduction == "none":
        out = torch.empty_like(x)
        if n:
            _mse_kernel[(nblocks,)](x, y, out, n, REDUCE=False, BLOCK=BLOCK)
        return out
    partial = torch.zeros(max(nblocks, 1), dtype=torch.float32, device=x.device)
    if n:
        _mse_kernel[(nblocks,)](x, y, partial, n, REDUCE=True, BLOCK=BLOCK)
    scale = 1.0
    if reduction == "mean":
        scale = 1.0 / n if n else float("nan")
    out = torch.empty((), dtype=torch.float32, device=x.device)
    _sum_kernel[(1,)](partial, out, max(nblocks, 1), scale, BLOCK=1024)
    return out
