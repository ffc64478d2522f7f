"""One fused SGD step in Triton: read param, grad and the momentum buffer once, write param and
the buffer back in place.

Constexpr flags select the variant at compile time: no momentum, the first momentum step (the
buffer is a new tensor initialised to the decayed gradient), or an update of an existing buffer
with dampening, each with or without Nesterov.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _sgd_kernel(
    p_ptr,
    g_ptr,
    b_ptr,
    n,
    lr,
    momentum,
    one_minus_dampening,
    weight_decay,
    MOMENTUM: tl.constexpr,
    FIRST: tl.constexpr,
    NESTEROV: tl.constexpr,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    d = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    d = d + weight_decay * p
    if MOMENTUM:
        if FIRST:
            b = d  # a fresh buffer is the (decayed) gradient itself, without dampening
        else:
            b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            b = momentum * b + one_minus_dampening * d
        tl.store(b_ptr + offs, b.to(b_ptr.dtype.element_ty), mask=mask)
        if NESTEROV:  # noqa: SIM108 - a compile-time branch
            d = d + momentum * b
        else:
            d = b
    p = p - lr * d
    tl.store(p_ptr + offs, p.to(p_ptr.dtype.element_ty), mask=mask)


def sgd_step(
    param,
    grad,
    momentum_buffer=None,
    lr=0.1,
    momentum=0.9,
    weight_decay=0.0,
    dampening=0.0,
    nesterov=False,
):
    if not (param.is_contiguous() and grad.is_contiguous() and grad.shape == param.shape):
        raise ValueError("param and grad must be contiguous and of one shape")
    use_momentum = momentum != 0
    first = use_momentum and momentum_buffer is None
    if first:
        momentum_buffer = torch.empty_like(param)
    buf = momentum_buffer if use_momentum else param  # dummy pointer without momentum
    n = param.numel()
    if n:
        BLOCK = 1024
        _sgd_kernel[(triton.cdiv(n, BLOCK),)](
            param,
            grad,
            buf,
            n,
            lr,
            momentum,
            1.0 - dampening,
            weight_decay,
            MOMENTUM=use_momentum,
            FIRST=first,
            NESTEROV=bool(nesterov),
            BLOCK=BLOCK,
        )
    return param, momentum_buffer
