"""normalize(pairwise_distance(x1, x2)) in Triton: a row-reduction kernel, then a column one.

Kernel 1 reads BLOCK_R rows of x1 and x2 at a time and reduces |x1 - x2 + eps|^p along the last
dim in BLOCK_D chunks (p = 1, 2 and inf get their own exact code paths, any other p uses
libdevice pow), writing one distance per row. Kernel 2 sees the distances as (outer, L, inner)
with L the normalized dim: each program takes BLOCK_I adjacent inner columns, accumulates their
p_norm over L, then rescales them by 1 / max(norm, eps_norm) in a second pass.
"""

import math

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


def _mode(p: float) -> int:
    """Code path of a norm order: 1, 2, inf exact; 0 = general pow."""
    return {1.0: 1, 2.0: 2, math.inf: 3}.get(float(p), 0)


@triton.jit
def _pow_abs(v, p, MODE: tl.constexpr):
    a = tl.abs(v)
    if MODE == 1:
        return a
    elif MODE == 2:
        return a * a
    elif MODE == 3:
        return a  # inf-norm: reduced with max, not sum
    else:
        return libdevice.pow(a, p)


@triton.jit
def _finish(s, p, MODE: tl.constexpr):
    if MODE == 2:
        return tl.sqrt(s)
    elif MODE == 0:
        return libdevice.pow(s, 1.0 / p)
    else:
        return s


@triton.jit
def _distance_kernel(
    x1_ptr,
    x2_ptr,
    d_ptr,
    R,
    D,
    eps,
    p,
    MODE: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    r_ok = rows < R
    offs = tl.arange(0, BLOCK_D)
    acc = tl.zeros((BLOCK_R, BLOCK_D), dtype=tl.float32)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + offs
        mask = r_ok[:, None] & (cols[None, :] < D)
        idx = rows[:, None].to(tl.int64) * D + cols[None, :]
        x1 = tl.load(x1_ptr + idx, mask=mask, other=0.0)
        x2 = tl.load(x2_ptr + idx, mask=mask, other=0.0)
        t = tl.where(mask, _pow_abs(x1 - x2 + eps, p, MODE), 0.0)  # padding adds nothing
        if MODE == 3:
            acc = tl.maximum(acc, t)
        else:
            acc += t
    s = tl.max(acc, axis=1) if MODE == 3 else tl.sum(acc, axis=1)
    tl.store(d_ptr + rows, _finish(s, p, MODE), mask=r_ok)


@triton.jit
def _normalize_kernel(
    d_ptr,
    out_ptr,
    L,
    INNER,
    eps,
    p,
    MODE: tl.constexpr,
    BLOCK_L: tl.constexpr,
    BLOCK_I: tl.constexpr,
):
    outer = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_I + tl.arange(0, BLOCK_I)
    c_ok = cols < INNER
    offs = tl.arange(0, BLOCK_L)
    base = outer * L * INNER
    acc = tl.zeros((BLOCK_L, BLOCK_I), dtype=tl.float32)
    for l0 in range(0, L, BLOCK_L):
        ls = l0 + offs
        mask = (ls[:, None] < L) & c_ok[None, :]
        v = tl.load(d_ptr + base + ls[:, None] * INNER + cols[None, :], mask=mask, other=0.0)
        t = tl.where(mask, _pow_abs(v, p, MODE), 0.0)
        if MODE == 3:
            acc = tl.maximum(acc, t)
        else:
            acc += t
    s = tl.max(acc, axis=0) if MODE == 3 else tl.sum(acc, axis=0)
    denom = tl.maximum(_finish(s, p, MODE), eps)
    for l0 in range(0, L, BLOCK_L):
        ls = l0 + offs
        mask = (ls[:, None] < L) & c_ok[None, :]
        idx = base + ls[:, None] * INNER + cols[None, :]
        v = tl.load(d_ptr + idx, mask=mask, other=0.0)
        tl.store(out_ptr + idx, v / denom[None, :], mask=mask)


def normalize_pairwise_distance(
    x1, x2, p_distance=2.0, eps_distance=1e-06, keepdim=False, p_norm=2, dim_norm=1, eps_norm=1e-12
):
    if x1.shape != x2.shape:
        raise ValueError(f"x1 {tuple(x1.shape)} and x2 {tuple(x2.shape)} must match")
    x1, x2 = x1.contiguous(), x2.contiguous()
    D = x1.shape[-1]
    R = x1.numel() // D
    dist_shape = tuple(x1.shape[:-1]) + ((1,) if keepdim else ())
    dist = torch.empty(dist_shape, device=x1.device, dtype=torch.float32)
    _distance_kernel[(triton.cdiv(R, 16),)](
        x1,
        x2,
        dist,
        R,
        D,
        float(eps_distance),
        float(p_distance),
        MODE=_mode(p_distance),
        BLOCK_R=16,
        BLOCK_D=128,
    )

    if not -dist.dim() <= dim_norm < dist.dim():
        raise IndexError(f"dim_norm={dim_norm} is out of range for a {dist.dim()}-D distance")
    dim = dim_norm % dist.dim()
    L = dist.shape[dim]
    inner = math.prod(dist.shape[dim + 1 :])
    outer = dist.numel() // (L * inner)
    out = torch.empty_like(dist)
    block_i = min(64, triton.next_power_of_2(inner))
    block_l = 4096 // block_i  # narrow columns get long tiles: one program may cover all of L
    _normalize_kernel[(outer, triton.cdiv(inner, block_i))](
        dist,
        out,
        L,
        inner,
        float(eps_norm),
        float(p_norm),
        MODE=_mode(p_norm),
        BLOCK_L=block_l,
        BLOCK_I=block_i,
    )
    return out
