"""The prediction journal, `predictions.jsonl`: one line per model call, appended and flushed
as each call completes, so that a killed run resumes without repeating calls.

A torn last line (a run killed mid-write) is ignored and its step asked again. For each step the
latest successful record wins; error records are kept for the audit trail and retried on resume.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from medspot.adapters.base import Prediction, StepRequest
from medspot.errors import ConfigError
from medspot.geometry import Point

__all__ = ["Journal", "JournalRecord", "JournalWriteError", "prompt_hash", "read_journal"]

log = logging.getLogger(__name__)


class JournalRecord(BaseModel):
    """One model call. Coordinates are normalised to the original screenshot."""

    model_config = ConfigDict(extra="allow")

    step: str  # step identity <App>/<index>/<k>
    task: str  # task identity <App>/<index>
    image_path: str
    image_size: tuple[int, int] | None = None
    prompt_hash: str = ""
    raw_text: str | None = None
    point: tuple[float, float] | None = None
    extra_points: list[tuple[float, float]] = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)
    sent_size: tuple[int, int] | None = None
    latency_s: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    retries: int = 0
    error: str | None = None
    time: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None

    def prediction_point(self) -> Point | None:
        return Point(*self.point) if self.point is not None else None

    @classmethod
    def from_prediction(
        cls,
        req: StepRequest,
        pred: Prediction | None,
        *,
        latency_s: float,
        retries: int,
        error: str | None = None,
    ) -> JournalRecord:
        usage = pred.usage if pred else None
        return cls(
            step=req.step_uid,
            task=req.task_uid,
            image_path=req.image_rel,
            image_size=req.image_size,
            prompt_hash=prompt_hash(pred.prompt if pred and pred.prompt else req.instruction),
            raw_text=pred.raw_text if pred else None,
            point=(pred.point.x, pred.point.y) if pred and pred.point else None,
            extra_points=[(p.x, p.y) for p in pred.extra_points] if pred else [],
            flags=list(pred.flags) if pred else [],
            sent_size=pred.sent_size if pred else None,
            latency_s=round(latency_s, 6),
            input_tokens=usage.input_tokens if usage else None,
            output_tokens=usage.output_tokens if usage else None,
            cost_usd=pred.cost_usd if pred else None,
            retries=retries,
            error=error,
            time=datetime.now(UTC).isoformat(timespec="milliseconds"),
        )


class JournalWriteError(ConfigError):
    """The journal cannot be written (read-only folder, full disk). What was written is kept."""


def prompt_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def read_journal(path: Path) -> Iterator[JournalRecord]:
    """Every well-formed record in file order. A torn or corrupt line is skipped with a warning
    (a torn last line is the normal trace of a killed run)."""
    if not path.exists():
        return
    with path.open("rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield JournalRecord.model_validate(json.loads(line))
        except (ValueError, ValidationError):
            where = "last line (torn write)" if n >= len(lines) - 1 else f"line {n}"
            log.warning("%s: ignoring unreadable %s", path, where)


class Journal:
    """Append-only writer. Each record is one `write` of one line, flushed at once (so a killed
    process loses nothing it journaled) and fsynced at most every `fsync_interval` seconds and
    on close (so a machine crash loses at most that much)."""

    def __init__(self, path: Path, *, fsync: bool = True, fsync_interval: float = 1.0) -> None:
        self.path = path
        self._fsync = fsync
        self._interval = fsync_interval
        self._last_sync = time.monotonic()
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_tail()
        try:
            self._f = path.open("ab")
        except OSError as e:
            raise ConfigError(f"cannot write the journal {path}: {e.strerror or e}") from None

    def _repair_tail(self) -> None:
        """Make sure a torn last line cannot glue onto the next record."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with self.path.open("rb") as f:
            f.seek(-1, os.SEEK_END)
            last = f.read(1)
        if last != b"\n":
            try:
                with self.path.open("ab") as f:
                    f.write(b"\n")
            except OSError as e:
                raise ConfigError(f"cannot write the journal {self.path}: {e}") from None

    def append(self, record: JournalRecord) -> None:
        line = record.model_dump_json(exclude_none=False).encode("utf-8") + b"\n"
        with self._lock:
            try:
                self._f.write(line)
                self._f.flush()
            except OSError as e:
                raise JournalWriteError(
                    f"cannot append to the journal {self.path}: {e.strerror or e}"
                ) from None
            now = time.monotonic()
            if self._fsync and now - self._last_sync >= self._interval:
                os.fsync(self._f.fileno())
                self._last_sync = now

    def close(self) -> None:
        if self._f.closed:
            return
        try:
            self._f.flush()
            if self._fsync:
                os.fsync(self._f.fileno())
        except OSError as e:
            log.error("journal %s: %s", self.path, e)
        finally:
            self._f.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
