"""Fusion/attention: scaled dot-product attention, optional (top-left) causal mask."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, 6.0, -6.0)  # 6-sigma entries give peaky but finite scores


def reference(q, k, v, causal: bool = False, softmax_scale=None, *, out=None):
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if causal:
        keep = torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    o = torch.matmul(torch.softmax(s, dim=-1), v)
    if out is not None:
        out.copy_(o)
        return out
    return o


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (B, H, Sq, D); params: sk (key length, default Sq), causal, softmax_scale."""
    p = dict(case.params)
    b, h, sq, dim = case.shape
    sk = p.pop("sk", sq)
    d = Draw(case, device)
    q = d.tensor((b, h, sq, dim), specials=SPECIALS)
    k = d.tensor((b, h, sk, dim), specials=SPECIALS)
    v = d.tensor((b, h, sk, dim), specials=SPECIALS)
    return Inputs((q, k, v), p)


def kv_rows(c: Case) -> int:
    """Key and value rows a kernel reads: with the causal mask no query sees a key past Sq."""
    sk = c.params.get("sk", c.shape[2])
    return min(sk, c.shape[2]) if c.params.get("causal") else sk


def flops(c: Case) -> float:
    b, h, sq, dim = c.shape
    return 4.0 * b * h * sq * c.params.get("sk", sq) * dim


TASK = Task(
    entry="attention",
    signature="attention(q, k, v, causal: bool = False, softmax_scale=None, *, out=None)",
    description=(
        "Scaled dot-product attention: O = softmax(Q K^T * scale) V per (batch, head), with q "
        "(B, H, Sq, D), k and v (B, H, Sk, D), all contiguous float32; scale = softmax_scale, "
        "or 1/sqrt(D) when None. With causal=True, query i attends to keys j <= i only "
        "(top-left aligned: the mask is tril of the (Sq, Sk) ones matrix, as torch's "
        "is_causal; with Sq < Sk the last keys are never seen), masked scores being -inf "
        "before the softmax; every query sees key 0, so no row is empty. Returns a new float32 "
        "(B, H, Sq, D) tensor. Cases cover D in {16, 40, 64, 128} (40 is not a power of two), "
        "odd sequence lengths, Sq != Sk with and without the causal mask, an explicit "
        "softmax_scale, and inputs with zeros and +-6 entries. `out` is not passed."
    ),
    math=r"O = \mathrm{softmax}\!\left(s\,Q K^\top + M\right) V,\quad M_{ij} = "
    r"\begin{cases}0 & \text{not causal or } j \le i\\ -\infty & \text{else}\end{cases}",
    precision=(
        "float32 in and out; both products accumulate in float32 and TF32 (or any "
        "reduced-mantissa input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee'); softmax in float32 with the row maximum "
        "subtracted (online/flash form welcome). rtol=1e-4, atol=2e-5."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 3, 77, 64), seed=1),
        Case((1, 4, 129, 32), seed=2, dist="outlier", params={"causal": True}),
        Case((2, 2, 50, 40), seed=3, dist="corner", params={"causal": True, "softmax_scale": 0.3}),
        Case((2, 2, 33, 64), seed=4, params={"sk": 97}),
        Case((1, 2, 45, 128), seed=5, dist="outlier", params={"sk": 70, "causal": True}),
        Case((3, 1, 200, 16), seed=6, params={"causal": True}),
    ),
    bench=(
        Case((8, 16, 2048, 64), seed=11),
        Case((8, 32, 2048, 64), seed=12, params={"causal": True}),
    ),
    flops=flops,
    bytes_moved=lambda c: 4.0 * numel(c.shape[:2]) * c.shape[3] * (2 * c.shape[2] + 2 * kv_rows(c)),
    tolerance=Tolerance(rtol=1e-4, atol=2e-5),
)
