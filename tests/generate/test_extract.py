"""The two code-extraction policies and GEAK's JSON reply."""

from __future__ import annotations

import json

from kbx.generate.extract import geak_reply, ka_first_block, kbx_first_fence

TWO_BLOCKS = (
    "<think>try ```python\nthought = 1\n``` first</think>Answer:\n"
    "```python\ndef helper():\n    pass\n```\ntext\n"
    "```python\ndef kernel_function(x):\n    return x\n```<|im_end|>"
)


def test_kbx_first_fence_takes_the_first_python_fence_after_any_think_block() -> None:
    assert kbx_first_fence(TWO_BLOCKS) == "def helper():\n    pass\n"
    assert kbx_first_fence("```python\nx = 1\n<|EOT|>") == "x = 1\n"  # unclosed fence
    assert kbx_first_fence("```\ny = 2\n```") == "y = 2\n"
    assert kbx_first_fence("<think>only thoughts, cut off") == ""
    assert kbx_first_fence("no fence at all") == "no fence at all\n"


def test_ka_first_block_prefers_the_block_defining_kernel_function() -> None:
    assert ka_first_block(TWO_BLOCKS) == "def kernel_function(x):\n    return x\n"
    assert ka_first_block("```python\na = 1\n```\n```python\nb = 2\n```") == "a = 1\n"
    assert ka_first_block("import torch\ndef f():\n    return 1\n") == (
        "import torch\ndef f():\n    return 1\n"
    )  # no fence, but code
    assert ka_first_block("Sorry, I cannot help with that.") == ""
    assert ka_first_block("def broken(:\n") == ""  # looks like code, does not parse


def test_geak_replies_in_json_fenced_bare_or_lenient() -> None:
    body = {"strategy": "tile it", "code": "def f():\n    pass\n"}
    assert geak_reply(json.dumps(body), True) == ("tile it", "def f():\n    pass\n", "bare object")
    fenced = f"Plan first.\n```json\n{json.dumps(body)}\n```"
    assert geak_reply(fenced, True)[2] == "json fence"
    raw = '{"strategy": "s", "code": "def f():\n    pass\n"}'  # literal newlines in a string
    assert geak_reply(raw, True) == ("s", "def f():\n    pass\n", "bare object")
    fence_only = "```python\ndef g():\n    pass\n```"
    assert geak_reply(fence_only, True) == ("", "def g():\n    pass\n", "python fence")
    assert geak_reply(fence_only, False) == ("", "", "unparsed")
