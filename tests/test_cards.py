"""The 16 model cards: names, fields, prompt texts (native and upstream), registry, generic."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import PromptSpec, PromptStyle
from medspot.adapters.cards import CARDS, get_card, make_generic_card
from medspot.adapters.conventions import QWEN_DEFAULT_RESIZE, UI_TARS_RESIZE, smart_resize
from medspot.errors import ConfigError

REQUIRED = [
    "gpt-4o-mini",
    "gpt-5",
    "gui-actor-7b",
    "ui-tars-1.5-7b",
    "ui-tars-7b-sft",
    "cogagent-9b",
    "qwen2-vl-7b",
    "qwen2.5-vl-7b",
    "qwen3-vl-8b",
    "gemma-3-27b",
    "llama-3.2-11b-vision",
    "os-atlas-7b",
    "seeclick",
    "uground-v1-7b",
    "aguvis-7b-720p",
    "deepseek-vl2",
    "mistral-small-3.1-24b",
]
PRESETS = {
    "upstream-a": [
        "aguvis-7b-720p",
        "cogagent-9b",
        "deepseek-vl2",
        "mistral-small-3.1-24b",
        "os-atlas-7b",
        "qwen2-vl-7b",
        "uground-v1-7b",
    ],
    "upstream-b": ["gpt-4o-mini", "gpt-5"],
    "upstream-c": ["gemma-3-27b", "llama-3.2-11b-vision", "qwen3-vl-8b", "qwen2.5-vl-7b"],
    "upstream-d": ["gui-actor-7b", "seeclick"],
    "upstream-e": ["ui-tars-1.5-7b", "ui-tars-7b-sft"],
}
INSTR = "Click on the File menu in the top toolbar"


def req(**kw: object) -> StepRequest:
    base: dict[str, object] = dict(
        step_uid="App/0/1",
        task_uid="App/0",
        image_rel="a.png",
        image_path=Path("/x/a.png"),
        image_size=(1920, 1080),
        instruction=INSTR,
    )
    base.update(kw)
    return StepRequest(**base)  # type: ignore[arg-type]


def native_spec(name: str, **kw: object) -> PromptSpec:
    return get_card(name).native.build(req(**kw))


def upstream_spec(name: str, **kw: object) -> PromptSpec:
    return get_card(name).upstream.build(req(**kw))


def test_every_required_card_is_registered() -> None:
    for name in REQUIRED:
        assert name in CARDS
    assert {"deepseek-vl2-small", "deepseek-vl2-tiny", "ministral-3-8b"} <= set(CARDS)


@pytest.mark.parametrize(("preset", "names"), sorted(PRESETS.items()))
def test_upstream_presets(preset: str, names: list[str]) -> None:
    for n in names:
        assert get_card(n).upstream_preset == preset


def test_card_fields() -> None:
    for name, card in CARDS.items():
        assert card.name == name and card.checkpoint and card.title and card.status
        assert set(card.backends) <= {"openai", "hf"} and card.backends
        assert card.style(PromptStyle.NATIVE) is card.native
        assert card.style(PromptStyle.UPSTREAM) is card.upstream
    assert get_card("gui-actor-7b").backends == ("hf",)
    assert get_card("gpt-5").backends == ("openai",)
    assert get_card("gpt-4o-mini").backends == ("openai",)
    assert get_card("qwen2.5-vl-7b").native.convention is Convention.ABS_RESIZED
    assert get_card("ui-tars-1.5-7b").native.convention is Convention.ABS_RESIZED
    assert get_card("ui-tars-7b-sft").native.convention is Convention.REL1000
    assert get_card("deepseek-vl2").native.convention is Convention.REL999
    assert get_card("gui-actor-7b").native.convention is Convention.POINTER
    assert get_card("aguvis-7b-720p").native.convention is Convention.REL1


def test_resize_specs() -> None:
    tars = native_spec("ui-tars-1.5-7b").resize
    assert tars == UI_TARS_RESIZE
    assert (tars.factor, tars.min_pixels, tars.max_pixels) == (28, 100 * 784, 16384 * 784)
    q = native_spec("qwen2.5-vl-7b").resize
    assert q == QWEN_DEFAULT_RESIZE and q is not None
    assert smart_resize(1920, 1080, q) == (1932, 1092)
    assert native_spec("qwen3-vl-8b").resize is None  # rel1000: no bookkeeping
    assert native_spec("gpt-4o-mini").resize is None


# --- native prompt texts ------------------------------------------------------------------

HARNESS = (
    f"{INSTR}\nGive the single point to click for this instruction as (x, y), with x and y "
    "integers from 0 (left/top edge) to 1000 (right/bottom edge) of the image. "
    "Reply with (x, y) only."
)


@pytest.mark.parametrize(
    "name",
    [
        "gpt-4o-mini",
        "gpt-5",
        "gemma-3-27b",
        "llama-3.2-11b-vision",
        "mistral-small-3.1-24b",
        "ministral-3-8b",
    ],
)
def test_harness_prompt(name: str) -> None:
    spec = native_spec(name)
    assert spec.user_text == HARNESS
    assert spec.image_first


def test_gpt_native_settings() -> None:
    mini = native_spec("gpt-4o-mini")
    assert (mini.detail, mini.temperature, mini.image_format, mini.api) == (
        "high",
        0.0,
        "png",
        "chat",
    )
    g5 = native_spec("gpt-5")
    assert g5.temperature is None and g5.api == "responses" and g5.reasoning_effort


def test_native_prompts_of_gui_models() -> None:
    assert native_spec("ui-tars-1.5-7b").user_text == (
        "You are a GUI agent. You are given a task and your action history, with screenshots. "
        "You need to perform the next action to complete the task. \n\n## Output Format\n\n"
        "Action: ...\n\n\n## Action Space\nclick(start_box='<|box_start|>(x1,y1)<|box_end|>')"
        f"\n\n## User Instruction\n{INSTR}"
    )
    assert native_spec("ui-tars-7b-sft").user_text == (
        "Output only the coordinate of one point in your response. What element matches the "
        f"following task: {INSTR}"
    )
    assert native_spec("cogagent-9b").user_text == (
        f"Task: {INSTR}\nHistory steps: \n(Platform: WIN)\n"
        "(Answer in Action-Operation-Sensitive format.)"
    )
    assert native_spec("os-atlas-7b").user_text == (
        "In this UI screenshot, what is the position of the element corresponding to the "
        f'command "{INSTR}" (with bbox)?'
    )
    assert native_spec("seeclick").user_text == (
        "In this UI screenshot, what is the position of the element corresponding to the "
        f'command "{INSTR}" (with point)?'
    )
    assert native_spec("uground-v1-7b").user_text == (
        "\nYour task is to help the user identify the precise coordinates (x, y) of a specific "
        "area/element/object on the screen based on a description.\n\n- Your response should "
        "aim to point to the center or a representative point within the described "
        "area/element/object as accurately as possible.\n- If the description is unclear or "
        "ambiguous, infer the most relevant area or element based on its likely context or "
        "purpose.\n- Your answer should be a single string (x, y) corresponding to the point "
        f"of the interest.\n\nDescription: {INSTR}\n\nAnswer:"
    )
    assert native_spec("deepseek-vl2").user_text == f"<|ref|>{INSTR}<|/ref|>."
    assert native_spec("deepseek-vl2").keep_special_tokens
    ag = native_spec("aguvis-7b-720p")
    assert ag.system == (
        "You are a GUI agent. You are given a task and a screenshot of the screen. You need to "
        "perform a series of pyautogui actions to complete the task."
    )
    assert ag.user_text == (
        "Please generate the next move according to the ui screenshot, instruction and "
        f"previous actions.\n\nInstruction: {INSTR}\n\nPrevious actions:\nNone\n"
    )
    assert ag.generation_prompt == "<|im_start|>assistant<|recipient|>os\n"
    assert ag.stop == ("<|diff_marker|>",)
    ga = native_spec("gui-actor-7b")
    assert ga.user_text == INSTR and ga.system is not None
    assert ga.system.startswith("You are a GUI agent. Given a screenshot of the current GUI")
    assert "pyautogui.click(<your_special_token_here>)" in ga.system
    assert "JSON" in native_spec("qwen2.5-vl-7b").user_text
    assert "point coordinates in JSON format" in native_spec("qwen3-vl-8b").user_text


def test_history_modes_reach_the_prompt() -> None:
    kw: dict[str, object] = {"task_overview": "Open a study", "history": ("Click File",)}
    assert native_spec("gpt-4o-mini", **kw).user_text.startswith(
        "Overall task: Open a study\nPrevious steps:\n1. Click File\nCurrent step: " + INSTR
    )
    cog = native_spec("cogagent-9b", **kw).user_text
    assert "History steps: \n0. Click File\t\n(Platform: WIN)" in cog
    assert "Previous actions:\nClick File\n" in native_spec("aguvis-7b-720p", **kw).user_text


# --- upstream prompt texts (quoted from the authors' scripts) --------------------------------


def test_upstream_gpt_prompt_and_image_handling() -> None:
    for name in ["gpt-4o-mini", "gpt-5"]:
        spec = upstream_spec(name)
        assert spec.user_text == (
            f"{INSTR}\nImage resolution: width=1920, height=1080.\nClick the correct UI "
            "element.\nReturn ONLY integer pixel coordinates as (x,y) where x is in [0,1920] "
            "and y is in [0,1080]. No explanation."
        )
        assert not spec.image_first and spec.image_format == "png" and spec.resize is None
    assert upstream_spec("gpt-4o-mini").detail == "high"
    assert upstream_spec("gpt-5").api == "responses"


def test_upstream_prompts_of_local_models() -> None:
    assert upstream_spec("ui-tars-1.5-7b").user_text == (
        f"{INSTR}\nLook at the image and click the correct UI element. Respond ONLY with the "
        "click location in the format (x,y) using pixel coordinates."
    )
    tars = upstream_spec("ui-tars-7b-sft")
    assert (tars.retries_on_no_point, tars.retry_temperature, tars.max_new_tokens) == (2, 0.3, 64)
    assert upstream_spec("qwen2.5-vl-7b").user_text == (
        f"{INSTR}\nRespond ONLY with (x,y) pixel coordinates."
    )
    assert upstream_spec("qwen2-vl-7b").user_text == (
        f"{INSTR}\n\nThe image is 1920x1080 pixels.\nLook carefully and identify the exact UI "
        "element described.\nReturn the pixel coordinates of the CENTER of that element.\n"
        "Format strictly: (x,y)\nDo NOT return the image center. Do NOT explain."
    )
    assert upstream_spec("qwen3-vl-8b").user_text == (
        f"{INSTR}\nLook at the image and click the correct UI element. Respond ONLY with the "
        "click location in the format (x,y)."
    )
    assert upstream_spec("os-atlas-7b").user_text == (
        "In this UI screenshot, what is the position of the element corresponding to the "
        f'command "{INSTR}" (with point)?'
    )
    assert upstream_spec("cogagent-9b").user_text == (
        f"Task: {INSTR} (Platform: WIN) (Answer in Action-Operation-Sensitive format.)"
    )
    ds = upstream_spec("deepseek-vl2")
    assert ds.user_text == (
        f"{INSTR}\n\nLook carefully at the screenshot and locate the UI element.\nReturn ONLY "
        "the normalized coordinates (x,y) where x and y are between 0 and 1.\nFormat strictly: "
        "(x,y)\nDo NOT explain."
    )
    assert ds.max_new_tokens == 20
    assert upstream_spec("gemma-3-27b").user_text == (
        f"{INSTR}\nClick anywhere inside the correct UI element's bounding box. The click does "
        "NOT need to be centered. Respond ONLY with the click location in format (x,y)."
    )
    assert upstream_spec("llama-3.2-11b-vision").user_text == (
        f"{INSTR}\n\nReturn ONLY a single coordinate pair.\nOutput format must be exactly:\n"
        "(x,y)\n\nDo NOT explain.\nDo NOT describe.\nDo NOT output text.\nIf unsure, guess.\n"
        "Your entire response must be only two numbers inside parentheses."
    )
    assert upstream_spec("mistral-small-3.1-24b").user_text == (
        f"{INSTR}\n\nThe image is 1920x1080 pixels.\nLook carefully at the image and identify "
        "the exact UI element described.\nReturn the pixel coordinates of the CENTER of that UI "
        "element.\nFormat strictly: (x,y)\nDo NOT return the image center. Do NOT explain."
    )
    ug = upstream_spec("uground-v1-7b")
    assert ug.image_format == "jpeg"
    assert ug.user_text.startswith(
        "Your task is to help the user identify the precise coordinates (x, y) of a specific "
        "area/element/object on the screen based on a description.\n- Your response"
    )
    assert ug.user_text.endswith(f"of the interest.\nDescription: {INSTR}\nAnswer:")
    ag = upstream_spec("aguvis-7b-720p")
    assert ag.user_text == INSTR and ag.generation_prompt is None
    ga = upstream_spec("gui-actor-7b")
    assert ga.system == (
        "You are a GUI agent. Locate the UI element described by the instruction and click "
        "inside it."
    )
    assert ga.topk == 5 and ga.user_text == INSTR
    assert upstream_spec("seeclick").user_text == native_spec("seeclick").user_text


def test_upstream_prompts_ignore_history() -> None:
    kw: dict[str, object] = {"task_overview": "Open a study", "history": ("Click File",)}
    assert upstream_spec("qwen3-vl-8b", **kw).user_text == upstream_spec("qwen3-vl-8b").user_text


# --- generic cards --------------------------------------------------------------------------


def test_generic_card_default_rel1000() -> None:
    card = make_generic_card("my-vlm")
    assert card.name == "openai:my-vlm" and card.backends == ("openai",)
    assert card.native.build(req()).user_text == HARNESS
    ans = card.native.parse("(250, 500)", (1920, 1080), (1920, 1080))
    assert ans.point is not None and (ans.point.x, ans.point.y) == (0.25, 0.5)
    assert get_card("openai:other").checkpoint == "other"


def test_generic_card_abs_sent_and_template() -> None:
    card = make_generic_card(
        "px", Convention.ABS_SENT, "{instruction} in {width}x{height}: (x, y)?"
    )
    assert card.native.build(req()).user_text == f"{INSTR} in 1920x1080: (x, y)?"
    ans = card.native.parse("(480, 270)", (1920, 1080), (1920, 1080))
    assert ans.point is not None and (ans.point.x, ans.point.y) == (0.25, 0.25)
    default = make_generic_card("px", Convention.ABS_SENT).native.build(req()).user_text
    assert "1920x1080" in default


def test_generic_card_rel1() -> None:
    card = make_generic_card("frac", Convention.REL1)
    ans = card.native.parse("(0.25, 0.5)", (1920, 1080), (1920, 1080))
    assert ans.point is not None and (ans.point.x, ans.point.y) == (0.25, 0.5)
    assert "decimals from 0" in card.native.build(req()).user_text


def test_generic_card_rejects_bad_input() -> None:
    with pytest.raises(ConfigError):
        make_generic_card("m", Convention.ABS_RESIZED)
    with pytest.raises(ConfigError):
        make_generic_card("m", Convention.REL1000, "no placeholder")
    with pytest.raises(ConfigError):
        make_generic_card(" ")
    with pytest.raises(ConfigError):
        get_card("no-such-model")


# --- registry --------------------------------------------------------------------------------


def test_registry_lists_cards_without_heavy_imports() -> None:
    code = (
        "import json, sys\n"
        "from medspot.adapters import registry\n"
        "registry._BUILTIN_MODULES[:] = [m for m in registry._BUILTIN_MODULES\n"
        "    if m == 'medspot.adapters.cards']\n"
        "entries = registry.available()\n"
        "heavy = [m for m in ('torch', 'openai', 'transformers', 'qwen_vl_utils', 'PIL')\n"
        "    if m in sys.modules]\n"
        "print(json.dumps({'names': [e.name for e in entries], 'heavy': heavy,\n"
        "  'targets': sorted({e.target for e in entries}),\n"
        "  'generic': registry.entry('openai:x').name}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert data["heavy"] == []
    assert set(REQUIRED) <= set(data["names"])
    assert "openai" in data["names"] and data["generic"] == "openai"
    assert data["targets"] == [
        "medspot.adapters.factory:create_card_adapter",
        "medspot.adapters.factory:create_generic_adapter",
    ]


# --- the grounding models on the ScreenSpot-Pro leaderboard since the paper --------------------

GROUNDERS = {
    # card: (default checkpoint, native convention, hf loader, backends)
    "holo2": ("Hcompany/Holo2-8B", Convention.REL1000, "qwen_vl_auto", ("openai", "hf")),
    "ui-venus-1.5": (
        "inclusionAI/UI-Venus-1.5-8B",
        Convention.REL1000,
        "qwen_vl_auto",
        ("openai", "hf"),
    ),
    "mai-ui": ("Tongyi-MAI/MAI-UI-8B", Convention.REL1000, "qwen3_vl", ("openai", "hf")),
    "gta1": ("Salesforce/GTA1-7B-2507", Convention.ABS_RESIZED, "qwen2_5_vl", ("openai", "hf")),
    "gta1-opencua": ("Salesforce/GTA1-7B", Convention.ABS_RESIZED, "auto", ("openai",)),
    "gui-owl-1.5": (
        "mPLUG/GUI-Owl-1.5-8B-Instruct",
        Convention.REL1000,
        "qwen3_vl",
        ("openai", "hf"),
    ),
}


@pytest.mark.parametrize("name", sorted(GROUNDERS))
def test_grounder_cards(name: str) -> None:
    ckpt, convention, loader, backends = GROUNDERS[name]
    card = get_card(name)
    assert card.checkpoint == ckpt and card.native.convention is convention
    assert card.hf_loader == loader and card.backends == backends
    assert card.upstream is card.native  # no authors' script for these models
    assert card.aliases  # the other sizes are checkpoints of the same card


# hcompai/hai-cookbook holo2/holo_2_localization_huggingface.ipynb, the cell defining the prompt,
# verbatim (its f-string's continuation lines carry the function body's indentation).
class ClickCoordinates(BaseModel):
    x: int = Field(ge=0, le=1000, description="The x coordinate, normalized between 0 and 1000.")
    y: int = Field(ge=0, le=1000, description="The y coordinate, normalized between 0 and 1000.")


def get_chat_messages(task: str, image: object) -> list[dict[str, Any]]:
    """Create the prompt structure for navigation task"""
    prompt = f"""Localize an element on the GUI image according to the provided target and output a click position.
     * You must output a valid JSON following the format: {ClickCoordinates.model_json_schema()}
     Your target is:"""  # noqa: E501

    return [
        {
            "role": "user",
            "content": [
                {"type": "image", "image": image},
                {"type": "text", "text": f"{prompt}\n{task}"},
            ],
        },
    ]


def test_holo2_prompt_is_h_companys_localization_prompt() -> None:
    (message,) = get_chat_messages(INSTR, None)
    image, text = message["content"]
    spec = native_spec("holo2")
    assert spec.user_text == text["text"]  # whitespace included
    assert "\n     * You must output a valid JSON" in spec.user_text
    assert spec.image_first and image["type"] == "image"
    assert spec.system is None and spec.resize is None


def test_holo2_switches_thinking_off_by_its_own_template_switch() -> None:
    """Holo2 thinks by default; its chat template reads `thinking` (the cookbook's
    `apply_chat_template(..., thinking=False)`, deploy_with_vllm.md's
    `{"chat_template_kwargs": {"thinking": false}}`), not Qwen3's `enable_thinking`."""
    assert dict(native_spec("holo2").chat_template_kwargs) == {"thinking": False}


def test_holo2_names_only_the_checkpoints_h_company_lists() -> None:
    card = get_card("holo2")
    ids = {card.checkpoint, *card.aliases}
    # the cookbook's notebooks and vLLM guide, the Holo2 collection: 4B, 8B, 30B-A3B
    assert ids == {"Hcompany/Holo2-4B", "Hcompany/Holo2-8B", "Hcompany/Holo2-30B-A3B"}
    assert "235B" not in card.title


def test_ui_venus_prompt_is_the_grounding_scripts() -> None:
    spec = native_spec("ui-venus-1.5", instruction="Click on the File menu.")
    assert spec.user_text == (
        "Output the center point of the position corresponding to the following instruction: "
        "\nClick on the File menu. \n\nThe output should just be the coordinates of a point, in "
        "the format [x,y]. Additionally, if the task is infeasible (e.g., the task is not "
        "related to the image), the output should be [-1,-1]."
    )
    assert spec.image_first and spec.resize == QWEN_DEFAULT_RESIZE and spec.max_new_tokens == 128


def test_mai_ui_prompt_is_the_evaluation_scripts() -> None:
    spec = native_spec("mai-ui")
    assert spec.system is not None and spec.system.startswith(
        "You are a GUI grounding agent. \n## Task\nGiven a screenshot and the user's grounding "
        "instruction."
    )
    assert spec.system.endswith(
        '<grounding_think>...</grounding_think>\n<answer>\n{"coordinate": [x,y]}\n</answer>\n'
        "## Input instruction\n"
    )
    assert spec.user_text == INSTR + "\n"
    assert not spec.image_first and spec.image_format == "png"
    assert spec.resize is not None
    assert (spec.resize.factor, spec.resize.min_pixels, spec.resize.max_pixels) == (
        32,
        1024,
        6553600,
    )


def test_gta1_system_message_names_the_size_sent() -> None:
    from medspot.adapters.card import with_sent_size
    from medspot.adapters.cards.gta1 import GTA1_RESIZE

    spec = native_spec("gta1")
    assert spec.user_text == INSTR and spec.image_first and spec.resize == GTA1_RESIZE
    assert (GTA1_RESIZE.factor, GTA1_RESIZE.min_pixels, GTA1_RESIZE.max_pixels) == (
        28,
        3136,
        4096 * 2160,
    )
    w, h = smart_resize(1920, 1080, GTA1_RESIZE)
    filled = with_sent_size(spec, (w, h))
    assert filled.system == (
        "You are an expert UI element locator. Given a GUI image and a user's element "
        "description, provide the coordinates of the specified element as a single (x,y) point. "
        f"The image resolution is height {h} and width {w}. For elements with area, return the "
        "center point.\n\nOutput the coordinate pair exactly:\n(x,y)"
    )
    assert with_sent_size(native_spec("holo2"), (1, 2)) == native_spec("holo2")  # not asked


def test_gta1_names_the_july_checkpoints() -> None:
    """Yan98/GTA1 README.md: its inference code (the `(x,y)` prompt, Qwen2.5-VL) loads
    `HelloKKMe/GTA1-7B-2507`, its header links `Salesforce/GTA1-7B-2507`; the July README linked
    the 32B and 72B as `HelloKKMe/GTA1-32B` and `-72B`. The October `Salesforce/GTA1-7B` and
    `-32B` are the OpenCUA-based card's."""
    july, october = get_card("gta1"), get_card("gta1-opencua")
    assert (july.checkpoint, *july.aliases) == (
        "Salesforce/GTA1-7B-2507",
        "HelloKKMe/GTA1-7B-2507",
        "HelloKKMe/GTA1-32B",
        "HelloKKMe/GTA1-72B",
    )
    assert (october.checkpoint, *october.aliases) == ("Salesforce/GTA1-7B", "Salesforce/GTA1-32B")
    assert "2507" in july.title and "OpenCUA" in october.title


# xlang-ai/OpenCUA model/README.md `create_grounding_messages` (and
# model/inference/huggingface_inference.py), verbatim but for the image's data URL.
def create_grounding_messages(image_path: str, instruction: str) -> list[Any]:
    """Create chat messages for GUI grounding task."""
    system_prompt = (
        "You are a GUI agent. You are given a task and a screenshot of the screen. "
        "You need to perform a series of pyautogui actions to complete the task."
    )

    messages = [
        {"role": "system", "content": system_prompt},
        {
            "role": "user",
            "content": [
                {"type": "image", "image": image_path},
                {"type": "text", "text": instruction},
            ],
        },
    ]
    return messages


def test_gta1_opencua_prompt_is_opencuas_grounding_prompt() -> None:
    system, user = create_grounding_messages("a.png", INSTR)
    spec = native_spec("gta1-opencua")
    assert spec.system == system["content"]
    assert spec.user_text == user["content"][1]["text"] and spec.image_first
    # absolute pixels of the image smart-resized with factor 28, 3136..12845056 (the README's
    # qwen25_smart_resize_to_absolute); the harness sends that image
    assert spec.resize is not None and spec.resize.factor == 28
    assert (spec.resize.min_pixels, spec.resize.max_pixels) == (3136, 12845056)
    assert smart_resize(1920, 1080, spec.resize) == (1932, 1092)


@pytest.mark.parametrize(
    ("model", "given", "right"),
    [
        ("gta1", "Salesforce/GTA1-7B", "gta1-opencua"),
        ("gta1", "salesforce/gta1-32b", "gta1-opencua"),
        ("gta1-opencua", "Salesforce/GTA1-7B-2507", "gta1"),
        ("gta1-opencua", "HelloKKMe/GTA1-72B", "gta1"),
    ],
)
def test_a_gta1_card_refuses_the_other_releases_checkpoints(
    model: str, given: str, right: str
) -> None:
    from medspot.adapters.base import AdapterContext
    from medspot.adapters.factory import build_adapter

    for option in ("api_model", "checkpoint"):
        ctx = AdapterContext.with_options({option: given, "backend": "openai"})
        with pytest.raises(ConfigError, match=f"run it with --model {right}$"):
            build_adapter(get_card(model), ctx)
    for other, card in get_card(model).lookalikes:  # each names a card that runs it
        assert other in (get_card(card).checkpoint, *get_card(card).aliases)


def test_gta1_opencua_refuses_the_hf_backend_saying_why() -> None:
    from medspot.adapters.base import AdapterContext
    from medspot.adapters.factory import build_adapter

    ctx = AdapterContext.with_options({"backend": "hf"})
    with pytest.raises(ConfigError, match="own remote code") as e:
        build_adapter(get_card("gta1-opencua"), ctx)
    assert "vllm serve Salesforce/GTA1-7B --trust-remote-code" in str(e.value)


def test_gui_owl_prompt_is_the_grounding_evaluations() -> None:
    import json
    import re

    spec = native_spec("gui-owl-1.5")
    assert spec.user_text == INSTR and spec.image_first
    assert spec.system is not None and spec.system.startswith(
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n"
    )
    m = re.search(r"<tools>\n(.*)\n</tools>", spec.system, re.DOTALL)
    assert m is not None
    tool = json.loads(m.group(1), strict=False)  # its description holds raw newlines
    assert tool["function"]["parameters"]["properties"]["action"]["enum"] == [
        "mouse_move",
        "left_click",
    ]
    assert "The screen's resolution is 1000x1000." in tool["function"]["description"]
    assert spec.resize is not None
    assert (spec.resize.factor, spec.resize.min_pixels, spec.resize.max_pixels) == (
        32,
        32 * 32,
        9800 * 32 * 32,
    )
