"""The OpenAI backend's pure pieces: request bodies from a PromptSpec, replies from responses."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from medspot.adapters.backends.openai_bodies import (
    chat_body,
    read_chat,
    read_responses,
    responses_body,
)
from medspot.adapters.base import Usage
from medspot.adapters.card import PromptSpec
from medspot.errors import TransientModelError

URL = "data:image/png;base64,AAAA"


def test_chat_body_orders_parts_and_sends_server_extras() -> None:
    spec = PromptSpec(user_text="Click File", system="sys", image_first=False, stop=("<x>",))
    built = chat_body(spec, model="m", url=URL, temperature=0.0, seed=7, server_extras=True)
    body = built.body
    assert body["messages"][0] == {"role": "system", "content": "sys"}
    user = body["messages"][1]["content"]
    assert [p["type"] for p in user] == ["text", "image_url"]
    assert body["seed"] == 7 and body["stop"] == ["<x>"] and body["temperature"] == 0.0
    assert "skip_special_tokens" not in body and built.flags == ()


def test_chat_body_without_server_extras_drops_a_generation_prompt() -> None:
    spec = PromptSpec(user_text="u", generation_prompt="<|im_start|>assistant<|recipient|>os\n")
    off = chat_body(spec, model="m", url=URL, temperature=None, seed=1, server_extras=False)
    assert off.flags == ("generation_prompt_dropped",)
    assert "seed" not in off.body and "temperature" not in off.body
    assert [m["role"] for m in off.body["messages"]] == ["user"]
    on = chat_body(spec, model="m", url=URL, temperature=None, seed=1, server_extras=True)
    assert on.flags == ("generation_prompt_approximated",)
    assert on.body["messages"][-1] == {"role": "assistant", "content": "<|recipient|>os\n"}
    assert on.body["continue_final_message"] is True


def test_read_chat_flags_truncation_and_refusal() -> None:
    usage = NS(prompt_tokens=3, completion_tokens=2)
    cut = NS(choices=[NS(message=NS(content=None), finish_reason="length")], usage=usage, model="x")
    reply = read_chat(cut, "ep", ("pre",))
    assert reply.text == "" and reply.flags == ("pre", "truncated") and reply.usage == Usage(3, 2)
    refused = NS(choices=[NS(message=NS(content=None, refusal="no"), finish_reason="stop")])
    refused.usage, refused.model = None, "x"
    assert read_chat(refused, "ep").flags == ("refusal",)
    with pytest.raises(TransientModelError, match="ep: the response has no choices"):
        read_chat(NS(choices=[], model="x"), "ep")


def test_responses_body_and_reader() -> None:
    spec = PromptSpec(user_text="u", system="s", reasoning_effort="low", detail="high")
    body = responses_body(spec, model="m", url=URL, temperature=None)
    assert body["instructions"] == "s" and body["reasoning"] == {"effort": "low"}
    assert body["input"][0]["content"][0]["detail"] == "high"
    part = NS(type="output_text", text="(1,2)")
    resp = NS(output=[NS(type="message", content=[part])], status="completed", model="m")
    resp.usage = NS(input_tokens=5, output_tokens=1)
    reply = read_responses(resp, "ep")
    assert reply.text == "(1,2)" and reply.usage == Usage(5, 1) and reply.flags == ()
    short = NS(output=[], status="incomplete", model="m", usage=None)
    short.incomplete_details = NS(reason="max_output_tokens")
    assert read_responses(short, "ep").flags == ("incomplete:max_output_tokens",)
    with pytest.raises(TransientModelError, match="no output text"):
        read_responses(NS(output=[], status="completed", model="m", usage=None), "ep")
