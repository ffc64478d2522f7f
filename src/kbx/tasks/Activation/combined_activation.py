"""Activation/combined_activation: Y = tanh(sigmoid(X @ W1)) * W2 + b with broadcasting."""

import math

import torch

from kbx.suite.inputs import Draw
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Zeros and tiny values only: a huge input would make the fp32 summation order decide the result.
SPECIALS = (0.0, -0.0, 1e-30, -1e-30)


def reference(input, weight1, weight2, bias, *, out=None):
    y = torch.tanh(torch.sigmoid(torch.matmul(input, weight1))) * weight2 + bias
    if out is not None:
        return out.copy_(y)
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    """shape = input shape (*, N, D_in); params: dout, w2 and b (shapes, "D" for D_out)."""
    p, d = case.params, Draw(case, device)
    dout, din = p["dout"], case.shape[-1]
    x = d.tensor(case.shape, specials=SPECIALS)
    # W1 ~ N(0, 1/D_in): X @ W1 is about unit normal, where sigmoid and tanh are not saturated.
    w1 = d.tensor((din, dout), dist="normal", scale=1 / math.sqrt(din))
    w2 = d.tensor(tuple(dout if s == "D" else s for s in p["w2"]), dist="normal")
    b = d.tensor(tuple(dout if s == "D" else s for s in p["b"]), dist="normal")
    return Inputs((x, w1, w2, b))


def rows(c: Case) -> int:
    return math.prod(c.shape[:-1])


TASK = Task(
    entry="combined_activation",
    signature="combined_activation(input, weight1, weight2, bias, *, out=None)",
    description=(
        "Y = tanh(sigmoid(X @ W1)) * W2 + b for a contiguous float32 `input` X of shape "
        "(*, N, D_in) (zero or more batch dims), `weight1` W1 (D_in, D_out), and `weight2` W2 "
        "and `bias` b, float32 tensors broadcastable (PyTorch rules) to the output shape "
        "(*, N, D_out): the cases use (D_out,), (1, D_out), (N, D_out), (N, 1) and (1,). "
        "sigmoid and tanh are element-wise on the (*, N, D_out) product. Return a new float32 "
        "tensor (*, N, D_out). The keyword-only `out` is not exercised (when given, the result "
        "is written into it and it is returned). Cases: 2-D, 3-D and 4-D inputs, odd sizes, "
        "outliers and signed zeros/tiny values in X; W1 is scaled so X @ W1 is about unit "
        "normal (the activations are not saturated)."
    ),
    math=r"Y = \tanh\left(\sigma(X W_1)\right) \odot W_2 + b,\quad \sigma(z) = 1/(1 + e^{-z})",
    precision=(
        "float32 in and out; the matrix product accumulates in float32 with float32 products: "
        "no TF32 (in Triton, tl.dot(..., input_precision='ieee') or 'tf32x3'). Tolerance "
        "rtol=1e-5, atol=1e-5: any float32 summation order passes; TF32- or half-rounded "
        "products (errors ~1e-4 after the activations) do not."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((67, 45), seed=1, params={"dout": 29, "w2": ("D",), "b": ("D",)}),
        Case(
            (3, 33, 70), seed=2, dist="outlier", params={"dout": 50, "w2": (33, "D"), "b": ("D",)}
        ),
        Case(
            (2, 2, 19, 130),
            seed=3,
            dist="corner",
            params={"dout": 37, "w2": (1, "D"), "b": (19, 1)},
        ),
        Case((129, 257), seed=4, dist="outlier", params={"dout": 65, "w2": ("D",), "b": (1,)}),
    ),
    bench=(
        Case((8, 2048, 2048), seed=11, params={"dout": 2048, "w2": ("D",), "b": ("D",)}),
        Case((16384, 1024), seed=12, params={"dout": 4096, "w2": (1, "D"), "b": ("D",)}),
    ),
    flops=lambda c: (
        2.0 * rows(c) * c.shape[-1] * c.params["dout"] + 20.0 * rows(c) * c.params["dout"]
    ),
    bytes_moved=lambda c: (
        4.0 * (rows(c) * c.shape[-1] + c.shape[-1] * c.params["dout"] + rows(c) * c.params["dout"])
    ),
    tolerance=Tolerance(rtol=1e-5, atol=1e-5),
)
