"""One fused Lion step in Triton: read param, grad and the momentum once, write param and the
momentum back in place.

The update direction is the sign of beta1*m + (1-beta1)*g (0 where it is exactly 0); the
momentum itself moves with beta2. The scalar coefficients are formed on the host in double
precision and passed as float arguments.
"""

import triton
import triton.language as tl


@triton.jit
def _lion_kernel(
    p_ptr,
    g_ptr,
    m_ptr,
    n,
    lr,
    decay,
    beta1,
    one_minus_beta1,
    beta2,
    one_minus_beta2,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    m = tl.load(m_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = beta1 * m + one_minus_beta1 * g
    sign = tl.where(u > 0, 1.0, tl.where(u < 0, -1.0, 0.0))
    p = p * decay - lr * sign
    m = beta2 * m + one_minus_beta2 * g
    tl.store(p_ptr + offs, p.to(p_ptr.dtype.element_ty), mask=mask)
    tl.store(m_ptr + offs, m.to(m_ptr.dtype.element_ty), mask=mask)


def lion_step(param, grad, exp_avg, lr=1e-4, beta1=0.9, beta2=0.99, weight_decay=0.0):
    if not all(t.is_contiguous() and t.shape == param.shape for t in (param, grad, exp_avg)):
        raise ValueError("param, grad and exp_avg must be contiguous and of one shape")
    n = param.numel()
    if n:
        BLOCK = 1024
        _lion_kernel[(triton.cdiv(n, BLOCK),)](
            param,
            grad,
            exp_avg,
            n,
            lr,
            1.0 - lr * weight_decay,
            beta1,
            1.0 - beta1,
            beta2,
            1.0 - beta2,
            BLOCK=BLOCK,
        )
    return param, exp_avg
