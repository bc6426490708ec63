"""UI-Venus-1.5 (Ant Group; 2B, 8B dense and 30B-A3B MoE on Qwen3-VL): one card, the sizes
are its checkpoints.

Prompt, answer and reading from inclusionAI/UI-Venus `models/grounding/ui_venus1_5_gd.py` (and
its `eval_screenspot_pro.py`, the script of the published ScreenSpot-Pro numbers): the
instruction without a trailing period, asked for "the center point ... in the format [x,y]",
with the refusal clause the script sends by default (`[-1,-1]` when the target is not on the
screen). The answer is on a 0..1000 grid (`point / 1000`); `[x1,y1,x2,y2]` and
`[x1,y1],[x2,y2]` are read as their centre, as the script reads them; `[-1,-1]` is no
prediction, flagged `refused`. The image goes through qwen-vl-utils' `process_vision_info`
with its defaults (smart_resize, factor 28, 4..16384 x 28 x 28 pixels); the harness pre-resizes
the same way (the answer is relative, so the frame is unaffected).
"""

from __future__ import annotations

import re

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ModelCard, ParsedAnswer, PromptSpec
from medspot.adapters.cards.common import native_only_card, style, with_history
from medspot.adapters.conventions import QWEN_DEFAULT_RESIZE
from medspot.adapters.parsing import anchored_answer, clean_text

__all__ = ["GROUNDING_PROMPT", "REFUSED", "parse_ui_venus", "ui_venus_15"]

GROUNDING_PROMPT = (
    "Output the center point of the position corresponding to the following instruction: "
    "\n{}. \n\nThe output should just be the coordinates of a point, in the format [x,y]. "
    "Additionally, if the task is infeasible (e.g., the task is not related to the image), the "
    "output should be [-1,-1]."
)
REFUSED = "refused"  # the model answered that the target is not on the screen

_N = r"-?\d+(?:\.\d+)?"
_REFUSAL = re.compile(r"\[\s*-1\s*,\s*-1\s*\]")
_TWO_POINTS = re.compile(rf"\[\s*({_N})\s*,\s*({_N})\s*\]\s*,\s*\[\s*({_N})\s*,\s*({_N})\s*\]")

_STATUS = (
    "Prompt text and parser tested offline; a tiny random Qwen3-VL runs the hf path on CPU and "
    "the test server the served path. Real weights need a GPU (not run here)."
)


def _two_points_as_box(text: str) -> str:
    """`[x1,y1],[x2,y2]` as the whole answer is one box (the script's third pattern)."""
    m = _TWO_POINTS.fullmatch(text.strip())
    return f"[{m[1]}, {m[2]}, {m[3]}, {m[4]}]" if m else text


def parse_ui_venus(text: str, sent: tuple[int, int], original: tuple[int, int]) -> ParsedAnswer:
    cleaned, flags = clean_text(text)
    if _REFUSAL.fullmatch(cleaned.strip().rstrip(".")):
        return ParsedAnswer(None, flags=(*flags, REFUSED))
    return anchored_answer(text, Convention.REL1000, sent, original, rewrite=_two_points_as_box)


def ui_venus_15() -> ModelCard:
    def native_text(req: StepRequest) -> str:
        instruction = with_history(req.instruction, req)
        return GROUNDING_PROMPT.format(instruction.removesuffix("."))

    base = PromptSpec(user_text="", max_new_tokens=128, resize=QWEN_DEFAULT_RESIZE)
    native = style(native_text, base, parse_ui_venus, Convention.REL1000)
    return native_only_card(
        native,
        name="ui-venus-1.5",
        title="UI-Venus-1.5 (2B / 8B / 30B-A3B)",
        family="ui_venus_1_5",
        checkpoint="inclusionAI/UI-Venus-1.5-8B",
        status=_STATUS,
        packages=("transformers", "qwen-vl-utils"),
        hf_loader="qwen_vl_auto",
        aliases=("inclusionAI/UI-Venus-1.5-2B", "inclusionAI/UI-Venus-1.5-30B-A3B"),
        notes="[x,y] on 0..1000; [-1,-1] (infeasible) is no prediction, flagged refused.",
    )
