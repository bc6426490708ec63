"""GTA1 (Salesforce): two releases under one name, two cards.

`gta1`: the July 2025 release (GTA1-2507: 7B, 32B, 72B, Qwen2.5-VL). From Yan98/GTA1
`README.md` "Inference" (the repository the model cards link; its code loads
`HelloKKMe/GTA1-7B-2507`, its header links `Salesforce/GTA1-7B-2507`): the screenshot is
smart-resized (factor = the processor's patch size x merge size = 28, min_pixels 3136,
max_pixels 4096 x 2160), the system message names the resized image's height and width, the
user message is the image then the element's description, and the answer `(x,y)` is in pixels
of that resized image (the README scales it back by original / resized): abs_resized. The
harness resizes the screenshot the same way, sends it, and fills the size it sent into the
system message (`PromptSpec.fill_sent_size`).

`gta1-opencua`: the October 2025 release (`Salesforce/GTA1-7B`, `Salesforce/GTA1-32B`), which
the README's header now links as "7B Model" and "32B Model": fine-tunes of OpenCUA-7B and
OpenCUA-32B (the model cards' table: "OpenCUA-7B, and OpenCUA-32B are applied as our baseline
models"), asked and answering as OpenCUA. From xlang-ai/OpenCUA `model/README.md` ("GUI
Grounding", "Important Notes on Coordinate Systems") and
`model/inference/huggingface_inference.py`: OpenCUA's system message, the image then the
instruction, the answer a `pyautogui.click(x=1443, y=343)` (in a python code block) in absolute
pixels of the image smart-resized with factor 28, min_pixels 3136, max_pixels 12845056 (the
README's `qwen25_smart_resize_to_absolute`): abs_resized with qwen-vl-utils' default bounds.
The checkpoints load only through their own remote code (Kimi-VL's tokenizer and chat
template, a 1D-RoPE model class: "Do not use the default transformers and vllm classes"), so
the card runs served (vLLM's OpenCUA support, `--trust-remote-code`), not in-process.

Each card refuses the other's checkpoints (`ModelCard.lookalikes`).
"""

from __future__ import annotations

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import (
    SENT_HEIGHT,
    SENT_WIDTH,
    ModelCard,
    ParsedAnswer,
    PromptSpec,
    ResizeSpec,
)
from medspot.adapters.cards.common import (
    native_only_card,
    pyautogui_anchor,
    simple_parser,
    style,
    with_history,
)
from medspot.adapters.conventions import QWEN_DEFAULT_RESIZE
from medspot.adapters.parsing import anchored_answer

__all__ = [
    "GTA1_2507_CHECKPOINTS",
    "GTA1_RESIZE",
    "OPENCUA_CHECKPOINTS",
    "OPENCUA_RESIZE",
    "OPENCUA_SYSTEM",
    "SYSTEM_TEMPLATE",
    "gta1",
    "gta1_opencua",
    "parse_opencua",
]

# The July release: the README's header link (the card's default), the id its inference code
# loads, and the 32B and 72B of the July README's links (`HelloKKMe/GTA1-32B`, `-72B`).
GTA1_2507_CHECKPOINTS = (
    "Salesforce/GTA1-7B-2507",
    "HelloKKMe/GTA1-7B-2507",
    "HelloKKMe/GTA1-32B",
    "HelloKKMe/GTA1-72B",
)
# The October release on OpenCUA (the README's header links since 2025-10-03).
OPENCUA_CHECKPOINTS = ("Salesforce/GTA1-7B", "Salesforce/GTA1-32B")

GTA1_RESIZE = ResizeSpec(factor=28, min_pixels=3136, max_pixels=4096 * 2160)
# README.md's SYSTEM_PROMPT after its `.strip()`; {height} and {width} are the resized image's.
SYSTEM_TEMPLATE = (
    "You are an expert UI element locator. Given a GUI image and a user's element description, "
    "provide the coordinates of the specified element as a single (x,y) point. The image "
    "resolution is height {height} and width {width}. For elements with area, return the "
    "center point.\n\nOutput the coordinate pair exactly:\n(x,y)"
)

# OpenCUA model/README.md `create_grounding_messages` (huggingface_inference.py the same).
OPENCUA_SYSTEM = (
    "You are a GUI agent. You are given a task and a screenshot of the screen. "
    "You need to perform a series of pyautogui actions to complete the task."
)
# `qwen25_smart_resize_to_absolute`: factor 28, min_pixels 3136, max_pixels 12845056 (the
# qwen-vl-utils defaults).
OPENCUA_RESIZE = QWEN_DEFAULT_RESIZE

_STATUS_2507 = (
    "Prompt text and parser tested offline; a tiny random Qwen2.5-VL runs the hf path on CPU "
    "and the test server the served path. Real weights need a GPU (not run here)."
)
_STATUS_OPENCUA = (
    "Prompt text and parser tested offline; the test server runs the served path. Served only "
    "(the checkpoints' own remote code); real weights need a GPU and a vLLM server (not run "
    "here)."
)
_HF_REFUSAL = (
    "the October GTA1 checkpoints load only through their own remote code (OpenCUA's Kimi-VL "
    "tokenizer and chat template, a 1D-RoPE model class), which medspot's in-process backend "
    "does not run; serve the checkpoint with vLLM (vllm serve Salesforce/GTA1-7B "
    "--trust-remote-code) and pass --base-url"
)


def gta1() -> ModelCard:
    system = SYSTEM_TEMPLATE.replace("{height}", SENT_HEIGHT).replace("{width}", SENT_WIDTH)

    def native_text(req: StepRequest) -> str:
        return with_history(req.instruction, req)

    base = PromptSpec(
        user_text="", system=system, max_new_tokens=32, resize=GTA1_RESIZE, fill_sent_size=True
    )
    native = style(native_text, base, simple_parser(Convention.ABS_RESIZED), Convention.ABS_RESIZED)
    default, *others = GTA1_2507_CHECKPOINTS
    return native_only_card(
        native,
        name="gta1",
        title="GTA1-2507 (7B / 32B / 72B, July 2025, Qwen2.5-VL)",
        family="gta1",
        checkpoint=default,
        status=_STATUS_2507,
        packages=("transformers", "qwen-vl-utils"),
        hf_loader="qwen2_5_vl",
        aliases=tuple(others),
        lookalikes=tuple((c, "gta1-opencua") for c in OPENCUA_CHECKPOINTS),
        notes="(x,y) in pixels of the image smart-resized with factor 28, 3136..4096x2160 "
        "pixels; the system message names that size. The October GTA1 (Salesforce/GTA1-7B, "
        "-32B) is card gta1-opencua.",
    )


def parse_opencua(text: str, sent: tuple[int, int], original: tuple[int, int]) -> ParsedAnswer:
    """The first pyautogui call's x, y (named or positional), in pixels of the image sent."""
    return anchored_answer(text, Convention.ABS_RESIZED, sent, original, anchor=pyautogui_anchor)


def gta1_opencua() -> ModelCard:
    def native_text(req: StepRequest) -> str:
        return with_history(req.instruction, req)

    base = PromptSpec(
        user_text="", system=OPENCUA_SYSTEM, max_new_tokens=512, resize=OPENCUA_RESIZE
    )
    native = style(native_text, base, parse_opencua, Convention.ABS_RESIZED)
    default, *others = OPENCUA_CHECKPOINTS
    return native_only_card(
        native,
        name="gta1-opencua",
        title="GTA1 on OpenCUA (7B / 32B, October 2025)",
        family="gta1_opencua",
        checkpoint=default,
        backends=("openai",),
        status=_STATUS_OPENCUA,
        aliases=tuple(others),
        lookalikes=tuple((c, "gta1") for c in GTA1_2507_CHECKPOINTS),
        hf_refusal=_HF_REFUSAL,
        notes="pyautogui.click(x=.., y=..) in pixels of the image smart-resized with factor "
        "28, 3136..12845056 pixels (OpenCUA's frame); served only.",
    )
