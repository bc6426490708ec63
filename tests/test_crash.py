"""Crash safety: `medspot eval` killed with SIGKILL at five moments and resumed each time ends
with the results of an uninterrupted run; the journal stays readable (a torn last line is
ignored and its step asked again); calls repeated on resume are only those in flight at the
kill. Ctrl-C stops cleanly and says how to resume."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from _reliability import (
    ScriptedAnswers,
    eval_args,
    journal_lines,
    protocol_minimum,
    results_of,
    start_eval,
    wait_for_lines,
)
from medspot.dataset.loading import load_dataset
from medspot.runfolder.journal import read_journal
from medspot.scoring.protocol import get_protocol
from medspot.testing.openai_server import OpenAITestServer

APPS = "Orthanc,Bluelight,Weasis"
CONCURRENCY = 4


def _finish(proc: object, timeout: float = 120) -> tuple[int, str]:
    _, err = proc.communicate(timeout=timeout)  # type: ignore[attr-defined]
    return proc.returncode, err.decode(errors="replace")  # type: ignore[attr-defined]


def test_five_kills_and_resumes_end_like_an_uninterrupted_run(
    placeholder_root: Path, tmp_path: Path
) -> None:
    ds = load_dataset(placeholder_root, apps=APPS.split(","))
    script = ScriptedAnswers(ds, miss_rate=0.3)
    minimum = protocol_minimum(ds, script, get_protocol("medspot-v1"))
    assert minimum.calls > 60  # enough room for five kills
    extra = ("--concurrency", str(CONCURRENCY))
    with OpenAITestServer(answer=script, latency=0.02) as srv:
        ref = tmp_path / "uninterrupted"
        code, err = _finish(
            start_eval(eval_args(placeholder_root, ref, srv.base_url, *extra, apps=APPS))
        )
        assert code == 0, err
        assert srv.request_count == minimum.calls

    out = tmp_path / "killed"
    journal = out / "predictions.jsonl"
    lost_at_kills: list[int] = []
    torn_steps: list[str] = []
    with OpenAITestServer(answer=script, latency=0.02) as srv:
        args = eval_args(placeholder_root, out, srv.base_url, *extra, apps=APPS)
        for i, k in enumerate((3, 15, 30, 45, 58)):
            asked0, kept0 = srv.request_count, len(list(read_journal(journal)))
            proc = start_eval(args)
            wait_for_lines(proc, journal, k)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            assert proc.returncode == -signal.SIGKILL, "the run ended before the kill"
            time.sleep(0.05)  # let the server count what was on the wire
            # requests of this run that the journal does not hold were in flight
            lost = (srv.request_count - asked0) - (len(list(read_journal(journal))) - kept0)
            assert 0 <= lost <= CONCURRENCY
            lost_at_kills.append(lost)
            if i == 2:  # a machine crash mid-write: tear the last line in half
                data = journal.read_bytes()
                last = data.rstrip(b"\n").rsplit(b"\n", 1)[-1]
                torn_steps.append(json.loads(last)["step"])
                journal.write_bytes(data[: len(data) - len(last) // 2 - 1])
        code, err = _finish(start_eval(args))
        assert code == 0, err
        total = srv.request_count
    # the journal is never corrupt: every line parses except the torn one, which was ignored
    lines = journal.read_bytes().split(b"\n")
    assert sum(1 for ln in lines if ln.strip()) == len(list(read_journal(journal))) + 1
    # repeated calls: exactly those in flight at the kills, plus the torn line's step
    assert total - minimum.calls == sum(lost_at_kills) + len(torn_steps)
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "complete"
    assert results_of(out) == results_of(ref)


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_sigterm_stops_cleanly_and_says_how_to_resume(
    placeholder_root: Path, tmp_path: Path, sig: signal.Signals, status: int
) -> None:
    ds = load_dataset(placeholder_root, apps=["Weasis"])
    script = ScriptedAnswers(ds, miss_rate=0.2)
    out = tmp_path / "run"
    with OpenAITestServer(answer=script, latency=0.05) as srv:
        args = eval_args(placeholder_root, out, srv.base_url, "--concurrency", "2", apps="Weasis")
        proc = start_eval(args)
        wait_for_lines(proc, out / "predictions.jsonl", 5)
        proc.send_signal(sig)
        code, err = _finish(proc)
        assert code == status, err
        assert "Traceback" not in err
        assert "run the same command again to resume" in err
        info = json.loads((out / "run.json").read_text())
        assert info["status"] == "interrupted"
        done = journal_lines(out / "predictions.jsonl")
        assert (
            info["calls"] == done
            and done < protocol_minimum(ds, script, get_protocol("medspot-v1")).calls
        )
        # what was answered is scored already; the same command resumes and completes
        assert (out / "overall_dataset_metrics.json").exists()
        code, err = _finish(start_eval(args))
        assert code == 0, err
    assert json.loads((out / "run.json").read_text())["status"] == "complete"
