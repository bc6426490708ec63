"""`medspot live ...` from the command line: a killed run resumes without repeating a model
call; bad input is exit status 2 with a located message; setup/doctor; CI installs every
environment's system packages."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _orthanc_support import CHROMIUM, require_orthanc_stack
from _runner_support import ENV, KillAndResume, processes_mentioning, steps_journaled

from medspot.cli import main
from medspot.live.loop.steplog import StepRecord, TaskRecord, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL

REPO = Path(__file__).resolve().parents[2]


def _cli_env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), MEDSPOT_TEST_KEY="test")
    return env


@pytest.mark.live
def test_killed_run_resumes_without_repeating_a_model_call(
    tmp_path: Path, kill_and_resume: Callable[..., KillAndResume]
) -> None:
    """A served card's run is killed (SIGKILL, its environment's processes too) after a few
    steps; the same command again finishes it, and the server never sees a step twice."""
    require_orthanc_stack()
    from medspot.testing.openai_server import OpenAITestServer

    ids = ["open-series-ct-doe-john-axial", "open-study-mr-doe-john"]
    out = tmp_path / "run"
    asked: Counter[tuple[str, str, int]] = Counter()

    def answer(req: Any) -> str:
        # a click on blank space near the bottom: the runner does not care whether it is
        # right; the test counts what is asked (the UI-TARS prompt carries the history, so
        # every turn's text differs)
        goal = req.text.split("Overall task: ", 1)[1].split("\n", 1)[0]
        step = req.text.split("Current step: ", 1)[1].split("\n", 1)[0]
        asked[(goal, step, req.text.count("\n"))] += 1
        return "Action: click(start_box='(644,800)')"

    with OpenAITestServer(answer=answer, latency=0.3) as srv:
        cmd = [
            sys.executable, "-m", "medspot", "live", "run", "--env", ENV,
            "--model", "ui-tars-1.5-7b", "--backend", "openai", "--base-url", srv.base_url,
            "--api-key-env", "MEDSPOT_TEST_KEY", "--tasks", ",".join(ids), "--out", str(out),
            "--env-option", f"chromium={CHROMIUM}", "--no-progress", "--bootstrap", "50",
        ]  # fmt: skip
        run = kill_and_resume(cmd, _cli_env())
        journal = out / LIVE_JOURNAL
        run.kill_when(lambda: steps_journaled(journal) >= 5, timeout_s=240)
        first = srv.request_count
        steps_before = [r for r in read_live_journal(journal) if isinstance(r, StepRecord)]
        assert first >= 2 and steps_before
        done = run.resume()
        assert done.returncode == 0, done.stderr[-2000:]
        total = srv.request_count
    recs = list(read_live_journal(journal))
    finals = {r.task: r for r in recs if isinstance(r, TaskRecord)}
    assert set(finals) == set(ids)
    assert max(asked.values()) == 1, asked  # no step was asked twice
    assert total == sum(asked.values())
    asked_again = total - first
    replayed = [r for r in recs if isinstance(r, StepRecord) and r.replayed]
    assert replayed, "the resumed task replayed its journaled answers"
    assert asked_again < total
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "complete" and info["kind"] == "live"
    assert not processes_mentioning(str(run.workroot))


def test_bad_task_file_is_exit_2_with_location(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = {
        "format_version": 1,
        "env": ENV,
        "tasks": [
            {
                "id": "t1",
                "instruction": "x",
                "steps": [{"instruction": "click", "target": {"text": "OK"}}],
                "success": [{"kind": "no.such.check"}],
            }
        ],
    }
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(bad))
    assert main(["live", "tasks", "--env", ENV, "--validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and "no.such.check" in err and "success" in err
    f.write_text("{not json")
    assert main(["live", "tasks", "--env", ENV, "--validate", str(f)]) == 2
    assert "line 1" in capsys.readouterr().err
    assert main(["live", "tasks", "--env", "no-such-env"]) == 2
    assert "unknown live environment 'no-such-env'; known:" in capsys.readouterr().err
    assert main(["live", "tasks", "--env", "orthanc-explore"]) == 2
    err = capsys.readouterr().err
    assert "'orthanc-explore' (did you mean 'orthanc-explorer'?); known:" in err
    out = tmp_path / "o"
    assert main(["live", "run", "--env", ENV, "--model", "oracle", "--tasks", "nope",
                 "--out", str(out), "--no-progress"]) == 2  # fmt: skip
    assert "unknown task id" in capsys.readouterr().err
    assert main(["live", "run", "--env", ENV, "--model", "no-such-model", "--out", str(out),
                 "--no-progress"]) == 2  # fmt: skip
    assert "unknown model" in capsys.readouterr().err
    assert main(["live", "run", "--env", ENV, "--model", "oracle", "--out", str(out),
                 "--tasks", "open-study-ct-doe-john", "--env-option", "no_such_option=1",
                 "--no-progress"]) == 2  # fmt: skip
    assert "no_such_option" in capsys.readouterr().err
    assert main(["live", "tasks", "--env", ENV]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) >= 40


def test_setup_prints_and_doctor_reports(capsys: pytest.CaptureFixture[str]) -> None:
    from medspot.live.envs.registry import env_entry, env_names

    assert main(["live", "setup", "--print"]) == 0
    text = capsys.readouterr().out
    for name in env_names():
        for pkg in env_entry(name).system_packages:
            assert pkg in text
    code = main(["live", "doctor", "--env", ENV])
    out = capsys.readouterr().out
    assert code in (0, 1) and out.startswith(f"{ENV}: ")
    assert (code == 0) == ("MISSING" not in out)


def test_doctor_names_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from medspot.live.envs import registry as base

    entry = base.env_entry(ENV)
    fake = base.EnvEntry(
        "missing-env", entry.factory, "test", entry.check_kinds, entry.locator_keys,
        system_packages=("medspot-no-such-package",),
    )  # fmt: skip
    monkeypatch.setitem(base._ENVS, "missing-env", fake)
    assert main(["live", "doctor", "--env", "missing-env"]) == 1
    assert "medspot-no-such-package is not installed" in capsys.readouterr().out


def duplicate_problem() -> list[str]:
    """A doctor hook that names what the generic module check names too."""
    return ["Python package medspot_no_such_module is missing (pip install 'medspot[live]')"]


def test_doctor_names_each_missing_thing_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from medspot.live.envs import registry

    entry = registry.env_entry(ENV)
    fake = registry.EnvEntry(
        "missing-env", entry.factory, "test", entry.check_kinds, entry.locator_keys,
        python_modules=("medspot_no_such_module", "medspot_no_such_module"),
        doctor=duplicate_problem,
    )  # fmt: skip
    monkeypatch.setitem(registry._ENVS, "missing-env", fake)
    assert main(["live", "doctor", "--env", "missing-env"]) == 1
    out = capsys.readouterr().out
    assert out.count("medspot_no_such_module is missing") == 1


def test_ci_installs_every_environments_system_packages() -> None:
    from medspot.live.envs.registry import env_entry, env_names

    script = (REPO / ".ci" / "run").read_text()
    assert "MEDSPOT_REQUIRE_LIVE=1" in script
    for name in env_names():
        for pkg in env_entry(name).system_packages:
            assert f" {pkg}" in script or f"\n  {pkg}" in script, f"{name}: {pkg} not in .ci/run"
