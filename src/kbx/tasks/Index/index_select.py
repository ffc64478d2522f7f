"""Index/index_select: gather whole slices of `input` along `dim` at the positions in `index`."""

import torch

from kbx.suite.cases import table
from kbx.suite.inputs import Draw, numel
from kbx.suite.moved import distinct
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e30, -1e30, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    return torch.index_select(input, dim, index)


def make_inputs(case: Case, device: str) -> Inputs:
    p = case.params
    draw = Draw(case, device)
    x = draw.tensor(case.shape, specials=SPECIALS)
    index = draw.integers((p["m"],), 0, case.shape[p["dim"]], dtype=p.get("itype", torch.int64))
    return Inputs((x, p["dim"], index))


_case = table("dim", "m")  # m: the number of indices


def _out_numel(c: Case) -> int:
    return numel(c.shape) // c.shape[c.params["dim"]] * c.params["m"]


def _read(c: Case) -> float:
    """Input elements read: the slices the indices name, each once (they repeat)."""
    size = c.shape[c.params["dim"]]
    return numel(c.shape) // size * distinct(size, c.params["m"])


def _index_bytes(c: Case) -> int:
    return c.params.get("itype", torch.int64).itemsize * c.params["m"]


TASK = Task(
    entry="index_select",
    signature="index_select(input: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor",
    description=(
        "Return a new tensor whose k-th slice along `dim` is input.select(dim, index[k]), like "
        "torch.index_select: `input` is float32 (1-D to 4-D), `index` a 1-D int64 (one case "
        "int32) tensor of valid non-negative positions, in any order and with repeats; the "
        "output has input's shape with size len(index) at `dim`. Cases: dim 0 (row gather, "
        "embedding-style lookup), 1, 2 and -1, more and fewer indices than the dim's size; "
        "values (inf, NaN, signed zeros) are copied bit-exactly."
    ),
    math=r"\mathrm{out}[\ldots, k, \ldots] = x[\ldots, \mathrm{index}_k, \ldots]",
    precision="float32 data, int64/int32 indices, float32 out; judged exactly.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        _case((37, 1023), 1, 0, 50),
        _case((129, 65), 2, 1, 100, "outlier"),
        _case((5, 63, 33), 3, 1, 7, "corner"),
        _case((4099,), 4, 0, 2000, itype=torch.int32),
        _case((7, 9, 11, 13), 5, -1, 20, "corner"),
        _case((3, 17, 29, 5), 6, 2, 31),
    ),
    bench=(
        _case((32768, 4096), 11, 0, 16384),
        _case((8192, 8192), 12, 1, 8192),
    ),
    flops=lambda c: 0.0,
    bytes_moved=lambda c: 4.0 * (_read(c) + _out_numel(c)) + _index_bytes(c),
    tolerance=Tolerance(rtol=0.0, atol=0.0),
)
