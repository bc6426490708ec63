"""A model card asked through Inspect's model (`get_model()`: whatever `--model` names, any
provider) instead of medspot's own backends: the card's prompt built once per step, the same
image preparation as the OpenAI-compatible backend (`ImagePrep`: the file's bytes when nothing
needs changing, the card's pre-resize otherwise), the card's parser, its re-ask on no point
(`CardAdapter.predict`).

The request is the Chat Completions body the OpenAI-compatible backend would post
(`openai_bodies.chat_body`, the one owner of the messages' layout: system text, image and
text order, earlier answers, the assistant prefill), read into Inspect's messages and
`GenerateConfig` (`inspect_request`); the server extras (vLLM's `skip_special_tokens`,
`chat_template_kwargs`, a continued final message) go in `extra_body` when the model is
served by an OpenAI-compatible server other than api.openai.com (`server_extras="auto"`).
Inspect's provider decides the API (chat or responses) and retries failed calls itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    Content,
    ContentImage,
    ContentText,
    GenerateConfig,
    ModelOutput,
    get_model,
)

from medspot.adapters.backends.cardbase import (
    CardAdapter,
    Generation,
    SentImage,
    data_url_image,
)
from medspot.adapters.backends.imageprep import ImagePrep
from medspot.adapters.backends.openai_bodies import chat_body
from medspot.adapters.base import StepRequest, Usage
from medspot.adapters.card import ModelCard, PromptSpec, PromptStyle
from medspot.errors import ConfigError

__all__ = [
    "InspectCardAdapter",
    "InspectRequest",
    "ServerExtras",
    "generation_of",
    "inspect_request",
]

ServerExtras = Literal["auto", "on", "off"]
OPENAI_HOST = "api.openai.com"
# Body keys `chat_body` writes and where they go in Inspect's request; the rest is extra_body.
_CONFIG_KEYS = {
    "max_completion_tokens": "max_tokens",
    "temperature": "temperature",
    "stop": "stop_seqs",
    "reasoning_effort": "reasoning_effort",
    "seed": "seed",
}


@dataclass(frozen=True)
class InspectRequest:
    """One model call as Inspect takes it, and the flags building it raised."""

    messages: list[ChatMessage]
    config: GenerateConfig
    flags: tuple[str, ...]


def _content(part: Mapping[str, Any]) -> Content:
    if part["type"] == "image_url":
        url = part["image_url"]
        return ContentImage(image=str(url["url"]), detail=url.get("detail") or "auto")
    return ContentText(text=str(part["text"]))


def _message(m: Mapping[str, Any]) -> ChatMessage:
    content = m["content"]
    body: str | list[Content] = (
        content if isinstance(content, str) else [_content(p) for p in content]
    )
    if m["role"] == "system":
        return ChatMessageSystem(content=body)
    if m["role"] == "assistant":
        return ChatMessageAssistant(content=body)
    return ChatMessageUser(content=body)


def inspect_request(
    spec: PromptSpec, url: str, *, temperature: float | None, seed: int, server_extras: bool
) -> InspectRequest:
    """The Inspect messages and generate config of the Chat Completions body `chat_body`
    builds for `spec` with the screenshot at data URL `url`."""
    built = chat_body(
        spec, model="", url=url, temperature=temperature, seed=seed, server_extras=server_extras
    )
    body = dict(built.body)
    messages = [_message(m) for m in body.pop("messages")]
    body.pop("model")
    fields: dict[str, Any] = {}
    for key, name in _CONFIG_KEYS.items():
        if key in body:
            fields[name] = body.pop(key)
    if "seed" not in fields:  # Inspect passes the seed on where the provider takes one
        fields["seed"] = seed
    if body:
        fields["extra_body"] = body
    return InspectRequest(messages, GenerateConfig(**fields), built.flags)


def generation_of(output: ModelOutput, flags: tuple[str, ...] = ()) -> Generation:
    """The card's view of an Inspect answer: its text, tokens, and a cut or refused answer
    flagged as the OpenAI-compatible backend flags it."""
    out = list(flags)
    if output.stop_reason == "max_tokens":
        out.append("truncated")
    elif output.stop_reason == "content_filter":
        out.append("refusal")
    u = output.usage
    usage = Usage(int(u.input_tokens or 0), int(u.output_tokens or 0)) if u is not None else None
    meta = {"finish_reason": output.stop_reason, "served_model": output.model}
    return Generation(output.completion, usage, tuple(out), meta)


def _served_by_a_server(base_url: str | None) -> bool:
    """A model behind an OpenAI-compatible server other than OpenAI's own."""
    return bool(base_url) and urlsplit(str(base_url)).hostname != OPENAI_HOST


class InspectCardAdapter(CardAdapter):
    """A model card asked through the model of the running Inspect task."""

    backend = "inspect"

    def __init__(
        self, card: ModelCard, style: PromptStyle, *, server_extras: ServerExtras = "auto"
    ) -> None:
        if "openai" not in card.backends:
            raise ConfigError(
                f"model card {card.name!r} runs in-process only (backends: "
                f"{', '.join(card.backends)}); Inspect asks a model through a chat API"
            )
        if server_extras not in ("auto", "on", "off"):
            raise ConfigError(f"server_extras {server_extras!r}: use auto, on or off")
        super().__init__(card, style, card.checkpoint)
        self.max_concurrency = 1  # Inspect schedules the calls (its max_connections)
        self.server_extras = server_extras
        self.images = ImagePrep()

    async def _prepare(self, request: StepRequest, spec: PromptSpec) -> SentImage:
        return await data_url_image(self.images, request, spec)

    async def _generate(
        self, spec: PromptSpec, image: SentImage, temperature: float | None, seed: int
    ) -> Generation:
        model = get_model()
        extras = self.server_extras == "on" or (
            self.server_extras == "auto" and _served_by_a_server(model.api.base_url)
        )
        req = inspect_request(
            spec, str(image.payload), temperature=temperature, seed=seed, server_extras=extras
        )
        output = await model.generate(req.messages, config=req.config)
        return generation_of(output, req.flags)

    def _describe_backend(self) -> dict[str, Any]:
        return {"server_extras": self.server_extras}

    async def aclose(self) -> None:
        return None
