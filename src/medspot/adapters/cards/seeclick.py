"""SeeClick (Qwen-VL based): rel1 points, or a Qwen-VL `<box>` on 0..1000."""

from __future__ import annotations

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ModelCard, ParsedAnswer, PromptSpec
from medspot.adapters.cards import upstream_parsers, upstream_prompts
from medspot.adapters.cards.common import instruction_text, style, with_history
from medspot.adapters.parsing import anchored_answer

__all__ = ["parse_native", "seeclick"]

INSTALL_HINT = (
    "SeeClick runs on Qwen-VL remote code, which needs tiktoken, transformers_stream_generator "
    "and einops and an older transformers; best in its own environment."
)


def parse_native(text: str, sent: tuple[int, int], original: tuple[int, int]) -> ParsedAnswer:
    """`(0.17,0.06)` / `(l,t,r,b)` fractions; `<box>(x1,y1),(x2,y2)</box>` on 0..1000."""
    if text and "<box>" in text:
        return anchored_answer(text, Convention.REL1000, sent, original, box_pairs=True)
    return anchored_answer(text, Convention.REL1, sent, original, rel1_drift=True)


def seeclick() -> ModelCard:
    def native_text(req: StepRequest) -> str:
        return upstream_prompts.seeclick(with_history(req.instruction, req))

    upstream_text = instruction_text(upstream_prompts.seeclick)
    native = PromptSpec(user_text="", max_new_tokens=64)
    upstream = PromptSpec(user_text="", max_new_tokens=64)
    return ModelCard(
        name="seeclick",
        title="SeeClick",
        family="seeclick",
        checkpoint="cckevinn/SeeClick",
        backends=("hf",),
        native=style(native_text, native, parse_native, Convention.REL1),
        upstream=style(upstream_text, upstream, upstream_parsers.seeclick, Convention.REL1),
        upstream_preset="upstream-d",
        status="Prompt texts and parsers tested offline; Qwen-VL remote code is unverified on "
        "current transformers.",
        packages=("transformers", "tiktoken", "transformers_stream_generator", "einops"),
        hf_loader="qwen_vl_chat",
        trust_remote_code=True,
        processor_checkpoint="Qwen/Qwen-VL-Chat",
        install_hint=INSTALL_HINT,
        notes="Image before text via the tokenizer's from_list_format; answered by model.chat.",
    )
