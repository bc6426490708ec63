"""One writer per run folder: a second `medspot eval` (or `score`) into a folder that a live
process is writing exits 2 naming that process; the lock of a killed process is taken over."""

from __future__ import annotations

import itertools
import signal
import threading
from pathlib import Path

from _reliability import ScriptedAnswers, eval_args, start_eval, wait_for_lines
from medspot.dataset.loading import load_dataset
from medspot.runfolder.journal import read_journal
from medspot.testing.openai_server import OpenAITestServer

APPS = "Orthanc"


def _finish(proc: object, timeout: float = 120) -> tuple[int, str]:
    _, err = proc.communicate(timeout=timeout)  # type: ignore[attr-defined]
    return proc.returncode, err.decode(errors="replace")  # type: ignore[attr-defined]


def test_second_writer_is_refused_and_a_dead_holder_is_recovered(
    placeholder_root: Path, tmp_path: Path
) -> None:
    ds = load_dataset(placeholder_root, apps=[APPS])
    script = ScriptedAnswers(ds, miss_rate=0.3)
    out = tmp_path / "run"
    journal = out / "predictions.jsonl"
    # the first run's second call waits until the checks below are done: however slow a second
    # process is to start, the first still holds the folder
    checked, calls = threading.Event(), itertools.count()

    def latency(_req: object) -> float:
        if next(calls) == 1:
            checked.wait(120)
        return 0.3

    with OpenAITestServer(answer=script, latency=latency) as srv:
        args = eval_args(placeholder_root, out, srv.base_url, "--concurrency", "1", apps=APPS)
        first = start_eval(args)
        try:
            wait_for_lines(first, journal, 1)
            assert first.poll() is None, "the first run ended too early for this test"
            code, err = _finish(start_eval(args))
            assert code == 2, err
            assert f"pid {first.pid}" in err
            assert "Traceback" not in err
            score_code, score_err = _finish(start_eval(["score", str(out), "--bootstrap", "10"]))
            assert score_code == 2, score_err
            assert f"pid {first.pid}" in score_err
        finally:
            checked.set()
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
        # the lock file of the killed process is still there; it does not block a resume
        assert (out / ".medspot.lock").exists()
        code, err = _finish(start_eval(args))
        assert code == 0, err
    # no step was asked twice: one writer at a time
    steps = [r.step for r in read_journal(journal)]
    assert len(steps) == len(set(steps))
