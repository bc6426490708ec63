"""The prediction journal, `predictions.jsonl`: one line per model call, appended and flushed
as each call completes, so that a killed run resumes without repeating calls.

A torn last line (a run killed mid-write) is ignored and its step asked again. For each step the
latest successful record wins; error records are kept for the audit trail and retried on resume.

The writer (`Journal`) and the reader (`read_records`) serve any journal of pydantic records:
the live journal (`live_journal.jsonl`, `medspot.live.loop.steplog`) is written and read by them,
and so is a zoom-in run's `zoom_passes.jsonl` (`ZoomPassRecord`, one per pass of a step, kept by
`ZoomPassJournal` for the runner).
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, Field, model_validator

from medspot.adapters.base import Prediction, Usage
from medspot.adapters.modelcall import ModelCall
from medspot.adapters.zoom import ZoomPass
from medspot.errors import ConfigError, RunFolderError
from medspot.geometry import Point
from medspot.jsonsafe import json_safe

__all__ = [
    "Journal",
    "JournalRecord",
    "JournalWriteError",
    "ZoomPassJournal",
    "ZoomPassRecord",
    "now_stamp",
    "prompt_hash",
    "read_journal",
    "read_passes",
    "read_records",
]

log = logging.getLogger(__name__)
R = TypeVar("R")


class JournalRecord(ModelCall):
    """One model call of the static benchmark (the call fields are `ModelCall`'s)."""

    step: str  # step identity <App>/<index>/<k>
    task: str  # task identity <App>/<index>
    image_path: str
    image_size: tuple[int, int] | None = None
    prompt_hash: str = ""
    extra_points: list[tuple[float, float]] = Field(default_factory=list)
    time: str = ""
    # the model requests this record cost: every try (the first and each retry) and every
    # re-ask or zoom pass the backend sent, what the model's server received; None in records
    # written before the field (read as one request a try: `request_count`)
    requests: int | None = None

    @property
    def request_count(self) -> int:
        """The model requests the record cost (`requests`, else 1 + `retries`)."""
        return self.requests if self.requests is not None else 1 + self.retries

    @model_validator(mode="after")
    def _finite_extra_points(self) -> JournalRecord:
        self.extra_points = [p for p in self.extra_points if all(math.isfinite(v) for v in p)]
        return self

    def prediction_point(self) -> Point | None:
        return Point(*self.point) if self.point is not None else None


class ZoomPassRecord(JournalRecord):
    """One pass of a step in `zoom_passes.jsonl` (`medspot.adapters.zoom`): the call's fields
    (`point` mapped back to the full screenshot, normalised) and which pass, on which window of
    the original."""

    zoom_pass: int
    crop: tuple[int, int, int, int]  # x0, y0, x1, y1 in pixels of the original

    @classmethod
    def of_pass(cls, one: ZoomPass) -> ZoomPassRecord:
        """The record of a pass just answered."""
        answer = one.answer
        return cls.of_prediction(
            answer,
            latency_s=one.latency_s or 0.0,
            retries=0,
            step=one.step_uid,
            task=one.task_uid,
            image_path=one.image_rel,
            image_size=one.image_size,
            prompt_hash=prompt_hash(answer.prompt or ""),
            time=now_stamp(),
            zoom_pass=one.number,
            crop=one.crop,
        )

    def as_pass(self) -> ZoomPass:
        """The pass this record journaled, as the zoom adapter reuses it."""
        tokens = (self.input_tokens, self.output_tokens)
        answer = Prediction(
            raw_text=self.raw_text,
            point=self.prediction_point(),
            flags=tuple(self.flags),
            sent_size=self.sent_size,
            usage=None if tokens == (None, None) else Usage(*(n or 0 for n in tokens)),
            cost_usd=self.cost_usd,
        )
        x0, y0, x1, y1 = self.crop
        return ZoomPass(
            self.step,
            self.task,
            self.zoom_pass,
            (x0, y0, x1, y1),
            self.image_path,
            self.image_size,
            answer,
            self.latency_s,
        )


class JournalWriteError(RunFolderError):
    """The journal cannot be written (read-only folder, full disk). What was written is kept."""


def prompt_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def now_stamp() -> str:
    """A record's `time`: now, UTC, to the millisecond."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def read_records(path: Path, validate: Callable[[bytes], R]) -> Iterator[R]:
    """Every well-formed record of the journal at `path` in file order (`validate` reads one
    line into a record). A torn or corrupt line is skipped with a warning (a torn last line
    is the normal trace of a killed run); a missing journal has no record."""
    try:
        with path.open("rb") as f:
            data = f.read()
    except FileNotFoundError:
        return
    except OSError as e:
        raise ConfigError(f"cannot read the journal {path}: {e.strerror or e}") from None
    lines = data.split(b"\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield validate(line)
        except ValueError:  # pydantic's ValidationError included
            where = "last line (torn write)" if n >= len(lines) - 1 else f"line {n}"
            log.warning("%s: ignoring unreadable %s", path, where)


def read_journal(path: Path) -> Iterator[JournalRecord]:
    """Every well-formed record of a prediction journal in file order (`read_records`)."""
    return read_records(path, JournalRecord.model_validate_json)


def read_passes(path: Path) -> dict[tuple[str, int], ZoomPassRecord]:
    """The passes journaled in `path` (`zoom_passes.jsonl`), the latest per (step, pass)."""
    out: dict[tuple[str, int], ZoomPassRecord] = {}
    for rec in read_journal(path):
        data = rec.model_dump()
        if "zoom_pass" not in data or "crop" not in data:
            continue
        try:
            one = ZoomPassRecord.model_validate(data)
        except ValueError:
            log.warning("%s: ignoring a pass record without a readable crop", path)
            continue
        out[(one.step, one.zoom_pass)] = one
    return out


class Journal:
    """Append-only writer of pydantic records. Each record is one `write` system call of one
    whole line, made at once (so a killed process loses nothing it journaled and leaves at most
    a torn last line after a machine crash), and fsynced by a background thread at most every
    `fsync_interval` seconds and on close (so a machine crash loses at most that much, and
    the event loop never waits on the disk); `fsync_interval=0`: each line as it is written
    (the live journal: its steps are slow)."""

    def __init__(self, path: Path, *, fsync: bool = True, fsync_interval: float = 1.0) -> None:
        self.path = path
        self._fsync = fsync
        self._interval = fsync_interval
        self._lock = threading.Lock()
        self._dirty = False
        self._sync_error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise JournalWriteError(f"cannot write the journal {path}: {e.strerror or e}") from None
        self._repair_tail()
        try:
            self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        except OSError as e:
            raise JournalWriteError(f"cannot write the journal {path}: {e.strerror or e}") from None
        if fsync and fsync_interval > 0:
            self._thread = threading.Thread(target=self._sync_loop, name="journal-fsync")
            self._thread.daemon = True
            self._thread.start()

    def _repair_tail(self) -> None:
        """Make sure a torn last line cannot glue onto the next record."""
        try:
            if not self.path.exists() or self.path.stat().st_size == 0:
                return
            with self.path.open("rb") as f:
                f.seek(-1, os.SEEK_END)
                last = f.read(1)
            if last != b"\n":
                with self.path.open("ab") as f:
                    f.write(b"\n")
        except OSError as e:
            raise JournalWriteError(
                f"cannot write the journal {self.path}: {e.strerror or e}"
            ) from None

    def _line(self, record: BaseModel) -> bytes:
        """`record` as one JSON line. A value no serializer writes (a lone surrogate, an
        integer beyond 64 bits, nesting too deep: what a model wrote, where no record's
        validator mended it) is written as `json_safe` makes it, never a journal that cannot
        be written."""
        try:
            return record.model_dump_json().encode("utf-8") + b"\n"
        except ValueError as e:  # pydantic's PydanticSerializationError
            log.warning("%s: a record written with values made writable (%s)", self.path, e)
            return orjson.dumps(json_safe(record.model_dump())) + b"\n"

    def append(self, record: BaseModel) -> None:
        """Write `record` as one line. Raises `JournalWriteError` (exit 2) when the disk refuses
        it; the lines written before stay as they are."""
        line = self._line(record)
        with self._lock:
            if self._fd is None:
                raise JournalWriteError(f"the journal {self.path} is closed")
            if self._sync_error is not None:
                raise JournalWriteError(self._sync_error)
            try:
                view = memoryview(line)
                while view:
                    n = os.write(self._fd, view)
                    view = view[n:]
            except OSError as e:
                raise JournalWriteError(
                    f"cannot append to the journal {self.path}: {e.strerror or e}"
                ) from None
            self._dirty = True
            if self._fsync and self._thread is None:
                self._sync_locked()

    def _sync_locked(self) -> None:
        if self._fd is None or not self._dirty:
            return
        try:
            os.fsync(self._fd)
            self._dirty = False
        except OSError as e:
            self._sync_error = f"cannot save the journal {self.path}: {e.strerror or e}"
            log.error("%s", self._sync_error)

    def _sync_loop(self) -> None:
        """The fsync thread: the lock is not held while the disk works, so appends go on."""
        while not self._stop.wait(self._interval):
            with self._lock:
                fd = self._fd
                if fd is None or not self._dirty:
                    continue
                self._dirty = False
            try:
                os.fsync(fd)
            except OSError as e:
                with self._lock:
                    self._sync_error = f"cannot save the journal {self.path}: {e.strerror or e}"
                log.error("%s", self._sync_error)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self._fd is None:
                return
            if self._fsync:
                self._sync_locked()
            try:
                os.close(self._fd)
            except OSError as e:
                log.error("journal %s: %s", self.path, e)
            self._fd = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class ZoomPassJournal:
    """A zoom-in run's `zoom_passes.jsonl` as the store of its passes
    (`medspot.adapters.zoom.PassStore`, given by the runner to the steps it asks): the passes
    journaled before, read at the first question; each new one journaled as it is answered
    (the file is opened then: a run that asks no pass touches nothing)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._passes: dict[tuple[str, int], ZoomPass] | None = None
        self._journal: Journal | None = None

    def _kept(self) -> dict[tuple[str, int], ZoomPass]:
        if self._passes is None:
            done = read_passes(self.path)
            self._passes = {k: r.as_pass() for k, r in done.items() if r.error is None}
        return self._passes

    def answered(self, step_uid: str, number: int) -> ZoomPass | None:
        return self._kept().get((step_uid, number))

    def add(self, one: ZoomPass) -> ZoomPass:
        rec = ZoomPassRecord.of_pass(one)
        kept = rec.as_pass()
        self._kept()[(kept.step_uid, kept.number)] = kept
        if self._journal is None:
            self._journal = Journal(self.path)
        self._journal.append(rec)
        return kept

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    def __enter__(self) -> ZoomPassJournal:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
