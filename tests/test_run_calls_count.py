"""run.json's `calls` is what the model's server received: every request, a retried one counted
each time it was sent, through the real OpenAI client against the test server (a call that
fails then succeeds, one that fails for good, and the resume that asks it again)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _builders import eval_argv, step, write_app
from medspot.cli import main
from medspot.runfolder.journal import read_journal
from medspot.testing.openai_server import Fault, OpenAITestServer, SeenRequest

BOX = (10.0, 10.0, 8.0, 8.0)


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    root = tmp_path / "data"
    write_app(root, "Viewer", [[step("Images/a.png", "Open File", BOX),
                                step("Images/b.png", "Click Save", BOX)],
                               [step("Images/c.png", "Zoom in", BOX)]])  # fmt: skip
    return root


def _eval(root: Path, out: Path, url: str, *extra: str) -> int:
    argv = eval_argv(root, out, "--model", "openai:vlm", "--base-url", url, *extra, bootstrap=20)
    return main(argv)


def _info(out: Path) -> dict[str, object]:
    info: dict[str, object] = json.loads((out / "run.json").read_text())
    return info


def test_a_retried_call_counts_each_request_sent(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    # the first request fails (500), its retry answers; the other two steps answer at once
    with OpenAITestServer(answer="(140, 140)", faults=[Fault("500", at=[1])]) as srv:
        assert _eval(data, out, srv.base_url) == 0
        received = srv.request_count
    assert received == 4  # three steps, one of them twice
    info = _info(out)
    assert info["calls"] == received and info["retries"] == 1 and info["errors"] == 0
    records = list(read_journal(out / "predictions.jsonl"))
    assert sorted(r.requests or 0 for r in records) == [1, 1, 2]


def test_a_call_that_fails_for_good_counts_every_try_and_the_resume(
    data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    always = Fault("500", when=lambda req: "Zoom in" in req.text)
    with OpenAITestServer(answer="(140, 140)", faults=[always]) as srv:
        assert _eval(data, out, srv.base_url, "--max-retries", "2") != 0  # an errored step
        first = srv.request_count
    assert first == 2 + 3  # two steps answered, one tried three times (two retries)
    info = _info(out)
    assert info["calls"] == first and info["errors"] == 1 and info["retries"] == 2
    # the resume asks the failed step again: one more request, now answered
    with OpenAITestServer(answer="(140, 140)") as srv:
        assert _eval(data, out, srv.base_url, "--max-retries", "2") == 0
        second = srv.request_count
    assert second == 1
    info = _info(out)
    assert info["calls"] == first + second and info["status"] == "complete"


def test_a_re_ask_on_an_answer_with_no_point_is_a_request(data: Path, tmp_path: Path) -> None:
    """UI-TARS's upstream prompt asks again (up to twice) when an answer holds no point."""
    out = tmp_path / "run"
    answers = iter(["I cannot see it", "(140, 140)"])

    def answer(req: SeenRequest) -> str:
        return next(answers, "(140, 140)")

    argv = ["--prompt", "upstream", "--protocol", "upstream-e"]
    with OpenAITestServer(answer=answer) as srv:
        code = main(eval_argv(data, out, "--model", "ui-tars-1.5-7b", "--base-url",
                              srv.base_url, *argv, bootstrap=20))  # fmt: skip
        received = srv.request_count
    # the first step of each task is asked (its answer misses: the tasks end there), one of
    # them twice
    assert code == 0 and received == 3
    info = _info(out)
    assert info["calls"] == received and info["retries"] == 0
    records = list(read_journal(out / "predictions.jsonl"))
    assert sorted(r.requests or 0 for r in records) == [1, 2]
