"""Math/softmax: softmax along one dim, with an optional dtype to compute and return in."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Corner values: signed zeros, a value that dominates its slice, one that vanishes, a moderate one.
SPECIALS = (0.0, -0.0, 1e4, -1e4, 5.0)
SOFT = (0.0, -0.0, -1e4, 5.0)  # no dominating value: the other entries keep their weight


def reference(input: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    return torch.nn.functional.softmax(input, dim, dtype=dtype)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)  # benchmark sizes drawn on the GPU (``Draw``)
    p = case.params
    specials = SOFT if p.get("soft") else SPECIALS
    x = draw.tensor(case.shape, specials=specials, scale=p.get("scale", 1.0))
    if p.get("ninf"):  # -inf entries: slices along `dim` that are partly or wholly -inf
        rows = x.movedim(p["dim"], -1)  # a view: writes land in x
        k = rows.shape[-1]
        flat = rows.reshape(-1, k)
        pick = (draw.uniform((flat.shape[0], 1), 0, 1) < 0.2) & (
            draw.uniform(flat.shape, 0, 1) < 0.3
        )
        flat = torch.where(pick, float("-inf"), flat)
        flat[0] = float("-inf")  # a slice of -inf only: NaN, as torch gives
        flat[1, : k // 2 + 1] = float("-inf")  # the first half masked
        rows.copy_(flat.reshape(rows.shape))
    kwargs = {"dtype": p["dtype"]} if "dtype" in p else {}
    return Inputs((x, p["dim"]), kwargs)


def bytes_moved(case: Case) -> float:
    out = case.params.get("dtype", case.dtype).itemsize
    return (case.dtype.itemsize + out) * numel(case.shape)


TASK = Task(
    entry="softmax",
    signature="softmax(input: torch.Tensor, dim: int, dtype: torch.dtype=None) -> torch.Tensor",
    description=(
        "Softmax of `input` along `dim`, as torch.nn.functional.softmax: every slice along "
        "`dim` becomes exp(x - max) / sum(exp(x - max)), so it lies in [0, 1] and sums to 1. "
        "If `dtype` is given the input is first converted to it and the result has that dtype;"
        " otherwise the result has the input's dtype. -inf entries get probability 0; a slice "
        "that is entirely -inf gives NaN (as torch). Cases: float32 1-D to 4-D inputs, dim "
        "first, middle, last and negative, slice lengths from 9 to 20011 (longer than one "
        "block), normal draws scaled by 1 or 3, outliers (up to ~80) and corner values (1e4 "
        "dominating its slice, -1e4 vanishing, 5, signed zeros), slices with scattered -inf, "
        "half -inf and all -inf; float16 input with dtype=torch.float32, float32 input with "
        "dtype=torch.float64."
    ),
    math=r"y_i = \frac{e^{x_i - m}}{\sum_j e^{x_j - m}},\quad m = \max_j x_j",
    precision=(
        "Computed in float32 (or wider) whatever the input dtype, output in the input dtype or "
        "`dtype`. Judged with rtol=1e-5 and atol=1e-8: long slices have probabilities ~1/K, so "
        "the tolerance is relative down to 1e-8 (float32 exp of x - max loses at most "
        "~|x - max| ulp, well inside it; half-precision results are not). NaN must appear "
        "exactly for all -inf slices."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 1023), seed=1, params={"dim": -1}),
        Case((129, 65), seed=2, dist="outlier", params={"dim": 0}),
        Case((5, 63, 33), seed=3, dist="corner", params={"dim": 1, "ninf": True}),
        Case(
            (7, 9, 11, 13), seed=4, dtype=torch.float16, params={"dim": -2, "dtype": torch.float32}
        ),
        Case((3, 20011), seed=5, params={"dim": 1, "ninf": True, "scale": 3.0}),
        Case((17, 257), seed=6, params={"dim": -1, "dtype": torch.float64}),
        Case((4099,), seed=7, dist="corner", params={"dim": 0, "soft": True}),
        Case((6, 2049, 3), seed=8, params={"dim": 1, "ninf": True}),
    ),
    bench=(
        Case((8192, 8192), seed=11, params={"dim": -1}),
        Case((32, 4096, 257), seed=12, params={"dim": 1}),
        Case(
            (4096, 32768), seed=13, dtype=torch.float16, params={"dim": -1, "dtype": torch.float32}
        ),
    ),
    flops=lambda c: 5.0 * numel(c.shape),
    bytes_moved=bytes_moved,
    version=2,  # benchmark inputs drawn on the GPU, not on the CPU (2026-11-30)
    tolerance=Tolerance(rtol=1e-5, atol=1e-8),
)
