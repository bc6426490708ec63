"""The exception hierarchy: every error medspot raises on purpose derives from `MedspotError`.

    MedspotError                 exit 1; the CLI prints the message, never a traceback
    ├── DataError                exit 2; malformed or missing benchmark data, with a `Location`
    ├── ConfigError              exit 2; a bad option, config file or run folder
    │   └── RunFolderError       exit 2; a run folder cannot be written (full disk, read-only)
    │       └── runfolder.journal.JournalWriteError   the journal in particular
    ├── AdapterUnavailable       exit 2; an adapter cannot be built here (extra, package, key)
    ├── ModelCallError           a failed model call: journaled as an error, never a miss
    │   └── TransientModelError  worth retrying (429, 5xx, timeout), with `retry_after`
    └── BudgetExceeded           exit 3; `--max-cost` reached, the run stops and resumes later

`RunFolderError` derives from `ConfigError` so that code catching the latter keeps working.
Any other exception reaching the command line is a bug: exit `BUG_EXIT_STATUS` (70,
EX_SOFTWARE), one line naming the file its traceback was written to (`medspot.cli`). A run
stopped by a signal exits 128 + the signal's number (`medspot.interrupts`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BUG_EXIT_STATUS",
    "AdapterUnavailable",
    "BudgetExceeded",
    "ConfigError",
    "DataError",
    "Location",
    "MedspotError",
    "ModelCallError",
    "RunFolderError",
    "TransientModelError",
]

# An unexpected exception (a bug, not bad input and not a failed call): sysexits' EX_SOFTWARE.
BUG_EXIT_STATUS = 70


@dataclass(frozen=True)
class Location:
    """Where a data problem is: file, task index (0-based, as in `<App>/<index>`), step, field.
    A task that has an id of its own (a live task file's) is named by `task_id`, its index
    then only where the id cannot be read."""

    file: str
    task: int | None = None
    step: int | None = None  # 1-based position of the step in its task
    field: str | None = None
    task_id: str | None = None

    def __str__(self) -> str:
        parts = [self.file]
        if self.task_id is not None:
            parts.append(f"task {self.task_id!r}")
        elif self.task is not None:
            parts.append(f"task {self.task}")
        if self.step is not None:
            parts.append(f"step {self.step}")
        if self.field is not None:
            parts.append(f"field '{self.field}'")
        return ", ".join(parts)


class MedspotError(Exception):
    """Root of every deliberate medspot error. The CLI turns these into messages, not tracebacks."""

    exit_code = 1


class DataError(MedspotError):
    """The benchmark data is malformed or missing. Exit status 2."""

    exit_code = 2

    def __init__(self, message: str, location: Location | None = None) -> None:
        self.message = message
        self.location = location
        super().__init__(f"{location}: {message}" if location else message)


class ConfigError(MedspotError):
    """A bad command-line option, config file or a run folder that does not match. Exit 2."""

    exit_code = 2


class RunFolderError(ConfigError):
    """A run folder cannot be written or read back (full disk, read-only folder). Exit 2."""


class AdapterUnavailable(MedspotError):
    """An adapter cannot be built here (missing extra, package or key). Exit 2."""

    exit_code = 2


class ModelCallError(MedspotError):
    """A model call failed for a reason outside the model; recorded as an error, never a miss."""


class TransientModelError(ModelCallError):
    """A model call failed in a way worth retrying (429, 5xx, timeout, connection, bad body)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message)


class BudgetExceeded(MedspotError):
    """The run reached its `--max-cost`; it stops cleanly and resumes later."""

    exit_code = 3
