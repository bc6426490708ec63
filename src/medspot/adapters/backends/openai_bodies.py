"""Pure pieces of the OpenAI-compatible backend: the request bodies of Chat Completions and
Responses built from a `PromptSpec`, and the replies read back from the SDK's response objects.

No client, no I/O: `openai` posts what these build and hands back what these read. A body that
cannot be read raises `TransientModelError` naming the endpoint (the runner retries).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from medspot.adapters.base import Usage
from medspot.adapters.card import PromptSpec
from medspot.errors import TransientModelError

__all__ = [
    "ChatBody",
    "Reply",
    "chat_body",
    "chat_image_part",
    "read_chat",
    "read_responses",
    "responses_body",
]


@dataclass(frozen=True)
class Reply:
    """The text of one answer, its tokens (None: not reported), flags and call facts."""

    text: str
    usage: Usage | None
    flags: tuple[str, ...]
    meta: dict[str, Any]


@dataclass(frozen=True)
class ChatBody:
    """A Chat Completions body and the flags its building raised (a dropped prefill)."""

    body: dict[str, Any]
    flags: tuple[str, ...]


def chat_image_part(spec: PromptSpec, url: str) -> dict[str, Any]:
    image_url: dict[str, Any] = {"url": url}
    if spec.detail:
        image_url["detail"] = spec.detail
    return {"type": "image_url", "image_url": image_url}


def chat_body(
    spec: PromptSpec,
    *,
    model: str,
    url: str,
    temperature: float | None,
    seed: int,
    server_extras: bool,
) -> ChatBody:
    """The `/chat/completions` body for `spec` with the image at data URL `url`."""
    img = chat_image_part(spec, url)
    txt = {"type": "text", "text": spec.user_text}
    messages: list[dict[str, Any]] = []
    if spec.system:
        messages.append({"role": "system", "content": spec.system})
    if spec.earlier or spec.image_turn_alone:  # text, earlier answers, then the screenshot
        messages.append({"role": "user", "content": [txt]})
        messages.extend({"role": "assistant", "content": a} for a in spec.earlier)
        messages.append({"role": "user", "content": [img]})
    else:
        messages.append({"role": "user", "content": [img, txt] if spec.image_first else [txt, img]})
    extra: dict[str, Any] = {}
    flags: list[str] = []
    prefill = spec.assistant_prefill
    if prefill is None and spec.generation_prompt:
        # A continued assistant message: vLLM renders it with the model's chat template,
        # `<|im_start|>assistant\n` + the prefill (one newline more than the hf prompt).
        # Without server extras it would be a finished turn, so it is not sent then.
        approx = spec.generation_prompt.removeprefix("<|im_start|>assistant")
        prefill = approx if server_extras else None
        flags.append("generation_prompt_approximated" if prefill else "generation_prompt_dropped")
    if prefill:
        messages.append({"role": "assistant", "content": prefill})
        if server_extras:
            extra.update(continue_final_message=True, add_generation_prompt=False)
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "max_completion_tokens": spec.max_new_tokens,
    }
    if temperature is not None:
        body["temperature"] = temperature
    if spec.stop:
        body["stop"] = list(spec.stop)
    if spec.reasoning_effort:
        body["reasoning_effort"] = spec.reasoning_effort
    if server_extras:
        body["seed"] = seed
        if spec.keep_special_tokens:
            extra["skip_special_tokens"] = False
        if spec.chat_template_kwargs:
            extra["chat_template_kwargs"] = dict(spec.chat_template_kwargs)
    return ChatBody({**body, **extra}, tuple(flags))


def read_chat(resp: Any, endpoint: str, flags: tuple[str, ...] = ()) -> Reply:
    """The reply in a Chat Completions response (a refusal or a cut answer is flagged)."""
    out = list(flags)
    if isinstance(resp, str):
        raise TransientModelError(f"{endpoint}: the response is not JSON")
    choices = getattr(resp, "choices", None)
    if not choices:
        raise TransientModelError(f"{endpoint}: the response has no choices")
    choice = choices[0]
    msg = getattr(choice, "message", None)
    content = getattr(msg, "content", None)
    finish = getattr(choice, "finish_reason", None)
    if not isinstance(content, str):
        refusal = getattr(msg, "refusal", None)
        if isinstance(refusal, str) and refusal:
            content = refusal
            out.append("refusal")
        elif finish == "length":
            content = ""
            out.append("truncated")
        else:
            raise TransientModelError(f"{endpoint}: the response has no message content")
    elif finish == "length":
        out.append("truncated")
    u = getattr(resp, "usage", None)
    usage = None
    if u is not None:
        usage = Usage(int(u.prompt_tokens or 0), int(u.completion_tokens or 0))
    meta = {"finish_reason": finish, "endpoint": endpoint, "served_model": resp.model}
    return Reply(content, usage, tuple(out), meta)


def responses_body(
    spec: PromptSpec, *, model: str, url: str, temperature: float | None
) -> dict[str, Any]:
    """The Responses API arguments for `spec` with the image at data URL `url`."""
    img = {"type": "input_image", "image_url": url, "detail": spec.detail or "auto"}
    txt = {"type": "input_text", "text": spec.user_text}
    if spec.earlier:
        items: list[dict[str, Any]] = [{"role": "user", "content": [txt]}]
        items.extend({"role": "assistant", "content": a} for a in spec.earlier)
        items.append({"role": "user", "content": [img]})
    else:
        items = [{"role": "user", "content": [img, txt] if spec.image_first else [txt, img]}]
    body: dict[str, Any] = {
        "model": model,
        "input": items,
        "max_output_tokens": spec.max_new_tokens,
    }
    if spec.system:
        body["instructions"] = spec.system
    if temperature is not None:
        body["temperature"] = temperature
    if spec.reasoning_effort:
        body["reasoning"] = {"effort": spec.reasoning_effort}
    return body


def read_responses(resp: Any, endpoint: str) -> Reply:
    """The reply in a Responses API response (an incomplete one is flagged with its reason)."""
    if isinstance(resp, str):
        raise TransientModelError(f"{endpoint}: the response is not JSON")
    output = getattr(resp, "output", None)
    if not isinstance(output, list):
        raise TransientModelError(f"{endpoint}: the response has no output")
    texts: list[str] = []
    for item in output:
        if getattr(item, "type", None) != "message":
            continue
        for part in getattr(item, "content", None) or []:
            if getattr(part, "type", None) == "output_text":
                texts.append(str(getattr(part, "text", "") or ""))
    status = getattr(resp, "status", None)
    flags: list[str] = []
    meta: dict[str, Any] = {"status": status, "endpoint": endpoint, "served_model": resp.model}
    if status == "incomplete":
        details = getattr(resp, "incomplete_details", None)
        reason = getattr(details, "reason", None)
        flags.append(f"incomplete:{reason}" if reason else "incomplete")
        meta["incomplete_reason"] = reason
    elif not texts:
        raise TransientModelError(f"{endpoint}: the response has no output text")
    u = getattr(resp, "usage", None)
    usage = None
    if u is not None:
        usage = Usage(int(u.input_tokens or 0), int(u.output_tokens or 0))
    return Reply("".join(texts), usage, tuple(flags), meta)
