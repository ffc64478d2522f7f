"""Optimizer/Adam: one Adam step (L2 weight decay folded into the gradient), in place."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(
    param,
    grad,
    exp_avg,
    exp_avg_sq,
    step,
    lr=1e-3,
    beta1=0.9,
    beta2=0.999,
    eps=1e-8,
    weight_decay=0.0,
):
    g = grad + weight_decay * param if weight_decay != 0 else grad  # grad itself is unchanged
    exp_avg.mul_(beta1).add_(g, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    step_size = lr / (1 - beta1**step)
    denom = (exp_avg_sq.sqrt() / (1 - beta2**step) ** 0.5).add_(eps)
    param.addcdiv_(exp_avg, denom, value=-step_size)
    return param, exp_avg, exp_avg_sq


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    param, grad = draw.tensor(case.shape), draw.tensor(case.shape)
    kwargs = dict(case.params)
    step = kwargs.pop("step")
    if step == 1:  # a fresh optimizer: both moments start at zero
        exp_avg = torch.zeros(case.shape, device=device)
        exp_avg_sq = torch.zeros(case.shape, device=device)
    else:
        exp_avg = draw.tensor(case.shape, scale=0.1)
        exp_avg_sq = draw.uniform(case.shape, 0.0, 0.02)  # second moments are non-negative
    return Inputs((param, grad, exp_avg, exp_avg_sq, step), kwargs)


TASK = Task(
    entry="adam_step",
    aliases=("Adam",),
    signature=(
        "adam_step(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, beta1=0.9, beta2=0.999, "
        "eps=1e-8, weight_decay=0.0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]"
    ),
    description=(
        "One Adam optimizer step (torch.optim.Adam, single tensor, amsgrad off) with classic L2 "
        "weight decay: the decay term is added to the gradient before the moments, unlike "
        "AdamW. param, grad, exp_avg (first moment) and exp_avg_sq (second moment, "
        "non-negative) are float32 tensors of one shape (1-D or 2-D); step is a Python int >= 1 "
        "(the step being taken). In this order: g = grad + weight_decay*param; exp_avg = "
        "beta1*exp_avg + (1-beta1)*g; exp_avg_sq = beta2*exp_avg_sq + (1-beta2)*g^2; param -= "
        "(lr / (1 - beta1^step)) * exp_avg / (sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps). "
        "param, exp_avg and exp_avg_sq are updated in place and returned as a tuple; grad must "
        "not change. Cases: step 1 with zero moments, 7 and 1000, several lr, betas, eps and "
        "weight_decay values (0 included)."
    ),
    math=(
        r"g = \nabla + \lambda\theta;\ m \leftarrow \beta_1 m + (1-\beta_1) g;\ "
        r"v \leftarrow \beta_2 v + (1-\beta_2) g^2;\ \theta \leftarrow \theta - "
        r"\frac{\eta}{1-\beta_1^t}\,\frac{m}{\sqrt{v}/\sqrt{1-\beta_2^t} + \epsilon}"
    ),
    precision=(
        "float32 in and out, computed in float32; the scalar coefficients (1 - beta, the bias "
        "corrections) may be computed on the host in double precision. Judged on the three "
        "updated tensors and the unchanged grad with rtol=3e-5, atol=1e-6."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, params={"step": 1}),
        Case(
            (37, 1023), seed=2, dist="outlier", params={"step": 7, "lr": 0.01, "weight_decay": 0.1}
        ),
        Case(
            (3001,), seed=3, dist="corner", params={"step": 1000, "lr": 3e-3, "weight_decay": 0.05}
        ),
        Case(
            (129, 65),
            seed=4,
            params=dict(step=7, lr=0.05, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.2),
        ),
        Case((511, 17), seed=5, dist="outlier", params={"step": 1, "weight_decay": 0.5}),
        Case((2047,), seed=6, params={"step": 3, "lr": 0.1, "beta1": 0.5, "beta2": 0.9}),
    ),
    bench=(
        Case((1 << 25,), seed=11, params={"step": 10}),
        Case((8191, 8193), seed=12, params={"step": 1000, "lr": 1e-2, "weight_decay": 0.1}),
    ),
    flops=lambda c: 16.0 * numel(c.shape),
    bytes_moved=lambda c: 28.0 * numel(c.shape),  # read 4 tensors, write 3, float32
    # rtol 3e-5 as in AdamW: 1 - beta2 formed in float32 is 1.3e-5 off the double value
    tolerance=Tolerance(rtol=3e-5, atol=1e-6),
    inplace=(0, 1, 2, 3),
)
