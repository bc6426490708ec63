"""The life of a run in its folder, one for `medspot eval` and `medspot live run`:

    with run_folder(out) as folder:          # the guard (new, empty, or a run folder), the lock
        life = RunLife(folder, info)
        life.start()                         # the resume check, run.json written ("running")
        with life.failure_recorded():        # an error: run.json says "failed" and why
            ...                              # run (the journal), write the results
            life.finish(...)                 # run.json's final status; an interruption re-raised

`RunLife.start` refuses a folder holding a run of another kind or made with other settings
(`RunFolder.resume_guard`) and keeps the first start time of a resumed run.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from medspot.atomic_write import atomic_write_json
from medspot.runfolder.guard import make_output_folder
from medspot.runfolder.layout import RunFolder
from medspot.runfolder.lock import run_folder_lock
from medspot.runfolder.runinfo import RunInfo, now_iso
from medspot.runfolder.writer import record_failed_run

__all__ = ["RunLife", "run_folder"]

log = logging.getLogger(__name__)


@contextlib.contextmanager
def run_folder(out: Path, *, before_run: Collection[str] = ()) -> Iterator[RunFolder]:
    """`out` created (refused when it holds anything but a run, its lock and `before_run`)
    and locked against a second writer for the `with` block."""
    make_output_folder(out, before_run=before_run)
    with run_folder_lock(out):
        yield RunFolder(out)


@dataclass
class RunLife:
    """One run of `info` in a locked run folder, from its start to its finish."""

    folder: RunFolder
    info: RunInfo

    def start(self, *, ignore: Collection[str] = ()) -> RunInfo | None:
        """Check the folder's run against this one (None: a fresh folder; the settings named
        in `ignore` may differ), then write run.json; a resumed run keeps its first start
        time."""
        previous = self.folder.resume_guard(self.info, ignore)
        if previous is not None:
            self.info.started = previous.started or self.info.started
        try:
            atomic_write_json(self.folder.run_json, self.info.model_dump())
        except KeyboardInterrupt:  # run.json may be written: it must not say "running"
            if self.folder.run_json.exists():
                self.save("interrupted")
            raise
        return previous

    @contextlib.contextmanager
    def failure_recorded(self, also: Callable[[], None] | None = None) -> Iterator[None]:
        """An error in the block is recorded in run.json (status "failed", the error), then
        raised; `also()` first sets what else run.json should say of the failed run (the
        calls paid until then: its own failure is logged, never raised in place of the run's).
        An interruption is not an error: `finish` records it, and one that ends the block
        before `finish` did (Ctrl-C or SIGTERM right after `start`, while the environment or
        the model starts) leaves run.json "interrupted", not "running"."""
        try:
            yield
        except KeyboardInterrupt:
            if self.info.status == "running":
                self.save("interrupted")
            raise
        except Exception as e:
            if also is not None:
                try:
                    also()
                except Exception as again:  # the journal itself may be what failed
                    log.warning(
                        "%s: the failed run's run.json lacks what could not be read: %s",
                        self.folder.path,
                        again,
                    )
            record_failed_run(self.folder.run_json, self.info, e)
            raise

    def finish(
        self,
        *,
        complete: bool,
        budget_reached: bool = False,
        interrupted: KeyboardInterrupt | None = None,
    ) -> None:
        """run.json's final state: interrupted, budget_reached, complete or incomplete (the
        caller has set the counts); an interruption is raised again once it is written."""
        if interrupted is not None:
            status = "interrupted"
        elif budget_reached:
            status = "budget_reached"
        else:
            status = "complete" if complete else "incomplete"
        self.save(status)
        if interrupted is not None:
            raise interrupted

    def save(self, status: str) -> None:
        """run.json as it stands now, with `status` (`running` for a run that goes on and has
        written its results so far: `medspot live serve` after each episode)."""
        self.info.finished = now_iso()
        self.info.status = status
        atomic_write_json(self.folder.run_json, self.info.model_dump())
