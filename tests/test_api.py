"""evaluate_code: the library call generation methods use."""

from kbx.api import evaluate_code
from tests.conftest import BAD, REFERENCE


def test_evaluate_code_passes_a_correct_kernel_and_explains_a_wrong_one():
    good = evaluate_code("Math/rsqrt", (REFERENCE / "Math/rsqrt.py").read_text(), device="cpu")
    assert good.verdict == "passed" and good.source == "<api>"
    bad = evaluate_code("Math/rsqrt", (BAD / "mismatch/Math/rsqrt.py").read_text(), device="cpu")
    assert bad.verdict == "mismatch" and "differ" in bad.detail
    unknown = evaluate_code("Math/nope", "x = 1", device="cpu")
    assert unknown.verdict == "unknown_task"


def test_cuda_without_a_gpu_is_a_clear_error():
    import pytest
    import torch

    if torch.cuda.is_available():
        return
    with pytest.raises(ValueError, match="no CUDA GPU is visible"):
        evaluate_code("Math/rsqrt", "x = 1", device="cuda")
