"""The Anthropic Messages API side of the test server (`POST /v1/messages`): reading a
request's texts and images (image blocks and the images inside `tool_result` blocks) and a
plain text answer body. `medspot.testing.openai_server` routes to it; the scripted computer-use
conversations are `medspot.testing.cu_script`."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["image_sources", "message_texts", "messages_body"]


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, Mapping)]


def image_sources(messages: Any, decode: Callable[[str], Any]) -> list[Any]:
    """The decoded images of the user messages, in order (`decode` takes a data URL)."""
    out = []

    def visit(blocks: list[Mapping[str, Any]]) -> None:
        for b in blocks:
            if b.get("type") == "image":
                src = b.get("source") or {}
                if src.get("type") == "base64":
                    url = f"data:{src.get('media_type', 'image/png')};base64,{src.get('data', '')}"
                    img = decode(url)
                    if img is not None:
                        out.append(img)
            elif b.get("type") == "tool_result":
                visit(_blocks(b.get("content")))

    for m in messages if isinstance(messages, list) else []:
        if isinstance(m, Mapping) and m.get("role") == "user":
            visit(_blocks(m.get("content")))
    return out


def message_texts(body: Mapping[str, Any]) -> tuple[list[str], str | None]:
    """The text blocks of the user messages, and the system prompt."""
    system = body.get("system")
    if isinstance(system, list):
        system = "\n".join(str(b.get("text", "")) for b in system if isinstance(b, Mapping))
    texts = []
    for m in body.get("messages") or []:
        if isinstance(m, Mapping) and m.get("role") == "user":
            texts += [str(b.get("text", "")) for b in _blocks(m.get("content"))
                      if b.get("type") == "text"]  # fmt: skip
    return texts, str(system) if system is not None else None


def messages_body(
    index: int, model: str, content: list[dict[str, Any]], tokens: tuple[int, int],
    stop_reason: str = "end_turn",
) -> dict[str, Any]:  # fmt: skip
    """A Messages API response."""
    return {
        "id": f"msg_{index}_{int(time.time())}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]},
    }
