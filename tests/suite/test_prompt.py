"""Prompts: the KernelBench-X fields plus kbx's contract."""

import json

from kbx.cli import main
from kbx.suite import find, load_suite
from kbx.suite.prompt import render


def test_prompt_has_the_fields_and_the_contract():
    text = render(find("Math/rsqrt"))
    for field in (
        "Functional Description:",
        "Wrapper Entry Information:",
        "Contract:",
        "Precision:",
        "@triton.jit",
        "Checking:",
    ):
        assert field in text
    assert "rsqrt(" in text


def test_random_and_property_tasks_say_how_they_are_checked():
    assert "torch.manual_seed" in render(find("Random/rand"))
    assert "properties" in render(find("LinearAlgebra/qr"))


def test_quantization_prompt_states_the_recipe():
    text = render(find("Quantization/matmul_w8a8"))
    assert "127" in text and "int32" in text and "half to even" in text


def test_prompts_command_writes_one_line_per_task(tmp_path, capsys):
    out = tmp_path / "p.jsonl"
    assert main(["prompts", "--out", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == len(load_suite())
    assert all(r["file"].endswith(".py") and r["instruction"] for r in rows)
    assert main(["show", "Math/rsqrt", "--prompt"]) == 0
    assert "Wrapper Entry Information" in capsys.readouterr().out
