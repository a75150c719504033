"""The state file of the Gemini Batch engine: what a restart needs to lose and repeat nothing.

JSON Lines, only ever appended to. The lines:

- ``{"version": 1, "run": ID}``: the first line; ``ID`` names this state's jobs;
- ``{"creating": DISPLAY, "model": M, "keys": [...]}``: a job is about to be created;
- ``{"job": NAME, "display": DISPLAY, "model": M, "keys": [...]}``: it was created;
- ``{"ended": DISPLAY, "job": NAME, "state": S, "results": {KEY: {"response": ...} |
  {"error": ...}}}``: a job ended (with its results when it succeeded), or was found never
  to have been created;
- ``{"task": ID, "call": N, "hash": H, "retries": [...], "failure": ... | null}``: a task's
  N-th model call settled (its response is the last result recorded under ``ID:N``);
- ``{"task": ID, "tool": "N.E", "result": {...}}``: an execution of a task's N-th tool call
  finished.

The job lines and the job results are flushed to disk (``fsync``) before anything acts on
them, so a job is never created twice nor its results lost; the others are written at once
(a killed process loses none of them) and flushed with the next job line. A last line
without its newline, a write cut short, is dropped when the file is read. The file is locked
while an engine uses it: two engines on one state file would create each other's jobs.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent._batch_wire import Result
from agent.errors import ConfigurationError

__all__ = ["BatchState", "StoredJob"]

_VERSION = 1


@dataclass
class StoredJob:
    """A job the state file knows, created by this engine or an earlier one."""

    display: str
    """Its display name."""
    model: str
    """The model its requests went to."""
    keys: tuple[str, ...]
    """The keys of its requests."""
    name: str | None = None
    """``batches/{id}``; ``None`` while only its creation was recorded."""
    ended: str | None = None
    """The state it ended in, once it did."""


@dataclass
class BatchState:
    """What the state file holds, and where new lines go (``path=None``: memory only)."""

    path: Path | None = None
    """The state file."""
    run: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    """The id in this state's job display names."""
    jobs: dict[str, StoredJob] = field(default_factory=dict)
    """Jobs by display name."""
    results: dict[str, Result] = field(default_factory=dict)
    """The last result recorded under each key."""
    calls: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    """The last record of each task's N-th model call."""
    tools: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """The last result of each task's tool executions, by ``"N.E"``."""
    _open: dict[str, StoredJob] = field(default_factory=dict)
    """The job that has not ended holding each key (an index of `jobs`)."""
    _fd: int | None = None

    @classmethod
    def open(cls, path: str | Path | None) -> BatchState:
        """Read the state file at ``path`` (created when missing) and lock it.

        Raises:
            ConfigurationError: The file is in use by another engine, cannot be opened, or
                is not a state file of this version.
        """
        if path is None:
            return cls()
        state = cls(Path(path))
        try:
            state._fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot open the batch state file {path}: {exc.strerror or exc}"
            ) from None
        try:
            _lock(state._fd)
            state._load()
        except BaseException:
            state.close()
            raise
        return state

    def _load(self) -> None:
        assert self.path is not None and self._fd is not None
        raw = self.path.read_bytes()
        if raw and not raw.endswith(b"\n"):  # a write cut short: drop it
            keep = raw.rfind(b"\n") + 1
            os.truncate(self.path, keep)
            raw = raw[:keep]
        lines = raw.splitlines()
        if not lines:
            self.record({"version": _VERSION, "run": self.run}, sync=True)
            return
        header = _json(lines[0])
        if header.get("version") != _VERSION or not isinstance(header.get("run"), str):
            raise ConfigurationError(
                f"{self.path} is not a batch state file of this version (first line "
                f"{lines[0][:80]!r}); move it away to start afresh"
            )
        self.run = header["run"]
        for line in lines[1:]:
            self._apply(_json(line))

    def _apply(self, line: dict[str, Any]) -> None:
        """Take one line of the file into the state (lines of another shape are skipped)."""
        if "creating" in line:
            display = str(line["creating"])
            keys = tuple(map(str, line.get("keys") or ()))
            self._add(StoredJob(display, str(line.get("model")), keys))
        elif "ended" in line:
            self._ended(line)
        elif "job" in line and str(line.get("display")) in self.jobs:
            self.jobs[str(line["display"])].name = str(line["job"])
        elif "task" in line and "call" in line:
            self.calls[(str(line["task"]), int(line["call"]))] = line
        elif "task" in line and "tool" in line:
            self.tools[(str(line["task"]), str(line["tool"]))] = line

    def _ended(self, line: dict[str, Any]) -> None:
        job = self.jobs.get(str(line["ended"]))
        if job is not None:
            self._end(job, str(line.get("state")))
        for key, data in (line.get("results") or {}).items():
            if isinstance(data, dict):
                self.results[str(key)] = Result.from_json(str(key), data)

    # -- what the engine asks -----------------------------------------------------------

    def unfinished_job_of(self, key: str) -> StoredJob | None:
        """Return the job holding ``key`` that has not ended, if any."""
        return self._open.get(key)

    def _add(self, job: StoredJob) -> None:
        self.jobs[job.display] = job
        for key in job.keys:
            self._open[key] = job

    def _end(self, job: StoredJob, state: str) -> None:
        job.ended = state
        for key in job.keys:
            if self._open.get(key) is job:
                del self._open[key]

    # -- what the engine records --------------------------------------------------------

    def creating(self, display: str, model: str, keys: list[str]) -> StoredJob:
        """Record that a job is about to be created (flushed to disk first)."""
        job = StoredJob(display, model, tuple(keys))
        self._add(job)
        self.record({"creating": display, "model": model, "keys": keys}, sync=True)
        return job

    def created(self, job: StoredJob, name: str) -> None:
        """Record the name of a created job (flushed to disk)."""
        job.name = name
        self.record(
            {"job": name, "display": job.display, "model": job.model, "keys": list(job.keys)},
            sync=True,
        )

    def ended(self, job: StoredJob, state: str, results: list[Result]) -> None:
        """Record how a job ended and its results (flushed to disk)."""
        self._end(job, state)
        for result in results:
            self.results[result.key] = result
        self.record(
            {
                "ended": job.display,
                "job": job.name,
                "state": state,
                "results": {result.key: result.to_json() for result in results},
            },
            sync=True,
        )

    def record(self, line: dict[str, Any], *, sync: bool = False) -> None:
        """Append ``line`` (and take it into the state); ``sync`` flushes it to disk."""
        if "task" in line:
            self._apply(line)
        if self._fd is None:
            return
        data = (json.dumps(line, ensure_ascii=False, default=str) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        if sync:
            os.fsync(self._fd)

    def close(self) -> None:
        """Release the file (its lock goes with it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _json(line: bytes) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _lock(fd: int) -> None:
    """Take an exclusive lock on ``fd`` without waiting.

    Raises:
        ConfigurationError: Another engine holds it.
    """
    try:
        import fcntl
    except ImportError:  # not POSIX: no advisory locks to take
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise ConfigurationError(
            "the batch state file is in use by another batch; wait for it to finish"
        ) from None
