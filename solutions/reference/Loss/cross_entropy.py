"""Cross-entropy in Triton: one program per row, then a one-program reduction.

The row kernel streams the C logits once with an online log-sum-exp: every lane keeps a running
maximum m and a sum s of exp(x - m), rescaling s whenever m grows. The lanes are merged at the end,
and the loss is log(s) - (x_t - m), so large logits never reach exp() unshifted. The row kernel
writes the weighted loss and the weight it counts with (0 for ignored rows); 'sum' and 'mean'
then sum both arrays in a single program (a deterministic order) and divide.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _row_loss_kernel(
    x_ptr,
    t_ptr,
    w_ptr,
    loss_ptr,
    wsum_ptr,
    C,
    stride_row,
    ignore_index,
    HAS_WEIGHT: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0)
    base = x_ptr + row.to(tl.int64) * stride_row
    cols = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), -3.0e38, tl.float32)  # finite start: exp(m_old - m_new) stays defined
    s = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, C, BLOCK):
        mask = start + cols < C
        x = tl.load(base + start + cols, mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)  # masked lanes add exp(-inf) = 0
        m = m_new
    m_row = tl.max(m, axis=0)
    s_row = tl.sum(s * tl.exp(m - m_row), axis=0)

    t = tl.load(t_ptr + row)
    keep = (t != ignore_index) & (t >= 0) & (t < C)
    t_safe = tl.where(keep, t, 0)
    x_t = tl.load(base + t_safe).to(tl.float32)
    loss = tl.log(s_row) - (x_t - m_row)
    w = tl.load(w_ptr + t_safe).to(tl.float32) if HAS_WEIGHT else 1.0
    w = tl.where(keep, w, 0.0)
    tl.store(loss_ptr + row, tl.where(keep, loss * w, 0.0))
    tl.store(wsum_ptr + row, w)


@triton.jit
def _reduce_kernel(loss_ptr, wsum_ptr, out_ptr, N, MEAN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    wacc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, N, BLOCK):
        mask = start + offs < N
        acc += tl.load(loss_ptr + start + offs, mask=mask, other=0.0)
        wacc += tl.load(wsum_ptr + start + offs, mask=mask, other=0.0)
    total = tl.sum(acc, axis=0)
    if MEAN:
        total = total / tl.sum(wacc, axis=0)  # 0/0 = NaN when every row is ignored, as torch
    tl.store(out_ptr, total)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean"):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"unknown reduction {reduction!r}")
    x = input.contiguous()
    t = target.contiguous()
    N, C = x.shape
    loss = torch.empty(N, dtype=torch.float32, device=x.device)
    wsum = torch.empty(N, dtype=torch.float32, device=x.device)
    w = weight.contiguous() if weight is not None else loss  # dummy pointer when unused
    BLOCK = min(triton.next_power_of_2(C), 2048)
    _row_loss_kernel[(N,)](
        x,
        t,
        w,
        loss,
        wsum,
        C,
        x.stride(0),
        ignore_index,
        HAS_WEIGHT=weight is not None,
        BLOCK=BLOCK,
        num_warps=8 if BLOCK >= 2048 else 4,
    )
    if reduction == "none":
        return loss
    out = torch.empty((), dtype=torch.float32, device=x.device)
    _reduce_kernel[(1,)](loss, wsum, out, N, MEAN=reduction == "mean", BLOCK=1024)
    return out
