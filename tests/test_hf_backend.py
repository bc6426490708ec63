"""The transformers backend on tiny, randomly initialised checkpoints built offline here: a BPE
tokenizer trained on a few sentences plus the model's special tokens, an image processor that
needs no torchvision, saved with save_pretrained and loaded back through the real card path.
The answers are random text: the tests check that the whole path runs, that the processor got
the card's prompt, and that what was parsed is a point or no prediction, never a crash."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from _builders import save_processor, tiny_tokenizer
from medspot.adapters.base import AdapterContext, Prediction, StepRequest
from medspot.adapters.card import ModelCard, ResizeSpec

pytestmark = pytest.mark.hf

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

QWEN_SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
]
QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for c in message['content'] %}{% if c['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% elif c['type'] == 'text' %}{{ c['text'] }}"
    "{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SENTENCES = [
    "Click the File menu at (120, 45) in the top toolbar.",
    "Locate the UI element to click, output its bbox coordinates in JSON format.",
    'Output the bounding box of the UI element for: open the "Export" dialog',
    "system user assistant You are a helpful assistant. point_2d bbox_2d [12, 34]",
]


def qwen_tokenizer() -> Any:
    """The tiny Qwen-style tokenizer every tiny Qwen checkpoint here uses."""
    return tiny_tokenizer(
        QWEN_SPECIALS, SENTENCES, vocab_size=400, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )


def _qwen_ids(tok: Any) -> dict[str, int]:
    return {t: int(tok.convert_tokens_to_ids(t)) for t in QWEN_SPECIALS}


def _text_cfg(vocab: int, ids: dict[str, int], **extra: Any) -> dict[str, Any]:
    return {
        "vocab_size": vocab,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "max_position_embeddings": 1024,
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
        **extra,
    }


def build_qwen(out: Path, family: str) -> Path:
    """A tiny Qwen2-VL / Qwen2.5-VL / Qwen3-VL checkpoint in `out`."""
    tf = transformers
    tok = qwen_tokenizer()
    ids = _qwen_ids(tok)
    vocab = len(tok)
    patch = 16 if family == "qwen3_vl" else 14
    factor = patch * 2
    ip_cls = tf.Qwen2VLImageProcessorPil
    ip = ip_cls(
        patch_size=patch,
        merge_size=2,
        min_pixels=factor * factor * 4,
        max_pixels=factor * factor * 16,
    )
    if family == "qwen3_vl":
        ip.size = {"shortest_edge": factor * factor * 4, "longest_edge": factor * factor * 16}
    mm = {
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
    }
    rope = {"rope_type": "default", "mrope_section": [2, 2, 4], "rope_theta": 10000.0}
    if family == "qwen2_vl":
        cfg = tf.Qwen2VLConfig(
            text_config=_text_cfg(vocab, ids, rope_parameters={**rope, "type": "mrope"}),
            vision_config={
                "depth": 1,
                "embed_dim": 16,
                "hidden_size": 32,
                "num_heads": 2,
                "mlp_ratio": 2,
                "patch_size": 14,
                "spatial_merge_size": 2,
                "temporal_patch_size": 2,
            },
            **mm,
        )
        model = tf.Qwen2VLForConditionalGeneration(cfg)
        proc_cls = "Qwen2VLProcessor"
    elif family == "qwen2_5_vl":
        cfg = tf.Qwen2_5_VLConfig(
            text_config=_text_cfg(vocab, ids, rope_parameters={**rope, "type": "mrope"}),
            vision_config={
                "depth": 1,
                "hidden_size": 16,
                "intermediate_size": 32,
                "out_hidden_size": 32,
                "num_heads": 2,
                "patch_size": 14,
                "spatial_merge_size": 2,
                "temporal_patch_size": 2,
                "window_size": 56,
                "fullatt_block_indexes": [0],
            },
            **mm,
        )
        model = tf.Qwen2_5_VLForConditionalGeneration(cfg)
        proc_cls = "Qwen2_5_VLProcessor"
    else:
        cfg = tf.Qwen3VLConfig(
            text_config=_text_cfg(
                vocab, ids, head_dim=16, rope_parameters={**rope, "mrope_interleaved": True}
            ),
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
            **mm,
        )
        model = tf.Qwen3VLForConditionalGeneration(cfg)
        proc_cls = "Qwen3VLProcessor"
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.save_pretrained(out)
    save_processor(out, tok, ip, proc_cls, QWEN_TEMPLATE)
    return out


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "qwen2_vl": lambda p: build_qwen(p, "qwen2_vl"),
    "qwen2_5_vl": lambda p: build_qwen(p, "qwen2_5_vl"),
    "qwen3_vl": lambda p: build_qwen(p, "qwen3_vl"),
}


@pytest.fixture(scope="session")
def tiny_checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | str]:
    """family -> checkpoint folder, or the reason it could not be built here."""
    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("tiny-hf")
    out: dict[str, Path | str] = {}
    for family, build in BUILDERS.items():
        try:
            out[family] = build(root / family)
        except Exception as e:  # a family this transformers cannot build tiny: skipped
            out[family] = f"{type(e).__name__}: {e}"
    return out


def checkpoint(tiny: dict[str, Path | str], family: str) -> Path:
    got = tiny[family]
    if isinstance(got, str) and os.environ.get("CI"):
        pytest.fail(f"CI: the tiny {family} checkpoint could not be built: {got}")
    if isinstance(got, str):
        pytest.skip(
            f"tiny {family} checkpoint not buildable with transformers "
            f"{transformers.__version__}: {got}"
        )
    return got


def step(tmp_path: Path, size: tuple[int, int] = (112, 84), name: str = "s.png") -> StepRequest:
    path = tmp_path / name
    Image.new("P", size, 3).save(path)  # palette PNG, like the placeholders
    return StepRequest(
        step_uid=f"App/0/{name}",
        task_uid="App/0",
        image_rel=name,
        image_path=path,
        image_size=size,
        instruction="open the File menu",
    )


def qwen_card(family: str) -> ModelCard:
    from medspot.adapters.cards import qwen

    small = ResizeSpec(factor=28, min_pixels=4 * 28 * 28, max_pixels=16 * 28 * 28)
    if family == "qwen2_vl":
        return qwen.qwen2_vl_7b()
    card = qwen.qwen2_5_vl_7b() if family == "qwen2_5_vl" else qwen.qwen3_vl_8b()
    if family == "qwen2_5_vl":  # keep the card, shrink its resize bounds for a fast test
        native = card.native

        def build(req: StepRequest) -> Any:
            return replace(native.build(req), resize=small)

        card = replace(card, native=replace(native, build=build))
    return card


class Capture:
    """Wraps a processor and records the texts it was called with."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts: list[str] = []
        self.sizes: list[tuple[int, int]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.texts.extend(kwargs.get("text") or [])
        for im in kwargs.get("images") or []:
            for one in im if isinstance(im, list) else [im]:
                self.sizes.append(one.size)
        return self.inner(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def run_adapter(adapter: Any, reqs: list[StepRequest]) -> list[Prediction]:
    async def main() -> list[Prediction]:
        try:
            return list(await asyncio.gather(*(adapter.predict(r) for r in reqs)))
        finally:
            await adapter.aclose()

    return asyncio.run(main())


def make(card: ModelCard, ckpt: Path, **options: Any) -> Any:
    from medspot.adapters.factory import build_adapter

    opts = {"backend": "hf", "checkpoint": str(ckpt), "device": "cpu", **options}
    return build_adapter(card, AdapterContext.with_options(opts))


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_card_path_runs_on_tiny_qwen(
    tiny_checkpoints: dict[str, Path | str], tmp_path: Path, family: str
) -> None:
    ckpt = checkpoint(tiny_checkpoints, family)
    card = qwen_card(family)
    adapter = make(card, ckpt, batch_size=2)
    cap = Capture(adapter.runner.processor)
    adapter.runner.processor = cap
    reqs = [step(tmp_path, name="a.png"), step(tmp_path, size=(140, 112), name="b.png")]
    preds = run_adapter(adapter, reqs)
    expected = [card.native.build(r).user_text for r in reqs]
    assert len(cap.texts) == 2
    for text, want in zip(sorted(cap.texts), sorted(expected), strict=True):
        assert want in text and text.endswith("<|im_start|>assistant\n")
    for p, want in zip(preds, expected, strict=True):
        assert isinstance(p.raw_text, str)
        assert p.point is None or (p.point.x == p.point.x)  # a point or no prediction
        assert p.prompt == want
        assert p.usage is not None and p.usage.input_tokens > 0
        assert p.cost_usd is None
    assert adapter.batches == [2]  # both steps in one forward pass
    d = adapter.describe()
    assert d["backend"] == "hf" and d["checkpoint"] == str(ckpt) and d["batch_size"] == 2


def test_a_slowly_read_image_still_joins_the_batch(
    tiny_checkpoints: dict[str, Path | str], tmp_path: Path
) -> None:
    """Batching does not race the clock: a request still reading its image when the batch
    starts joins it, however long the reading takes (a loaded machine once split this pair)."""
    ckpt = checkpoint(tiny_checkpoints, "qwen2_5_vl")
    adapter = make(qwen_card("qwen2_5_vl"), ckpt, batch_size=2)
    prepare = adapter.images.prepare

    def slow_prepare(path: Path, *args: Any) -> Any:
        if path.name == "b.png":
            time.sleep(20 * adapter.batch_wait)  # far past the batch's wait
        return prepare(path, *args)

    adapter.images.prepare = slow_prepare
    reqs = [step(tmp_path, name="a.png"), step(tmp_path, size=(140, 112), name="b.png")]
    preds = run_adapter(adapter, reqs)
    assert len(preds) == 2
    assert adapter.batches == [2]


def test_abs_resized_sends_the_resized_frame(
    tiny_checkpoints: dict[str, Path | str], tmp_path: Path
) -> None:
    ckpt = checkpoint(tiny_checkpoints, "qwen2_5_vl")
    card = qwen_card("qwen2_5_vl")
    adapter = make(card, ckpt)
    cap = Capture(adapter.runner.processor)
    adapter.runner.processor = cap
    # 300x200 with factor 28, at most 16*28*28 = 12544 px: beta = sqrt(60000/12544) = 2.187;
    # width floor(137.2/28)*28 = 112, height floor(91.4/28)*28 = 84.
    (pred,) = run_adapter(adapter, [step(tmp_path, size=(300, 200))])
    assert cap.sizes == [(112, 84)]
    assert pred.sent_size == (112, 84)


def test_bad_options_and_missing_own_code(tmp_path: Path) -> None:
    from medspot.errors import AdapterUnavailable, ConfigError

    card = qwen_card("qwen2_vl")
    with pytest.raises(ConfigError, match="dtype"):
        make(card, tmp_path, dtype="float13")
    actor = replace(card, name="gui-actor-test", hf_loader="gui_actor", install_hint="")
    with pytest.raises(AdapterUnavailable, match="microsoft/GUI-Actor"):
        make(actor, tmp_path)
    ds = replace(card, name="deepseek-test", hf_loader="deepseek_vl2", install_hint="")
    with pytest.raises(AdapterUnavailable, match="deepseek-ai/DeepSeek-VL2"):
        make(ds, tmp_path)
