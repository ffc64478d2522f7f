"""Smooth L1 loss in Triton: one element-wise pass, then a deterministic block reduction.

Each program evaluates BLOCK element losses in float32 (quadratic branch where |d| < beta, linear
elsewhere; beta = 0 never takes the quadratic branch, which gives L1). With reduction='none' they
are stored; otherwise block sums are stored and one program adds them in a fixed order, scaling
by 1/n for 'mean'.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _smooth_l1_kernel(
    x_ptr, y_ptr, out_ptr, n, beta, half_over_beta, REDUCE: tl.constexpr, BLOCK: tl.constexpr
):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    d = x - y
    ad = tl.abs(d)
    # the quadratic branch is only selected where |d| < beta, so beta = 0 never divides by 0
    loss = tl.where(ad < beta, d * d * half_over_beta, ad - 0.5 * beta)
    if REDUCE:
        tl.store(out_ptr + pid, tl.sum(tl.where(mask, loss, 0.0), axis=0))
    else:
        tl.store(out_ptr + offs, loss, mask=mask)


@triton.jit
def _sum_kernel(part_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n, BLOCK):  # fixed order: deterministic
        i = start + tl.arange(0, BLOCK)
        acc += tl.load(part_ptr + i, mask=i < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) * scale)


def smooth_l1_loss(input, target, beta=1.0, reduction="mean"):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"unknown reduction {reduction!r}")
    if beta < 0:
        raise ValueError("beta must be non-negative")
    x, y = input.contiguous(), target.contiguous()
    n = x.numel()
    half_over_beta = 0.5 / beta if beta > 0 else 0.0
    BLOCK = 4096
    nblocks = triton.cdiv(n, BLOCK)
    args = (n, float(beta), half_over_beta)
    if reduction == "none":
        out = torch.empty_like(x)
        if n:
            _smooth_l1_kernel[(nblocks,)](x, y, out, *args, REDUCE=False, BLOCK=BLOCK)
        return out
    partial = torch.zeros(max(nblocks, 1), dtype=torch.float32, device=x.device)
    if n:
        _smooth_l1_kernel[(nblocks,)](x, y, partial, *args, REDUCE=True, BLOCK=BLOCK)
    scale = 1.0
    if reduction == "mean":
        scale = 1.0 / n if n else float("nan")
    out = torch.empty((), dtype=torch.float32, device=x.device)
    _sum_kernel[(1,)](partial, out, max(nblocks, 1), scale, BLOCK=1024)
    return out
