"""The evaluator's specification on a CUDA GPU (run with `make gpu-test` or `pytest -m gpu`)."""

import pytest
import torch

from tests.conftest import BAD, REFERENCE, ROOT

GPU_BAD = ROOT / "tests" / "gpu_bad"

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


@pytest.mark.parametrize("verdict", sorted(p.name for p in BAD.iterdir() if p.is_dir()))
def test_known_bad_candidates_get_their_verdict_on_cuda(run_source, verdict):
    for r in run_source(BAD / verdict, device="cuda", timeout_s=30):
        assert r["verdict"] == verdict, (r["source"], r["verdict"], r["detail"])


@pytest.mark.parametrize("verdict", sorted(p.name for p in GPU_BAD.iterdir() if p.is_dir()))
def test_gpu_only_known_bad_candidates_get_their_verdict(run_source, verdict):
    """Candidates whose fault only timing shows (a result cached by input contents)."""
    for r in run_source(GPU_BAD / verdict, device="cuda", timeout_s=60):
        assert r["verdict"] == verdict, (r["source"], r["verdict"], r["detail"])


def test_reference_solutions_pass_on_cuda_with_speedups(run_source):
    records = run_source(REFERENCE, device="cuda", jobs=8, timeout_s=300)
    failed = {r["task_id"]: r["detail"] for r in records if r["verdict"] != "passed"}
    assert not failed
    for r in records:
        assert r["speedup"] and r["speedup"] > 0 and r["cases"]
        assert r["fingerprint"]["gpu"]


def test_work_on_a_side_stream_is_timed_at_its_true_cost(run_source, tmp_path):
    side = run_source(ROOT / "tests" / "gpu_candidates", device="cuda")
    ref = run_source(REFERENCE / "Activation" / "gelu.py", device="cuda")
    assert side[0]["verdict"] == ref[0]["verdict"] == "passed"
    for a, b in zip(side[0]["cases"], ref[0]["cases"], strict=True):
        assert abs(a["kernel_ms"] - b["kernel_ms"]) <= 0.1 * b["kernel_ms"]
