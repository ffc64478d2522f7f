"""Known-bad (GPU only): a correct Triton matmul that caches its result keyed on the *contents*
of its inputs (a cheap fingerprint: shapes and two sums of the inputs' bits as integers, each a
Triton kernel of its own, so that no torch computation gives it away before the timing does).
The sums are of integers so that the fingerprint does not depend on the order of the atomic
adds: with float sums the same contents gave other keys on the H200, the cache never hit, and
the candidate passed at its real speed (the run recorded in commit d42a0b1).

Every correctness case and refill has new contents, so it computes and passes; timed calls see
contents they have seen before and return the cached product after reading the inputs once,
several times under the compute floor of the first benchmark case's 1.4e11 FLOP.  kbx must say
`too_fast`, not report a speedup.  On the CPU (no timing) it passes, which is why it lives
outside tests/bad.
"""

import torch
import triton
import triton.language as tl

_seen = {}


@triton.jit
def _mm(a, b, c, M, N, K, sab, sam, sak, sbb, sbk, sbn, scb, scm, scn,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    z = tl.program_id(2)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        x = tl.load(a + z * sab + rm[:, None] * sam + rk[None, :] * sak,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)  # fmt: skip
        y = tl.load(b + z * sbb + rk[:, None] * sbk + rn[None, :] * sbn,
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)  # fmt: skip
        acc += tl.dot(x, y, input_precision="ieee")
    out = c + z * scb + rm[:, None] * scm + rn[None, :] * scn
    tl.store(out, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _compute(a, b):
    a3 = a if a.dim() == 3 else a[None]
    b3 = b if b.dim() == 3 else b[None]
    batch, m, k = a3.shape
    n = b3.shape[-1]
    c = torch.empty((batch, m, n), device=a.device, dtype=torch.float32)
    sbb = b3.stride(0) if b3.shape[0] == batch else 0  # one (K, N) operand shared by the batch
    grid = (triton.cdiv(m, 64), triton.cdiv(n, 64), batch)
    _mm[grid](a3, b3, c, m, n, k, a3.stride(0), a3.stride(1), a3.stride(2), sbb, b3.stride(1),
              b3.stride(2), c.stride(0), c.stride(1), c.stride(2), BM=64, BN=64, BK=32)  # fmt: skip
    return c if a.dim() == 3 else c[0]


@triton.jit
def _sum(x, total, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    bits = tl.load(x + offs, mask=offs < n, other=0).to(tl.int64)
    tl.atomic_add(total, tl.sum(bits))  # integers: the same total in any order of the adds


_BITS = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def _fingerprint(x):
    flat = x.contiguous().view(_BITS[x.element_size()])
    total = torch.zeros(1, device=x.device, dtype=torch.int64)
    _sum[(triton.cdiv(flat.numel(), 4096),)](flat, total, flat.numel(), BLOCK=4096)
    return int(total.item())


def matmul(tensor1, tensor2):
    key = (tuple(tensor1.shape), tuple(tensor2.shape), _fingerprint(tensor1), _fingerprint(tensor2))
    if key not in _seen:
        _seen[key] = _compute(tensor1, tensor2)
    return _seen[key]
