"""Read submissions: a folder of ``.py`` files, one ``.py``, or a KernelBench-X JSONL file.

Every submission becomes a ``Candidate``, including broken ones: a malformed JSONL line, an unknown
task, an empty prediction or an undecodable file gets ``problem`` set (a verdict and a message that
names the file and line) instead of aborting the run.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbx.suite import find
from kbx.suite.verdict import Verdict

TEST_SEPARATOR = "#" * 146  # KernelBench-X puts its test harness below this line
END_TOKENS = (
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end|>",
    "</s>",
    "<｜end▁of▁sentence｜>",
    "<|end_of_text|>",
)
FENCE = re.compile(r"```[ \t]*(?:python|py|triton)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
META_FIELDS = ("method", "model", "round", "sample", "seed", "cost", "agent_success", "alias_added")
DESCRIPTION = re.compile(r"Functional Description:\s*(.*?)\s*Wrapper Entry Information:", re.DOTALL)
WRAPPER = re.compile(r"Wrapper Entry Information:\s*(?:def\s+)?([A-Za-z_]\w*)\s*\(")
WRAPPER_FALLBACK = re.compile(r"^def kernel_function\b", re.MULTILINE)


@dataclass(frozen=True)
class Candidate:
    source: str  # "path" or "path:line", stable across runs (part of the resume key)
    task_id: str  # suite id when known, else the name the submission gave
    code: str
    problem: tuple[Verdict, str] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.code.encode()).hexdigest()

    @property
    def key(self) -> str:
        return f"{self.source}|{self.task_id}|{self.sha256}"


def clean_code(text: str) -> str:
    """Strip chat end tokens, markdown fences, and everything below the 146-'#' test separator."""
    for token in END_TOKENS:
        text = text.replace(token, "")
    if "```" in text:
        blocks = FENCE.findall(text)
        if blocks:
            text = max(blocks, key=len)
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == TEST_SEPARATOR:
            lines = lines[:i]
            break
    return "\n".join(lines).strip() + "\n" if any(ln.strip() for ln in lines) else ""


def make(source: str, task_name: str, code: str, meta: dict[str, Any] | None = None) -> Candidate:
    code = clean_code(code)
    task = find(task_name)
    task_id = task.id if task else task_name.removesuffix(".py")
    problem = None
    if task is None:
        problem = (Verdict.UNKNOWN_TASK, f"{source}: no task {task_name!r} in the suite")
    elif not code:
        problem = (Verdict.NO_CODE, f"{source}: the prediction holds no code")
    meta = dict(meta or {})
    if task and code and kernel_function_only(code, task.entry_names()):
        meta["entry_alias"] = f"{task.entry} = kernel_function"  # the child's fallback entry
    return Candidate(source, task_id, code, problem, meta)


def kernel_function_only(code: str, entries: tuple[str, ...]) -> bool:
    """Whether ``code`` defines KernelAgent's ``kernel_function`` but none of the task's names."""
    defined = any(
        re.search(rf"^(def|class)\s+{re.escape(e)}\b|^{re.escape(e)}\s*=", code, re.M)
        for e in entries
    )
    return not defined and WRAPPER_FALLBACK.search(code) is not None


def task_of_instruction(record: dict[str, Any]) -> str | None:
    """GEAK's rows name no ``file``: the task from ``filename``, else from the instruction's
    functional description (a substring of exactly one task's) or its wrapper's name."""
    filename = record.get("filename")
    if isinstance(filename, str) and filename and find(filename) is not None:
        return filename
    instruction = record.get("instruction")
    if not isinstance(instruction, str):
        return None
    from kbx.suite import load_suite

    tasks = load_suite().values()
    if match := DESCRIPTION.search(instruction):
        text = " ".join(match.group(1).split())
        hits = [t.id for t in tasks if text and (text in " ".join(t.description.split()))]
        if len(hits) == 1:
            return hits[0]
    if match := WRAPPER.search(instruction):
        hits = [t.id for t in tasks if match.group(1) in t.entry_names()]
        if len(hits) == 1:
            return hits[0]
    return None


def broken(source: str, task_id: str, verdict: Verdict, message: str) -> Candidate:
    return Candidate(source, task_id, "", (verdict, f"{source}: {message}"))


def read_source(path: Path, task: str | None = None) -> list[Candidate]:
    """The candidates of a folder, a ``.py`` or a JSONL; ``task`` names the task of a lone
    ``.py`` whose file name does not."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.py") if "__pycache__" not in p.parts)
        return [read_py(p, path) for p in files]
    if path.suffix == ".jsonl":
        return list(read_jsonl(path))
    if path.suffix == ".py":
        return [read_py(path, path.parent, task)]
    raise ValueError(f"{path}: expected a folder, a .py file or a .jsonl file")


def encodable(text: str) -> bool:
    """Whether UTF-8 can hold ``text``: not so a file name's undecodable bytes (``\\udcXX``) or
    a JSON string's lone surrogate, which the store, the report and the child's file could not
    take."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def read_py(path: Path, root: Path, task: str | None = None) -> Candidate:
    if not encodable(str(path)):
        return broken(printable(str(path)), "?", Verdict.UNREADABLE, "file name is not UTF-8")
    rel = path.relative_to(root) if path != root else Path(path.name)
    parts = rel.with_suffix("").parts
    task_name = "/".join(parts[-2:]) if len(parts) >= 2 else parts[-1]
    if task is not None:
        task_name = task
    elif find(task_name) is None:
        task_name = parts[-1]
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        return broken(
            str(path),
            task_name,
            Verdict.UNREADABLE,
            f"not UTF-8 (byte {exc.object[exc.start]:#04x} at offset {exc.start})",
        )
    except OSError as exc:
        return broken(str(path), task_name, Verdict.UNREADABLE, f"cannot read: {exc.strerror}")
    return make(str(path), task_name, text)


def read_jsonl(path: Path) -> Iterator[Candidate]:
    if not encodable(str(path)):
        yield broken(printable(str(path)), "?", Verdict.UNREADABLE, "file name is not UTF-8")
        return
    try:
        raw = path.read_bytes()
    except OSError as exc:
        yield broken(str(path), "?", Verdict.UNREADABLE, f"cannot read: {exc.strerror}")
        return
    for number, line_bytes in enumerate(raw.splitlines(), start=1):
        source = f"{path}:{number}"
        if not line_bytes.strip():
            continue
        try:
            record = json.loads(line_bytes.decode("utf-8"))
        except UnicodeDecodeError:
            yield broken(source, "?", Verdict.UNREADABLE, "line is not UTF-8")
            continue
        except json.JSONDecodeError as exc:
            yield broken(
                source, "?", Verdict.UNREADABLE, f"malformed JSON ({exc.msg}, column {exc.colno})"
            )
            continue
        except (ValueError, RecursionError) as exc:  # an int of over 4,300 digits; deep nesting
            why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            yield broken(source, "?", Verdict.UNREADABLE, f"malformed JSON ({why.split(';')[0]})")
            continue
        yield from candidate_from_record(record, source)


def candidate_from_record(record: Any, source: str) -> Iterator[Candidate]:
    if not isinstance(record, dict):
        yield broken(source, "?", Verdict.UNREADABLE, "expected a JSON object")
        return
    task_name = record.get("file") or record.get("task_id") or record.get("task")
    if not task_name and ("instruction" in record or "filename" in record):
        task_name = task_of_instruction(record)
        if task_name is None:
            message = "a GEAK row whose 'filename' and 'instruction' name no suite task"
            yield broken(source, "?", Verdict.UNKNOWN_TASK, message)
            return
    code = record.get("predict", record.get("code"))
    if not isinstance(task_name, str) or not task_name:
        yield broken(source, "?", Verdict.UNREADABLE, "no 'file' field naming the task")
        return
    if not encodable(task_name):
        yield broken(source, "?", Verdict.UNREADABLE, "the 'file' field is not valid Unicode")
        return
    if isinstance(code, str) and not encodable(code):
        message = "the prediction holds a lone surrogate, not valid Unicode"
        yield broken(source, task_name.removesuffix(".py"), Verdict.UNREADABLE, message)
        return
    if not isinstance(code, str):
        yield broken(source, task_name.removesuffix(".py"), Verdict.NO_CODE, "no 'predict' string")
        return
    meta = {k: record[k] for k in META_FIELDS if k in record}
    yield make(source, task_name, code, meta)
