"""The pure pieces of the Inspect integration: the Inspect metric is medspot's pooled metric
over the scored tasks (whatever the protocol and mode), a card's request reads into Inspect's
messages and config in the order and with the settings the OpenAI-compatible backend posts,
a sample Inspect ended with an error becomes an error record of the step it was on, and the
`inspect` extra stays lazy (the error names it)."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from medspot.adapters.card import PromptSpec
from medspot.cli import main
from medspot.dataset.loading import load_dataset
from medspot.dataset.records import Dataset
from medspot.integrations.inspect.importer import sample_records
from medspot.integrations.inspect.logfile import InspectSample
from medspot.integrations.inspect.rows import (
    pooled_metrics,
    record_rows,
    records_of,
    score_metadata,
    score_value,
)
from medspot.runfolder.journal import JournalRecord
from medspot.scoring.protocol import get_protocol
from medspot.scoring.score import latest_predictions, score_run

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def dataset(placeholder_root: Path) -> Dataset:
    return load_dataset(placeholder_root)


def _records(ds: Dataset, seed: int, skip: float = 0.05) -> list[JournalRecord]:
    """A record per annotated step: a click inside the first box or anywhere, some steps
    left unanswered (their tasks incomplete) and some answered with no point."""
    rng = random.Random(seed)
    out = []
    for step in ds.steps():
        if not step.annotated or rng.random() < skip:
            continue
        box = step.boxes[0]
        r = rng.random()
        if r < 0.6:
            point: tuple[float, float] | None = (box.center.x, box.center.y)
        elif r < 0.9:
            point = (rng.random(), rng.random())
        else:
            point = None
        out.append(JournalRecord(step=step.uid, task=step.task_uid, image_path=step.image_path,
                                 image_size=(1920, 1080), point=point, raw_text="x"))  # fmt: skip
    return out


@pytest.mark.parametrize("protocol", ["medspot-v1", "upstream-a", "upstream-b", "upstream-e"])
@pytest.mark.parametrize("all_steps", [False, True])
def test_the_inspect_metric_is_medspots_pooled_metric(
    dataset: Dataset, protocol: str, all_steps: bool
) -> None:
    records = records_of(record_rows(_records(dataset, seed=len(protocol) + all_steps)))
    run = score_run(dataset, records, get_protocol(protocol), all_steps=all_steps, n_boot=0)
    assert run.overall.num_errored_tasks > 0  # not vacuous: some tasks are left out
    pairs = [(score_value(t), str(score_metadata(t)["status"])) for t in run.tasks]
    got = pooled_metrics(pairs, all_steps=all_steps)
    want = {k: v for k, v in run.overall.values.items() if v is not None}
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key


def test_the_records_go_through_a_store_unchanged(dataset: Dataset) -> None:
    records = _records(dataset, seed=1)
    assert records_of(record_rows(records)) == records


def test_an_errored_sample_becomes_an_error_record_of_its_step(dataset: Dataset) -> None:
    protocol = get_protocol("medspot-v1")
    task = next(t for t in dataset.tasks() if sum(s.annotated for s in t.steps) >= 3)
    first, second = [s for s in task.steps if s.annotated][:2]
    hit = JournalRecord(step=first.uid, task=task.uid, image_path=first.image_path,
                        point=(first.boxes[0].center.x, first.boxes[0].center.y))  # fmt: skip
    failed = InspectSample(id=task.uid, epoch=1, records=(hit,), error="RateLimitError: 429")
    again = InspectSample(id=task.uid, epoch=2, records=(), error="later epoch")
    recs = sample_records(dataset, [failed, again], protocol, all_steps=False)
    assert [r.step for r in recs] == [first.uid, second.uid]
    assert recs[1].error is not None and "RateLimitError: 429" in recs[1].error
    ok, errored = latest_predictions(recs)
    assert set(ok) == {first.uid} and set(errored) == {second.uid}
    # all-steps mode: the first annotated step without an answer
    every = sample_records(dataset, [failed], protocol, all_steps=True)
    assert every[-1].step == second.uid and every[-1].error is not None


def test_inspect_request_is_the_backends_request() -> None:
    pytest.importorskip("inspect_ai")
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageUser,
        ContentImage,
        ContentText,
    )

    from medspot.integrations.inspect.model_call import inspect_request

    url = "data:image/png;base64,AAAA"
    spec = PromptSpec(
        user_text="Click OK", system="You ground.", image_first=False, max_new_tokens=77,
        temperature=0.0, stop=("<end>",), detail="high", keep_special_tokens=True,
        assistant_prefill="<|recipient|>os\n", chat_template_kwargs=(("thinking", False),),
    )  # fmt: skip
    req = inspect_request(spec, url, temperature=0.0, seed=7, server_extras=True)
    system, user, prefill = req.messages
    assert isinstance(system, ChatMessageSystem) and system.text == "You ground."
    assert isinstance(user, ChatMessageUser) and isinstance(prefill, ChatMessageAssistant)
    assert not isinstance(user.content, str)
    text, image = user.content  # image_first=False: the text, then the image
    assert isinstance(text, ContentText) and text.text == "Click OK"
    assert isinstance(image, ContentImage) and image.image == url and image.detail == "high"
    assert prefill.text == "<|recipient|>os\n"
    c = req.config
    assert (c.max_tokens, c.temperature, c.stop_seqs, c.seed) == (77, 0.0, ["<end>"], 7)
    assert c.extra_body == {
        "continue_final_message": True, "add_generation_prompt": False,
        "skip_special_tokens": False, "chat_template_kwargs": {"thinking": False},
    }  # fmt: skip
    # OpenAI's own API: no server extras; earlier answers between the text and the image
    plain = PromptSpec(user_text="Go", earlier=("click(1,2)",), reasoning_effort="low")
    req = inspect_request(plain, url, temperature=None, seed=0, server_extras=False)
    assert [m.role for m in req.messages] == ["user", "assistant", "user"]
    content = req.messages[2].content
    assert not isinstance(content, str)
    (last,) = content
    assert isinstance(last, ContentImage)
    assert req.config.extra_body is None and req.config.reasoning_effort == "low"
    assert req.config.temperature is None


def test_import_inspect_without_inspect_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # `import inspect_ai` fails
    log = tmp_path / "x.eval"
    log.write_bytes(b"PK")
    assert main(["import-inspect", str(log), "--out", str(tmp_path / "run")]) == 2
    assert "pip install 'medspot[inspect]'" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_import_inspect_refuses_what_is_not_a_log_of_the_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("inspect_ai")
    bad = tmp_path / "notes.eval"
    bad.write_text("not a log")
    assert main(["import-inspect", str(bad), "--out", str(tmp_path / "run")]) == 2
    assert f"{bad}: not an Inspect log" in capsys.readouterr().err
    assert main(["import-inspect", str(tmp_path / "gone.eval"), "--out", str(tmp_path / "r")]) == 2
    assert "no such Inspect log" in capsys.readouterr().err
    # the log of another task
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample

    (other,) = inspect_eval(
        Task(dataset=[Sample(input="hello")], solver=[], name="other"), model="mockllm/model",
        log_dir=str(tmp_path / "logs"), display="none",
    )  # fmt: skip
    assert main(["import-inspect", other.location, "--out", str(tmp_path / "run")]) == 2
    assert "the log of task 'other', not of medspot/medspot" in capsys.readouterr().err
    assert not (tmp_path / "run").exists() and not (tmp_path / "r").exists()


def test_the_command_line_does_not_import_inspect() -> None:
    code = (
        "import sys, medspot.cli as c; c.build_parser(); "
        "import medspot.integrations.inspect.importer; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'inspect_ai'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert out.stdout.strip() == "[]"
