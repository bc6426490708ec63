"""Disk trouble: a full disk or a read-only output folder gives a clear error (exit 2) and
keeps what was already written; after making room, the same command resumes.

A small tmpfs is mounted for these tests (remounted read-only or larger as needed). Mounting
needs root (or CAP_SYS_ADMIN); elsewhere the tests skip, except the read-only one, which uses
file permissions when it runs as an ordinary user (permissions do not stop root)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from _reliability import ScriptedAnswers, eval_args, results_of
from medspot.cli import main
from medspot.dataset.loading import load_dataset
from medspot.runfolder.journal import Journal, JournalRecord, JournalWriteError, read_journal
from medspot.testing.openai_server import OpenAITestServer

APPS = "Orthanc,Bluelight,Weasis"


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True)


@contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    got = _mount("-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path))
    if got.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {got.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _remount(path: Path, opts: str) -> None:
    got = _mount("-o", f"remount,{opts}", str(path))
    assert got.returncode == 0, got.stderr


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_full_disk_stops_with_a_clear_error_and_keeps_the_journal(
    placeholder_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = load_dataset(placeholder_root, apps=APPS.split(","))
    script = ScriptedAnswers(ds, miss_rate=0.3)
    with OpenAITestServer(answer=script) as srv:
        ref = tmp_path / "ref"
        assert main(eval_args(placeholder_root, ref, srv.base_url, apps=APPS)) == 0
        ref_lines = len(list(read_journal(ref / "predictions.jsonl")))
        with tmpfs(tmp_path / "disk", "24k") as disk:
            out = disk / "run"
            args = eval_args(placeholder_root, out, srv.base_url, apps=APPS)
            capsys.readouterr()
            assert main([*args, "--concurrency", "4"]) == 2
            err = capsys.readouterr().err
            assert "cannot append to the journal" in err
            assert "No space left on device" in err
            assert "run the same command again to resume" in err
            assert "Traceback" not in err
            kept = list(read_journal(out / "predictions.jsonl"))
            assert 0 < len(kept) < ref_lines  # what was written is there and readable
            # room is made: the same command resumes and ends like the uninterrupted run
            _remount(disk, "size=16m")
            assert main(args) == 0
            assert results_of(out) == results_of(ref)
            steps = [r.step for r in read_journal(out / "predictions.jsonl")]
            assert len(steps) == len(set(steps)) == ref_lines  # no step asked twice


def test_journal_on_a_device_that_refuses_writes(tmp_path: Path) -> None:
    """Without mounting anything: /dev/full always answers ENOSPC."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    path = tmp_path / "predictions.jsonl"
    path.symlink_to("/dev/full")
    rec = JournalRecord(step="A/0/1", task="A/0", image_path="a.png", point=(0.5, 0.5))
    with Journal(path, fsync=False) as j, pytest.raises(JournalWriteError) as e:
        j.append(rec)
    assert "No space left on device" in str(e.value)
    assert e.value.exit_code == 2


def test_a_read_only_output_folder_is_a_clear_error_and_nothing_is_lost(
    placeholder_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = load_dataset(placeholder_root, apps=["Orthanc"])
    script = ScriptedAnswers(ds, miss_rate=0.3)
    with (
        OpenAITestServer(answer=script) as srv,
        tmpfs(tmp_path / "disk", "4m") as disk,
    ):
        out = disk / "run"
        args = eval_args(placeholder_root, out, srv.base_url, apps="Orthanc")
        assert main([*args, "--limit", "5"]) == 0
        before = _files(out)
        _remount(disk, "ro")
        try:
            capsys.readouterr()
            # resuming with more tasks needs to write: refused, clearly, nothing changed
            assert main(args) == 2
            err = capsys.readouterr().err
            assert "cannot write" in err and "Read-only file system" in err
            assert "Traceback" not in err
            assert _files(out) == before
            # a new run folder under the read-only mount
            assert main(eval_args(placeholder_root, disk / "new", srv.base_url)) == 2
            err = capsys.readouterr().err
            assert "cannot create the output folder" in err
            # scoring into the read-only folder is refused the same way
            assert main(["score", str(out), "--data", str(placeholder_root)]) == 2
            assert "Read-only file system" in capsys.readouterr().err
            assert _files(out) == before
        finally:
            _remount(disk, "rw")
    info = json.loads(before["run.json"])
    assert info["status"] == "complete"
