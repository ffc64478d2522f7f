"""Activation/gelu_int8: GELU on symmetric int8-quantized values (dequantize, GELU, requantize)."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, QuantStep, Task, Tolerance

# Corner codes: zero, both int8 extremes and the two smallest nonzero codes.
SPECIALS = (0.0, -128.0, 127.0, 1.0, -1.0)


def reference(input, approximate="none", input_scale=1.0, output_scale=1.0):
    y = torch.nn.functional.gelu(input.float() * input_scale, approximate=approximate)
    return torch.round(y / output_scale).clamp(-128, 127).to(torch.int8)  # half to even


QUANT = QuantStep(lambda inputs: 1.0, share=1e-5, unit="1, one int8 code")


def make_inputs(case: Case, device: str) -> Inputs:
    d = Draw.sized(case, device)
    codes = d.tensor(case.shape, dtype=torch.float64, scale=50.0, specials=SPECIALS)
    q = codes.round().clamp(-128, 127).to(torch.int8).to(device)
    return Inputs((q,), dict(case.params))


def scales(si: float, so: float) -> dict:
    return {"input_scale": si, "output_scale": so}


def case(shape: tuple[int, ...], seed: int, **kw) -> Case:
    return Case(shape, seed=seed, dtype=torch.int8, **kw)


TASK = Task(
    entry="gelu_int8",
    signature=(
        "gelu_int8(input: torch.Tensor, approximate: str='none', input_scale: float=1.0, "
        "output_scale: float=1.0) -> torch.Tensor"
    ),
    description=(
        "GELU on int8 codes with symmetric per-tensor quantization: for every element q of a "
        "contiguous torch.int8 tensor of any shape, x = float32(q) * input_scale, "
        "y = GELU(x) in float32 (approximate='none': 0.5 * x * (1 + erf(x / sqrt(2))); "
        "'tanh': 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))), and the output code "
        "is round(y / output_scale), rounding half to even, saturated to [-128, 127], returned "
        "as a new torch.int8 tensor of the input's shape. `input_scale` and `output_scale` are "
        "positive Python floats. Every case's scales are chosen so that, for each of the 256 "
        "possible codes, y / output_scale lies at least 0.005 away from a rounding tie: any "
        "float32 evaluation gives the same codes, and the comparison is exact. Cases: both "
        "forms, scales that saturate large inputs and that resolve the negative dip of GELU, "
        "the defaults (scale 1: GELU of the raw integers), odd shapes, all codes including "
        "-128 and 127."
    ),
    math=r"q_{out} = \mathrm{clamp}\left(\mathrm{round}\left(\mathrm{GELU}(s_{in} q) / "
    r"s_{out}\right), -128, 127\right)",
    precision=(
        "torch.int8 in and out; dequantization and GELU in float32; round half to even, then "
        "saturate. Compared exactly (the cases keep every code clear of rounding ties), but: "
        + QUANT.text()
    ),
    reference=reference,
    make_inputs=make_inputs,
    version=2,  # benchmark inputs derived on the GPU, not on the CPU (2026-11-30)
    cases=(
        case((4099,), seed=1, params=scales(0.07, 0.05)),
        case((37, 1023), seed=2, dist="outlier", params=scales(0.04, 0.01)),
        case((3, 129, 65), seed=3, dist="corner", params=scales(0.06, 0.06)),
        case((2049,), seed=4, params={"approximate": "tanh", **scales(0.045, 0.025)}),
        case(
            (511, 17), seed=5, dist="corner", params={"approximate": "tanh", **scales(0.07, 0.05)}
        ),
        case((1001,), seed=6, dist="outlier"),
        case((77, 13), seed=7, params={"approximate": "tanh"}),
    ),
    bench=(
        case((1 << 26,), seed=11, params=scales(0.07, 0.05)),
        case((8192, 32768), seed=12, params={"approximate": "tanh", **scales(0.06, 0.06)}),
    ),
    flops=lambda c: 14.0 * numel(c.shape),
    bytes_moved=lambda c: 2.0 * numel(c.shape),
    tolerance=Tolerance(rtol=0.0, atol=0.0),
    quant=QUANT,
)
