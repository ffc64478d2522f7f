"""Fusion/fused_fractional_max_pool2d_with_relu: ReLU, fractional max pooling, given samples."""

import math

import torch
import torch.nn.functional as F

from kbx.suite.inputs import Draw, numel
from kbx.suite.shapes import resized_hw
from kbx.suite.task import Case, Inputs, Task, Tolerance

NONFINITE = (0.0, -0.0, math.inf, -math.inf, math.nan)


def reference(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    return F.fractional_max_pool2d(
        F.relu(input), kernel_size, output_size, output_ratio, return_indices, _random_samples
    )


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C, H, W) or (C, H, W); params: kernel_size, output_size or output_ratio,
    return_indices, nonfinite (corner specials +-inf and NaN)."""
    p = dict(case.params)
    d = Draw(case, device)
    specials = NONFINITE if p.pop("nonfinite", False) else (0.0, -0.0, 1e4, -1e4, 1e-30)
    x = d.tensor(case.shape, specials=specials)
    planes = (case.shape[0] if len(case.shape) == 4 else 1, case.shape[-3], 2)
    samples = d.uniform(planes, 0.0, 1.0, dtype=torch.float32)
    return Inputs((x, p.pop("kernel_size")), {**p, "_random_samples": samples})


def out_hw(c: Case) -> tuple[int, int]:
    return resized_hw(c, "output_size", "output_ratio")


def window(c: Case) -> int:
    k = c.params["kernel_size"]
    return k * k if isinstance(k, int) else k[0] * k[1]


TASK = Task(
    entry="fused_fractional_max_pool2d_with_relu",
    signature=(
        "fused_fractional_max_pool2d_with_relu(input: torch.Tensor, kernel_size, "
        "output_size=None, output_ratio=None, return_indices=False, _random_samples=None)"
    ),
    description=(
        "ReLU followed by 2-D fractional max pooling, as F.fractional_max_pool2d(F.relu(input), "
        "kernel_size, output_size, output_ratio, return_indices, _random_samples). `input` is "
        "contiguous float32 (N, C, H, W) or (C, H, W); kernel_size (kh, kw) an int or pair; the "
        "output size (OH, OW) is output_size (int or pair) or int(H * ratio_h), int(W * "
        "ratio_w) from output_ratio (a pair). The pooling regions are pseudo-random, so the "
        "cases pass them explicitly as `_random_samples`, float32 (N or 1, C, 2) in [0, 1): "
        "u = samples[n, c, 0] places the columns, samples[n, c, 1] the rows. For one dim "
        "(input size L, kernel k, output size O): alpha = float32(L - k) / float32(O - 1), "
        "start_i = int((i + u) * alpha) - int(u * alpha) for i < O - 1 (float32 arithmetic, "
        "truncating casts, exactly as PyTorch), and start_{O-1} = L - k. Output (n, c, i, j) "
        "is the max of relu(x) over rows start_i .. start_i + kh - 1 and columns start_j .. "
        "start_j + kw - 1. A NaN in the window makes the output NaN; with return_indices=True "
        "the result is (values, indices), indices int64 = row * W + col of the chosen element: "
        "the first maximum in row-major order within the window (ties are common: ReLU turns "
        "every negative into 0), or the last NaN. Cases cover output_size and output_ratio, "
        "square and rectangular kernels, 3-D input, return_indices both ways, and corner inputs "
        "with +-1e4, +-inf and NaN. Without _random_samples PyTorch would draw them from its "
        "generator; that path is not exercised."
    ),
    math=r"y_{n,c,i,j} = \max_{0 \le a < k_h,\, 0 \le b < k_w} \mathrm{relu}"
    r"(x_{n,c,\,r_i + a,\,s_j + b})",
    precision="Exact: values are selected, not computed (tolerance 0); indices exact.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 3, 17, 19), seed=1, params={"kernel_size": 2, "output_size": (8, 9)}),
        Case(
            (3, 4, 32, 29),
            seed=2,
            dist="outlier",
            params={"kernel_size": 3, "output_ratio": (0.5, 0.7), "return_indices": True},
        ),
        Case(
            (2, 5, 21, 23),
            seed=3,
            dist="corner",
            params={"kernel_size": (2, 3), "output_size": 10, "return_indices": True},
        ),
        Case(
            (6, 25, 26),
            seed=4,
            params={"kernel_size": 3, "output_size": (12, 1), "return_indices": True},
        ),
        Case(
            (2, 3, 30, 31),
            seed=5,
            dist="corner",
            params={"kernel_size": 3, "output_ratio": (0.6, 0.5), "nonfinite": True},
        ),
    ),
    bench=(
        Case((64, 128, 128, 128), seed=11, params={"kernel_size": 3, "output_ratio": (0.5, 0.5)}),
        Case(
            (32, 256, 112, 112),
            seed=12,
            params={"kernel_size": 2, "output_size": (56, 56), "return_indices": True},
        ),
    ),
    flops=lambda c: float(numel(c.shape[:-2]) * numel(out_hw(c)) * window(c)),
    bytes_moved=lambda c: (
        4.0 * numel(c.shape)
        + numel(c.shape[:-2]) * numel(out_hw(c)) * (12.0 if c.params.get("return_indices") else 4.0)
    ),
    tolerance=Tolerance(rtol=0.0, atol=0.0),
)
