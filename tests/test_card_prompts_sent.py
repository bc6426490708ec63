"""The prompts the models' own code sends, checked on what the real
backends send (the hf backend's processor on tiny checkpoints, the OpenAI backend against the
test server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from medspot.adapters.base import StepRequest
from medspot.adapters.cards import get_card

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from test_hf_backend import Capture, build_qwen, make, run_adapter, step  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("tiny-cards-sent")
    return {f: build_qwen(root / f, f) for f in ("qwen2_vl",)}


def _sent_texts(card: Any, ckpt: Path, reqs: list[StepRequest], **options: Any) -> list[str]:
    adapter = make(card, ckpt, **options)
    cap = Capture(adapter.runner.processor)
    adapter.runner.processor = cap
    run_adapter(adapter, reqs)
    return cap.texts


@pytest.mark.hf
def test_qwen2_vl_native_prompt_is_screenspot_pros(tiny: dict[str, Path], tmp_path: Path) -> None:
    """Item 4: ScreenSpot-Pro's Qwen2-VL wrapper (models/qwen2vl.py) asks this, image first."""
    (text,) = _sent_texts(get_card("qwen2-vl-7b"), tiny["qwen2_vl"], [step(tmp_path)])
    assert text == (
        "<|im_start|>user\n<|vision_start|>"
        + "<|image_pad|>" * text.count("<|image_pad|>")
        + "<|vision_end|>Output the bounding box in the image corresponding to the instruction "
        '"open the File menu" with grounding.<|im_end|>\n<|im_start|>assistant\n'
    )


@pytest.mark.hf
def test_uground_prompt_is_its_serve_scripts(tiny: dict[str, Path], tmp_path: Path) -> None:
    """Item 6: OSU-NLP-Group/UGround grounding/uground_qwen2vl_serve.py's text begins with a
    newline, so the model sees the image, then a line break, then the task."""
    (text,) = _sent_texts(get_card("uground-v1-7b"), tiny["qwen2_vl"], [step(tmp_path)])
    assert "<|vision_end|>\nYour task is to help the user identify the precise coordinates" in text
    assert text.endswith(
        "\n\nDescription: open the File menu\n\nAnswer:<|im_end|>\n<|im_start|>assistant\n"
    )
