"""The log of a command that writes a run folder: everything in full into a file of the run
folder, one line per record on stderr.

A crashed browser's error carries its whole log (dozens of lines), an interrupted asyncio
future its traceback; a run left alone overnight should show one line for each on the terminal
and keep the details. Inside `run_log(folder, path)`:

- the file (`path`, e.g. `<run>/live.log`) receives every record at INFO and above (DEBUG with
  `-vv`) with its traceback; it is opened once the folder is a run folder (holds `run.json`:
  nothing is written into a folder that is not ours), records before that are kept in memory
  and written then;
- stderr shows each record's first line, without traceback, and says where the rest is
  (`-v` or more: stderr shows records in full, as outside the block);
- on leaving, the garbage collector runs first, so that what asyncio reports about abandoned
  futures is logged here too.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

__all__ = ["OneLineFormatter", "RunLogHandler", "run_log"]

_FILE_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s]: %(message)s"
_MAX_PENDING = 2000  # records kept before the run folder exists


class OneLineFormatter(logging.Formatter):
    """`LEVEL logger: first line of the message`, and where the rest went when there is more."""

    def __init__(self, details: Path) -> None:
        super().__init__()
        self.details = details

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        lines = message.strip().splitlines() or [""]
        more = len(lines) > 1 or bool(record.exc_info) or bool(record.stack_info)
        text = f"{record.levelname} {record.name}: {lines[0]}"
        return f"{text} (details in {self.details})" if more else text


class RunLogHandler(logging.Handler):
    """Appends records to `path` once `ready` (a file) exists; keeps them until then."""

    def __init__(self, path: Path, ready: Path, level: int = logging.INFO) -> None:
        super().__init__(level)
        self.path, self.ready = path, ready
        self.setFormatter(logging.Formatter(_FILE_FORMAT))
        self._file: TextIO | None = None
        self._pending: list[str] = []
        self._failed = False

    def _open(self) -> TextIO | None:
        if self._file is None and not self._failed and self.ready.is_file():
            try:
                self._file = self.path.open("a", encoding="utf-8")
            except OSError:
                self._failed = True  # a log that cannot be written never stops a run
        return self._file

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + "\n"
        except Exception:
            self.handleError(record)
            return
        f = self._open()
        if f is None:
            if not self._failed and len(self._pending) < _MAX_PENDING:
                self._pending.append(line)
            return
        try:
            if self._pending:
                f.write("".join(self._pending))
                self._pending.clear()
            f.write(line)
            f.flush()
        except OSError:
            self._failed = True

    def close(self) -> None:
        with self.lock or contextlib.nullcontext():
            f = self._open() if self._pending or self._file is not None else None
            if f is not None:
                with contextlib.suppress(OSError):
                    f.write("".join(self._pending))
                    f.close()
            self._pending.clear()
            self._file = None
        super().close()


def _stderr_handlers(root: logging.Logger) -> list[logging.StreamHandler[TextIO]]:
    return [
        h
        for h in root.handlers
        if isinstance(h, logging.StreamHandler)
        and getattr(h, "stream", None) in (sys.stderr, sys.__stderr__)
    ]


@contextlib.contextmanager
def run_log(folder: Path, path: Path, verbose: int = 0) -> Iterator[None]:
    """Log into `path` (written once `folder` holds run.json) and in one line per record on
    stderr for the block; see the module's docstring."""
    from medspot.runfolder.layout import RUN_JSON

    root = logging.getLogger()
    level = root.level
    handlers = _stderr_handlers(root)
    saved = [(h, h.formatter, h.level) for h in handlers]
    file_handler = RunLogHandler(path, folder / RUN_JSON, logging.DEBUG if verbose > 1 else 20)
    for h in handlers:
        if h.level == logging.NOTSET:
            h.setLevel(level)  # stderr keeps showing what it showed; the file gets more
        if verbose < 1:
            h.setFormatter(OneLineFormatter(path))
    root.addHandler(file_handler)
    root.setLevel(min(level, file_handler.level))
    try:
        yield
    finally:
        gc.collect()  # asyncio logs a never-retrieved future's exception when it is collected
        root.removeHandler(file_handler)
        file_handler.close()
        root.setLevel(level)
        for h, fmt, lvl in saved:
            h.setFormatter(fmt)
            h.setLevel(lvl)
