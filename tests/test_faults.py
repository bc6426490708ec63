"""Faults of the infrastructure never change a number: a full `medspot eval` against a server
that fails a quarter of its requests (500, 503, 429 with Retry-After, hangs past the client's
timeout, malformed bodies) ends with the results of a fault-free run, and run.json counts the
retries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _reliability import ScriptedAnswers, eval_args, protocol_minimum, results_of
from medspot.cli import main
from medspot.dataset.loading import load_dataset
from medspot.runfolder.journal import read_journal
from medspot.scoring.protocol import get_protocol
from medspot.testing.openai_server import Fault, OpenAITestServer

APPS = "Orthanc,Bluelight,Weasis"

FAULTS = (
    Fault("500", rate=0.05),
    Fault("503", rate=0.05),
    Fault("429", rate=0.05, retry_after="1"),
    Fault("hang", rate=0.05, hang_s=3.0),
    Fault("not_json", rate=0.02),
    Fault("no_choices", rate=0.015),
    Fault("no_content", rate=0.015),
)


def _run(root: Path, out: Path, srv: OpenAITestServer) -> int:
    args = eval_args(root, out, srv.base_url, "--timeout", "1", "--max-retries", "12", apps=APPS)
    return main([*args, "--concurrency", "16"])


def test_a_faulty_server_gives_the_numbers_of_a_healthy_one(
    placeholder_root: Path, tmp_path: Path
) -> None:
    ds = load_dataset(placeholder_root, apps=APPS.split(","))
    script = ScriptedAnswers(ds, miss_rate=0.3)
    minimum = protocol_minimum(ds, script, get_protocol("medspot-v1"))
    with OpenAITestServer(answer=script) as clean:
        assert _run(placeholder_root, tmp_path / "clean", clean) == 0
        assert clean.request_count == minimum.calls
    with OpenAITestServer(answer=script, faults=FAULTS, seed=7) as faulty:
        assert _run(placeholder_root, tmp_path / "faulty", faulty) == 0
        served = faulty.request_count
        faults = faulty.fault_counts
    assert script.unknown == 0
    # every fault kind happened, and each one cost exactly one retry
    assert set(faults) == {f.kind for f in FAULTS}, faults
    n_faults = sum(faults.values())
    assert served == minimum.calls + n_faults
    info = json.loads((tmp_path / "faulty" / "run.json").read_text())
    assert info["status"] == "complete"
    assert info["calls"] == served and info["errors"] == 0  # each retry was a request
    assert info["retries"] == n_faults
    records = list(read_journal(tmp_path / "faulty" / "predictions.jsonl"))
    assert sum(r.retries for r in records) == n_faults
    assert all(r.error is None for r in records)
    # the numbers, every results file, are those of the healthy run
    assert results_of(tmp_path / "faulty") == results_of(tmp_path / "clean")


def test_a_permanent_failure_is_an_error_not_a_miss_and_resume_fixes_it(
    placeholder_root: Path, tmp_path: Path
) -> None:
    ds = load_dataset(placeholder_root, apps=["Orthanc"])
    script = ScriptedAnswers(ds, miss_rate=0.0)
    out = tmp_path / "run"
    args = eval_args(placeholder_root, out, "", apps="Orthanc")
    # requests 1 and 2 get 401 (not worth retrying): two steps end as errors
    with OpenAITestServer(answer=script, faults=[Fault("401", at=[1, 2])]) as srv:
        args[args.index("--base-url") + 1] = srv.base_url
        assert main([*args, "--concurrency", "1"]) == 1  # incomplete
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "incomplete" and info["errors"] == 2
    m = json.loads((out / "overall_dataset_metrics.json").read_text())
    assert m["num_errored_tasks"] == 2
    # the server recovers: resume asks the two errored steps and what follows them
    with OpenAITestServer(answer=script) as srv:
        args[args.index("--base-url") + 1] = srv.base_url
        assert main(args) == 0
    m = json.loads((out / "overall_dataset_metrics.json").read_text())
    assert m["task_completion_accuracy"] == 1.0 and m["num_errored_tasks"] == 0


@pytest.mark.parametrize("kind", ["400", "401"])
def test_client_errors_are_not_retried(placeholder_root: Path, tmp_path: Path, kind: str) -> None:
    ds = load_dataset(placeholder_root, apps=["Orthanc"], limit=1)
    script = ScriptedAnswers(ds, miss_rate=0.0)
    with OpenAITestServer(answer=script, faults=[Fault(kind, rate=1.0)]) as srv:
        args = eval_args(placeholder_root, tmp_path / "r", srv.base_url, apps="Orthanc")
        assert main([*args, "--limit", "1"]) == 1
        assert srv.request_count == 1  # one step asked once: no retry of a 4xx
    (rec,) = read_journal(tmp_path / "r" / "predictions.jsonl")
    assert rec.error is not None and f"HTTP {kind}" in rec.error and rec.point is None
