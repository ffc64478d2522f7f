"""Index/index_fill_: in place, set every slice of `x` along `dim` named by `index` to `value`."""

from kbx.suite.cases import table
from kbx.suite.inputs import Draw, numel
from kbx.suite.moved import distinct
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e30, -1e30, float("inf"), float("-inf"), float("nan"))


def reference(dim, x, index, value):
    return x.index_fill_(dim, index, value)


def make_inputs(case: Case, device: str) -> Inputs:
    p = case.params
    draw = Draw(case, device)
    x = draw.tensor(case.shape, specials=SPECIALS)
    size = case.shape[p["dim"]]
    low = -size if p.get("negative") else 0  # negative indices count from the end
    index = draw.integers((p["m"],), low, size)  # random: indices repeat
    return Inputs((p["dim"], x, index, p["value"]))


_case = table("dim", "m", "value")  # m: the number of indices


def _filled(c: Case) -> float:
    """Elements filled: the slices the indices name, each once (m draws with repeats name
    distinct(size, m) slices: 79% of m at the benchmark's m = size / 2)."""
    size = c.shape[c.params["dim"]]
    return numel(c.shape) // size * distinct(size, c.params["m"])


TASK = Task(
    entry="index_fill_",
    signature="index_fill_(dim, x, index, value)",
    description=(
        "In-place index fill (Tensor.index_fill_): for every entry i of the 1-D int64 tensor "
        "`index`, set the whole slice x.select(dim, i) of the float32 tensor `x` to the Python "
        "float `value`, then return `x` itself. Note the argument order: `dim` comes first. "
        "Indices may repeat and may be negative (counted from the end of `dim`, as in torch); "
        "elements not named by any index keep their values. The final contents of `x` are "
        "judged. Cases: 1-D to 4-D tensors, dim 0, 1, 2 and -1, values including NaN, -inf and "
        "1e30."
    ),
    math=r"x[\ldots, \mathrm{index}_k, \ldots] \leftarrow v\quad \text{(along dim)}",
    precision="float32 tensor, int64 indices, Python float value; judged exactly.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        _case((37, 1023), 1, 1, 100, -1.0),
        _case((129, 65), 2, 0, 40, 3.5, "outlier", negative=True),
        _case((5, 63, 33), 3, -1, 50, float("nan"), "corner"),
        _case((7, 9, 11, 13), 4, 2, 5, float("-inf"), negative=True),
        _case((4099,), 5, 0, 1000, 1e30, "corner"),
    ),
    bench=(
        _case((8192, 8192), 11, 0, 4096, 0.0),
        _case((64, 4096, 512), 12, 1, 2048, -1.0),
    ),
    flops=lambda c: 0.0,
    bytes_moved=lambda c: 4.0 * _filled(c) + 8.0 * c.params["m"],  # writes only
    tolerance=Tolerance(rtol=0.0, atol=0.0),
    inplace=(1,),
)
