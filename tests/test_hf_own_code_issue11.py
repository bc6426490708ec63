"""The GUI-Actor and SeeClick code paths of the hf backend (`hf_own_code`) on tiny random
checkpoints built offline. GUI-Actor's `gui_actor` package is not on PyPI: the stand-in in
tests/fakes/gui_actor keeps its interface (classes, `inference(...)` and `pred["topk_points"]`)
so that the backend's real rendering of the pointer output goes through the card parsers."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from medspot.adapters.base import AdapterContext, StepRequest
from medspot.adapters.card import ModelCard

pytestmark = pytest.mark.hf

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from test_hf_backend import build_qwen, run_adapter, step  # noqa: E402

FAKES = Path(__file__).parent / "fakes"


@pytest.fixture(scope="module")
def tiny_qwen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("tiny-own-code")
    return {f: build_qwen(root / f, f) for f in ("qwen2_vl", "qwen2_5_vl")}


@pytest.fixture
def gui_actor(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(FAKES))
    for name in [m for m in sys.modules if m == "gui_actor" or m.startswith("gui_actor.")]:
        monkeypatch.delitem(sys.modules, name)
    import gui_actor.inference as inf

    inf.CALLS.clear()
    return inf


def _make(card: ModelCard, ckpt: Path, style: str) -> Any:
    from medspot.adapters.backend import build_adapter

    opts = {"backend": "hf", "checkpoint": str(ckpt), "device": "cpu", "prompt_style": style}
    return build_adapter(card, AdapterContext(options=opts))


@pytest.mark.parametrize("style", ["upstream", "native"])
def test_gui_actor_backend_output_is_read_by_both_parsers(
    tiny_qwen: dict[str, Path], tmp_path: Path, gui_actor: Any, style: str
) -> None:
    """Issue 11 item 1: the backend rendered `json.dumps` (`[[x, y], ...]`), which the
    upstream parser never read: every step was no prediction."""
    from medspot.adapters.cards import get_card

    card = get_card("gui-actor-7b")
    adapter = _make(card, tiny_qwen["qwen2_5_vl"], style)
    (pred,) = run_adapter(adapter, [step(tmp_path, size=(224, 168))])
    (call,) = gui_actor.CALLS
    want_k = card.style(adapter.style_name).build(_req(tmp_path)).topk
    assert call["topk"] == want_k
    assert pred.point is not None, pred.raw_text
    assert pred.raw_text.startswith("[(")
    assert len(pred.extra_points) == want_k - 1
    assert 0.0 < pred.point.x < 1.0 and 0.0 < pred.point.y < 1.0


def _req(tmp_path: Path) -> StepRequest:
    return step(tmp_path, size=(224, 168))
