"""Families that run through their own code rather than a transformers processor: GUI-Actor
(`gui_actor`, GitHub only), CogAgent (remote code), SeeClick (Qwen-VL-Chat remote code) and
DeepSeek-VL2 (`deepseek_vl2`, GitHub only). Each is imported lazily; a missing package is an
`AdapterUnavailable` naming how to install it. One request at a time (no batching).

None of these paths was run here (no weights, no GPU); they follow the authors' READMEs and
inference scripts as summarised in models.md.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from medspot.adapters.backends.hf.processor import load_processor
from medspot.adapters.backends.hf.runner import GenItem, GenOut, Runner
from medspot.adapters.card import ModelCard
from medspot.adapters.cards.gui_actor import format_points
from medspot.errors import AdapterUnavailable, ConfigError

__all__ = ["INSTALL_HINTS", "load"]

INSTALL_HINTS = {
    "gui_actor": "GUI-Actor needs the gui_actor package from the microsoft/GUI-Actor repository "
    "(clone it and pip install -e .); it is not on PyPI. Best in its own environment (it pins "
    "transformers 4.51.3).",
    "gui_actor_qwen2_vl": "GUI-Actor needs the gui_actor package from the microsoft/GUI-Actor "
    "repository (clone it and pip install -e .); it is not on PyPI.",
    "deepseek_vl2": "DeepSeek-VL2 needs the deepseek_vl2 package from the deepseek-ai/DeepSeek-VL2 "
    "repository (clone it and pip install -e .); it is not on PyPI (the PyPI name deepseek-vl is "
    "another package). It pins torch 2.2.1 and transformers 4.38.2: use its own environment.",
    "qwen_vl_chat": "SeeClick runs on Qwen-VL-Chat's remote code, which needs tiktoken, "
    "transformers_stream_generator and einops (pip install them) and may need an older "
    "transformers.",
    "cogagent": "CogAgent runs on its remote code (trust_remote_code); it may need an older "
    "transformers than this one.",
}


def _unavailable(card: ModelCard, loader: str, exc: BaseException) -> AdapterUnavailable:
    hint = card.install_hint or INSTALL_HINTS[loader]
    return AdapterUnavailable(f"model {card.name!r}: {hint} ({type(exc).__name__}: {exc})")


def load(card: ModelCard, checkpoint: str, device: str, dtype: Any, loader: str) -> Runner:
    makers = {
        "gui_actor": _GuiActor,
        "gui_actor_qwen2_vl": _GuiActor,
        "cogagent": _CogAgent,
        "qwen_vl_chat": _QwenVLChat,
        "deepseek_vl2": _DeepseekVL2,
    }
    try:
        runner: Runner = makers[loader](card, checkpoint, device, dtype)
    except ImportError as e:
        raise _unavailable(card, loader, e) from None
    return runner


def _place(model: Any, device: str) -> Any:
    if device != "auto":
        model = model.to(device)
    return model.eval()


def _path_for(item: GenItem, tmp: Path) -> str:
    """A file holding the image as sent (the original file when it was not resized)."""
    if item.image.size == _size_of(item.image_path):
        return str(item.image_path)
    out = tmp / "sent.png"
    item.image.save(out)
    return str(out)


def _size_of(path: Path) -> tuple[int, int]:
    from PIL import Image

    with Image.open(path) as im:
        return int(im.size[0]), int(im.size[1])


# loader -> (backbone model_type, the card for the other backbone)
_GUI_ACTOR_BACKBONES = {
    "gui_actor": ("qwen2_5_vl", "gui-actor-7b-qwen2-vl"),
    "gui_actor_qwen2_vl": ("qwen2_vl", "gui-actor-7b"),
}


def _gui_actor_class(card: ModelCard, checkpoint: str) -> Any:
    """GUI-Actor's pointer class for the card's backbone; a checkpoint of the other backbone
    is a ConfigError naming the card that fits it."""
    import transformers

    want, other = _GUI_ACTOR_BACKBONES[card.hf_loader]
    auto: Any = transformers.AutoConfig
    got = getattr(auto.from_pretrained(checkpoint), "model_type", None)
    if got in ("qwen2_vl", "qwen2_5_vl") and got != want:
        raise ConfigError(
            f"model {card.name!r}: {checkpoint} is a GUI-Actor on the {got} backbone, but this "
            f"card is for {want}; use --model {other}"
        )
    if want == "qwen2_vl":
        from gui_actor.modeling import Qwen2VLForConditionalGenerationWithPointer

        return Qwen2VLForConditionalGenerationWithPointer
    from gui_actor.modeling_qwen25vl import Qwen2_5_VLForConditionalGenerationWithPointer

    return Qwen2_5_VLForConditionalGenerationWithPointer


class _GuiActor(Runner):
    def __init__(self, card: ModelCard, checkpoint: str, device: str, dtype: Any) -> None:
        from gui_actor.inference import inference

        model_cls = _gui_actor_class(card, checkpoint)
        self._inference = inference
        self.processor, _ = load_processor(card.processor_checkpoint or checkpoint)
        self.tokenizer = self.processor.tokenizer
        kwargs: dict[str, Any] = {"torch_dtype": dtype}
        if device == "auto":
            kwargs["device_map"] = "auto"
        model = model_cls.from_pretrained(checkpoint, **kwargs)
        self.model = _place(model, device)
        self.info = {"loader": card.hf_loader, "model_class": type(model).__name__}

    def generate(self, items: Sequence[GenItem]) -> list[GenOut]:
        outs = []
        for it in items:
            conv: list[dict[str, Any]] = []
            if it.spec.system:
                conv.append(
                    {"role": "system", "content": [{"type": "text", "text": it.spec.system}]}
                )
            conv.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "image", "image": it.image},
                        {"type": "text", "text": it.spec.user_text},
                    ],
                }
            )
            pred = self._inference(
                conv,
                self.model,
                self.tokenizer,
                self.processor,
                use_placeholder=True,
                topk=max(1, it.spec.topk),
            )
            points = [(float(x), float(y)) for x, y in (pred.get("topk_points") or [])]
            outs.append(GenOut(format_points(points), 0, 0))
        return outs


class _CogAgent(Runner):
    def __init__(self, card: ModelCard, checkpoint: str, device: str, dtype: Any) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer: Any = AutoTokenizer.from_pretrained(checkpoint, trust_remote_code=True)
        kwargs: dict[str, Any] = {"torch_dtype": dtype, "trust_remote_code": True}
        if device == "auto":
            kwargs["device_map"] = "auto"
        model = AutoModelForCausalLM.from_pretrained(checkpoint, **kwargs)
        self.model = _place(model, device)
        self.info = {"loader": "cogagent", "model_class": type(model).__name__}

    def generate(self, items: Sequence[GenItem]) -> list[GenOut]:
        import torch

        outs = []
        for it in items:
            inputs = self.tokenizer.apply_chat_template(
                [{"role": "user", "image": it.image, "content": it.spec.user_text}],
                add_generation_prompt=True,
                tokenize=True,
                return_tensors="pt",
                return_dict=True,
            ).to(self.model.device)
            with torch.inference_mode():
                out = self.model.generate(
                    **inputs, max_new_tokens=it.spec.max_new_tokens, do_sample=False
                )
            n_in = inputs["input_ids"].shape[1]
            new = out[0, n_in:]
            text = self.tokenizer.decode(new, skip_special_tokens=True)
            outs.append(GenOut(text, int(n_in), int(new.shape[0])))
        return outs


class _QwenVLChat(Runner):
    def __init__(self, card: ModelCard, checkpoint: str, device: str, dtype: Any) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

        proc = card.processor_checkpoint or checkpoint
        self.tokenizer: Any = AutoTokenizer.from_pretrained(proc, trust_remote_code=True)
        kwargs: dict[str, Any] = {"torch_dtype": dtype, "trust_remote_code": True}
        if device == "auto":
            kwargs["device_map"] = "auto"
        model = AutoModelForCausalLM.from_pretrained(checkpoint, **kwargs)
        model.generation_config = GenerationConfig.from_pretrained(proc, trust_remote_code=True)
        self.model = _place(model, device)
        self.info = {"loader": "qwen_vl_chat", "model_class": type(model).__name__}

    def _config(self, it: GenItem) -> Any:
        """The checkpoint's generation config (chat_format, max_window_size, stop ids) with
        the card's decoding: greedy unless the item asks for a temperature, and the card's
        max_new_tokens (Qwen-VL-Chat's own config samples with top_p 0.3, 512 tokens)."""
        cfg = copy.deepcopy(self.model.generation_config)
        cfg.max_new_tokens = it.spec.max_new_tokens
        if it.temperature:
            cfg.do_sample, cfg.temperature, cfg.top_p, cfg.top_k = True, it.temperature, 1.0, 0
        else:
            cfg.do_sample, cfg.temperature, cfg.top_p, cfg.top_k = False, None, None, None
        return cfg

    def generate(self, items: Sequence[GenItem]) -> list[GenOut]:
        outs = []
        for it in items:
            with tempfile.TemporaryDirectory() as tmp:
                query = self.tokenizer.from_list_format(
                    [{"image": _path_for(it, Path(tmp))}, {"text": it.spec.user_text}]
                )
                text, _ = self.model.chat(
                    self.tokenizer, query=query, history=None, generation_config=self._config(it)
                )
            outs.append(GenOut(str(text), 0, 0))
        return outs


class _DeepseekVL2(Runner):
    def __init__(self, card: ModelCard, checkpoint: str, device: str, dtype: Any) -> None:
        from deepseek_vl2.models import DeepseekVLV2Processor
        from transformers import AutoModelForCausalLM

        self.processor = DeepseekVLV2Processor.from_pretrained(checkpoint)
        self.tokenizer = self.processor.tokenizer
        kwargs: dict[str, Any] = {"torch_dtype": dtype, "trust_remote_code": True}
        model = AutoModelForCausalLM.from_pretrained(checkpoint, **kwargs)
        self.model = _place(model, device)
        self.info = {"loader": "deepseek_vl2", "model_class": type(model).__name__}

    def generate(self, items: Sequence[GenItem]) -> list[GenOut]:
        import torch

        outs = []
        for it in items:
            text = it.spec.user_text
            if "<image>" not in text:
                text = "<image>\n" + text
            conv = [
                {"role": "<|User|>", "content": text, "images": [str(it.image_path)]},
                {"role": "<|Assistant|>", "content": ""},
            ]
            prep = self.processor(
                conversations=conv,
                images=[it.image],
                force_batchify=True,
                system_prompt=it.spec.system or "",
            ).to(self.model.device)
            with torch.inference_mode():
                embeds = self.model.prepare_inputs_embeds(**prep)
                out = self.model.language.generate(
                    inputs_embeds=embeds,
                    attention_mask=prep.attention_mask,
                    pad_token_id=self.tokenizer.eos_token_id,
                    bos_token_id=self.tokenizer.bos_token_id,
                    eos_token_id=self.tokenizer.eos_token_id,
                    max_new_tokens=it.spec.max_new_tokens,
                    do_sample=False,
                    use_cache=True,
                )
            ids = out[0].cpu().tolist()
            answer = self.tokenizer.decode(ids, skip_special_tokens=not it.spec.keep_special_tokens)
            outs.append(GenOut(answer, int(prep.attention_mask.sum()), len(ids)))
        return outs
