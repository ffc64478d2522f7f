"""Row normalisation + cosine embedding loss in Triton: one pass over both inputs.

The normalised rows a = x / max(||x||, 1e-12) are never formed: every quantity the loss needs
is a function of the three row sums <x1, x1>, <x2, x2> and <x1, x2>, accumulated in one sweep
(BLOCK_R rows by BLOCK_D columns per step). With c_i = max(sqrt(<xi, xi>), 1e-12):
<a, b> = <x1, x2> / (c1 c2), ||a||^2 = <x1, x1> / c1^2, and PyTorch's
cos = <a, b> / sqrt((||a||^2 + 1e-12) (||b||^2 + 1e-12)), which is 0 for an all-zero row. The
per-row losses are stored (reduction='none') or summed by a single program in a fixed order.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _cosine_embedding_rows_kernel(
    a_ptr,
    b_ptr,
    t_ptr,
    loss_ptr,
    N,
    D,
    margin,
    BLOCK_R: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    r_ok = rows < N
    saa = tl.zeros((BLOCK_R, BLOCK_D), dtype=tl.float32)
    sbb = tl.zeros((BLOCK_R, BLOCK_D), dtype=tl.float32)
    sab = tl.zeros((BLOCK_R, BLOCK_D), dtype=tl.float32)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        mask = r_ok[:, None] & (cols < D)[None, :]
        offs = rows[:, None] * D + cols[None, :]
        a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        saa += a * a
        sbb += b * b
        sab += a * b
    s11 = tl.sum(saa, axis=1)
    s22 = tl.sum(sbb, axis=1)
    c1 = tl.maximum(tl.sqrt(s11), 1e-12)  # F.normalize's clamped norms
    c2 = tl.maximum(tl.sqrt(s22), 1e-12)
    dot = tl.sum(sab, axis=1) / (c1 * c2)
    cos = dot / tl.sqrt((s11 / (c1 * c1) + 1e-12) * (s22 / (c2 * c2) + 1e-12))
    t = tl.load(t_ptr + rows, mask=r_ok, other=0)
    loss = tl.where(t == 1, 1.0 - cos, tl.where(t == -1, tl.maximum(cos - margin, 0.0), 0.0))
    tl.store(loss_ptr + rows, loss, mask=r_ok)


@triton.jit
def _sum_kernel(x_ptr, out_ptr, N, scale, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for r0 in range(0, N, BLOCK):
        offs = r0 + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < N, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) * scale)


def fused_cosine_embedding_loss_with_normalization(
    input1, input2, target, margin=0, reduction="mean"
):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"unknown reduction {reduction!r}")
    a, b = input1.contiguous(), input2.contiguous()
    if a.dim() != 2 or a.shape != b.shape:
        raise NotImplementedError("input1 and input2 must both be (N, D)")
    N, D = a.shape
    loss = torch.empty((N,), device=a.device, dtype=torch.float32)
    if N:
        BLOCK_D = min(triton.next_power_of_2(D), 1024)
        BLOCK_R = max(1, min(32, 4096 // BLOCK_D, triton.next_power_of_2(N)))
        _cosine_embedding_rows_kernel[(triton.cdiv(N, BLOCK_R),)](
            a,
            b,
            target.contiguous(),
            loss,
            N,
            D,
            float(margin),
            BLOCK_R=BLOCK_R,
            BLOCK_D=BLOCK_D,
            num_warps=8 if BLOCK_R * BLOCK_D >= 2048 else 4,
        )
    if reduction == "none":
        return loss
    out = torch.empty((), device=a.device, dtype=torch.float32)
    scale = 1.0 / N if reduction == "mean" and N else (float("nan") if reduction == "mean" else 1.0)
    _sum_kernel[(1,)](loss, out, N, scale, BLOCK=1024)
    return out
