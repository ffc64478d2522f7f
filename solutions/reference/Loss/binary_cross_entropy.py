"""Binary cross-entropy in Triton: one element-wise pass, then a deterministic block reduction.

Each program computes BLOCK element losses in float32, with both logs clamped at -100 like
PyTorch (log(0) = -inf becomes -100). With reduction='none' they are stored; otherwise each
program stores its block's sum and a single program adds the partial sums in a fixed order and
scales by 1/n for 'mean'. A broadcast weight is expanded to the input's shape first.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _bce_kernel(
    x_ptr, y_ptr, w_ptr, out_ptr, n, HAS_W: tl.constexpr, REDUCE: tl.constexpr, BLOCK: tl.constexpr
):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.5).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    log_x = tl.maximum(tl.log(x), -100.0)
    log_1mx = tl.maximum(libdevice.log1p(-x), -100.0)  # log(1 - x), exact for x near 0
    loss = (y - 1.0) * log_1mx - y * log_x
    if HAS_W:
        loss = loss * tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
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


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"unknown reduction {reduction!r}")
    x, y = input.contiguous(), target.contiguous()
    w = weight.expand(x.shape).contiguous() if weight is not None else x  # dummy when unused
    n = x.numel()
    BLOCK = 4096
    nblocks = triton.cdiv(n, BLOCK)
    if reduction == "none":
        out = torch.empty_like(x)
        if n:
            _bce_kernel[(nblocks,)](
                x, y, w, out, n, HAS_W=weight is not None, REDUCE=False, BLOCK=BLOCK
            )
        return out
    partial = torch.zeros(max(nblocks, 1), dtype=torch.float32, device=x.device)
    if n:
        _bce_kernel[(nblocks,)](
            x, y, w, partial, n, HAS_W=weight is not None, REDUCE=True, BLOCK=BLOCK
        )
    out = torch.empty((), dtype=torch.float32, device=x.device)
    scale = 1.0
    if reduction == "mean":
        scale = 1.0 / n if n else float("nan")  # the mean of no elements is NaN, as in torch
    _sum_kernel[(1,)](partial, out, max(nblocks, 1), scale, BLOCK=1024)
    return out
