"""cross_entropy(log_softmax(x)) in Triton: one streaming pass over the logits, then a reduction.

log_softmax is idempotent, so the loss is the cross-entropy of the logits themselves. The input
is seen as R rows (one per sample and spatial position) of C classes with class stride L (1 for
2-D input). Kernel 1 gives each program BLOCK_R rows and streams their classes in BLOCK_C
chunks, keeping an online log-sum-exp (running max m and sum of exp(x - m)) plus the sums the
loss needs: the target's logit and weight (index targets), sum_c v_c (x_c - m) and sum_c v_c
with v = w (label smoothing) or v = w ((1-eps) q + eps/C) (probability targets); the first sum is
re-centred whenever the running max moves. With lp_c = (x_c - m) - log(s) every term is then
linear, e.g. -sum_c v_c lp_c = log(s) sum_c v_c - sum_c v_c (x_c - m). Keeping x - m apart from
log(s) matters: forming lse = m + log(s) first would round away ~1e-3 at |x| ~ 1e4. Each row's
loss and its weight in the mean's denominator are stored; kernel 2 (one program) adds them up in
a fixed order for 'sum' and 'mean'.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _ce_rows_kernel(
    x_ptr,
    t_ptr,
    w_ptr,
    loss_ptr,
    den_ptr,
    R,
    C,
    L,
    ignore_index,
    eps,
    PROBS: tl.constexpr,
    HAS_W: tl.constexpr,
    SMOOTH: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    r_ok = rows < R
    base = (rows // L) * C * L + rows % L  # x[n, 0, l]; class c sits at base + c * L
    m = tl.full((BLOCK_R,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK_R,), dtype=tl.float32)
    svx = tl.zeros((BLOCK_R,), dtype=tl.float32)  # sum_c v_c (x_c - m), m the running max
    sv = tl.zeros((BLOCK_R,), dtype=tl.float32)  # sum_c v_c
    for c0 in range(0, C, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        c_ok = cols < C
        mask = r_ok[:, None] & c_ok[None, :]
        offs = base[:, None] + cols[None, :] * L
        x = tl.load(x_ptr + offs, mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
        if PROBS or SMOOTH:
            if HAS_W:
                v = tl.load(w_ptr + cols, mask=c_ok, other=0.0)[None, :]
            else:
                v = tl.where(c_ok, 1.0, 0.0)[None, :]
            if PROBS:  # smoothed target distribution times the class weight
                q = tl.load(t_ptr + offs, mask=mask, other=0.0).to(tl.float32)
                v = v * ((1.0 - eps) * q + eps / C)
            v = tl.where(mask, v, 0.0)
            # re-centre the running sum on the new max (nothing to move before the first chunk)
            svx = tl.where(sv != 0.0, svx + sv * (m - m_new), svx)
            svx += tl.sum(v * tl.where(mask, x - m_new[:, None], 0.0), axis=1)
            sv += tl.sum(v, axis=1)
        m = m_new
    log_s = tl.log(s)  # log_softmax: lp_c = (x_c - m) - log_s, never x_c - (m + log_s)
    if PROBS:
        loss = log_s * sv - svx  # -sum_c v_c lp_c
        den = tl.where(r_ok, 1.0, 0.0)
    else:
        t = tl.load(t_ptr + rows, mask=r_ok, other=ignore_index)
        valid = r_ok & (t != ignore_index)
        tc = tl.where(valid, t, 0)
        xt = tl.load(x_ptr + base + tc * L, mask=valid, other=0.0).to(tl.float32)
        wt = tl.load(w_ptr + tc, mask=valid, other=0.0) if HAS_W else tl.where(valid, 1.0, 0.0)
        loss = (1.0 - eps) * wt * ((m - xt) + log_s)
        if SMOOTH:
            loss += eps / C * (log_s * sv - svx)
        loss = tl.where(valid, loss, 0.0)
        den = wt
    tl.store(loss_ptr + rows, loss, mask=r_ok)
    tl.store(den_ptr + rows, den, mask=r_ok)


@triton.jit
def _reduce_kernel(loss_ptr, den_ptr, out_ptr, R, MEAN: tl.constexpr, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    dacc = tl.zeros((BLOCK,), dtype=tl.float32)
    for r0 in range(0, R, BLOCK):
        offs = r0 + tl.arange(0, BLOCK)
        acc += tl.load(loss_ptr + offs, mask=offs < R, other=0.0)
        dacc += tl.load(den_ptr + offs, mask=offs < R, other=0.0)
    total = tl.sum(acc, axis=0)
    if MEAN:
        total = total / tl.sum(dacc, axis=0)  # 0/0 = NaN when everything is ignored, as torch
    tl.store(out_ptr, total)


def fused_cross_entropy_log_softmax(
    input, target, dim=1, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0
):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"unknown reduction {reduction!r}")
    x = input.contiguous()
    if dim % x.dim() != (1 if x.dim() > 1 else 0):
        raise NotImplementedError("dim must be the class dim (1, or -1 for 2-D input)")
    N, C = x.shape[0], x.shape[1]
    L = x.numel() // (N * C) if N * C else 1
    R = N * L
    probs = target.is_floating_point()
    t = target.contiguous()
    w = weight.contiguous() if weight is not None else x
    loss = torch.empty(
        target.shape if not probs else (N, *x.shape[2:]), device=x.device, dtype=torch.float32
    )
    den = torch.empty((R,), device=x.device, dtype=torch.float32)
    if R:
        BLOCK_C = min(triton.next_power_of_2(C), 2048)
        BLOCK_R = max(1, min(64, 4096 // BLOCK_C, triton.next_power_of_2(R)))
        _ce_rows_kernel[(triton.cdiv(R, BLOCK_R),)](
            x,
            t,
            w,
            loss,
            den,
            R,
            C,
            L,
            int(ignore_index),
            float(label_smoothing),
            PROBS=probs,
            HAS_W=weight is not None,
            SMOOTH=label_smoothing > 0,
            BLOCK_R=BLOCK_R,
            BLOCK_C=BLOCK_C,
            num_warps=8 if BLOCK_R * BLOCK_C >= 2048 else 4,
        )
    if reduction == "none":
        return loss
    out = torch.empty((), device=x.device, dtype=torch.float32)
    _reduce_kernel[(1,)](loss, den, out, R, MEAN=reduction == "mean", BLOCK=1024)
    return out
