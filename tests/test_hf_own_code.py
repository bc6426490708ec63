"""The GUI-Actor and SeeClick code paths of the hf backend (`hf_own_code`) on tiny random
checkpoints built offline. GUI-Actor's `gui_actor` package is not on PyPI: the stand-in in
tests/fakes/gui_actor keeps its interface (classes, `inference(...)` and `pred["topk_points"]`)
so that the backend's real rendering of the pointer output goes through the card parsers."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from medspot.adapters.base import AdapterContext, StepRequest
from medspot.adapters.card import ModelCard

pytestmark = pytest.mark.hf

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from test_hf_backend import (  # noqa: E402
    _qwen_ids,
    _text_cfg,
    build_qwen,
    qwen_tokenizer,
    run_adapter,
    step,
)

FAKES = Path(__file__).parent / "fakes"


@pytest.fixture(scope="module")
def tiny_qwen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("tiny-own-code")
    return {f: build_qwen(root / f, f) for f in ("qwen2_vl", "qwen2_5_vl")}


def _forget_gui_actor() -> None:
    for name in [m for m in sys.modules if m == "gui_actor" or m.startswith("gui_actor.")]:
        del sys.modules[name]


@pytest.fixture
def gui_actor(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The stand-in gui_actor package importable for one test, then forgotten again (other
    tests check the message for a missing package)."""
    _forget_gui_actor()
    monkeypatch.syspath_prepend(str(FAKES))
    import gui_actor.inference as inf

    inf.CALLS.clear()
    yield inf
    _forget_gui_actor()


def _make(card: ModelCard, ckpt: Path, style: str) -> Any:
    from medspot.adapters.factory import build_adapter

    opts = {"backend": "hf", "checkpoint": str(ckpt), "device": "cpu", "prompt_style": style}
    return build_adapter(card, AdapterContext.with_options(opts))


@pytest.mark.parametrize("style", ["upstream", "native"])
def test_gui_actor_backend_output_is_read_by_both_parsers(
    tiny_qwen: dict[str, Path], tmp_path: Path, gui_actor: Any, style: str
) -> None:
    """the backend rendered `json.dumps` (`[[x, y], ...]`), which the
    upstream parser never read: every step was no prediction."""
    from medspot.adapters.cards import get_card

    card = get_card("gui-actor-7b")
    adapter = _make(card, tiny_qwen["qwen2_5_vl"], style)
    (pred,) = run_adapter(adapter, [step(tmp_path, size=(224, 168))])
    (call,) = gui_actor.CALLS
    want_k = card.style(adapter.style_name).build(_req(tmp_path)).topk
    assert call["topk"] == want_k
    assert pred.point is not None, pred.raw_text
    assert pred.raw_text is not None and pred.raw_text.startswith("[(")
    assert len(pred.extra_points) == want_k - 1
    assert 0.0 < pred.point.x < 1.0 and 0.0 < pred.point.y < 1.0


def _req(tmp_path: Path) -> StepRequest:
    return step(tmp_path, size=(224, 168))


# Qwen/Qwen-VL-Chat's generation_config.json, which SeeClick's README loads.
QWEN_VL_CHAT_GENERATION = {
    "chat_format": "chatml",
    "do_sample": True,
    "top_k": 0,
    "top_p": 0.3,
    "max_new_tokens": 512,
    "max_window_size": 6144,
}


def build_qwen_vl_chat(out: Path) -> Path:
    """A tiny checkpoint with Qwen-VL-Chat-shaped remote code (tests/fakes/qwen_vl_chat)."""
    import json
    import shutil

    tok = qwen_tokenizer()
    ids = _qwen_ids(tok)
    cfg = transformers.Qwen2Config(**_text_cfg(len(tok), ids))
    cfg.auto_map = {"AutoModelForCausalLM": "modeling_fake_qwen_vl.FakeQwenVL"}
    model = transformers.Qwen2ForCausalLM(cfg)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    for f in (FAKES / "qwen_vl_chat").glob("*.py"):
        shutil.copy(f, out / f.name)
    tc = json.loads((out / "tokenizer_config.json").read_text())
    tc["auto_map"] = {"AutoTokenizer": ["tokenization_fake_qwen_vl.FakeQwenVLTokenizer", None]}
    tc["tokenizer_class"] = "FakeQwenVLTokenizer"
    (out / "tokenizer_config.json").write_text(json.dumps(tc))
    gen = {**QWEN_VL_CHAT_GENERATION, "eos_token_id": ids["<|im_end|>"]}
    gen["pad_token_id"] = ids["<|endoftext|>"]
    (out / "generation_config.json").write_text(json.dumps(gen))
    return out


def test_seeclick_decodes_as_the_card_and_the_run_record_say(tmp_path: Path) -> None:
    """the Qwen-VL chat path sampled with the checkpoint's generation config
    (do_sample, top_p 0.3, 512 tokens) while the run recorded greedy."""
    from dataclasses import replace

    from medspot.adapters.cards import get_card

    torch.manual_seed(0)
    ckpt = build_qwen_vl_chat(tmp_path / "seeclick")
    card = replace(get_card("seeclick"), processor_checkpoint=str(ckpt))
    adapter = _make(card, ckpt, "native")
    preds = run_adapter(adapter, [step(tmp_path, name="a.png"), step(tmp_path, name="b.png")])
    seen = adapter.runner.model.seen_generation_configs
    assert len(seen) == 2
    want = card.native.build(_req(tmp_path)).max_new_tokens
    for cfg in seen:
        assert cfg.do_sample is False
        assert cfg.max_new_tokens == want
        assert cfg.chat_format == "chatml"  # the rest of the checkpoint's config is kept
    assert adapter.describe()["decoding"] == "greedy"
    assert preds[0].raw_text == preds[1].raw_text  # same prompt, greedy: same answer


def test_gui_actor_qwen2_vl_has_its_class_and_system_message(
    tiny_qwen: dict[str, Path], tmp_path: Path, gui_actor: Any
) -> None:
    """microsoft/GUI-Actor-7B-Qwen2-VL was loaded with the Qwen2.5-VL pointer
    class and system prompt; it has its own card, class and Aguvis-style system message."""
    from medspot.adapters.cards import get_card
    from medspot.adapters.cards.gui_actor import QWEN2VL_SYSTEM

    card = get_card("gui-actor-7b-qwen2-vl")
    assert card.checkpoint == "microsoft/GUI-Actor-7B-Qwen2-VL"
    assert get_card("gui-actor-7b").aliases.count(card.checkpoint) == 0
    adapter = _make(card, tiny_qwen["qwen2_vl"], "native")
    assert adapter.describe()["model_class"] == "Qwen2VLForConditionalGenerationWithPointer"
    (pred,) = run_adapter(adapter, [step(tmp_path, size=(224, 168))])
    (call,) = gui_actor.CALLS
    system, user = call["conversation"]
    assert system["content"] == [{"type": "text", "text": QWEN2VL_SYSTEM}]
    assert QWEN2VL_SYSTEM.startswith("You are a GUI agent. You are given a task and a screenshot")
    assert user["content"][1] == {"type": "text", "text": "open the File menu"}
    assert pred.point is not None


@pytest.mark.parametrize(
    ("name", "family", "other"),
    [
        ("gui-actor-7b", "qwen2_vl", "gui-actor-7b-qwen2-vl"),
        ("gui-actor-7b-qwen2-vl", "qwen2_5_vl", "gui-actor-7b"),
    ],
)
def test_gui_actor_backbone_mismatch_names_the_right_card(
    tiny_qwen: dict[str, Path], gui_actor: Any, name: str, family: str, other: str
) -> None:
    from medspot.adapters.cards import get_card
    from medspot.errors import ConfigError

    with pytest.raises(ConfigError, match=f"use --model {other}$"):
        _make(get_card(name), tiny_qwen[family], "native")
