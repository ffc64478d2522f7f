"""The response cache: SQLite (WAL), one row per (model, messages, parameters, sample index).

Each reply is committed as it arrives, so a run killed at any point (SIGKILL included) resumes
without repeating a finished call, and a re-run replays every reply with no network.  Evaluator
outcomes are kept too, keyed by task, code and device, so a resumed run does not judge the same
code twice.  Failed calls are not cached: a resumed run tries them again.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, request TEXT, reply TEXT);
CREATE TABLE IF NOT EXISTS outcomes (key TEXT PRIMARY KEY, outcome TEXT);
"""


def digest(value: Any) -> str:
    """A stable hash of a JSON value (keys sorted, no whitespace)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class Cache:
    """A SQLite file shared by the threads of one run; each write is its own transaction."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.lock = threading.Lock()
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)

    def reply(self, key: str) -> dict[str, Any] | None:
        return self.read("SELECT reply FROM replies WHERE key = ?", key)

    def put_reply(self, key: str, request: dict[str, Any], reply: dict[str, Any]) -> None:
        self.write("INSERT OR REPLACE INTO replies VALUES (?, ?, ?)", key, request, reply)

    def outcome(self, key: str) -> dict[str, Any] | None:
        return self.read("SELECT outcome FROM outcomes WHERE key = ?", key)

    def put_outcome(self, key: str, outcome: dict[str, Any]) -> None:
        self.write("INSERT OR REPLACE INTO outcomes VALUES (?, ?)", key, outcome)

    def read(self, sql: str, key: str) -> dict[str, Any] | None:
        with self.lock:
            row = self.db.execute(sql, (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def write(self, sql: str, key: str, *values: dict[str, Any]) -> None:
        texts = [json.dumps(v, sort_keys=True, ensure_ascii=False) for v in values]
        with self.lock:
            self.db.execute(sql, (key, *texts))

    def close(self) -> None:
        with self.lock:
            self.db.close()
