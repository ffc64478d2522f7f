"""KL-divergence loss in Triton: one element-wise pass, then a deterministic block reduction.

Each program evaluates BLOCK element losses in float32: y * (log y - x) with the y = 0 terms set
to 0 (x log x -> 0), or exp(y) * (y - x) for log-space targets. With reduction='none' they are
stored; otherwise block sums are stored and one program adds them in a fixed order, scaling by
1/n ('mean'), 1/input.size(0) ('batchmean') or 1 ('sum').
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _kl_kernel(
    x_ptr, y_ptr, out_ptr, n, LOG_TARGET: tl.constexpr, REDUCE: tl.constexpr, BLOCK: tl.constexpr
):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if LOG_TARGET:
        loss = tl.exp(y) * (y - x)
    else:
        y_log_y = tl.where(y == 0.0, 0.0, y * tl.log(y))  # xlogy: 0 * log 0 = 0
        loss = y_log_y - y * x
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


def kl_div(input, target, reduction="batchmean", log_target=False):
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"unknown reduction {reduction!r}")
    x, y = input.contiguous(), target.contiguous()
    n = x.numel()
    BLOCK = 4096
    nblocks = triton.cdiv(n, BLOCK)
    if reduction == "none":
        out = torch.empty_like(x)
        if n:
            _kl_kernel[(nblocks,)](x, y, out, n, LOG_TARGET=log_target, REDUCE=False, BLOCK=BLOCK)
        return out
    partial = torch.zeros(max(nblocks, 1), dtype=torch.float32, device=x.device)
    if n:
        _kl_kernel[(nblocks,)](x, y, partial, n, LOG_TARGET=log_target, REDUCE=True, BLOCK=BLOCK)
    count = {"sum": 1, "mean": n, "batchmean": x.shape[0] if x.dim() else 1}[reduction]
    scale = 1.0 / count if count else float("nan")
    out = torch.empty((), dtype=torch.float32, device=x.device)
    _sum_kernel[(1,)](partial, out, max(nblocks, 1), scale, BLOCK=1024)
    return out
