"""Code out of a model's reply: the two named policies of methods.md 7.0, and GEAK's JSON.

``kbx_first_fence`` is the released harness's reading (the first python fence, chat end tokens
and ``<think>`` blocks dropped); ``ka_first_block`` is KernelAgent's (the first python block,
preferring one that defines ``kernel_function``, else the whole reply when it parses as code).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable

from kbx.core.candidate import END_TOKENS
from kbx.generate.config import Extraction

THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL)
PY_FENCE = re.compile(r"```[ \t]*(?:python|py)[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
ANY_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
JSON_FENCE = re.compile(r"```[ \t]*json[ \t]*\n(.*?)```", re.DOTALL)


def strip_chatter(text: str) -> str:
    for token in (*END_TOKENS, "<|EOT|>"):
        text = text.replace(token, "")
    return THINK.sub("", text)


def kbx_first_fence(text: str) -> str:
    text = strip_chatter(text)
    match = PY_FENCE.search(text) or ANY_FENCE.search(text)
    code = match.group(1) if match else text
    return code.strip() + "\n" if code.strip() else ""


def ka_first_block(text: str) -> str:
    text = strip_chatter(text)
    blocks = PY_FENCE.findall(text)
    if blocks:
        wrapper = [b for b in blocks if re.search(r"^def kernel_function\b", b, re.M)]
        return (wrapper or blocks)[0].strip() + "\n"
    return text.strip() + "\n" if looks_like_code(text) else ""


def looks_like_code(text: str) -> bool:
    if not re.search(r"^(import |from |def |@)", text, re.M):
        return False
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


POLICIES: dict[Extraction, Callable[[str], str]] = {
    "kbx_first_fence": kbx_first_fence,
    "ka_first_block": ka_first_block,
}


def extract(text: str, policy: Extraction) -> str:
    return POLICIES[policy](text)


def geak_reply(text: str, fence_fallback: bool) -> tuple[str, str, str]:
    """GEAK's {strategy, code} reply: (strategy, code, how it was read); code "" when none."""
    text = strip_chatter(text)
    for how, candidate in json_candidates(text):
        parsed = loads_lenient(candidate)
        if isinstance(parsed, dict) and isinstance(parsed.get("code"), str):
            strategy = parsed.get("strategy")
            return str(strategy or ""), kbx_first_fence(parsed["code"]), how
    if fence_fallback and (code := PY_FENCE.search(text)):
        return "", code.group(1).strip() + "\n", "python fence"
    return "", "", "unparsed"


def json_candidates(text: str) -> list[tuple[str, str]]:
    out = [("json fence", m) for m in JSON_FENCE.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if start >= 0 and end > start:
        out.append(("bare object", text[start : end + 1]))
    return out


def loads_lenient(text: str) -> object:
    """JSON, then JSON with raw control characters in strings (models write literal newlines)."""
    for strict in (True, False):
        try:
            return json.loads(text, strict=strict)
        except json.JSONDecodeError:
            continue
    return None
