"""Quantization/attention_w8a8: softmax(Q K^T / sqrt(d)) V with int8 Q, K, V (per token)."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.quant import away_from_ties, quantize, scales
from kbx.suite.task import Case, Inputs, QuantStep, Steps, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)


def reference(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    d = query.shape[-1]
    sq, sk, sv = (scales(t, -1) for t in (query, key, value))  # one scale per token
    qq, kq, vq = quantize(query, sq), quantize(key, sk), quantize(value, sv)
    # integer-valued float32: every partial sum is below 127^2 * d <= 2^24, so this is exact
    acc = torch.matmul(qq, kq.transpose(-1, -2))
    scores = ((acc * sq) * sk.transpose(-1, -2)) * (1.0 / d**0.5)
    p = torch.softmax(scores, dim=-1)  # float32
    return torch.matmul(p, vq * sv)  # float32 probabilities times dequantized V


def step(inputs: Inputs) -> Steps:
    """One step of the dequantized V that the output averages: max_j sv[j] of each (batch,
    head).  A V element quantized one step the other way moves out[i] by P[i,j] sv[j] <= that."""
    value = inputs.args[2]
    return scales(value, -1).amax(dim=-2, keepdim=True)


QUANT = QuantStep(step, share=1e-5, unit="max_j sv[j] of the (batch, head), one step of V")


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (..., Lq, d) of the query; params: lk (key/value length, default Lq)."""
    *lead, lq, d = case.shape
    lk = case.params.get("lk", lq)
    dr = Draw(case, device)
    q = dr.tensor(case.shape, specials=SPECIALS)
    k = dr.tensor((*lead, lk, d), specials=SPECIALS)
    v = dr.tensor((*lead, lk, d), specials=SPECIALS)
    if case.dist == "corner":  # all-zero tokens: scale 1, a uniform softmax row / a zero key
        q[..., 1, :], k[..., 2, :], v[..., 3, :] = 0.0, 0.0, 0.0
    return Inputs(tuple(away_from_ties(t, scales(t, -1)).to(device) for t in (q, k, v)))


def sizes(c: Case) -> tuple[int, int, int, int]:
    *lead, lq, d = c.shape
    return numel(lead), lq, c.params.get("lk", lq), d


TASK = Task(
    entry="attention_w8a8",
    signature=(
        "attention_w8a8(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) "
        "-> torch.Tensor"
    ),
    description=(
        "Single-head scaled dot-product attention (no mask, no dropout) with int8 Q, K and V, "
        "for contiguous float32 `query` (..., Lq, d), `key` and `value` (..., Lk, d) with the "
        "same leading (batch, head) dims; returns float32 (..., Lq, d). The recipe (the "
        "reference simulates it): every token row of Q, K and V is quantized with its own "
        "scale s = max |row| / 127 (float32, 1 for an all-zero row), q = clamp(round(x / s), "
        "-127, 127) as int8, rounding half to even; S_int = Qq Kq^T summed exactly in int32; "
        "scores = ((float32(S_int) * sq[i]) * sk[j]) * (1 / sqrt(d)); P = softmax(scores) "
        "over j in float32 (P is NOT quantized); out = P @ (Vq * sv), the dequantized V, in "
        "float32. Inputs are drawn so that no x/s lies within 0.1 of a rounding tie. Cases: "
        "3-D and 4-D inputs, d = 16-128, Lk != Lq, outliers, and all-zero query, key and "
        "value tokens."
    ),
    math=r"\mathrm{out} = \mathrm{softmax}_j\Big(\frac{s^q_i s^k_j}{\sqrt d}"
    r"\sum_c Q^q_{ic} K^q_{jc}\Big)\, (V^q_{jc} s^v_j)",
    precision=(
        "float32 in and out; int8 Q, K, V; the QK^T sum exact (int32; d <= 1024 keeps it "
        "below 2^24, exact in fp32 too); softmax and P @ V in float32 in any order (online "
        "softmax is fine) but without TF32 in P @ V (use tl.dot(..., input_precision='ieee') "
        "or 'tf32x3': TF32-rounded P moves outputs by ~4e-4 relative and fails). Tolerance "
        "rtol=1e-4, atol=1e-5. Plain float attention on the unquantized inputs differs by "
        "the int8 error (~1e-2) and fails. " + QUANT.text()
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 3, 37, 64), seed=1),
        Case((4, 50, 40), seed=2, dist="outlier"),
        Case((1, 2, 29, 32), seed=3, dist="corner", params={"lk": 45}),
        Case((3, 130, 16), seed=4, params={"lk": 77}),
        Case((2, 2, 64, 128), seed=5, dist="outlier"),
    ),
    bench=(
        Case((8, 16, 2048, 64), seed=11),
        Case((8, 32, 1024, 128), seed=12, dist="outlier"),
    ),
    flops=lambda c: 4.0 * sizes(c)[0] * sizes(c)[1] * sizes(c)[2] * sizes(c)[3],
    bytes_moved=lambda c: 4.0 * sizes(c)[0] * sizes(c)[3] * (2 * sizes(c)[1] + 2 * sizes(c)[2]),
    tolerance=Tolerance(rtol=1e-4, atol=1e-5),
    quant=QUANT,
)
