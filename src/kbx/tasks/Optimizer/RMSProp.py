"""Optimizer/RMSProp: one RMSProp step (no momentum, not centered), updating state in place."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(param, grad, square_avg, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0):
    g = grad + weight_decay * param if weight_decay != 0 else grad  # grad itself is unchanged
    square_avg.mul_(alpha).addcmul_(g, g, value=1 - alpha)
    param.addcdiv_(g, square_avg.sqrt().add_(eps), value=-lr)
    return param, square_avg


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    param, grad = draw.tensor(case.shape), draw.tensor(case.shape)
    kwargs = dict(case.params)
    if kwargs.pop("fresh", False):
        square_avg = torch.zeros(case.shape, device=device)
    else:
        square_avg = draw.uniform(case.shape, 0.0, 2.0)  # non-negative running average
    return Inputs((param, grad, square_avg), kwargs)


TASK = Task(
    entry="rmsprop_step",
    aliases=("RMSProp",),
    signature=(
        "rmsprop_step(param, grad, square_avg, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0) "
        "-> tuple[torch.Tensor, torch.Tensor]"
    ),
    description=(
        "One RMSProp step as torch.optim.RMSprop computes it without momentum and without "
        "centering. param, grad and square_avg (non-negative running mean of squared "
        "gradients) are float32 tensors of one shape (1-D or 2-D). In this order: g = grad + "
        "weight_decay*param; square_avg = alpha*square_avg + (1-alpha)*g^2; param -= lr * g / "
        "(sqrt(square_avg) + eps), eps added outside the square root. param and square_avg are "
        "updated in place and returned as a tuple; grad must not change. Cases: a fresh zero "
        "square_avg (the first step), corner values (zero gradients over zero averages give a "
        "zero update), several lr, alpha, eps and weight_decay values."
    ),
    math=r"g = \nabla + \lambda\theta;\ v \leftarrow \alpha v + (1-\alpha) g^2;\ "
    r"\theta \leftarrow \theta - \eta\, g / (\sqrt{v} + \epsilon)",
    precision=(
        "float32 in and out, computed in float32; 1 - alpha may be formed on the host in double "
        "precision. Judged on param, square_avg and the unchanged grad with rtol=3e-5, atol=1e-6."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, dist="corner", params={"fresh": True}),
        Case((37, 1023), seed=2, dist="outlier", params={"lr": 3e-3, "weight_decay": 0.1}),
        Case((3001,), seed=3, dist="corner", params={"alpha": 0.9, "eps": 1e-3}),
        Case((129, 65), seed=4, params=dict(lr=0.05, alpha=0.95, eps=1e-6, weight_decay=0.5)),
        Case((511, 17), seed=5, dist="outlier", params={"fresh": True, "weight_decay": 0.01}),
    ),
    bench=(
        Case((1 << 25,), seed=11),
        Case((8191, 8193), seed=12, params={"lr": 1e-3, "weight_decay": 0.1}),
    ),
    flops=lambda c: 8.0 * numel(c.shape),
    bytes_moved=lambda c: 20.0 * numel(c.shape),  # read 3 tensors, write 2, float32
    # rtol 3e-5 as in AdamW: 1 - alpha formed in float32 is ~1e-6 off, and the update divides
    # by a square root of the average
    tolerance=Tolerance(rtol=3e-5, atol=1e-6),
    inplace=(0, 2, 1),
)
