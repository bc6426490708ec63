"""GTA1 (Salesforce; 7B, 32B, 72B on Qwen2.5-VL): one card, the sizes are its checkpoints.

From Yan98/GTA1 `README.md` "Inference" (the repository the model cards link): the screenshot is
smart-resized (factor = the processor's patch size x merge size = 28, min_pixels 3136,
max_pixels 4096 x 2160), the system message names the resized image's height and width, the
user message is the image then the element's description, and the answer `(x,y)` is in pixels
of that resized image (the README scales it back by original / resized): abs_resized. The
harness resizes the screenshot the same way, sends it, and fills the size it sent into the
system message (`PromptSpec.fill_sent_size`).
"""

from __future__ import annotations

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import SENT_HEIGHT, SENT_WIDTH, ModelCard, PromptSpec, ResizeSpec
from medspot.adapters.cards.common import simple_parser, style, with_history

__all__ = ["GTA1_RESIZE", "SYSTEM_TEMPLATE", "gta1"]

GTA1_RESIZE = ResizeSpec(factor=28, min_pixels=3136, max_pixels=4096 * 2160)
# README.md's SYSTEM_PROMPT after its `.strip()`; {height} and {width} are the resized image's.
SYSTEM_TEMPLATE = (
    "You are an expert UI element locator. Given a GUI image and a user's element description, "
    "provide the coordinates of the specified element as a single (x,y) point. The image "
    "resolution is height {height} and width {width}. For elements with area, return the "
    "center point.\n\nOutput the coordinate pair exactly:\n(x,y)"
)

_STATUS = (
    "Prompt text and parser tested offline; a tiny random Qwen2.5-VL runs the hf path on CPU "
    "and the test server the served path. Real weights need a GPU (not run here)."
)


def gta1() -> ModelCard:
    system = SYSTEM_TEMPLATE.replace("{height}", SENT_HEIGHT).replace("{width}", SENT_WIDTH)

    def native_text(req: StepRequest) -> str:
        return with_history(req.instruction, req)

    base = PromptSpec(
        user_text="", system=system, max_new_tokens=32, resize=GTA1_RESIZE, fill_sent_size=True
    )
    native = style(native_text, base, simple_parser(Convention.ABS_RESIZED), Convention.ABS_RESIZED)
    return ModelCard(
        name="gta1",
        title="GTA1 (7B / 32B / 72B)",
        family="gta1",
        checkpoint="Salesforce/GTA1-7B",
        backends=("openai", "hf"),
        native=native,
        upstream=native,  # no MedSPOT authors' script: upstream is the native prompt
        upstream_preset="upstream-c",
        status=_STATUS,
        packages=("transformers", "qwen-vl-utils"),
        hf_loader="qwen2_5_vl",
        aliases=("Salesforce/GTA1-32B", "HelloKKMe/GTA1-7B-2507"),
        notes="(x,y) in pixels of the image smart-resized with factor 28, 3136..4096x2160 "
        "pixels; the system message names that size.",
    )
