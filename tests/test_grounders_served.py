"""The grounding cards added after the paper served over the OpenAI-compatible test server, each
answering in its own syntax and frame (`_served_model.grounder_answer`): `medspot eval` on the
synthetic suite end to end (a server that clicks every target's centre must complete every
task, through each card's prompt, image preparation, parser and convention), and
`medspot check-model` fitting the card's declared convention."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _served_model import answer, grounder_answer
from medspot.cli import main
from medspot.dataset.loading import load_dataset
from medspot.runfolder.journal import read_journal
from medspot.testing.openai_server import OpenAITestServer, SeenRequest

GROUNDERS = ["holo2", "ui-venus-1.5", "mai-ui", "gta1", "gta1-opencua", "gui-owl-1.5"]
# A fragment of each model's own answer syntax, as journaled.
SYNTAX = {
    "holo2": '{"x": ',
    "ui-venus-1.5": "[",
    "mai-ui": '<answer>\n{"coordinate": [',
    "gta1": "(",
    "gta1-opencua": "pyautogui.click(x=",
    "gui-owl-1.5": '"action": "left_click", "coordinate": [',
}


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from medspot.synth import generate

    root = tmp_path_factory.mktemp("synth")
    generate(root, tasks=5, seed=3, apps=5)
    return root


def _targets(root: Path) -> dict[str, tuple[float, float]]:
    """instruction -> the centre of its target box (the suite's instructions are distinct)."""
    out: dict[str, tuple[float, float]] = {}
    for s in load_dataset(root).steps():
        b = s.boxes[0]
        centre = ((b.x1 + b.x2) / 2, (b.y1 + b.y2) / 2)
        assert out.setdefault(s.instruction.rstrip("."), centre) == centre
    return out


@pytest.mark.parametrize("name", GROUNDERS)
def test_eval_on_the_synthetic_suite_in_the_models_syntax(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    targets = _targets(suite)
    seen: list[SeenRequest] = []

    def clicks_the_target(req: SeenRequest) -> str:
        seen.append(req)
        instruction = max((i for i in targets if i in req.text), key=len)
        assert req.image is not None
        text = grounder_answer(req.model, *targets[instruction], req.image.size)
        assert text is not None
        return text

    out = tmp_path / name
    with OpenAITestServer(answer=clicks_the_target) as srv:
        argv = ["eval", "--data", str(suite), "--model", name, "--base-url", srv.base_url]
        code = main([*argv, "--out", str(out), "--no-progress", "--bootstrap", "50"])
    assert code == 0
    metrics = json.loads((out / "overall_dataset_metrics.json").read_text())
    assert metrics["task_completion_accuracy"] == 1.0  # every step hit, in this model's frame
    records = list(read_journal(out / "predictions.jsonl"))
    assert records and all(r.error is None and r.point is not None for r in records)
    assert all(SYNTAX[name] in (r.raw_text or "") for r in records)
    info = json.loads((out / "run.json").read_text())
    assert info["adapter"]["name"] == name and info["adapter"]["backend"] == "openai"
    assert {r.model for r in seen} == {info["adapter"]["checkpoint"]}


@pytest.mark.parametrize("name", GROUNDERS)
def test_check_model_fits_the_declared_convention(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAITestServer(answer=answer) as srv:
        code = main(["check-model", name, "--base-url", srv.base_url, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["consistent"] is True
    assert abs(out["fit_x"]["scale"] - 1) < 0.01 and abs(out["fit_y"]["scale"] - 1) < 0.01


def test_check_model_refuses_a_server_in_another_frame(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A GTA1 server answering on 0..1000 (not pixels of the image sent) is caught."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def rel1000(req: SeenRequest) -> str:
        text = answer(req)  # pixels of the image sent
        assert req.image is not None
        w, h = req.image.size
        x, y = (int(v) for v in text.strip("()").split(","))
        return f"({round(x / w * 1000)},{round(y / h * 1000)})"

    with OpenAITestServer(answer=rel1000) as srv:
        code = main(["check-model", "gta1", "--base-url", srv.base_url, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["consistent"] is False


def test_holo2_requests_switch_thinking_off(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every request of a served Holo2 run carries Holo2's own chat-template switch (vLLM's
    `chat_template_kwargs`), `thinking: false`, and not Qwen3's `enable_thinking`."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    seen: list[SeenRequest] = []

    def record(req: SeenRequest) -> str:
        seen.append(req)
        return answer(req)

    with OpenAITestServer(answer=record) as srv:
        argv = ["eval", "--data", str(suite), "--model", "holo2", "--base-url", srv.base_url]
        code = main([*argv, "--out", str(tmp_path / "run"), "--no-progress"])
    assert code == 0 and seen
    for req in seen:
        assert req.body["chat_template_kwargs"] == {"thinking": False}
        assert "enable_thinking" not in json.dumps(req.body)


@pytest.mark.parametrize(
    ("model", "given", "right"),
    [
        ("gta1", "Salesforce/GTA1-7B", "gta1-opencua"),
        ("gta1-opencua", "HelloKKMe/GTA1-7B-2507", "gta1"),
    ],
)
def test_a_gta1_card_refuses_the_other_release_before_anything_is_written(
    suite: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    model: str,
    given: str,
    right: str,
) -> None:
    """A server of the October GTA1 asked with the July card's prompt (or the reverse) would be
    scored in the wrong frame: the run is refused, naming the card that runs that checkpoint."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "run"
    with OpenAITestServer(answer=answer) as srv:
        argv = ["eval", "--data", str(suite), "--model", model, "--base-url", srv.base_url]
        code = main([*argv, "--api-model", given, "--out", str(out), "--no-progress"])
        assert srv.requests == []
    assert code == 2
    assert f"run it with --model {right}" in capsys.readouterr().err
    assert not out.exists()
