"""A live run folder as the loop writes it, for `medspot live run` (`request`, `scheduler`) and
`medspot live serve` (`medspot.live.serve.host`, which reaches the run folder through here): the
run-folder lifecycle of `eval` (`runfolder.lifecycle`: the guard, one writer, the resume check,
run.json's start, failure and finish), the live journal appended line by line and read back,
each screenshot saved once (`screens/<sha256>.png`)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Iterator
from pathlib import Path

from medspot.atomic_write import atomic_write_bytes
from medspot.live.core.contract import Observation
from medspot.live.loop.steplog import JournalState, read_live_journal
from medspot.runfolder.journal import Journal
from medspot.runfolder.layout import LIVE_LOG, RunFolder, screen_rel
from medspot.runfolder.lifecycle import RunLife, run_folder
from medspot.runfolder.live_schema import LiveRunInfo
from medspot.runfolder.runinfo import now_iso

__all__ = [
    "Journal",
    "LiveRunInfo",
    "RunFolder",
    "RunLife",
    "journal_state",
    "live_run_folder",
    "now_iso",
    "open_journal",
    "save_screen",
    "screen_rel",
]


@contextlib.contextmanager
def live_run_folder(out: Path) -> Iterator[RunFolder]:
    """`out` guarded (a new or empty folder, or a run folder) and locked for the block; the
    command's log (`live.log`, `commands._runlog`) may be there before run.json."""
    with run_folder(out, before_run=(LIVE_LOG,)) as folder:
        yield folder


def journal_state(folder: RunFolder) -> JournalState:
    """The live journal read back (per repeat, per task)."""
    return JournalState.from_records(list(read_live_journal(folder.live_journal)))


def open_journal(folder: RunFolder) -> Journal:
    """The live journal for appending: each line fsynced as it is written (steps are slow)."""
    return Journal(folder.live_journal, fsync_interval=0)


async def save_screen(folder: RunFolder, obs: Observation) -> str:
    """The screenshot saved once (by the sha256 of its PNG, on a worker thread); its sha."""
    sha = hashlib.sha256(obs.png).hexdigest()
    path = folder.path / screen_rel(sha)
    if not path.exists():
        await asyncio.to_thread(atomic_write_bytes, path, obs.png)
    return sha
