"""`medspot eval --backend hf` through the CLI on tiny, randomly initialised Gemma 3, Mllama
(Llama 3.2 Vision), Mistral 3 and Qwen2-VL checkpoints built offline here (a BPE tokenizer
trained on a few sentences with each family's special tokens, a PIL image processor, a small
chat template in the family's format, save_pretrained to a temporary folder).

The weights are random, so the answers are random text: the tests check that the card path runs
end to end (the real card, the checkpoint loaded by the card's loader through AutoProcessor,
the processor given the card's prompt, one call per step asked, the journal and results
written) and that every answer is recorded as no prediction or a point, never a crash.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from _builders import save_processor, tiny_tokenizer
from medspot.cli import main

pytestmark = pytest.mark.hf

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

SENTENCES = [
    "Click the File menu at (120, 45) in the top toolbar.",
    "Give the single point to click for this instruction as (x, y), with x and y integers "
    "from 0 (left/top edge) to 1000 (right/bottom edge) of the image. Reply with (x, y) only.",
    "Open the Export dialog. Select the DICOM file. user model assistant system",
]


def _tokenizer(specials: list[str], **named: Any) -> Any:
    return tiny_tokenizer(specials, SENTENCES, vocab_size=320, **named)


def _ids(tok: Any, names: list[str]) -> dict[str, int]:
    return {t: int(tok.convert_tokens_to_ids(t)) for t in names}


def _finish(model: Any, out: Path, eos: int, pad: int) -> None:
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = pad
    model.generation_config.max_new_tokens = 8
    model.save_pretrained(out)


# -- Gemma 3 --------------------------------------------------------------------------------------
GEMMA_SPECIALS = [
    "<pad>",
    "<eos>",
    "<bos>",
    "<start_of_turn>",
    "<end_of_turn>",
    "<start_of_image>",
    "<end_of_image>",
    "<image_soft_token>",
]
# Gemma's template, shortened: turns `<start_of_turn>user|model`, the image as <start_of_image>
GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<start_of_turn>"
    "{{ 'model' if message['role'] == 'assistant' else message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for c in message['content'] %}{% if c['type'] == 'image' %}<start_of_image>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def build_gemma3(out: Path) -> Path:
    tf = transformers
    tok = _tokenizer(
        GEMMA_SPECIALS,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        extra_special_tokens={
            "boi_token": "<start_of_image>",
            "eoi_token": "<end_of_image>",
            "image_token": "<image_soft_token>",
        },
    )
    ids = _ids(tok, GEMMA_SPECIALS)
    # 28x28 images, 14 px patches: 2x2 patches pooled to 4 image tokens
    ip = tf.Gemma3ImageProcessorPil(size={"height": 28, "width": 28})
    cfg = tf.Gemma3Config(
        text_config={
            "vocab_size": len(tok),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "head_dim": 16,
            "query_pre_attn_scalar": 16,
            "sliding_window": 64,
            "max_position_embeddings": 512,
            "bos_token_id": ids["<bos>"],
            "eos_token_id": ids["<end_of_turn>"],
            "pad_token_id": ids["<pad>"],
        },
        vision_config={
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": 28,
            "patch_size": 14,
            "vision_use_head": False,
        },
        mm_tokens_per_image=4,
        boi_token_index=ids["<start_of_image>"],
        eoi_token_index=ids["<end_of_image>"],
        image_token_index=ids["<image_soft_token>"],
    )
    model = tf.Gemma3ForConditionalGeneration(cfg)
    _finish(model, out, ids["<end_of_turn>"], ids["<pad>"])
    save_processor(out, tok, ip, "Gemma3Processor", GEMMA_TEMPLATE, image_seq_length=4)
    return out


# -- Mllama (Llama 3.2 Vision) --------------------------------------------------------------------
MLLAMA_SPECIALS = [
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|finetune_right_pad_id|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|python_tag|>",
    "<|image|>",
]
# Llama 3.2 Vision's template, shortened: header ids around the role, <|image|> before the text
MLLAMA_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|start_header_id|>{{ message['role'] }}"
    "<|end_header_id|>\n\n{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for c in message['content'] %}{% if c['type'] == 'image' %}<|image|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|eot_id|>"
    "{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n"
    "{% endif %}"
)


def build_mllama(out: Path) -> Path:
    tf = transformers
    tok = _tokenizer(
        MLLAMA_SPECIALS,
        bos_token="<|begin_of_text|>",
        eos_token="<|eot_id|>",
        pad_token="<|finetune_right_pad_id|>",
    )
    ids = _ids(tok, MLLAMA_SPECIALS)
    # tiles of 28x28 px (2x2 patches of 14), at most 2 tiles per image
    ip = tf.MllamaImageProcessorPil(size={"height": 28, "width": 28}, max_image_tiles=2)
    cfg = tf.MllamaConfig(
        vision_config={
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 2,
            "num_global_layers": 1,
            "attention_heads": 2,
            "image_size": 28,
            "patch_size": 14,
            "max_num_tiles": 2,
            "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]],
            "intermediate_layers_indices": [0],
            "vision_output_dim": 32,
        },
        text_config={
            "vocab_size": len(tok),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "cross_attention_layers": [1],
            "max_position_embeddings": 512,
            "bos_token_id": ids["<|begin_of_text|>"],
            "eos_token_id": ids["<|eot_id|>"],
            "pad_token_id": ids["<|finetune_right_pad_id|>"],
        },
        image_token_index=ids["<|image|>"],
    )
    model = tf.MllamaForConditionalGeneration(cfg)
    _finish(model, out, ids["<|eot_id|>"], ids["<|finetune_right_pad_id|>"])
    save_processor(out, tok, ip, "MllamaProcessor", MLLAMA_TEMPLATE)
    return out


# -- Mistral 3 (Mistral-Small-3.1, Ministral 3) ---------------------------------------------------
MISTRAL_SPECIALS = [
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[IMG]",
    "[IMG_BREAK]",
    "[IMG_END]",
    "<pad>",
]
# Mistral's template, shortened: [INST] ... [/INST], the image as [IMG]
MISTRAL_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'system' %}[SYSTEM_PROMPT]{% for c in message['content'] %}"
    "{{ c['text'] }}{% endfor %}[/SYSTEM_PROMPT]"
    "{% elif message['role'] == 'user' %}[INST]{% if message['content'] is string %}"
    "{{ message['content'] }}{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}[IMG]{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}[/INST]"
    "{% else %}{{ message['content'] }}{{ eos_token }}{% endif %}{% endfor %}"
)


def build_mistral3(out: Path) -> Path:
    tf = transformers
    tok = _tokenizer(MISTRAL_SPECIALS, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    ids = _ids(tok, MISTRAL_SPECIALS)
    # longest edge 56 px, 14 px patches, merged 2x2: at most 2x2 image tokens per image
    ip = tf.PixtralImageProcessorPil(
        size={"longest_edge": 56}, patch_size={"height": 14, "width": 14}
    )
    cfg = tf.Mistral3Config(
        vision_config={
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "head_dim": 8,
            "image_size": 56,
            "patch_size": 14,
        },
        text_config={
            "model_type": "mistral",
            "vocab_size": len(tok),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "head_dim": 16,
            "max_position_embeddings": 512,
            "bos_token_id": ids["<s>"],
            "eos_token_id": ids["</s>"],
            "pad_token_id": ids["<pad>"],
        },
        image_token_index=ids["[IMG]"],
        spatial_merge_size=2,
    )
    model = tf.Mistral3ForConditionalGeneration(cfg)
    _finish(model, out, ids["</s>"], ids["<pad>"])
    save_processor(
        out, tok, ip, "PixtralProcessor", MISTRAL_TEMPLATE, patch_size=14, spatial_merge_size=2
    )
    return out


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "gemma3": build_gemma3,
    "mllama": build_mllama,
    "mistral3": build_mistral3,
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | str]:
    """family -> checkpoint folder, or why it could not be built with this transformers."""
    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("tiny-hf-more")
    out: dict[str, Path | str] = {}
    for family, build in BUILDERS.items():
        try:
            out[family] = build(root / family)
        except Exception as e:
            out[family] = f"{type(e).__name__}: {e}"
    return out


def _checkpoint(tiny: dict[str, Path | str], family: str) -> Path:
    got = tiny[family]
    if isinstance(got, str):
        pytest.fail(f"the tiny {family} checkpoint could not be built: {got}")
    return got


def _doc(app: str) -> dict[str, Any]:
    def step(i: int, text: str, bbox: list[float]) -> dict[str, Any]:
        return {
            "step_id": i,
            "image_path": f"Images/{app}/s{i}.png",
            "instruction": text,
            "actions": [{"type": "click", "target": "hidden", "bbox": bbox}],
        }

    first = {
        "task_overview": "Export a study",
        "steps": [
            step(1, f"Open the File menu of {app}", [2.0, 1.0, 8.0, 5.0]),
            step(2, "Click on the Export entry", [40.0, 40.0, 30.0, 20.0]),
        ],
    }
    second = {"task_overview": "never asked (--limit 1)", "steps": [step(3, "Quit", [0, 0, 9, 9])]}
    return {"tasks": [first, second]}


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from medspot.testing import write_dataset

    root = tmp_path_factory.mktemp("tiny-data")
    return write_dataset(root, {a: _doc(a) for a in ("AppA", "AppB")}, size=(112, 84))


class Capture:
    """Wraps a processor; records the texts it is called with."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts: list[str] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.texts.extend(kwargs.get("text") or [])
        return self.inner(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[Capture]:
    """Every processor the hf backend loads, wrapped in a Capture."""
    from medspot.adapters.backends.hf import families as hf_families

    made: list[Capture] = []
    real = hf_families.load_processor

    def load(checkpoint: str, trust_remote_code: bool = False) -> tuple[Any, bool]:
        proc, fallback = real(checkpoint, trust_remote_code)
        made.append(Capture(proc))
        return made[-1], fallback

    monkeypatch.setattr(hf_families, "load_processor", load)
    return made


HARNESS = (
    "Give the single point to click for this instruction as (x, y), with x and y integers from "
    "0 (left/top edge) to 1000 (right/bottom edge) of the image. Reply with (x, y) only."
)


def _run(data: Path, out: Path, model: str, ckpt: Path, *extra: str) -> int:
    return main(
        [
            "eval",
            "--data",
            str(data),
            "--out",
            str(out),
            "--model",
            model,
            "--backend",
            "hf",
            "--checkpoint",
            str(ckpt),
            "--device",
            "cpu",
            "--apps",
            "AppA,AppB",
            "--limit",
            "1",
            "--no-progress",
            "--bootstrap",
            "20",
            *extra,
        ]
    )


def _check_run(out: Path, texts: list[str], prompts: dict[str, str], tail: str) -> list[Any]:
    """The journal holds one answered call per step asked, each a point or no prediction,
    and the processor got the card's prompt for each, rendered by the chat template."""
    recs = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    asked = [r["step"] for r in recs]
    # step 1 of each app's first task is asked; step 2 only after a hit of step 1
    assert {"AppA/0/1", "AppB/0/1"} <= set(asked) <= set(prompts)
    assert len(asked) == len(set(asked)) == len(texts)
    for r in recs:
        assert r["error"] is None
        assert isinstance(r["raw_text"], str)
        assert r["point"] is None or (len(r["point"]) == 2 and all(map(math.isfinite, r["point"])))
    for uid in asked:
        (text,) = [t for t in texts if prompts[uid] in t]
        assert text.endswith(tail)
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "complete" and info["adapter"]["backend"] == "hf"
    results = json.loads((out / "AppA" / "task_results.json").read_text())
    assert [t["task_id"] for t in results] == ["AppA/0"]
    return recs


PROMPTS = {
    f"{app}/0/{k}": f"{text}\n{HARNESS}"
    for app in ("AppA", "AppB")
    for k, text in ((1, f"Open the File menu of {app}"), (2, "Click on the Export entry"))
}


@pytest.mark.parametrize(
    ("family", "model", "tail", "image_mark"),
    [
        ("gemma3", "gemma-3-27b", "<start_of_turn>model\n", "<start_of_image>"),
        (
            "mllama",
            "llama-3.2-11b-vision",
            "<|start_header_id|>assistant<|end_header_id|>\n\n",
            "<|image|>",
        ),
    ],
)
def test_eval_hf_on_tiny_family(
    tiny: dict[str, Path | str],
    tiny_data: Path,
    tmp_path: Path,
    captured: list[Capture],
    family: str,
    model: str,
    tail: str,
    image_mark: str,
) -> None:
    ckpt = _checkpoint(tiny, family)
    out = tmp_path / family
    assert _run(tiny_data, out, model, ckpt) == 0
    (proc,) = captured
    _check_run(out, proc.texts, PROMPTS, tail)
    assert all(image_mark in t for t in proc.texts)
    info = json.loads((out / "run.json").read_text())
    assert info["adapter"]["loader"] == family
    assert info["adapter"]["checkpoint"] == str(ckpt)


def _has_torchvision() -> bool:
    import importlib.util

    return importlib.util.find_spec("torchvision") is not None


def test_eval_hf_on_tiny_mistral3(
    tiny: dict[str, Path | str],
    tiny_data: Path,
    tmp_path: Path,
    captured: list[Capture],
    capsys: pytest.CaptureFixture[str],
) -> None:
    ckpt = _checkpoint(tiny, "mistral3")
    out = tmp_path / "mistral3"
    code = _run(tiny_data, out, "mistral-small-3.1-24b", ckpt)
    if not _has_torchvision():
        # transformers 5.24's PixtralProcessor (Mistral 3's processor) lives in a module that
        # imports transformers.models.pixtral.image_processing_pixtral, which imports
        # torchvision at import time: without torchvision no Mistral 3 processor can be built,
        # with or without its image-only fallback. The model itself builds (above); the
        # backend must say what is missing instead of failing with a traceback.
        assert code == 2
        err = capsys.readouterr().err
        assert "torchvision" in err and "pip install torchvision" in err
        pytest.skip(
            "Mistral 3 through the processor path needs torchvision (transformers "
            f"{transformers.__version__}: PixtralProcessor's module imports it); not installed"
        )
    assert code == 0
    (proc,) = captured
    _check_run(out, proc.texts, PROMPTS, "[/INST]")
    assert all("[IMG]" in t for t in proc.texts)


def test_eval_hf_on_tiny_qwen2_vl_through_the_cli(
    tiny_data: Path, tmp_path: Path, captured: list[Capture]
) -> None:
    from test_hf_backend import build_qwen

    torch.manual_seed(0)
    ckpt = build_qwen(tmp_path / "qwen2_vl", "qwen2_vl")
    out = tmp_path / "qwen-run"
    assert _run(tiny_data, out, "qwen2-vl-7b", ckpt, "--batch-size", "2") == 0
    (proc,) = captured
    prompts = {
        uid: "Output the bounding box in the image corresponding to the instruction "
        f'"{text.split(chr(10))[0]}" with grounding.'
        for uid, text in PROMPTS.items()
    }
    _check_run(out, proc.texts, prompts, "<|im_start|>assistant\n")
    info = json.loads((out / "run.json").read_text())
    assert info["adapter"]["model_class"] == "Qwen2VLForConditionalGeneration"
    assert info["adapter"]["batch_size"] == 2
