"""UI-TARS-1.5-7B (abs_resized) and UI-TARS-7B-SFT (v1, rel1000)."""

from __future__ import annotations

import re
from dataclasses import replace

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ModelCard, ParsedAnswer, PromptSpec, ResizeSpec, StyleSpec
from medspot.adapters.cards import upstream_parsers, upstream_prompts
from medspot.adapters.cards.common import Parser, instruction_text, style, with_history
from medspot.adapters.cards.harness_agent import AGENT_MAX_TOKENS, agent_style
from medspot.adapters.conventions import UI_TARS_RESIZE
from medspot.adapters.parsing import anchored_answer

__all__ = [
    "AGENT_LANGUAGE",
    "COMPUTER_USE",
    "COMPUTER_USE_V1",
    "GROUNDING_TEMPLATE",
    "V1_GROUNDING_PREFIX",
    "agent_prompt",
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

# bytedance/UI-TARS prompts.py COMPUTER_USE (commit 7eca1f0, 2025-04-17, the 1.5 release; moved
# to codes/prompts.py): the computer-use template of UI-TARS-1.5, verbatim (the same escapes).
COMPUTER_USE = """You are a GUI agent. You are given a task and your action history, with screenshots. You need to perform the next action to complete the task.

## Output Format
```
Thought: ...
Action: ...
```

## Action Space

click(start_box='<|box_start|>(x1,y1)<|box_end|>')
left_double(start_box='<|box_start|>(x1,y1)<|box_end|>')
right_single(start_box='<|box_start|>(x1,y1)<|box_end|>')
drag(start_box='<|box_start|>(x1,y1)<|box_end|>', end_box='<|box_start|>(x3,y3)<|box_end|>')
hotkey(key='')
type(content='xxx') # Use escape characters \\', \\\", and \\n in content part to ensure we can parse the content in normal python string format. If you want to submit your input, use \\n at the end of content.\x20
scroll(start_box='<|box_start|>(x1,y1)<|box_end|>', direction='down or up or right or left')
wait() #Sleep for 5s and take a screenshot to check for any changes.
finished(content='xxx') # Use escape characters \\', \\", and \\n in content part to ensure we can parse the content in normal python string format.


## Note
- Use {language} in `Thought` part.
- Write a small plan and finally summarize your next action (with its target element) in one sentence in `Thought` part.

## User Instruction
{instruction}
"""  # noqa: E501

# UI-TARS-7B-SFT (v1): README_v1.md's computer template, as OSWorld's UI-TARS agent writes it
# (xlang-ai/OSWorld mm_agents/prompts.py UITARS_USR_PROMPT_THOUGHT with
# UITARS_CALL_USR_ACTION_SPACE, the harness README_v1 points to): it offers call_user().
COMPUTER_USE_V1 = """You are a GUI agent. You are given a task and your action history, with screenshots. You need to perform the next action to complete the task.\x20

## Output Format
```
Thought: ...
Action: ...
```

## Action Space

click(start_box='<|box_start|>(x1,y1)<|box_end|>')
left_double(start_box='<|box_start|>(x1,y1)<|box_end|>')
right_single(start_box='<|box_start|>(x1,y1)<|box_end|>')
drag(start_box='<|box_start|>(x1,y1)<|box_end|>', end_box='<|box_start|>(x3,y3)<|box_end|>')
hotkey(key='')
type(content='') #If you want to submit your input, use "\\n" at the end of `content`.
scroll(start_box='<|box_start|>(x1,y1)<|box_end|>', direction='down or up or right or left')
wait() #Sleep for 5s and take a screenshot to check for any changes.
finished()
call_user() # Submit the task and call the user when the task is unsolvable, or when you need the user's help.


## Note
- Use {language} in `Thought` part.
- Write a small plan and finally summarize your next action (with its target element) in one sentence in `Thought` part.

## User Instruction
{instruction}
"""  # noqa: E501
# The templates leave the language of the thought open ({language}; README_v1's copy says
# Chinese): the harness asks for English, as OSWorld's agent lets its caller choose.
AGENT_LANGUAGE = "English"

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
    text = instruction_text(upstream_prompts.tars)
    return style(text, base, upstream_parsers.tars, Convention.ABS_ORIGINAL)


def agent_prompt(template: str, req: StepRequest) -> str:
    """The computer-use template with the task's goal (`req.instruction`)."""
    return template.replace("{language}", AGENT_LANGUAGE).replace("{instruction}", req.instruction)


def _agent(template: str, convention: Convention, resize: ResizeSpec | None) -> StyleSpec:
    """UI-TARS's agent style. Its own harnesses (OSWorld's uitars_agent.py) send the template
    alone, then each earlier answer as an assistant turn (with up to 5 earlier screenshots),
    then the current screenshot: here the earlier answers go as assistant turns (`earlier`,
    the live agent's memories of them) without their screenshots."""
    base = PromptSpec(user_text="", max_new_tokens=AGENT_MAX_TOKENS, resize=resize,
                      image_first=False)  # fmt: skip

    def build(req: StepRequest) -> PromptSpec:
        return replace(base, user_text=agent_prompt(template, req), earlier=req.history)

    return agent_style(build, convention, "ui-tars")


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
        agent=_agent(COMPUTER_USE, Convention.ABS_RESIZED, UI_TARS_RESIZE),
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
        agent=_agent(COMPUTER_USE_V1, Convention.REL1000, None),
    )
