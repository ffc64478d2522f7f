"""hstack + div in Triton: each piece is divided straight into its slice of the output.

There is one launch per piece and no stacked copy: the output is seen as (A, W, B) with the
stacking dim in the middle, a piece as (A, w, B), and each program maps a block of the piece's
elements to output positions (a, offset + col, b), reading the divisor through its broadcast
strides. True division uses div_rn (IEEE, so x/0 = inf and 0/0 = NaN). 'floor' on floats
follows torch's rule step by step (fmod, then a corrected quotient: Python's float //), which
differs from floor(x / d) when the quotient rounds onto a whole number. Integers use C's
truncating division, corrected toward -inf for 'floor'.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

MODES = {None: 0, "trunc": 1, "floor": 2}


@triton.jit
def _div(a, b, MODE: tl.constexpr, IS_INT: tl.constexpr):
    # Every branch assigns `q` and there is a single return: code after a returning
    # constexpr-if is still compiled for every type, and fmod has no integer form.
    if IS_INT:
        if MODE == 0:  # integers promote to float32 for true division
            q = tl.math.div_rn(a.to(tl.float32), b.to(tl.float32))
        else:
            q = a // b  # C division: truncates toward zero
            if MODE == 2:
                r = a - q * b
                q = tl.where((r != 0) & ((r < 0) != (b < 0)), q - 1, q)
    elif MODE == 0:
        q = tl.math.div_rn(a, b)
    elif MODE == 1:
        q = libdevice.trunc(tl.math.div_rn(a, b))
    else:
        mod = libdevice.fmod(a, b)
        div = tl.math.div_rn(a - mod, b)  # a whole number up to rounding
        div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1.0, div)
        fl = tl.floor(div)
        fl = tl.where(div - fl > 0.5, fl + 1.0, fl)
        q = tl.where(div != 0, fl, tl.where(tl.math.div_rn(a, b) < 0, -0.0, 0.0))
        q = tl.where(b == 0, tl.math.div_rn(a, b), q)  # division by zero: IEEE result
    return q


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 4096}, num_warps=8),
    ],
    key=["n", "MODE", "IS_INT"],
)
@triton.jit
def _piece_div_kernel(
    x_ptr, d_ptr, y_ptr, n, w, B, W, col0, d_val, ds0, ds1, ds2,
    D_TENSOR: tl.constexpr, MODE: tl.constexpr, IS_INT: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    b = offs % B  # unravel over the piece (A, w, B)
    col = (offs // B) % w + col0  # column in the stacked output
    a = offs // (B * w)
    x = tl.load(x_ptr + offs, mask=ok, other=1)
    d = tl.zeros_like(x) + d_val  # a tensor even if d_val was specialised to a constant
    if D_TENSOR:
        d = tl.load(d_ptr + a * ds0 + col * ds1 + b * ds2, mask=ok, other=1)
    tl.store(y_ptr + (a * W + col) * B + b, _div(x, d, MODE, IS_INT), mask=ok)


def fused_hstack_div(tensors, divisor, *, rounding_mode=None, out=None):
    if rounding_mode not in MODES:
        raise ValueError(f"rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    pieces = [t.contiguous() for t in tensors]
    first = pieces[0]
    axis = 0 if first.dim() == 1 else 1
    W = sum(t.shape[axis] for t in pieces)
    shape = list(first.shape)
    shape[axis] = W
    if len(shape) > 3:
        raise NotImplementedError("pieces of at most 3 dims")
    B = first.shape[axis + 1 :].numel()
    is_int = not first.is_floating_point()
    d_tensor = isinstance(divisor, torch.Tensor)
    if d_tensor:  # broadcast strides of the divisor over the (A, W, B) view of the output
        st = list(divisor.expand(shape).stride())
        ds = ([0] if axis == 0 else []) + st + [0] * (3 - len(st) - (axis == 0))
        d_val = 0
    else:
        if is_int and not isinstance(divisor, int):
            raise NotImplementedError("integer pieces need an integer divisor")
        ds, d_val = [0, 0, 0], divisor if is_int else float(divisor)
    out_dtype = torch.float32 if (is_int and rounding_mode is None) else first.dtype
    y = torch.empty(shape, device=first.device, dtype=out_dtype)
    col0 = 0
    for t in pieces:
        w = t.shape[axis]
        n = t.numel()
        if n:
            _piece_div_kernel[lambda meta, n=n: (triton.cdiv(n, meta["BLOCK"]),)](
                t, divisor if d_tensor else t, y, n, w, B, W, col0, d_val, *ds,
                D_TENSOR=d_tensor, MODE=MODES[rounding_mode], IS_INT=is_int,
            )  # fmt: skip
        col0 += w
    if out is not None:
        out.copy_(y)
        return out
    return y
