"""The durable job queue: SQLite in WAL mode, one row per accepted job, one cached result per
content key.

A batch is committed (``synchronous=FULL``) before its ids are returned, so an acknowledged job
survives a SIGKILL.  A job moves queued -> running -> done; ``recover`` puts the jobs that were
running at a crash back in the queue, and ``complete`` stores a result only for a job that is
still running, so each job is answered once however often it was started (docs/design/serve.md).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT UNIQUE NOT NULL,
    batch TEXT NOT NULL,
    task_id TEXT NOT NULL,
    code TEXT NOT NULL,
    tier TEXT NOT NULL,
    priority INTEGER NOT NULL,
    metadata TEXT NOT NULL,
    key TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    answers INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    result TEXT,
    cached_from TEXT
);
CREATE INDEX IF NOT EXISTS jobs_next ON jobs (state, priority DESC, seq);
CREATE INDEX IF NOT EXISTS jobs_batch ON jobs (batch);
CREATE INDEX IF NOT EXISTS jobs_key ON jobs (key, state);
CREATE TABLE IF NOT EXISTS cache (
    key TEXT PRIMARY KEY,
    job_id TEXT NOT NULL,
    result TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""
PUBLIC = (
    "id, batch, task_id, tier, priority, metadata, state, attempts, created_at, finished_at, "
    "result, cached_from, seq"
)


def content_key(
    task_id: str, code: str, tier: str, task_version: int, kbx: str, device: str
) -> str:
    """What a result depends on: the same key is the same evaluation (docs/design/serve.md)."""
    code_sha = hashlib.sha256(code.encode()).hexdigest()
    parts = [task_id, code_sha, tier, task_version, kbx, device]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


@dataclass(frozen=True)
class NewJob:
    task_id: str
    code: str
    tier: str
    priority: int
    metadata: dict[str, Any]
    key: str


@dataclass(frozen=True)
class Job:
    """A claimed job, as the dispatcher runs it."""

    id: str
    task_id: str
    code: str
    tier: str
    metadata: dict[str, Any]
    key: str
    created_at: float


@dataclass(frozen=True)
class Accepted:
    id: str
    cached: bool


class Queue:
    """The jobs of one service, in ``path``; safe to use from any thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.local = threading.local()
        self.connection().executescript(SCHEMA)

    def connection(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self.local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            self.local.db = db
        return db

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (``BEGIN IMMEDIATE``), committed on exit."""
        db = self.connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def recover(self) -> int:
        """Put the jobs that were running when the last server died back in the queue."""
        with self.write() as db:
            return db.execute("UPDATE jobs SET state='queued' WHERE state='running'").rowcount

    def add(self, batch: str, jobs: Sequence[NewJob]) -> list[Accepted]:
        """Store a batch; a job whose key has a cached result is done at once, from it.  A
        batch id already stored returns that batch's jobs (a client's retry)."""
        now, accepted = time.time(), []
        with self.write() as db:
            known = db.execute(
                "SELECT id, cached_from FROM jobs WHERE batch=? ORDER BY seq", (batch,)
            )
            if rows := known.fetchall():
                return [Accepted(row["id"], row["cached_from"] is not None) for row in rows]
            for job in jobs:
                job_id = uuid.uuid4().hex
                hit = db.execute("SELECT job_id, result FROM cache WHERE key=?", (job.key,))
                cached = hit.fetchone()
                db.execute(
                    "INSERT INTO jobs (id, batch, task_id, code, tier, priority, metadata, key,"
                    " state, answers, created_at, finished_at, result, cached_from)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        *(job_id, batch, job.task_id, job.code, job.tier, job.priority),
                        *(json.dumps(job.metadata), job.key, "done" if cached else "queued"),
                        *(1 if cached else 0, now, now if cached else None),
                        *((cached["result"], cached["job_id"]) if cached else (None, None)),
                    ),
                )
                accepted.append(Accepted(job_id, cached is not None))
        return accepted

    def claim(self) -> Job | None:
        """The next job to run (highest priority, then oldest), marked running; a job whose
        key is already running waits for that one's result instead of running twice."""
        with self.write() as db:
            row = db.execute(
                "SELECT id, task_id, code, tier, metadata, key, created_at FROM jobs"
                " WHERE state='queued' AND key NOT IN (SELECT key FROM jobs WHERE state='running')"
                " ORDER BY priority DESC, seq LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            db.execute(
                "UPDATE jobs SET state='running', attempts=attempts+1, started_at=? WHERE id=?",
                (time.time(), row["id"]),
            )
        return Job(**{**dict(row), "metadata": json.loads(row["metadata"])})

    def complete(self, job: Job, record: dict[str, Any], cache: bool) -> list[tuple[str, float]]:
        """Store ``job``'s result (once: nothing if it is no longer running) and answer the
        queued jobs of the same key from it; returns the jobs answered, each with the time
        it was accepted."""
        result, now = json.dumps(record), time.time()
        with self.write() as db:
            stored = db.execute(
                "UPDATE jobs SET state='done', result=?, finished_at=?, answers=answers+1"
                " WHERE id=? AND state='running'",
                (result, now, job.id),
            ).rowcount
            if not stored:
                return []
            if not cache:
                return [(job.id, job.created_at)]
            db.execute(
                "INSERT OR IGNORE INTO cache (key, job_id, result, created_at) VALUES (?,?,?,?)",
                (job.key, job.id, result, now),
            )
            twins = db.execute(
                "UPDATE jobs SET state='done', result=?, finished_at=?, answers=answers+1,"
                " cached_from=? WHERE key=? AND state='queued' RETURNING id, created_at",
                (result, now, job.id, job.key),
            ).fetchall()
        return [(job.id, job.created_at), *((row["id"], row["created_at"]) for row in twins)]

    def count(self, state: str) -> int:
        row = self.connection().execute("SELECT count(*) FROM jobs WHERE state=?", (state,))
        return int(row.fetchone()[0])

    def job(self, job_id: str) -> dict[str, Any] | None:
        row = self.connection().execute(f"SELECT {PUBLIC} FROM jobs WHERE id=?", (job_id,))
        found = row.fetchone()
        return public(found) if found else None

    def batch(self, batch: str, done_only: bool = False) -> list[dict[str, Any]]:
        where = "batch=? AND state='done'" if done_only else "batch=?"
        rows = self.connection().execute(
            f"SELECT {PUBLIC} FROM jobs WHERE {where} ORDER BY seq", (batch,)
        )
        return [public(row) for row in rows]

    def answers(self) -> dict[str, int]:
        """How many times each job was answered (1 for every done job: the restart test)."""
        rows = self.connection().execute("SELECT id, answers FROM jobs")
        return {row["id"]: row["answers"] for row in rows}


def public(row: sqlite3.Row) -> dict[str, Any]:
    """A job as the API shows it: the result's record parsed, the provenance of a cached one."""
    out = dict(row)
    out["batch_id"] = out.pop("batch")
    out["metadata"] = json.loads(out["metadata"])
    out["result"] = json.loads(out["result"]) if out["result"] else None
    out["cached"] = out["cached_from"] is not None
    if out["finished_at"] is not None:
        out["latency_s"] = out["finished_at"] - out["created_at"]
    return out
