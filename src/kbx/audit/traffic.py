"""The bytes a case must move at least, measured from its seeded inputs on the CPU, against its
task's declared ``bytes_moved`` (docs/design/timing.md, Roofline).

The roofline floor puts the declared bytes at the GPU's peak bandwidth, so a declaration above
what an honest kernel has to move turns a right kernel into ``too_fast``.  ``traffic`` runs the
reference and counts, in 32-byte DRAM sectors (the GPU's memory access unit), each once:

- reads: the input elements the outputs depend on.  A floating-point input's elements without
  a gradient are left out when changing all of them at once changes no output (the rows an index
  never names, a masked-off element, the old contents of a filled slice); otherwise every element
  of its storage counts (a broadcast input: its storage, not its expanded size);
- writes: every sector of the returned outputs, and the sectors of an in-place argument whose
  contents changed (a row filled twice is written once).

A kernel may need more than this (another pass, a second read), never less: a declaration above
it is wrong.  ``python -m kbx.audit.traffic [GLOB] [--bench]`` prints every case whose declaration
exceeds its measure; ``tests/audit/test_traffic.py`` runs it on every correctness case.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import torch

from kbx.suite import select
from kbx.suite.task import Case, Task
from kbx.suite.tensors import clone, leaves

SECTOR = 32  # bytes: the unit in which a GPU reads and writes its memory
SLACK = 0.01  # an in-place write's changed sectors vary with the draw (relu_: 1 in 256 stays)
GRAD_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


@dataclass(frozen=True)
class Traffic:
    """One case's declared bytes and the measured least bytes read and written."""

    task_id: str
    label: str
    declared: float
    read: int
    written: int

    @property
    def least(self) -> int:
        return self.read + self.written

    @property
    def over(self) -> bool:
        """Whether the declaration exceeds the measured least (beyond ``SLACK``)."""
        return self.declared > self.least * (1 + SLACK)

    def line(self) -> str:
        ratio = self.declared / max(self.least, 1)
        return (
            f"{self.task_id} [{self.label}]: declared {self.declared:.4g} B, at least "
            f"{self.least:.4g} B ({self.read:.4g} read, {self.written:.4g} written): {ratio:.3f}x"
        )


def sector_ids(t: torch.Tensor, where: torch.Tensor | None = None) -> torch.Tensor:
    """The sectors (byte offset // SECTOR within the storage) of ``t``'s elements, or of those
    where ``where`` holds."""
    offsets = torch.full((), int(t.storage_offset()), dtype=torch.int64)
    for size, stride in zip(t.shape, t.stride(), strict=True):
        offsets = offsets.unsqueeze(-1) + torch.arange(size) * stride
    offsets = offsets.reshape(-1)
    if where is not None:
        offsets = offsets[where.reshape(-1)]
    return torch.unique(offsets * t.element_size() // SECTOR)


class Sectors:
    """Sectors touched, each counted once: a bitmap of each storage's sectors."""

    def __init__(self) -> None:
        self.maps: dict[int, torch.Tensor] = {}

    def add(self, t: torch.Tensor, where: torch.Tensor | None = None) -> None:
        if not t.numel():
            return
        storage = t.untyped_storage()
        size = -(-storage.nbytes() // SECTOR)
        bitmap = self.maps.setdefault(storage.data_ptr(), torch.zeros(size, dtype=torch.bool))
        item, start = t.element_size(), t.storage_offset() * t.element_size()
        if not (t.is_contiguous() and start % SECTOR == 0 and SECTOR % item == 0):
            bitmap[sector_ids(t, where)] = True  # a strided view: element by element
            return
        per, first = SECTOR // item, start // SECTOR  # aligned and dense: sector by sector
        if where is None:
            bitmap[first : first - (-t.numel() // per)] = True
            return
        flat = where.reshape(-1).to(torch.uint8)
        hit = torch.nn.functional.pad(flat, (0, -flat.numel() % per)).reshape(-1, per).any(1).bool()
        bitmap[first : first + hit.numel()] |= hit

    def nbytes(self) -> int:
        return SECTOR * sum(int(m.sum()) for m in self.maps.values())


def run(task: Task, case: Case, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    torch.manual_seed(case.torch_seed)
    return task.reference(*args, **kwargs)


def same(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Element-wise equality, NaN equal to NaN."""
    eq = a == b
    return eq | (a.isnan() & b.isnan()) if a.is_floating_point() or a.is_complex() else eq


def tensors_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    return leaves(list(args)) + leaves(list(kwargs.values()))


def inplace_tensors(task: Task, args: tuple[Any, ...]) -> list[torch.Tensor]:
    return [t for i in task.inplace if i < len(args) for t in leaves(args[i])]


def returned(out: Any, own: list[torch.Tensor]) -> list[torch.Tensor]:
    """The returned tensors, less those that are in-place arguments (counted by what changed)."""
    ptrs = {t.untyped_storage().data_ptr() for t in own}
    return [t for t in leaves(out) if t.untyped_storage().data_ptr() not in ptrs]


@dataclass
class Run:
    """One reference run: its arguments before and after, and its returned outputs."""

    before: list[torch.Tensor]
    after: list[torch.Tensor]
    changed: list[torch.Tensor]  # per in-place tensor: where its contents changed
    outputs: list[torch.Tensor]  # returned tensors that are not in-place arguments


def observe(task: Task, case: Case, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Run:
    args, kwargs = clone(args), clone(kwargs)
    before = [t.clone() for t in inplace_tensors(task, args)]
    with torch.no_grad():
        out = run(task, case, args, kwargs)
    after = inplace_tensors(task, args)
    outputs = returned(out, after)
    changed = [~same(a, b) for a, b in zip(after, before, strict=True)]
    return Run(before, after, changed, outputs)


def gradient_support(
    task: Task, case: Case, args: tuple[Any, ...], kwargs: dict[str, Any], first: Run
) -> list[torch.Tensor] | None:
    """Per tensor input: where the outputs (an in-place argument: its changed elements) have a
    nonzero or NaN gradient in it, under a random weighting; None if autograd cannot say."""
    args, kwargs = clone(args), clone(kwargs)
    inputs = tensors_of(args, kwargs)
    roots = [t.detach().requires_grad_(t.dtype in GRAD_DTYPES) for t in inputs]
    swap = {id(t): r.clone() if r.requires_grad else r for t, r in zip(inputs, roots, strict=True)}
    args, kwargs = rebuild((args, kwargs), swap)
    gen = torch.Generator().manual_seed(5)
    try:
        with torch.enable_grad():
            out = run(task, case, args, kwargs)
            own = inplace_tensors(task, args)
            ends = returned(out, own)
            ends += [a[c] for a, c in zip(own, first.changed, strict=True)]
            ends = [e for e in ends if e.requires_grad and e.is_floating_point()]
            wanted = [r for r in roots if r.requires_grad]
            if not ends or not wanted:
                return None
            loss = torch.stack([(e * torch.randn(e.shape, generator=gen)).sum() for e in ends])
            grads = torch.autograd.grad(loss.sum(), wanted, allow_unused=True)
    except (RuntimeError, TypeError, ValueError, NotImplementedError):
        return None
    found = iter(grads)
    support = []
    for r in roots:
        g = next(found) if r.requires_grad else None
        nonzero = torch.zeros(r.shape, dtype=torch.bool) if g is None else (g != 0) | g.isnan()
        support.append(nonzero if r.requires_grad else torch.ones(r.shape, dtype=torch.bool))
    return support


def rebuild(tree: Any, swap: dict[int, torch.Tensor]) -> Any:
    """``tree`` with each tensor replaced by ``swap[id(tensor)]``."""
    if isinstance(tree, torch.Tensor):
        return swap.get(id(tree), tree)
    if isinstance(tree, dict):
        return {k: rebuild(v, swap) for k, v in tree.items()}
    if isinstance(tree, tuple | list):
        return type(tree)(rebuild(v, swap) for v in tree)
    return tree


def unused(
    task: Task,
    case: Case,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    first: Run,
    idle: list[torch.Tensor],
) -> bool:
    """Whether giving every ``idle`` element of the inputs other values (NaN; values far beyond
    the input's own, of either sign; noise) changes no output (an in-place argument: neither
    its changed elements nor which elements change).  NaN reaches a min or a sum that no finite
    value changes (GELU is bounded below), extremes a max or a softmax that ignores NaN."""
    return all(
        unchanged(task, case, (args, kwargs), first, idle, kind)
        for kind in ("nan", "extreme", "noise")
    )


def unchanged(
    task: Task,
    case: Case,
    call: tuple[tuple[Any, ...], dict[str, Any]],
    first: Run,
    idle: list[torch.Tensor],
    kind: str,
) -> bool:
    args, kwargs = clone(call)
    gen = torch.Generator().manual_seed(7)
    for t, mask in zip(tensors_of(args, kwargs), idle, strict=True):
        if mask.any():
            t[mask] = other_values(t, kind, gen)[mask]
    try:
        moved = observe(task, case, args, kwargs)
    except Exception:  # noqa: BLE001 - the new values are out of the task's domain: they matter
        return False
    if len(moved.outputs) != len(first.outputs):
        return False
    for a, b in zip(moved.outputs, first.outputs, strict=True):
        if a.shape != b.shape or not same(a, b).all():
            return False
    for a, b, c, c2 in zip(moved.after, first.after, first.changed, moved.changed, strict=True):
        if not torch.equal(c, c2) or not same(a[c], b[c]).all():
            return False
    return True


def other_values(t: torch.Tensor, kind: str, gen: torch.Generator) -> torch.Tensor:
    """NaN, values of either sign far beyond ``t``'s own, or normal noise, shaped like ``t``."""
    if kind == "nan":
        return torch.full(t.shape, float("nan"), dtype=t.dtype)
    noise = torch.randn(t.shape, generator=gen)
    if kind == "noise":
        return (3 * noise).to(t.dtype)
    finite = t[torch.isfinite(t)]
    big = 4 * float(finite.abs().max()) + 10 if finite.numel() else 10.0
    return (torch.sign(noise) * big * (1 + noise.abs())).to(t.dtype)


def needed(
    task: Task, case: Case, args: tuple[Any, ...], kwargs: dict[str, Any], first: Run
) -> list[torch.Tensor | None]:
    """Per tensor input: the elements a kernel has to read (None: all of them)."""
    inputs = tensors_of(args, kwargs)
    support = gradient_support(task, case, args, kwargs, first)
    if support is None:
        return [None] * len(inputs)
    idle = [~s for s in support]
    if not any(m.any() for m in idle) or unused(task, case, args, kwargs, first, idle):
        return list(support)
    # some input's idle elements matter: try each input alone, the others read in full
    none = [torch.zeros(t.shape, dtype=torch.bool) for t in inputs]
    picked: list[torch.Tensor | None] = []
    for i, m in enumerate(idle):
        alone = none[:i] + [m] + none[i + 1 :]
        ok = m.any() and unused(task, case, args, kwargs, first, alone)
        picked.append(support[i] if ok else None)
    return picked


def traffic(task: Task, case: Case, device: str = "cpu") -> Traffic:
    """The case's declared bytes against the least it must move (see the module docstring)."""
    inputs = task.make_inputs(case, device)
    args, kwargs = tuple(inputs.args), dict(inputs.kwargs)
    first = observe(task, case, args, kwargs)
    reads, writes = Sectors(), Sectors()
    masks = needed(task, case, args, kwargs, first)
    for t, mask in zip(tensors_of(args, kwargs), masks, strict=True):
        reads.add(t, mask)
    for t in first.outputs:
        writes.add(t)
    for t, c in zip(first.after, first.changed, strict=True):
        writes.add(t, c)
    declared = float(task.bytes_moved(case))
    return Traffic(task.id, case.label(), declared, reads.nbytes(), writes.nbytes())


def audit(tasks: list[Task], bench: bool = False, device: str = "cpu") -> list[Traffic]:
    """Every correctness case (``bench``: every benchmark case) of ``tasks``, measured."""
    return [
        traffic(task, case, device)
        for task in tasks
        for case in (task.bench if bench else task.cases)
    ]


def main(argv: list[str]) -> int:
    bench = "--bench" in argv
    globs = [a for a in argv if not a.startswith("--")]
    rows = audit(select(",".join(globs) or None), bench)
    over = [r for r in rows if r.over]
    for r in over:
        print(r.line())
    print(f"{len(over)} of {len(rows)} cases declare more than they must move")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
