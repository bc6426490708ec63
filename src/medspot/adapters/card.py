"""The model-card contract (filled by `cards`): a card is data plus a parser.

A card says which checkpoint or API model, how to ask (per prompt style), how to prepare the
image, which coordinate convention its numbers are in, and how to read its answer. Backends
(`openai_backend`, `hf_backend`) turn a card and a step into a call; they never contain
model-specific prompt or parsing logic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum

from medspot.adapters.base import NON_FINITE_POINT, Convention, StepRequest
from medspot.errors import ConfigError
from medspot.geometry import Point
from medspot.jsonsafe import finite_float

__all__ = [
    "ModelCard",
    "ParsedAnswer",
    "PromptSpec",
    "PromptStyle",
    "ResizeSpec",
    "StyleSpec",
    "prompt_record",
    "with_sent_size",
]


class PromptStyle(StrEnum):
    NATIVE = "native"  # the model's own documented prompt and convention (default)
    UPSTREAM = "upstream"  # the MedSPOT authors' script for that model, mistakes included
    AGENT = "agent"  # live agent mode: the model's own agent prompt and action format
    PLANNER = "planner"  # live --planner: the harness planner prompt (elements named in words)


@dataclass(frozen=True, slots=True)
class ResizeSpec:
    """Qwen-style smart_resize bounds; the harness resizes the screenshot itself and sends it."""

    factor: int = 28
    min_pixels: int = 4 * 28 * 28
    max_pixels: int = 16384 * 28 * 28


@dataclass(frozen=True, slots=True)
class PromptSpec:
    """One request's content, transport-neutral."""

    user_text: str
    system: str | None = None
    image_first: bool = True
    assistant_prefill: str | None = None  # e.g. Aguvis `<|recipient|>os\n`
    resize: ResizeSpec | None = None  # pre-resize before sending (abs_resized)
    image_format: str = "original"  # "original" (bytes as they are), "png", "jpeg"
    max_new_tokens: int = 128
    temperature: float | None = 0.0
    detail: str | None = None  # OpenAI image detail ("high")
    keep_special_tokens: bool = False  # ask servers not to skip special tokens
    api: str = "chat"  # "chat" (Chat Completions) or "responses"
    # Additions (all optional, defaults keep the plain behaviour):
    stop: tuple[str, ...] = ()  # stop strings (Aguvis `<|diff_marker|>`)
    # The exact text that ends the rendered prompt instead of the chat template's generation
    # prompt (Aguvis: `<|im_start|>assistant<|recipient|>os\n`). hf backend: render with
    # add_generation_prompt=False and append it; openai backend: best effort or refuse.
    generation_prompt: str | None = None
    reasoning_effort: str | None = None  # OpenAI reasoning models ("minimal".."high")
    # Re-ask with sampling when no point could be read (UI-TARS upstream: 2 tries at 0.3).
    retries_on_no_point: int = 0
    retry_temperature: float | None = None
    topk: int = 1  # pointer models (GUI-Actor): how many ranked points to return
    # The model's own earlier answers of this task (agent prompts of models whose harnesses
    # send them back as assistant turns, UI-TARS): the user text goes alone first, then these
    # as assistant messages, then the screenshot in a last user message.
    earlier: tuple[str, ...] = ()
    # The screenshot in a user message of its own after the text's (MAI-UI's agent harness),
    # as it is when `earlier` answers stand between them.
    image_turn_alone: bool = False
    # Keyword arguments of the checkpoint's chat template (Holo2: thinking=False). hf
    # backend: passed to apply_chat_template; openai backend: `chat_template_kwargs` (vLLM,
    # with server extras), else dropped.
    chat_template_kwargs: tuple[tuple[str, str | int | float | bool], ...] = ()
    # The prompt names the size of the image as sent (GTA1's system message): `{sent_width}`
    # and `{sent_height}` in `system` and `user_text` are filled in once the backend has
    # prepared the image (`with_sent_size`), whatever resize the backend applied.
    fill_sent_size: bool = False


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    """A parsed answer in normalised coordinates of the original screenshot. Its points are
    finite: an answer whose numbers overflow (`(1e999, 5)`, a coordinate of 400 digits) has
    no point, flagged `non_finite_point` (a scored miss, never a number no file can hold)."""

    point: Point | None
    extra_points: tuple[Point, ...] = ()
    flags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.point is not None and not _finite(self.point):
            object.__setattr__(self, "point", None)
            object.__setattr__(self, "flags", (*self.flags, NON_FINITE_POINT))
        if not all(_finite(p) for p in self.extra_points):
            object.__setattr__(self, "extra_points", tuple(p for p in self.extra_points
                                                          if _finite(p)))  # fmt: skip


def _finite(p: Point) -> bool:
    return finite_float(p.x) is not None and finite_float(p.y) is not None


# parse(text, sent_size, original_size) -> ParsedAnswer; sizes are (width, height)
Parser = Callable[[str, tuple[int, int], tuple[int, int]], ParsedAnswer]
PromptBuilder = Callable[[StepRequest], PromptSpec]


@dataclass(frozen=True)
class StyleSpec:
    """How one prompt style asks and reads. An agent style names the live reader of its
    answers (`action_format`, a name of `medspot.live.agents.formats`); its `parse` gives no
    point (the live reader reads the whole answer)."""

    build: PromptBuilder
    parse: Parser
    convention: Convention
    action_format: str = ""


@dataclass(frozen=True)
class ModelCard:
    name: str  # registry name, e.g. "qwen2.5-vl-7b"
    title: str  # "Qwen2.5-VL-7B-Instruct"
    family: str  # "qwen2_5_vl", "openai", "gemma3", ...
    checkpoint: str  # default HF id or API model
    backends: tuple[str, ...]  # subset of ("openai", "hf")
    native: StyleSpec
    upstream: StyleSpec
    upstream_preset: str  # "upstream-a" ... "upstream-e"
    status: str = ""  # what was verified here, what needs a GPU
    packages: tuple[str, ...] = ()
    notes: str = ""
    extra: dict[str, str] = field(default_factory=dict)
    # Additions for the hf backend (defaults: a plain AutoModelForImageTextToText checkpoint):
    hf_loader: str = "auto"  # "auto", "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "gui_actor", ...
    trust_remote_code: bool = False
    processor_checkpoint: str | None = None  # tokenizer/processor from another repo (SeeClick)
    aliases: tuple[str, ...] = ()  # other checkpoint ids for the same model
    # Checkpoints of a like-named model this card must not ask (another prompt, answer or
    # frame), each with the card that runs it: naming one (--checkpoint, --api-model) is a
    # ConfigError that names that card (GTA1's July and October releases).
    lookalikes: tuple[tuple[str, str], ...] = ()
    # Why the card has no hf backend, said when `--backend hf` is asked (empty: nothing to add).
    hf_refusal: str = ""
    install_hint: str = ""  # shown when the model's own package is missing
    agent: StyleSpec | None = None  # live agent mode's prompt and action format, if any
    planner: StyleSpec | None = None  # the harness planner prompt (set by the cards package)

    def check_model_id(self, model_id: str | None) -> None:
        """Refuse a checkpoint or served model name of a look-alike model (`lookalikes`)."""
        if not model_id:
            return
        wanted = model_id.strip().rstrip("/").lower()
        for other, card in self.lookalikes:
            if wanted == other.lower():
                raise ConfigError(
                    f"{model_id} is not a checkpoint of model {self.name!r} ({self.title}): it "
                    f"is another model, with its own prompt, answer and coordinates; run it "
                    f"with --model {card}"
                )

    def style(self, style: PromptStyle) -> StyleSpec:
        if style is PromptStyle.AGENT:
            if self.agent is None:
                raise ConfigError(
                    f"model {self.name!r} has no agent prompt of its own (a grounding model); "
                    "in agent mode use it as --grounder CARD with a --planner, or ask its "
                    "grounding prompt with the goal (--prompt native)"
                )
            return self.agent
        if style is PromptStyle.PLANNER:
            if self.planner is None:
                raise ConfigError(f"model {self.name!r} cannot be asked as a planner")
            return self.planner
        return self.native if style is PromptStyle.NATIVE else self.upstream


SENT_WIDTH = "{sent_width}"
SENT_HEIGHT = "{sent_height}"


def with_sent_size(spec: PromptSpec, sent_size: tuple[int, int]) -> PromptSpec:
    """`spec` with `{sent_width}` / `{sent_height}` filled in (only when it asks for it)."""
    if not spec.fill_sent_size:
        return spec
    w, h = (str(v) for v in sent_size)

    def fill(text: str) -> str:
        return text.replace(SENT_WIDTH, w).replace(SENT_HEIGHT, h)

    system = fill(spec.system) if spec.system is not None else None
    return replace(spec, system=system, user_text=fill(spec.user_text), fill_sent_size=False)


def prompt_record(spec: PromptSpec) -> str:
    """The prompt text recorded with a prediction (no image, no secrets): the system text, if
    any, a blank line, then the user text; an assistant prefill is appended after a marker."""
    parts = [spec.system, spec.user_text] if spec.system else [spec.user_text]
    text = "\n\n".join(p for p in parts if p is not None)
    for i, answer in enumerate(spec.earlier, 1):
        text += f"\n\n[earlier answer {i}] {answer}"
    prefill = spec.assistant_prefill or spec.generation_prompt
    if prefill:
        text += f"\n\n[assistant prefill] {prefill}"
    return text
