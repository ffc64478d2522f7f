"""Batch norm + hardsigmoid in Triton: a statistics kernel (training only) and one element pass.

Training: one program per channel walks the channel's N * HW elements in BLOCK chunks; each
chunk's mean and squared deviations are computed in registers and merged into the running
(count, mean, M2) with Chan's formula (stable for means far from zero). The program stores the
batch mean and biased variance and updates running_mean / running_var in place (unbiased
variance). Then one element-wise pass normalises with either the batch or the running
statistics, applies weight and bias and hardsigmoid's clamp.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _stats_kernel(
    x_ptr, mean_ptr, var_ptr, rm_ptr, rv_ptr, C, HW, total, momentum,
    UPDATE: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    c = tl.program_id(0)
    cnt = tl.zeros((1,), tl.float32)
    mean = tl.zeros((1,), tl.float32)
    m2 = tl.zeros((1,), tl.float32)
    for t0 in range(0, total, BLOCK):  # t = n * HW + hw runs over the channel's elements
        t = t0 + tl.arange(0, BLOCK)
        ok = t < total
        addr = (t // HW).to(tl.int64) * C * HW + c * HW + t % HW
        x = tl.load(x_ptr + addr, mask=ok, other=0.0)
        c_cnt = tl.sum(ok.to(tl.float32), axis=0)
        c_mean = tl.sum(x, axis=0) / c_cnt
        dev = tl.where(ok, x - c_mean, 0.0)
        c_m2 = tl.sum(dev * dev, axis=0)
        tot = cnt + c_cnt  # Chan's merge of (cnt, mean, m2) with the chunk
        delta = c_mean - mean
        mean = mean + delta * (c_cnt / tot)
        m2 = m2 + c_m2 + delta * delta * cnt * (c_cnt / tot)
        cnt = tot
    one = tl.arange(0, 1)
    tl.store(mean_ptr + c + one, mean)
    tl.store(var_ptr + c + one, m2 / cnt)  # biased: used for normalising
    if UPDATE:
        rm = tl.load(rm_ptr + c + one)
        rv = tl.load(rv_ptr + c + one)
        tl.store(rm_ptr + c + one, (1.0 - momentum) * rm + momentum * mean)
        tl.store(rv_ptr + c + one, (1.0 - momentum) * rv + momentum * (m2 / (cnt - 1.0)))


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 4096}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def _apply_kernel(
    x_ptr, y_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, n, C, HW, eps,
    HAS_W: tl.constexpr, HAS_B: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    c = (offs // HW) % C
    x = tl.load(x_ptr + offs, mask=ok, other=0.0)
    mean = tl.load(mean_ptr + c, mask=ok, other=0.0)
    scale = 1.0 / tl.sqrt(tl.load(var_ptr + c, mask=ok, other=1.0) + eps)
    if HAS_W:
        scale *= tl.load(w_ptr + c, mask=ok, other=1.0)
    z = (x - mean) * scale
    if HAS_B:
        z += tl.load(b_ptr + c, mask=ok, other=0.0)
    y = tl.minimum(tl.maximum(z + 3.0, 0.0), 6.0) / 6.0  # hardsigmoid
    tl.store(y_ptr + offs, y, mask=ok)


def fused_hardsigmoid_batch_norm(
    x,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training=False,
    momentum=0.1,
    eps=1e-05,
    inplace=False,
):
    xc = x.contiguous()
    N, C = xc.shape[0], xc.shape[1]
    HW = xc[0, 0].numel()
    y = torch.empty_like(xc)
    if training:
        mean = torch.empty((C,), device=x.device, dtype=torch.float32)
        var = torch.empty((C,), device=x.device, dtype=torch.float32)
        update = running_mean is not None and running_var is not None
        _stats_kernel[(C,)](
            xc, mean, var, running_mean if update else mean, running_var if update else var,
            C, HW, N * HW, float(momentum), UPDATE=update, BLOCK=1024,
        )  # fmt: skip
    else:
        mean, var = running_mean, running_var
    n = xc.numel()
    if n:
        _apply_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](
            xc, y, mean, var, weight if weight is not None else mean,
            bias if bias is not None else mean, n, C, HW, float(eps),
            HAS_W=weight is not None, HAS_B=bias is not None,
        )  # fmt: skip
    return y
