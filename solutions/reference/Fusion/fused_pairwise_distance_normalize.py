"""normalize(x1), normalize(x2) along dim 1, then the p-norm distance along the last dim.

Kernel 1 computes, for x1 and x2 viewed as (outer, L, inner) around dim 1, the p-norm of every
(outer, :, inner) line and stores 1 / max(norm, eps_norm) (one program per outer index and
BLOCK_I inner columns, walking L in chunks). For 2-D inputs the line is a row (inner = 1); for
3-D inputs it is a column across M. Kernel 2 takes BLOCK_R distance rows at a time, rescales
both operands by their lines' factors on the fly (no normalized copy is written), adds
eps_distance to the difference and reduces |.|^p along the last dim. The p-norm is specialised:
p = 1 (|v|), p = 2 (v^2 and sqrt), p = inf (max) and any other p through pow.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _pow_abs(v, p, P_KIND: tl.constexpr):
    """|v|^p for the sum of a p-norm (unused for P_KIND = 3, the max)."""
    a = tl.abs(v)
    if P_KIND == 1:
        r = a
    elif P_KIND == 2:
        r = a * a
    else:
        r = libdevice.pow(a, p)
    return r


@triton.jit
def _finish(acc, p, P_KIND: tl.constexpr):
    """(sum)^(1/p) for the sum of |v|^p, or the max itself for p = inf."""
    if P_KIND == 1:
        r = acc
    elif P_KIND == 2:
        r = tl.sqrt(acc)
    elif P_KIND == 3:
        r = acc
    else:
        r = libdevice.pow(acc, 1.0 / p)
    return r


@triton.jit
def _inv_norm_kernel(
    x1_ptr,
    x2_ptr,
    s1_ptr,
    s2_ptr,
    L,
    inner,
    n_iblocks,
    p,
    eps,
    P_KIND: tl.constexpr,
    BLOCK_L: tl.constexpr,
    BLOCK_I: tl.constexpr,
):
    pid = tl.program_id(0)
    outer = pid // n_iblocks
    cols = (pid % n_iblocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    col_ok = cols < inner
    base = outer.to(tl.int64) * L * inner
    a1 = tl.zeros((BLOCK_I,), tl.float32)
    a2 = tl.zeros((BLOCK_I,), tl.float32)
    for l0 in range(0, L, BLOCK_L):
        rows = l0 + tl.arange(0, BLOCK_L)
        ok = (rows[:, None] < L) & col_ok[None, :]
        offs = base + rows[:, None] * inner + cols[None, :]
        v1 = tl.load(x1_ptr + offs, mask=ok, other=0.0)
        v2 = tl.load(x2_ptr + offs, mask=ok, other=0.0)
        if P_KIND == 3:
            a1 = tl.maximum(a1, tl.max(tl.abs(v1), axis=0))
            a2 = tl.maximum(a2, tl.max(tl.abs(v2), axis=0))
        else:
            a1 += tl.sum(_pow_abs(v1, p, P_KIND), axis=0)
            a2 += tl.sum(_pow_abs(v2, p, P_KIND), axis=0)
    at = outer.to(tl.int64) * inner + cols
    tl.store(s1_ptr + at, 1.0 / tl.maximum(_finish(a1, p, P_KIND), eps), mask=col_ok)
    tl.store(s2_ptr + at, 1.0 / tl.maximum(_finish(a2, p, P_KIND), eps), mask=col_ok)


@triton.jit
def _distance_kernel(
    x1_ptr,
    x2_ptr,
    s1_ptr,
    s2_ptr,
    y_ptr,
    R,
    D,
    M,
    inner,
    sd,
    p,
    eps,
    P_KIND: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < R
    line0 = (rows // M).to(tl.int64) * inner  # first normalisation line of each row
    acc = tl.zeros((BLOCK_R,), tl.float32)
    for d0 in range(0, D, BLOCK_D):
        d = d0 + tl.arange(0, BLOCK_D)
        ok = row_ok[:, None] & (d < D)[None, :]
        offs = rows.to(tl.int64)[:, None] * D + d[None, :]
        line = line0[:, None] + d[None, :] * sd  # 2-D: sd = 0, one line per row
        v1 = tl.load(x1_ptr + offs, mask=ok, other=0.0) * tl.load(s1_ptr + line, mask=ok, other=0.0)
        v2 = tl.load(x2_ptr + offs, mask=ok, other=0.0) * tl.load(s2_ptr + line, mask=ok, other=0.0)
        diff = tl.where(ok, v1 - v2 + eps, 0.0)
        if P_KIND == 3:
            acc = tl.maximum(acc, tl.max(tl.abs(diff), axis=1))
        else:
            acc += tl.sum(_pow_abs(diff, p, P_KIND), axis=1)
    tl.store(y_ptr + rows, _finish(acc, p, P_KIND), mask=row_ok)


def fused_pairwise_distance_normalize(
    x1, x2, p_norm=2.0, eps_norm=1e-12, eps_distance=1e-6, keepdim=False
):
    if x1.shape != x2.shape or x1.dim() not in (2, 3):
        raise NotImplementedError("x1 and x2 must share one 2-D or 3-D shape")
    a, b = x1.contiguous(), x2.contiguous()
    p = float(p_norm)
    kind = {1.0: 1, 2.0: 2, float("inf"): 3}.get(p, 0)
    outer, L = a.shape[0], a.shape[1]
    inner = a.numel() // max(outer * L, 1)
    D = a.shape[-1]
    R = a.numel() // max(D, 1)
    s1 = torch.empty((outer, inner), device=a.device, dtype=torch.float32)
    s2 = torch.empty_like(s1)
    y = torch.empty(R, device=a.device, dtype=torch.float32)
    if a.numel():
        BLOCK_I = min(triton.next_power_of_2(inner), 64)
        BLOCK_L = max(min(triton.next_power_of_2(L), 2048 // BLOCK_I), 1)
        n_iblocks = triton.cdiv(inner, BLOCK_I)
        _inv_norm_kernel[(outer * n_iblocks,)](
            a,
            b,
            s1,
            s2,
            L,
            inner,
            n_iblocks,
            p,
            float(eps_norm),
            P_KIND=kind,
            BLOCK_L=BLOCK_L,
            BLOCK_I=BLOCK_I,
        )
        BLOCK_D = min(triton.next_power_of_2(D), 256)
        BLOCK_R = max(2048 // BLOCK_D, 1)
        three_d = a.dim() == 3
        _distance_kernel[(triton.cdiv(R, BLOCK_R),)](
            a,
            b,
            s1,
            s2,
            y,
            R,
            D,
            L if three_d else 1,
            inner,
            1 if three_d else 0,
            p,
            float(eps_distance),
            P_KIND=kind,
            BLOCK_R=BLOCK_R,
            BLOCK_D=BLOCK_D,
        )
    shape = tuple(a.shape[:-1]) + ((1,) if keepdim else ())
    return y.view(shape)
