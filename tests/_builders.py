"""Small hand-made datasets for tests: annotation JSON written in the real format, with
placeholder screenshots, loaded through the real loader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PIL import Image


def step(
    image: str,
    instruction: str,
    *boxes: tuple[float, float, float, float],
    types: tuple[str, ...] = (),
) -> dict[str, Any]:
    return {
        "image_path": image,
        "instruction": instruction,
        "actions": [
            {
                "type": types[i] if i < len(types) else "click",
                "target": f"target {i}",
                "bbox": list(b),
            }
            for i, b in enumerate(boxes)
        ],
    }


def write_app(
    root: Path, app: str, tasks: list[list[dict[str, Any]]], size: tuple[int, int] = (1000, 500)
) -> None:
    """Write `root/Annotations/<app>_Annotation.json` and paint every image it names."""
    ann: dict[str, list[dict[str, Any]]] = {"tasks": []}
    for ti, steps in enumerate(tasks):
        for k, s in enumerate(steps, 1):
            s["step_id"] = k
        ann["tasks"].append({"task_overview": f"{app} task {ti}", "steps": steps})
    (root / "Annotations").mkdir(parents=True, exist_ok=True)
    (root / "Annotations" / f"{app}_Annotation.json").write_text(json.dumps(ann))
    for steps in tasks:
        for s in steps:
            p = root / s["image_path"]
            if not p.exists():
                p.parent.mkdir(parents=True, exist_ok=True)
                Image.new("RGB", size, (40, 40, 40)).save(p)


def tiny_tokenizer(
    specials: list[str], sentences: list[str], *, vocab_size: int, **named: Any
) -> Any:
    """A byte-level BPE tokenizer trained offline on `sentences`, with `specials` as special
    tokens; `named` gives the tokenizer's special-token attributes (eos_token, pad_token, ...)."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(sentences * 4, trainer)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, **named)


def save_processor(out: Path, tok: Any, ip: Any, cls: str, chat: str, **extra: Any) -> None:
    """Save a tiny processor's parts (tokenizer, image processor, chat template, class name)."""
    tok.chat_template = chat
    tok.save_pretrained(out)
    ip.save_pretrained(out)
    (out / "chat_template.jinja").write_text(chat)
    (out / "processor_config.json").write_text(json.dumps({"processor_class": cls, **extra}))


def eval_argv(root: Path, out: Path, *extra: str, bootstrap: int | None = None) -> list[str]:
    """The argv of `medspot eval` on `root` into `out` (no progress bar), then `extra`."""
    argv = ["eval", "--data", str(root), "--out", str(out), "--no-progress"]
    if bootstrap is not None:
        argv += ["--bootstrap", str(bootstrap)]
    return [*argv, *extra]


def run_eval(root: Path, out: Path, *extra: str, bootstrap: int | None = 200) -> int:
    """Run `medspot eval` (through the CLI's `main`) and return its exit status."""
    from medspot.cli import main

    return main(eval_argv(root, out, *extra, bootstrap=bootstrap))
