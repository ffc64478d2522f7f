"""Cosine similarity of two L_p-normalized tensors in Triton: one program per column block.

Both tensors are seen as (outer, L, inner) with L the reduced dim (a broadcast x2 is expanded
first). A program owns BLOCK_I adjacent inner columns of one outer index and walks L twice: the
first pass accumulates the p-norms of x1 and x2 (p = 1, 2 and inf exact, others via libdevice
pow), the second divides by max(norm, eps_norm) and accumulates |u1|^2, |u2|^2 and u1 . u2, so
the similarity u1 . u2 / (max(|u1|, eps) max(|u2|, eps)) never needs u1 or u2 in memory.
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
    if MODE == 2:
        return a * a
    elif MODE == 0:
        return libdevice.pow(a, p)
    else:  # p = 1 (summed) or inf (reduced with max)
        return a


@triton.jit
def _finish(s, p, MODE: tl.constexpr):
    if MODE == 2:
        return tl.sqrt(s)
    elif MODE == 0:
        return libdevice.pow(s, 1.0 / p)
    else:
        return s


@triton.jit
def _cosine_kernel(
    x1_ptr,
    x2_ptr,
    out_ptr,
    L,
    INNER,
    eps_s,
    eps_n,
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
    s1 = tl.zeros((BLOCK_L, BLOCK_I), dtype=tl.float32)
    s2 = tl.zeros((BLOCK_L, BLOCK_I), dtype=tl.float32)
    for l0 in range(0, L, BLOCK_L):  # pass 1: the p-norms along L
        ls = l0 + offs
        mask = (ls[:, None] < L) & c_ok[None, :]
        idx = base + ls[:, None] * INNER + cols[None, :]
        t1 = tl.where(mask, _pow_abs(tl.load(x1_ptr + idx, mask=mask, other=0.0), p, MODE), 0.0)
        t2 = tl.where(mask, _pow_abs(tl.load(x2_ptr + idx, mask=mask, other=0.0), p, MODE), 0.0)
        if MODE == 3:
            s1 = tl.maximum(s1, t1)
            s2 = tl.maximum(s2, t2)
        else:
            s1 += t1
            s2 += t2
    if MODE == 3:
        n1, n2 = tl.max(s1, axis=0), tl.max(s2, axis=0)
    else:
        n1, n2 = tl.sum(s1, axis=0), tl.sum(s2, axis=0)
    c1 = tl.maximum(_finish(n1, p, MODE), eps_n)
    c2 = tl.maximum(_finish(n2, p, MODE), eps_n)

    uu = tl.zeros((BLOCK_L, BLOCK_I), dtype=tl.float32)
    vv = tl.zeros((BLOCK_L, BLOCK_I), dtype=tl.float32)
    uv = tl.zeros((BLOCK_L, BLOCK_I), dtype=tl.float32)
    for l0 in range(0, L, BLOCK_L):  # pass 2: normalize, then the cosine's three sums
        ls = l0 + offs
        mask = (ls[:, None] < L) & c_ok[None, :]
        idx = base + ls[:, None] * INNER + cols[None, :]
        u = tl.load(x1_ptr + idx, mask=mask, other=0.0) / c1[None, :]
        v = tl.load(x2_ptr + idx, mask=mask, other=0.0) / c2[None, :]
        uu += u * u
        vv += v * v
        uv += u * v
    nu = tl.maximum(tl.sqrt(tl.sum(uu, axis=0)), eps_s)
    nv = tl.maximum(tl.sqrt(tl.sum(vv, axis=0)), eps_s)
    tl.store(out_ptr + outer * INNER + cols, tl.sum(uv, axis=0) / (nu * nv), mask=c_ok)


def normalized_cosine_similarity(x1, x2, dim=1, eps_similarity=1e-8, p_norm=2, eps_norm=1e-12):
    shape = torch.broadcast_shapes(x1.shape, x2.shape)
    d = dim % len(shape)
    if x1.shape[d - len(shape) + x1.dim()] != x2.shape[d - len(shape) + x2.dim()]:
        raise ValueError("x1 and x2 must have the same size along dim (each is normalized there)")
    L = shape[d]
    inner = math.prod(shape[d + 1 :])
    outer = math.prod(shape[:d])
    # (outer, L, inner) views; a broadcast operand is materialized by reshape
    a = x1.expand(shape).reshape(outer, L, inner)
    b = x2.expand(shape).reshape(outer, L, inner)
    out = torch.empty(shape[:d] + shape[d + 1 :], device=x1.device, dtype=torch.float32)
    block_i = min(32, triton.next_power_of_2(inner))
    block_l = min(triton.next_power_of_2(L), 2048 // block_i)
    _cosine_kernel[(outer, triton.cdiv(inner, block_i))](
        a,
        b,
        out,
        L,
        inner,
        float(eps_similarity),
        float(eps_norm),
        float(p_norm),
        MODE=_mode(p_norm),
        BLOCK_L=block_l,
        BLOCK_I=block_i,
    )
    return out
