"""Optimizer/AdamW: one AdamW step (decoupled weight decay), updating its state in place."""

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
    weight_decay=0.01,
):
    param.mul_(1 - lr * weight_decay)
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    step_size = lr / (1 - beta1**step)
    denom = (exp_avg_sq.sqrt() / (1 - beta2**step) ** 0.5).add_(eps)
    param.addcdiv_(exp_avg, denom, value=-step_size)
    return param, exp_avg, exp_avg_sq


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    param, grad = draw.tensor(case.shape), draw.tensor(case.shape)
    exp_avg = draw.tensor(case.shape, scale=0.1)
    exp_avg_sq = draw.uniform(case.shape, 0.0, 0.02)  # second moments are non-negative
    kwargs = dict(case.params)
    step = kwargs.pop("step")
    return Inputs((param, grad, exp_avg, exp_avg_sq, step), kwargs)


TASK = Task(
    entry="adamw_step",
    aliases=("AdamW",),
    signature=(
        "adamw_step(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, beta1=0.9, beta2=0.999, "
        "eps=1e-8, weight_decay=0.01) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]"
    ),
    description=(
        "One AdamW optimizer step with decoupled weight decay. param, grad, exp_avg (first "
        "moment) and exp_avg_sq (second moment, non-negative) are float32 tensors of one shape "
        "(1-D or 2-D); step is a Python int >= 1 (the step being taken, used for bias "
        "correction). In this order: param *= 1 - lr*weight_decay; exp_avg = beta1*exp_avg + "
        "(1-beta1)*grad; exp_avg_sq = beta2*exp_avg_sq + (1-beta2)*grad^2; param -= "
        "(lr / (1 - beta1^step)) * exp_avg / (sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps). "
        "param, exp_avg and exp_avg_sq must be updated in place, and the function returns the "
        "tuple (param, exp_avg, exp_avg_sq). Cases vary step (1, 7, 1000), lr and weight_decay."
    ),
    math=(
        r"\theta \leftarrow \theta(1 - \eta\lambda);\ m \leftarrow \beta_1 m + (1-\beta_1) g;\ "
        r"v \leftarrow \beta_2 v + (1-\beta_2) g^2;\ \theta \leftarrow \theta - "
        r"\frac{\eta}{1-\beta_1^t}\,\frac{m}{\sqrt{v}/\sqrt{1-\beta_2^t} + \epsilon}"
    ),
    precision=(
        "float32 in and out, computed in float32; the scalar coefficients (1 - beta, the bias "
        "corrections, 1 - lr*weight_decay) may be computed on the host in double precision. "
        "Judged on all three updated tensors with rtol=3e-5, atol=1e-6."
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
        Case((511, 17), seed=5, dist="outlier", params={"step": 1000}),
    ),
    bench=(
        Case((1 << 25,), seed=11, params={"step": 10}),
        Case((8191, 8193), seed=12, params={"step": 1000, "lr": 1e-2, "weight_decay": 0.1}),
    ),
    flops=lambda c: 16.0 * numel(c.shape),
    bytes_moved=lambda c: 28.0 * numel(c.shape),  # read 4 tensors, write 3, float32
    # rtol 3e-5, not 1e-5: forming 1 - beta2 in float32 (1 - 0.99900001) is 1.3e-5 off the
    # reference's double 1 - 0.999, a legitimate float32 choice that shows in exp_avg_sq
    tolerance=Tolerance(rtol=3e-5, atol=1e-6),
    inplace=(0, 2, 3),
)
