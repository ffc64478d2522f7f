"""NLL loss in Triton: a gather per position, then a deterministic block reduction.

The input is viewed as (N, C, D) (D = 1 for 2-D input) and the target as N*D positions. Each
program handles BLOCK positions: it loads their targets, gathers input[n, t, j] and w[t], and
zeroes ignored positions (and their weight). With reduction='none' the losses are stored;
otherwise the program stores its block sums of the loss and of the weights, and one program adds
both in a fixed order and divides ('mean') - 0/0 = NaN when every position is ignored, as torch.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _nll_kernel(
    x_ptr,
    t_ptr,
    w_ptr,
    out_ptr,
    wsum_ptr,
    P,
    C,
    D,
    ignore_index,
    HAS_W: tl.constexpr,
    REDUCE: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    i = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < P
    t = tl.load(t_ptr + i, mask=mask, other=0)
    keep = mask & (t != ignore_index)
    t_safe = tl.where(keep, t, 0).to(tl.int64)
    n = i // D
    j = i % D
    x = tl.load(x_ptr + (n * C + t_safe) * D + j, mask=keep, other=0.0).to(tl.float32)
    if HAS_W:
        w = tl.load(w_ptr + t_safe, mask=keep, other=0.0).to(tl.float32)
    else:
        w = tl.where(keep, 1.0, 0.0)
    loss = tl.where(keep, -w * x, 0.0)
    if REDUCE:
        tl.store(out_ptr + pid, tl.sum(loss, axis=0))
        tl.store(wsum_ptr + pid, tl.sum(w, axis=0))
    else:
        tl.store(out_ptr + i, loss, mask=mask)


@triton.jit
def _finish_kernel(loss_ptr, wsum_ptr, out_ptr, n, MEAN: tl.constexpr, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    wacc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n, BLOCK):  # fixed order: deterministic
        k = start + tl.arange(0, BLOCK)
        acc += tl.load(loss_ptr + k, mask=k < n, other=0.0)
        wacc += tl.load(wsum_ptr + k, mask=k < n, other=0.0)
    total = tl.sum(acc, axis=0)
    if MEAN:
        total = total / tl.sum(wacc, axis=0)
    tl.store(out_ptr, total)


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"unknown reduction {reduction!r}")
    x = input.contiguous()
    t = target.contiguous()
    N, C = x.shape[0], x.shape[1]
    D = math.prod(x.shape[2:])
    P = N * D
    w = weight.contiguous() if weight is not None else x  # dummy pointer when unused
    BLOCK = 1024
    nblocks = max(1, triton.cdiv(P, BLOCK))
    common = dict(HAS_W=weight is not None, BLOCK=BLOCK)
    if reduction == "none":
        out = torch.empty(t.shape, dtype=torch.float32, device=x.device)
        if P:
            _nll_kernel[(nblocks,)](
                x, t, w, out, out, P, C, D, ignore_index, REDUCE=False, **common
            )
        return out
    partial = torch.zeros(nblocks, dtype=torch.float32, device=x.device)
    wpartial = torch.zeros(nblocks, dtype=torch.float32, device=x.device)
    if P:
        _nll_kernel[(nblocks,)](
            x, t, w, partial, wpartial, P, C, D, ignore_index, REDUCE=True, **common
        )
    out = torch.empty((), dtype=torch.float32, device=x.device)
    _finish_kernel[(1,)](partial, wpartial, out, nblocks, MEAN=reduction == "mean", BLOCK=1024)
    return out
