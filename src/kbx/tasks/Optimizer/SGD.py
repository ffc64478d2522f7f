"""Optimizer/SGD: one SGD step with optional momentum, dampening, Nesterov and weight decay."""

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(
    param,
    grad,
    momentum_buffer=None,
    lr=0.1,
    momentum=0.9,
    weight_decay=0.0,
    dampening=0.0,
    nesterov=False,
):
    d_p = grad + weight_decay * param if weight_decay != 0 else grad  # grad is unchanged
    if momentum != 0:
        if momentum_buffer is None:  # first step: the buffer starts as the gradient
            momentum_buffer = d_p.clone()
        else:
            momentum_buffer.mul_(momentum).add_(d_p, alpha=1 - dampening)
        d_p = d_p + momentum * momentum_buffer if nesterov else momentum_buffer
    param.add_(d_p, alpha=-lr)
    return param, momentum_buffer


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    param, grad = draw.tensor(case.shape), draw.tensor(case.shape)
    kwargs = dict(case.params)
    buf = draw.tensor(case.shape, dist="normal") if kwargs.pop("buffer", False) else None
    return Inputs((param, grad, buf), kwargs)


def _bytes(c: Case) -> float:
    """param read and written, grad read, and the momentum buffer: read and written when passed,
    written when made on the first step, neither without momentum."""
    p = c.params
    buf = (2 if p.get("buffer") else 1) if p.get("momentum", 0.9) != 0 else 0
    return 4.0 * numel(c.shape) * (3 + buf)


TASK = Task(
    entry="sgd_step",
    aliases=("SGD",),
    signature=(
        "sgd_step(param, grad, momentum_buffer=None, lr=0.1, momentum=0.9, weight_decay=0.0, "
        "dampening=0.0, nesterov=False) -> tuple[torch.Tensor, torch.Tensor | None]"
    ),
    description=(
        "One step of torch.optim.SGD for one float32 parameter tensor (1-D or 2-D). d = grad + "
        "weight_decay*param. If momentum != 0: when momentum_buffer is None (the first step) "
        "the buffer becomes a new tensor equal to d, otherwise it is updated in place to "
        "momentum*buffer + (1-dampening)*d; then d = d + momentum*buffer with nesterov, or d = "
        "buffer without. Finally param -= lr*d, in place. Returns (param, momentum_buffer): the "
        "buffer is the updated (or new) tensor, or None when momentum == 0. grad must not "
        "change. Cases: first steps with momentum_buffer=None (one with dampening, which a "
        "first step does not apply), momentum 0, dampening, Nesterov (with dampening 0, as "
        "torch requires) and weight decay, with and without an existing buffer."
    ),
    math=r"d = g + \lambda\theta;\ b \leftarrow \mu b + (1-\tau) d\ (b_1 = d);\ "
    r"\theta \leftarrow \theta - \eta\,(d + \mu b\ \text{if Nesterov else}\ b)",
    precision=(
        "float32 in and out, computed in float32. Judged on the returned tuple and on the final "
        "param, grad and momentum_buffer with rtol=1e-5, atol=1e-6."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, params={"nesterov": True}),
        Case((37, 1023), seed=2, dist="outlier", params={"buffer": True, "weight_decay": 0.1}),
        Case((3001,), seed=3, dist="corner", params={"momentum": 0.0, "lr": 0.05}),
        Case(
            (129, 65),
            seed=4,
            params=dict(buffer=True, lr=0.01, momentum=0.8, dampening=0.3, weight_decay=0.05),
        ),
        Case((511, 17), seed=5, params={"buffer": True, "nesterov": True, "lr": 0.3}),
        Case(
            (2047,),
            seed=6,
            dist="outlier",
            params={"weight_decay": 0.2, "dampening": 0.5},
        ),
        Case((63, 31), seed=7, params={"buffer": True, "momentum": 0.0, "weight_decay": 0.5}),
    ),
    bench=(
        Case((1 << 26,), seed=11, params={"buffer": True}),
        Case((8191, 8193), seed=12, params={"buffer": True, "nesterov": True, "weight_decay": 0.1}),
    ),
    flops=lambda c: 6.0 * numel(c.shape),
    # param, grad, buffer read; param and buffer written (float32)
    bytes_moved=_bytes,
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(0, 1, 2),
)
