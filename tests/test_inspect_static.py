"""`inspect eval medspot/medspot` against the scripted OpenAI-compatible test server through
Inspect's `openai-api` provider gives `medspot eval`'s metrics (same card, same answers), on
the real annotations with placeholder screenshots; its log becomes, by `medspot
import-inspect`, a run folder that `report`, `leaderboard` and `compare` take, its leaderboard
row the eval run's.

The server's answers are test_eval_openai's script (per screenshot bytes and instruction: every
step hits but position 2 of the even-index tasks), so both harnesses must send the same image
bytes and prompt text for every request to be placed."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from _builders import run_eval
from _inspect_support import inspect_env, inspect_site, run_inspect
from medspot.cli import main
from medspot.dataset.loading import load_dataset
from medspot.scoring.metrics import METRIC_KEYS
from medspot.testing.openai_server import Fault, OpenAITestServer
from test_eval_openai import Script, _failing_task, expected

pytest.importorskip("inspect_ai")
pytest.importorskip("openai")

__all__ = ["inspect_site"]  # the fixture, used by name

KEY = "sk-test-inspect-9d1f"
BOOT = "50"


@pytest.fixture(scope="module")
def script(placeholder_root: Path) -> Script:
    return Script.build(load_dataset(placeholder_root))


def _inspect_eval(
    site: Path, root: Path, srv: OpenAITestServer, logs: Path, cwd: Path, *task_args: str
) -> Path:
    """`inspect eval medspot/medspot` as the docs show it; the log it wrote."""
    argv = [
        "eval", "medspot/medspot", "--model", "openai-api/scripted/scripted",
        "--model-base-url", srv.base_url, "-T", f"data={root}", "-T", "protocol=medspot-v1",
        "-T", "card=openai:scripted", *task_args, "--log-dir", str(logs), "--display", "plain",
    ]  # fmt: skip
    code, out = run_inspect(argv, inspect_env(site, {"SCRIPTED_API_KEY": KEY}), cwd)
    assert code == 0, out[-4000:]
    (log,) = logs.glob("*.eval")
    return log


def _medspot_eval(root: Path, out: Path, srv: OpenAITestServer, *extra: str) -> None:
    model = ("--model", "openai:scripted", "--convention", "rel1000", "--base-url", srv.base_url)
    assert run_eval(root, out, *model, *extra, bootstrap=int(BOOT)) == 0


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _log_metrics(log: Path) -> dict[str, float]:
    from inspect_ai.log import read_eval_log

    ev = read_eval_log(str(log))
    assert ev.status == "success" and ev.results is not None
    (scores,) = ev.results.scores
    return {k: m.value for k, m in scores.metrics.items()}


def _assert_same_metrics(got: dict[str, float], metrics_file: Path) -> None:
    want = _json(metrics_file)
    keys = [k for k in METRIC_KEYS if want.get(k) is not None]
    assert keys and set(got) == set(keys)
    for k in keys:
        assert got[k] == pytest.approx(want[k], abs=1e-9, rel=0), k


def _completed(run: Path, apps: tuple[str, ...]) -> dict[str, bool]:
    return {
        t["task_id"]: bool(t["completed"])
        for app in apps
        for t in _json(run / app / "task_results.json")
        if t["status"] == "scored"
    }


@pytest.mark.slow
def test_inspect_eval_gives_medspot_eval_metrics_and_imports_as_a_run(
    inspect_site: Path, placeholder_root: Path, script: Script, tmp_path: Path
) -> None:
    logs, ours = tmp_path / "logs", tmp_path / "eval"
    with OpenAITestServer(answer=script.answer) as srv:
        log = _inspect_eval(inspect_site, placeholder_root, srv, logs, tmp_path)
        inspect_requests = srv.request_count
        models = {r.model for r in srv.requests}
        auth = {r.headers.get("authorization") for r in srv.requests}
    with OpenAITestServer(answer=script.answer) as srv:
        _medspot_eval(placeholder_root, ours, srv)
        eval_requests = srv.request_count
    assert not script.unknown  # every request of both harnesses was placed by the script
    assert models == {"scripted"} and auth == {f"Bearer {KEY}"}
    info = _json(ours / "run.json")
    calls = expected(script, script.ds.tasks()).calls  # sequential: the steps reached
    assert inspect_requests == eval_requests == info["calls"] == calls
    _assert_same_metrics(_log_metrics(log), ours / "overall_dataset_metrics.json")

    # the log as a run folder: the same rows and metrics as the eval run
    imported = tmp_path / "imported"
    assert main(["import-inspect", str(log), "--out", str(imported), "--bootstrap", BOOT]) == 0
    apps = tuple(script.ds.app_names)
    assert _completed(imported, apps) == _completed(ours, apps)
    assert len(_completed(ours, apps)) == 216
    mine, theirs = (
        _json(imported / "overall_dataset_metrics.json"),
        _json(ours / "overall_dataset_metrics.json"),
    )
    assert mine == theirs
    run_info = _json(imported / "run.json")
    assert run_info["status"] == "complete" and run_info["calls"] == calls
    assert run_info["imported"]["notes"] == []  # the log's metrics are the rescoring's
    assert run_info["adapter"]["inspect_model"] == "openai-api/scripted/scripted"

    from medspot.report.leaderboard import build_leaderboard
    from medspot.runfolder.reader import load_runs

    eval_row, import_row = build_leaderboard(load_runs([ours, imported])).rows
    assert dataclasses.replace(import_row, label=eval_row.label) == eval_row
    report = tmp_path / "report"
    assert main(["report", str(imported), "--out", str(report), "--no-plots"]) == 0
    assert (report / "index.html").is_file()
    assert main(["compare", str(ours), str(imported), "--bootstrap", BOOT]) == 0


@pytest.mark.slow
def test_all_steps_apps_and_limit_give_medspot_eval_metrics(
    inspect_site: Path,
    placeholder_root: Path,
    script: Script,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """All-steps mode (ISA and the propagation gap too) on two applications, three tasks each."""
    logs, ours = tmp_path / "logs", tmp_path / "eval"
    args = ("-T", "all_steps=true", "-T", "apps=Orthanc,Weasis", "-T", "limit=3")
    with OpenAITestServer(answer=script.answer) as srv:
        log = _inspect_eval(inspect_site, placeholder_root, srv, logs, tmp_path, *args)
        n = srv.request_count
    with OpenAITestServer(answer=script.answer) as srv:
        _medspot_eval(placeholder_root, ours, srv, "--all-steps", "--apps", "Orthanc,Weasis",
                      "--limit", "3")  # fmt: skip
        assert srv.request_count == n
    got = _log_metrics(log)
    assert {"independent_step_accuracy", "propagation_gap"} <= set(got)
    _assert_same_metrics(got, ours / "overall_dataset_metrics.json")
    imported = tmp_path / "imported"
    assert main(["import-inspect", str(log), "--out", str(imported), "--bootstrap", BOOT]) == 0
    assert _json(imported / "overall_dataset_metrics.json") == _json(
        ours / "overall_dataset_metrics.json"
    )
    assert _json(imported / "run.json")["dataset"]["limit"] == 3
    # a full --out, and annotations other than those the log was made on, are refused
    capsys.readouterr()
    assert main(["import-inspect", str(log), "--out", str(imported)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    other = tmp_path / "other"
    (other / "Annotations").mkdir(parents=True)
    for app in ("Orthanc", "Weasis"):
        shutil.copytree(placeholder_root / "Images" / app, other / "Images" / app)
    for app in ("Orthanc", "Weasis"):
        name = f"{app}_Annotation.json"
        text = (placeholder_root / "Annotations" / name).read_text(encoding="utf-8")
        (other / "Annotations" / name).write_text(text + "\n", encoding="utf-8")
    again = tmp_path / "again"
    assert main(["import-inspect", str(log), "--out", str(again), "--data", str(other)]) == 2
    assert "differ from those the log's run was made on" in capsys.readouterr().err
    assert not again.exists()


def test_a_failed_call_is_an_error_in_both_harnesses_and_in_the_imported_run(
    inspect_site: Path, placeholder_root: Path, script: Script, tmp_path: Path
) -> None:
    """A call the server refuses (HTTP 400: not retried) ends its Inspect sample with an error
    (`--no-fail-on-error`: the others run on); the import journals it as an error record of
    that step, as `medspot eval` does: the task is left out, the run incomplete, and the
    metrics of the rest are eval's."""
    apps = ("Orthanc", "Weasis")
    bad_task = _failing_task(script, "Orthanc")
    bad_step = next(s for s in bad_task.steps if s.actions)
    bad_key = script.key_of[bad_step.uid]

    def faults() -> list[Fault]:
        return [Fault("400", when=lambda req: script.key_of_request(req) == bad_key)]

    logs, ours = tmp_path / "logs", tmp_path / "eval"
    with OpenAITestServer(answer=script.answer, faults=faults()) as srv:
        log = _inspect_eval(inspect_site, placeholder_root, srv, logs, tmp_path,
                            "-T", "apps=" + ",".join(apps), "--no-fail-on-error")  # fmt: skip
    with OpenAITestServer(answer=script.answer, faults=faults()) as srv:
        model = ("--model", "openai:scripted", "--convention", "rel1000", "--base-url",
                 srv.base_url, "--apps", ",".join(apps))  # fmt: skip
        assert run_eval(placeholder_root, ours, *model, bootstrap=int(BOOT)) == 1  # incomplete
    imported = tmp_path / "imported"
    assert main(["import-inspect", str(log), "--out", str(imported), "--bootstrap", BOOT]) == 0
    info = _json(imported / "run.json")
    assert info["status"] == "incomplete" and info["errors"] == 1
    errors = [
        json.loads(line) for line in (imported / "predictions.jsonl").read_text().splitlines()
    ]
    assert [r["step"] for r in errors if r["error"]] == [bad_step.uid]
    mine = _json(imported / "overall_dataset_metrics.json")
    theirs = _json(ours / "overall_dataset_metrics.json")
    assert mine["num_errored_tasks"] == theirs["num_errored_tasks"] == 1
    assert {k: mine[k] for k in METRIC_KEYS if k in theirs} == {
        k: theirs[k] for k in METRIC_KEYS if k in theirs
    }
