"""A screenshot that cannot be decoded is a data error: `validate` finds it (unless
--no-images), and `eval` ends with exit 2 naming the file, never a failed call that every
resume would retry."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from _builders import step, write_app
from _reliability import eval_args
from medspot.adapters.base import Convention, Prediction, StepRequest
from medspot.cli import main
from medspot.dataset.images import ImageStore
from medspot.dataset.loading import load_dataset
from medspot.errors import DataError
from medspot.geometry import Point
from medspot.runfolder.journal import Journal, read_journal
from medspot.runner import RunOptions, run_model
from medspot.scoring.protocol import get_protocol
from medspot.testing.openai_server import OpenAITestServer

BOX = (10.0, 10.0, 20.0, 20.0)


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    write_app(root, "Trunc", [[step("Images/T/t.png", "Click", BOX)]])
    write_app(root, "Good", [[step("Images/G/g.png", "Click", BOX)]])
    full = (root / "Images/T/t.png").read_bytes()
    (root / "Images/T/t.png").write_bytes(full[: len(full) // 2])
    return root


def test_validate_finds_a_truncated_screenshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _root(tmp_path)
    assert main(["validate", str(root)]) == 2
    out = "".join(capsys.readouterr())
    assert "Trunc_Annotation.json" in out and "t.png" in out and "truncated" in out
    assert main(["validate", str(root), "--no-images"]) == 0


def test_eval_stops_with_exit_2_and_spends_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _root(tmp_path)
    out = tmp_path / "out"
    with OpenAITestServer(answer="(150, 150)") as srv:
        for _ in range(2):  # a second try is the same data error, not a retry
            code = main(eval_args(root, out, srv.base_url, apps="Trunc,Good"))
            assert code == 2
            err = capsys.readouterr().err
            assert "t.png" in err and "Traceback" not in err
        assert srv.request_count == 0
    assert not any(r.error for r in read_journal(out / "predictions.jsonl"))


class _Undecodable:
    """An adapter whose image preparation finds the screenshot undecodable for one step."""

    name = "undecodable"
    convention = Convention.NORMALISED
    max_concurrency = 4

    def __init__(self, bad: str) -> None:
        self.bad = bad
        self.calls: list[str] = []

    async def predict(self, request: StepRequest) -> Prediction:
        self.calls.append(request.step_uid)
        if request.step_uid == self.bad:
            raise DataError(f"image {request.image_path} is not a readable image (broken data)")
        return Prediction(raw_text="(0.2, 0.2)", point=Point(0.2, 0.2))

    def describe(self) -> dict[str, str]:
        return {"name": self.name}

    async def aclose(self) -> None:
        return None


def test_an_adapter_that_cannot_decode_ends_the_run_with_a_located_data_error(
    tmp_path: Path,
) -> None:
    write_app(tmp_path, "A", [[step(f"Images/A/{t}.png", "Click", BOX)] for t in range(4)])
    ds = load_dataset(tmp_path)
    ad = _Undecodable("A/2/1")
    opts = RunOptions(protocol=get_protocol("medspot-v1"), backoff_base=0.0, concurrency=1)
    path = tmp_path / "out" / "predictions.jsonl"
    with Journal(path, fsync=False) as j, pytest.raises(DataError) as exc:
        asyncio.run(run_model(ds, ad, j, ImageStore(ds.root), opts, []))
    assert exc.value.location is not None
    assert exc.value.location.task == 2 and "A_Annotation.json" in exc.value.location.file
    assert "not a readable image" in str(exc.value)
    recs = list(read_journal(path))
    assert all(r.error is None for r in recs)  # nothing to "retry on resume"
    assert "A/2/1" not in {r.step for r in recs}
