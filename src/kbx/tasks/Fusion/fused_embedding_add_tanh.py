"""Fusion/fused_embedding_add_tanh: tanh(embedding(indices, weight) + other), max_norm in place."""

import math

import torch

from kbx.suite.inputs import DEFAULT_SPECIALS, Draw, numel
from kbx.suite.moved import distinct
from kbx.suite.task import Case, Inputs, Task, Tolerance

NONFINITE = (*DEFAULT_SPECIALS, math.inf, -math.inf, math.nan)


def reference(
    input_indices,
    weight,
    other,
    *,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
    out=None,
):
    if max_norm is not None:  # torch's renorm, written out: CUDA's embedding_renorm_ is
        renorm_rows(input_indices, weight, max_norm, norm_type)  # nondeterministic
    e = torch.nn.functional.embedding(
        input_indices, weight, padding_idx, None, norm_type, scale_grad_by_freq, sparse
    )
    y = torch.tanh(e + other)
    if out is not None:
        out.copy_(y)
        return out
    return y


def renorm_rows(indices, weight, max_norm, norm_type):
    """In place, each row that ``indices`` names, once: scaled by max_norm / (norm + 1e-7)
    where its norm exceeds max_norm (the CPU semantics of torch.embedding_renorm_)."""
    rows = torch.unique(indices)
    picked = weight[rows]
    norms = torch.linalg.vector_norm(picked, ord=norm_type, dim=1, keepdim=True)
    scale = torch.where(norms > max_norm, max_norm / (norms + 1e-7), torch.ones_like(norms))
    weight[rows] = picked * scale


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (*index shape, V, D); params: other ('full' | 'row' | 'pos'), call kwargs."""
    p = dict(case.params)
    *ishape, v, dim = case.shape
    d = Draw(case, device)
    specials = NONFINITE if "max_norm" not in p else DEFAULT_SPECIALS
    weight = d.tensor((v, dim), specials=specials)
    idx = d.integers(ishape, 0, v)
    kind = p.pop("other", "full")
    oshape = {"full": (*ishape, dim), "row": (dim,), "pos": (ishape[-1], dim)}[kind]
    other = d.tensor(oshape, dist="normal", scale=0.5)
    return Inputs((idx, weight, other), p)


def _bytes(c: Case) -> float:
    """The weight rows the indices name (each once: they repeat), the indices, `other` and the
    output; rows max_norm rescales in place depend on the draw and are left out."""
    *ishape, v, d = c.shape
    rows = numel(ishape)
    other = {"full": rows * d, "row": d, "pos": ishape[-1] * d}[c.params.get("other", "full")]
    return 4.0 * (distinct(v, rows) * d + other + rows * d) + 8.0 * rows


TASK = Task(
    entry="fused_embedding_add_tanh",
    version=2,  # deterministic max_norm renorm in the reference (2026-11-30)
    signature=(
        "fused_embedding_add_tanh(input_indices, weight, other, *, padding_idx=None, "
        "max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False, out=None)"
    ),
    description=(
        "Embedding lookup, add and tanh: E = weight[input_indices] (torch.nn.functional."
        "embedding), out = tanh(E + other). `input_indices` is an int64 tensor (1-D or 2-D, "
        "values in [0, V), with repeats); `weight` a contiguous float32 (V, D) table; `other` a "
        "float32 tensor broadcastable to (*input_indices.shape, D): the full shape, one (D,) "
        "row, or (S, D) per position of the last index dim. Returns a new float32 tensor of "
        "shape (*input_indices.shape, D). With max_norm set, every row of `weight` that the "
        "indices reference and whose norm_type-norm exceeds max_norm is first rescaled IN PLACE "
        "by max_norm / (norm + 1e-7) (as torch.embedding_renorm_), and the lookup uses the "
        "rescaled rows; rows not referenced stay untouched; the final `weight` is judged too. "
        "padding_idx, scale_grad_by_freq and sparse only affect gradients: the forward result "
        "ignores them. Cases cover the three `other` layouts, padding_idx, max_norm with "
        "norm_type 2 and 1, and corner weights with +-1e4, +-inf and NaN (no max_norm there)."
    ),
    math=r"y_{i,:} = \tanh\!\left(W_{t_i,:} \cdot s_{t_i} + o_{i,:}\right),\quad "
    r"s_r = \min\!\left(1, \tfrac{\text{max\_norm}}{\lVert W_r\rVert_p + 10^{-7}}\right)",
    precision=(
        "float32 in and out, norms and tanh in float32; rtol=1e-5, atol=1e-6 on the output and "
        "on the final weight."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4, 37, 101, 64), seed=1),
        Case((129, 57, 33), seed=2, dist="outlier", params={"other": "row", "padding_idx": 3}),
        Case((3, 41, 50, 48), seed=3, dist="corner", params={"other": "pos"}),
        Case((5, 23, 40, 64), seed=4, params={"max_norm": 6.0}),
        Case(
            (61, 17, 96),
            seed=5,
            dist="outlier",
            params={"other": "row", "max_norm": 40.0, "norm_type": 1.0},
        ),
        Case((2, 33, 29, 20), seed=6, dist="corner", params={"other": "pos", "max_norm": 3.0}),
    ),
    bench=(
        Case((64, 2048, 32000, 1024), seed=11),
        Case((32, 2048, 50000, 1024), seed=12, params={"other": "pos", "max_norm": 20.0}),
    ),
    flops=lambda c: 10.0 * numel(c.shape[:-2]) * c.shape[-1],
    bytes_moved=_bytes,
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(1,),
)
