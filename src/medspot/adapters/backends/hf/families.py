"""How each model family is loaded and asked in-process (transformers). Imported only by
`hf_backend`; torch and transformers are imported inside the functions.

`ProcessorRunner` covers every checkpoint with a transformers processor and chat template
(Qwen2-VL, Qwen2.5-VL, Qwen3-VL and their GUI fine-tunes, Gemma 3, Mllama, Mistral 3); the
others (GUI-Actor, CogAgent, SeeClick's Qwen-VL, DeepSeek-VL2) go through their own code,
imported lazily with a message naming how to install it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from medspot.adapters.backends.hf.imagecheck import check_grid, processor_pixel_bounds
from medspot.adapters.backends.hf.processor import load_processor
from medspot.adapters.backends.hf.runner import GenItem, GenOut, Runner
from medspot.adapters.card import ModelCard, PromptSpec
from medspot.errors import AdapterUnavailable, ConfigError

if TYPE_CHECKING:
    pass

__all__ = ["HF_EXTRA_HINT", "LOADERS", "load_processor", "load_runner"]

log = logging.getLogger(__name__)

HF_EXTRA_HINT = "pip install 'medspot[hf]'"

# hf_loader -> transformers model class ("auto": AutoModelForImageTextToText)
_MODEL_CLASSES = {
    "auto": "AutoModelForImageTextToText",
    "qwen2_vl": "Qwen2VLForConditionalGeneration",
    "qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration",
    "qwen3_vl": "Qwen3VLForConditionalGeneration",
    # a Qwen-VL checkpoint of any size, its class read from its config (Qwen3-VL dense or MoE:
    # the 30B-A3B sizes of a family whose smaller sizes are dense)
    "qwen_vl_auto": "AutoModelForImageTextToText",
    "gemma3": "Gemma3ForConditionalGeneration",
    "mllama": "MllamaForConditionalGeneration",
    "mistral3": "Mistral3ForConditionalGeneration",
}
_OWN_CODE = ("gui_actor", "gui_actor_qwen2_vl", "cogagent", "qwen_vl_chat", "deepseek_vl2")
LOADERS = (*_MODEL_CLASSES, *_OWN_CODE)
_FLAT_IMAGES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen_vl_auto")


def _torch() -> Any:
    try:
        import torch
        import transformers
    except ImportError as e:
        raise AdapterUnavailable(
            f"the transformers backend needs torch and transformers ({e.name or e}): "
            f"{HF_EXTRA_HINT}"
        ) from None
    del transformers
    return torch


def _dtype(torch: Any, name: str | None, device: str) -> Any:
    if name is None:
        return torch.bfloat16 if device.startswith("cuda") or device == "auto" else torch.float32
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise ConfigError(f"unknown torch dtype {name!r} (e.g. bfloat16, float16, float32)")
    return value


def default_device() -> str:
    torch = _torch()
    return "cuda" if torch.cuda.is_available() else "cpu"


def load_runner(card: ModelCard, checkpoint: str, device: str, dtype: str | None) -> Runner:
    """Load the card's checkpoint (a hub id or a local directory) with the card's loader."""
    loader = card.hf_loader or "auto"
    if loader not in LOADERS:
        raise ConfigError(f"card {card.name!r} names an unknown hf_loader {loader!r}")
    torch = _torch()
    td = _dtype(torch, dtype, device)
    if loader in _MODEL_CLASSES:
        return ProcessorRunner(card, checkpoint, device, td, loader)
    from medspot.adapters.backends.hf import own_code as hf_own_code

    return hf_own_code.load(card, checkpoint, device, td, loader)


class ProcessorRunner(Runner):
    """Checkpoints with a transformers processor, a chat template and `generate`."""

    batchable = True

    def __init__(self, card: ModelCard, checkpoint: str, device: str, dtype: Any, loader: str):
        import transformers

        proc_ckpt = card.processor_checkpoint or checkpoint
        self.checkpoint = proc_ckpt
        self.processor, fallback = load_processor(proc_ckpt, card.trust_remote_code)
        tok = getattr(self.processor, "tokenizer", None)
        if tok is None:
            raise AdapterUnavailable(f"the processor of {proc_ckpt} has no tokenizer")
        tok.padding_side = "left"
        self.tokenizer = tok
        self.loader = loader
        model_cls = getattr(transformers, _MODEL_CLASSES[loader])
        kwargs: dict[str, Any] = {"dtype": dtype, "trust_remote_code": card.trust_remote_code}
        if device == "auto":
            kwargs["device_map"] = "auto"
        self.model = model_cls.from_pretrained(checkpoint, **kwargs)
        if device != "auto":
            self.model.to(device)
        self.model.eval()
        self.device = device if device != "auto" else str(self.model.device)
        self.image_processor = getattr(self.processor, "image_processor", None)
        self.pixel_bounds = processor_pixel_bounds(self.image_processor)
        self.info = {
            "loader": loader,
            "model_class": type(self.model).__name__,
            "processor_class": type(self.processor).__name__,
            "processor_without_video": fallback,
            "processor_pixels": list(self.pixel_bounds) if self.pixel_bounds else None,
        }

    def render(self, spec: PromptSpec) -> str:
        """The chat-templated prompt text (one image placeholder) for `spec`."""
        messages: list[dict[str, Any]] = []
        if spec.system:
            messages.append({"role": "system", "content": [{"type": "text", "text": spec.system}]})
        img = {"type": "image"}
        txt = {"type": "text", "text": spec.user_text}
        if spec.earlier or spec.image_turn_alone:  # text, earlier answers, then the screenshot
            messages.append({"role": "user", "content": [txt]})
            messages.extend(
                {"role": "assistant", "content": [{"type": "text", "text": a}]}
                for a in spec.earlier
            )
            messages.append({"role": "user", "content": [img]})
        else:
            messages.append(
                {"role": "user", "content": [img, txt] if spec.image_first else [txt, img]}
            )
        text: str = self.processor.apply_chat_template(
            messages,
            tokenize=False,
            add_generation_prompt=spec.generation_prompt is None,
            **dict(spec.chat_template_kwargs),
        )
        if spec.generation_prompt:
            text += spec.generation_prompt
        if spec.assistant_prefill:
            text += spec.assistant_prefill
        return text

    def generate(self, items: Sequence[GenItem]) -> list[GenOut]:
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, it in enumerate(items):
            key = (
                it.spec.max_new_tokens,
                it.temperature,
                it.spec.stop,
                it.spec.keep_special_tokens,
            )
            groups.setdefault(key, []).append(i)
        outs: list[GenOut | None] = [None] * len(items)
        for idx in groups.values():
            for i, o in zip(idx, self._generate([items[i] for i in idx]), strict=True):
                outs[i] = o
        return [o for o in outs if o is not None]

    def _generate(self, items: Sequence[GenItem]) -> list[GenOut]:
        import torch

        texts = [self.render(it.spec) for it in items]
        if self.loader in _FLAT_IMAGES:
            images: list[Any] = [it.image for it in items]
        else:
            images = [[it.image] for it in items]
        inputs = self.processor(text=texts, images=images, padding=True, return_tensors="pt")
        self._check_seen(items, inputs)
        inputs = inputs.to(self.model.device)
        first = items[0]
        gen: dict[str, Any] = {"max_new_tokens": first.spec.max_new_tokens}
        if first.temperature:
            gen.update(do_sample=True, temperature=first.temperature)
        else:
            gen.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if first.spec.stop:
            gen.update(stop_strings=list(first.spec.stop), tokenizer=self.tokenizer)
        pad = self.tokenizer.pad_token_id
        if pad is not None:
            gen["pad_token_id"] = pad
        with torch.inference_mode():
            out = self.model.generate(**inputs, **gen)
        n_in = inputs["input_ids"].shape[1]
        new = out[:, n_in:]
        skip = not first.spec.keep_special_tokens
        result = []
        mask = inputs.get("attention_mask")
        for row in range(new.shape[0]):
            ids = [int(t) for t in new[row].tolist()]
            if pad is not None:
                while ids and ids[-1] == pad:
                    ids.pop()
            text = self.tokenizer.decode(ids, skip_special_tokens=skip)
            used = int(mask[row].sum()) if mask is not None else n_in
            result.append(GenOut(text, used, len(ids)))
        return result

    def _check_seen(self, items: Sequence[GenItem], inputs: Any) -> None:
        """Pre-resized images (abs_resized) must reach the model at the size they were sent."""
        grid = inputs.get("image_grid_thw") if hasattr(inputs, "get") else None
        patch = getattr(self.image_processor, "patch_size", None)
        if grid is None or not isinstance(patch, int):
            return
        sent = [it.expect_size for it in items]
        if any(sent):
            check_grid(
                sent, grid.tolist(), patch, checkpoint=self.checkpoint, bounds=self.pixel_bounds
            )
