"""UI-TARS-1.5-7B (abs_resized) and UI-TARS-7B-SFT (v1, rel1000)."""

from __future__ import annotations

import re

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ModelCard, ParsedAnswer, PromptSpec, StyleSpec
from medspot.adapters.cards import upstream_parsers, upstream_prompts
from medspot.adapters.cards.common import Parser, style, with_history
from medspot.adapters.conventions import UI_TARS_RESIZE
from medspot.adapters.parsing import anchored_answer

__all__ = [
    "GROUNDING_TEMPLATE",
    "V1_GROUNDING_PREFIX",
    "parse_action",
    "ui_tars_7b_sft",
    "ui_tars_15_7b",
]

# bytedance/UI-TARS GROUNDING template (endorsed for 1.5 in issue #138).
GROUNDING_TEMPLATE = (
    "You are a GUI agent. You are given a task and your action history, with screenshots. "
    "You need to perform the next action to complete the task. \n\n## Output Format\n\n"
    "Action: ...\n\n\n## Action Space\nclick(start_box='<|box_start|>(x1,y1)<|box_end|>')\n\n"
    "## User Instruction\n{instruction}"
)
# README_v1 single-step grounding prompt.
V1_GROUNDING_PREFIX = (
    "Output only the coordinate of one point in your response. "
    "What element matches the following task: "
)

_POINT_TAG = re.compile(r"<point>\s*([-+\d.]+)[\s,]+([-+\d.]+)\s*</point>")
_CONTENT = re.compile(r"content\s*=\s*(['\"]).*?\1", re.DOTALL)
_ACTION = re.compile(r"Action\s*:", re.IGNORECASE)


def _rewrite(text: str) -> str:
    """`<point>x y</point>` to `(x,y)`; quoted `content='...'` (typed text) removed."""
    return _CONTENT.sub("content=''", _POINT_TAG.sub(r"(\1,\2)", text))


def _anchor(text: str) -> tuple[int, int] | None:
    found = list(_ACTION.finditer(text))
    return (found[-1].end(), len(text)) if found else None


def parse_action(convention: Convention) -> Parser:
    """UI-TARS reader: the last `Action:` is the anchor; `<point>x y</point>` accepted."""

    def parse(text: str, sent: tuple[int, int], original: tuple[int, int]) -> ParsedAnswer:
        return anchored_answer(text, convention, sent, original, anchor=_anchor, rewrite=_rewrite)

    return parse


def _upstream(base: PromptSpec) -> StyleSpec:
    def text(req: StepRequest) -> str:
        return upstream_prompts.tars(req.instruction)

    return style(text, base, upstream_parsers.tars, Convention.ABS_ORIGINAL)


_UPSTREAM_BASE = PromptSpec(
    user_text="", max_new_tokens=64, retries_on_no_point=2, retry_temperature=0.3
)


def ui_tars_15_7b() -> ModelCard:
    def native_text(req: StepRequest) -> str:
        return GROUNDING_TEMPLATE.replace("{instruction}", with_history(req.instruction, req))

    native = PromptSpec(user_text="", max_new_tokens=128, resize=UI_TARS_RESIZE)
    return ModelCard(
        name="ui-tars-1.5-7b",
        title="UI-TARS-1.5-7B",
        family="ui_tars_1_5",
        checkpoint="ByteDance-Seed/UI-TARS-1.5-7B",
        backends=("openai", "hf"),
        native=style(
            native_text, native, parse_action(Convention.ABS_RESIZED), Convention.ABS_RESIZED
        ),
        upstream=_upstream(_UPSTREAM_BASE),
        upstream_preset="upstream-e",
        status="Prompt texts and parsers tested offline; generation needs a GPU.",
        packages=("transformers", "qwen-vl-utils"),
        hf_loader="qwen2_5_vl",
        notes="Pixels of the image smart-resized with factor 28, min 100*28*28, max "
        "16384*28*28; the harness resizes and sends it. Points only.",
    )


def ui_tars_7b_sft() -> ModelCard:
    def native_text(req: StepRequest) -> str:
        return V1_GROUNDING_PREFIX + with_history(req.instruction, req)

    native = PromptSpec(user_text="", max_new_tokens=64)
    return ModelCard(
        name="ui-tars-7b-sft",
        title="UI-TARS-7B-SFT",
        family="ui_tars_v1",
        checkpoint="bytedance-research/UI-TARS-7B-SFT",
        backends=("openai", "hf"),
        native=style(native_text, native, parse_action(Convention.REL1000), Convention.REL1000),
        upstream=_upstream(_UPSTREAM_BASE),
        upstream_preset="upstream-e",
        status="Prompt texts and parsers tested offline; generation needs a GPU.",
        packages=("transformers",),
        hf_loader="qwen2_vl",
        aliases=("ByteDance-Seed/UI-TARS-7B-SFT",),
        notes="v1 answers on 0..1000 (README_v1); never read it as 1.5's pixels.",
    )
