"""One fused Adam step in Triton: a single pass reads param, grad and both moments and writes
param and the moments back in place (grad is only read).

L2 weight decay is folded into the gradient inside the kernel (g = grad + wd * param) before the
moment updates. The scalar coefficients (1 - beta, the bias corrections) are computed on the
host in double precision, as PyTorch does, and passed as float arguments.
"""

import math

import triton
import triton.language as tl


@triton.jit
def _adam_kernel(
    p_ptr,
    g_ptr,
    m_ptr,
    v_ptr,
    n,
    beta1,
    one_minus_beta1,
    beta2,
    one_minus_beta2,
    eps,
    weight_decay,
    step_size,
    inv_sqrt_bc2,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    m = tl.load(m_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    v = tl.load(v_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    g = g + weight_decay * p  # L2 penalty enters the gradient (wd = 0 leaves it unchanged)
    m = beta1 * m + one_minus_beta1 * g
    v = beta2 * v + one_minus_beta2 * (g * g)
    denom = tl.sqrt(v) * inv_sqrt_bc2 + eps
    p = p - step_size * (m / denom)
    tl.store(p_ptr + offs, p.to(p_ptr.dtype.element_ty), mask=mask)
    tl.store(m_ptr + offs, m.to(m_ptr.dtype.element_ty), mask=mask)
    tl.store(v_ptr + offs, v.to(v_ptr.dtype.element_ty), mask=mask)


def adam_step(
    param,
    grad,
    exp_avg,
    exp_avg_sq,
    step,
    lr=1e-3,
    beta1=0.9,
    beta2=0.999,
    eps=1e-8,
    weight_decay=0.0,
):
    tensors = (param, grad, exp_avg, exp_avg_sq)
    if not all(t.is_contiguous() and t.shape == param.shape for t in tensors):
        raise ValueError("param, grad, exp_avg and exp_avg_sq must be contiguous and of one shape")
    step = int(step)
    step_size = lr / (1.0 - beta1**step)
    inv_sqrt_bc2 = 1.0 / math.sqrt(1.0 - beta2**step)
    n = param.numel()
    if n:
        BLOCK = 1024
        _adam_kernel[(triton.cdiv(n, BLOCK),)](
            param,
            grad,
            exp_avg,
            exp_avg_sq,
            n,
            beta1,
            1.0 - beta1,
            beta2,
            1.0 - beta2,
            eps,
            weight_decay,
            step_size,
            inv_sqrt_bc2,
            BLOCK=BLOCK,
        )
    return param, exp_avg, exp_avg_sq
