"""The grounding cards added after the paper (Holo2, UI-Venus-1.5, MAI-UI, GTA1, GUI-Owl-1.5) on
the transformers backend, each on a tiny randomly initialised checkpoint of its base
architecture built offline here (Qwen3-VL, Qwen3-VL-MoE for the 30B-A3B sizes, Qwen2.5-VL):
the card's own prompt reaches the processor (system message, image order, chat-template
arguments, the size sent), and the random answer is a point or no prediction, never a crash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from _builders import save_processor
from medspot.adapters.cards import get_card
from test_hf_backend import (
    QWEN_TEMPLATE,
    Capture,
    _qwen_ids,
    _text_cfg,
    build_qwen,
    make,
    qwen_tokenizer,
    run_adapter,
    step,
)

pytestmark = pytest.mark.hf

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

# A chat template with Holo2's switch: it thinks unless `thinking` is false (H Company's cookbook
# renders `apply_chat_template(..., thinking=False)`; vLLM's Holo2 reasoning parser reads
# `thinking`, default True). Qwen3's `enable_thinking` is not read.
THINKING_TEMPLATE = QWEN_TEMPLATE.replace(
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% if thinking is defined and "
    "not thinking %}<think>\n\n</think>\n\n{% else %}<think>\n{% endif %}{% endif %}",
)
assert THINKING_TEMPLATE != QWEN_TEMPLATE


def build_qwen3_moe(out: Path) -> Path:
    """A tiny Qwen3-VL-MoE checkpoint (the architecture of the 30B-A3B sizes)."""
    tf = transformers
    tok = qwen_tokenizer()
    ids = _qwen_ids(tok)
    ip = tf.Qwen2VLImageProcessorPil(patch_size=16, merge_size=2)
    ip.size = {"shortest_edge": 32 * 32 * 4, "longest_edge": 32 * 32 * 16}
    rope = {"rope_type": "default", "mrope_section": [2, 2, 4], "rope_theta": 10000.0,
            "mrope_interleaved": True}  # fmt: skip
    text = _text_cfg(
        len(tok), ids, head_dim=16, rope_parameters=rope, num_local_experts=4,
        num_experts_per_tok=2, moe_intermediate_size=16, decoder_sparse_step=1,
    )  # fmt: skip
    cfg = tf.Qwen3VLMoeConfig(
        text_config=text,
        vision_config={
            "depth": 1,
            "hidden_size": 16,
            "intermediate_size": 32,
            "out_hidden_size": 32,
            "num_heads": 2,
            "patch_size": 16,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "num_position_embeddings": 64,
            "deepstack_visual_indexes": [0],
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    model = tf.Qwen3VLMoeForConditionalGeneration(cfg)
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.save_pretrained(out)
    save_processor(out, tok, ip, "Qwen3VLProcessor", QWEN_TEMPLATE)
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("tiny-grounders")
    return {
        "qwen3_vl": build_qwen(root / "qwen3_vl", "qwen3_vl"),
        "qwen2_5_vl": build_qwen(root / "qwen2_5_vl", "qwen2_5_vl"),
        "qwen3_vl_moe": build_qwen3_moe(root / "qwen3_vl_moe"),
    }


def _run(card_name: str, ckpt: Path, tmp_path: Path, template: str | None = None) -> Any:
    card = get_card(card_name)
    adapter = make(card, ckpt)
    cap = Capture(adapter.runner.processor)
    if template is not None:
        cap.inner.chat_template = template
    adapter.runner.processor = cap
    req = step(tmp_path, size=(200, 120))
    (pred,) = run_adapter(adapter, [req])
    (text,) = cap.texts
    assert isinstance(pred.raw_text, str)
    assert pred.point is None or pred.point.x == pred.point.x  # a point or no prediction
    assert pred.usage is not None and pred.usage.input_tokens > 0
    return card, adapter, req, pred, text, cap


@pytest.mark.parametrize(
    ("name", "arch", "model_class"),
    [
        ("holo2", "qwen3_vl", "Qwen3VLForConditionalGeneration"),
        ("holo2", "qwen3_vl_moe", "Qwen3VLMoeForConditionalGeneration"),
        ("ui-venus-1.5", "qwen3_vl", "Qwen3VLForConditionalGeneration"),
        ("ui-venus-1.5", "qwen3_vl_moe", "Qwen3VLMoeForConditionalGeneration"),
        ("mai-ui", "qwen3_vl", "Qwen3VLForConditionalGeneration"),
        ("gui-owl-1.5", "qwen3_vl", "Qwen3VLForConditionalGeneration"),
    ],
)
def test_rel1000_grounders_run_on_their_architecture(
    tiny: dict[str, Path], tmp_path: Path, name: str, arch: str, model_class: str
) -> None:
    card, adapter, req, pred, text, _ = _run(name, tiny[arch], tmp_path)
    spec = card.native.build(req)
    assert adapter.describe()["model_class"] == model_class
    assert spec.user_text in text and pred.prompt is not None
    if spec.system:
        assert text.startswith(f"<|im_start|>system\n{spec.system}<|im_end|>\n")
    image = "<|vision_start|>"
    assert (text.index(image) < text.index(spec.user_text)) is spec.image_first


def test_holo2_asks_without_thinking(tiny: dict[str, Path], tmp_path: Path) -> None:
    """The generation prompt the checkpoint's template writes with `thinking=False`: an empty
    think block, so the answer is the click, not reasoning cut off at max_new_tokens."""
    *_, text, _ = _run("holo2", tiny["qwen3_vl"], tmp_path, template=THINKING_TEMPLATE)
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_gta1_names_the_size_the_processor_got(tiny: dict[str, Path], tmp_path: Path) -> None:
    """GTA1's system message states the image size; the hf backend resizes within the
    checkpoint's own pixel bounds, and the message names the size actually sent."""
    _, adapter, _, pred, text, cap = _run("gta1", tiny["qwen2_5_vl"], tmp_path)
    (sent,) = cap.sizes
    assert pred.sent_size == sent
    w, h = sent
    assert f"The image resolution is height {h} and width {w}." in text
    assert f"height {h} and width {w}" in (pred.prompt or "")
    assert adapter.describe()["model_class"] == "Qwen2_5_VLForConditionalGeneration"
