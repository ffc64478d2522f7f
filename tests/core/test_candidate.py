"""Reading submissions: cleaning, JSONL problems named by file and line, task resolution."""

import json

from kbx.core.candidate import TEST_SEPARATOR, clean_code, read_source
from kbx.suite.verdict import Verdict

CODE = "def gelu(input, approximate='none'):\n    return input\n"


def test_clean_code_strips_fences_tokens_and_test_block():
    text = f"Here you go:\n```python\n{CODE}{TEST_SEPARATOR}\ntest_results = {{}}\n```<|im_end|>"
    assert clean_code(text) == CODE
    assert clean_code(CODE + "<|endoftext|>") == CODE
    assert clean_code("   \n") == ""


def test_folder_and_single_file(tmp_path):
    (tmp_path / "Activation").mkdir()
    (tmp_path / "Activation" / "gelu.py").write_text(CODE)
    (tmp_path / "gelu.py").write_text(CODE)
    cands = read_source(tmp_path)
    assert [c.task_id for c in cands] == ["Activation/gelu", "Activation/gelu"]
    assert all(c.problem is None for c in cands)
    assert read_source(tmp_path / "gelu.py")[0].task_id == "Activation/gelu"


def test_jsonl_problems_name_file_and_line(tmp_path):
    path = tmp_path / "preds.jsonl"
    lines = [
        json.dumps({"predict": CODE, "file": "Activation/gelu.py", "method": "m1"}),
        "{not json",
        json.dumps({"predict": CODE, "file": "Activation/no_such_task.py"}),
        json.dumps({"predict": "", "file": "Activation/gelu.py"}),
        json.dumps(["a list"]),
        json.dumps({"predict": CODE}),
    ]
    path.write_text("\n".join(lines) + "\n")
    cands = read_source(path)
    assert cands[0].problem is None and cands[0].meta == {"method": "m1"}
    problems = [c.problem for c in cands[1:]]
    assert [p[0] for p in problems] == [
        Verdict.UNREADABLE,
        Verdict.UNKNOWN_TASK,
        Verdict.NO_CODE,
        Verdict.UNREADABLE,
        Verdict.UNREADABLE,
    ]
    assert problems[0][1].startswith(f"{path}:2: malformed JSON")
    assert f"{path}:3" in problems[1][1]


def test_non_utf8_file_is_unreadable(tmp_path):
    (tmp_path / "gelu.py").write_bytes(b"# caf\xe9\n")
    (cand,) = read_source(tmp_path / "gelu.py")
    assert cand.problem and cand.problem[0] == Verdict.UNREADABLE
    assert "not UTF-8" in cand.problem[1] and "gelu.py" in cand.problem[1]


def test_identical_code_from_two_lines_gets_two_keys(tmp_path):
    path = tmp_path / "p.jsonl"
    rec = json.dumps({"predict": CODE, "file": "Activation/gelu.py"})
    path.write_text(rec + "\n" + rec + "\n")
    a, b = read_source(path)
    assert a.sha256 == b.sha256 and a.key != b.key


def test_geak_rows_are_mapped_by_filename_or_by_the_instruction(tmp_path):
    from kbx.suite import find
    from kbx.suite.prompt import render

    gelu = find("Activation/gelu")
    path = tmp_path / "geak_round_0.jsonl"
    rows = [
        {"instruction": "whatever", "filename": "gelu.py", "predict": CODE, "label": ""},
        {"instruction": render(gelu), "filename": "", "predict": CODE, "speedup": 1.2},
        {"instruction": "Functional Description: x\nWrapper Entry Information: gelu(input)"},
        {"instruction": "Functional Description: nothing like a task", "predict": CODE},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cands = read_source(path)
    assert [c.task_id for c in cands[:3]] == ["Activation/gelu"] * 3
    assert cands[0].problem is None and cands[1].problem is None
    assert cands[2].problem[0] == Verdict.NO_CODE  # mapped by the wrapper's name; no predict
    assert cands[3].problem == (
        Verdict.UNKNOWN_TASK,
        f"{path}:4: a GEAK row whose 'filename' and 'instruction' name no suite task",
    )


def test_a_kernel_function_wrapper_is_recorded_as_the_entry_alias(tmp_path):
    path = tmp_path / "ka.jsonl"
    wrapper = "def kernel_function(input, approximate='none'):\n    return input\n"
    lines = [{"file": "Activation/gelu.py", "predict": wrapper, "agent_success": True}]
    lines.append({"file": "Activation/gelu.py", "predict": CODE + "\n" + wrapper})
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    first, second = read_source(path)
    assert first.meta == {"agent_success": True, "entry_alias": "gelu = kernel_function"}
    assert first.code == wrapper  # the child falls back to kernel_function; the code stays
    assert "entry_alias" not in second.meta
