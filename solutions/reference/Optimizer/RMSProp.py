"""One fused RMSProp step in Triton: read param, grad and square_avg once, write param and
square_avg back in place (grad is only read).

L2 weight decay is folded into the gradient inside the kernel; 1 - alpha is formed on the host
in double precision and passed as a float argument.
"""

import triton
import triton.language as tl


@triton.jit
def _rmsprop_kernel(
    p_ptr, g_ptr, v_ptr, n, lr, alpha, one_minus_alpha, eps, weight_decay, BLOCK: tl.constexpr
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    v = tl.load(v_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    g = g + weight_decay * p
    v = alpha * v + one_minus_alpha * (g * g)
    p = p - lr * (g / (tl.sqrt(v) + eps))  # eps outside the square root, as torch
    tl.store(p_ptr + offs, p.to(p_ptr.dtype.element_ty), mask=mask)
    tl.store(v_ptr + offs, v.to(v_ptr.dtype.element_ty), mask=mask)


def rmsprop_step(param, grad, square_avg, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0):
    if not all(t.is_contiguous() and t.shape == param.shape for t in (param, grad, square_avg)):
        raise ValueError("param, grad and square_avg must be contiguous and of one shape")
    n = param.numel()
    if n:
        BLOCK = 1024
        _rmsprop_kernel[(triton.cdiv(n, BLOCK),)](
            param, grad, square_avg, n, lr, alpha, 1.0 - alpha, eps, weight_decay, BLOCK=BLOCK
        )
    return param, square_avg
