"""Card prompts over the OpenAI backend, against the test server: CogAgent's query as
THUDM/CogAgent's cli_demo builds it, and Aguvis's `<|recipient|>os` prefix sent only where the
server can continue an assistant message (vLLM), rendered as vLLM's chat template renders it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from medspot.adapters.base import AdapterContext, Prediction, StepRequest
from medspot.adapters.cards import get_card
from medspot.testing.openai_server import OpenAITestServer

# microsoft/GUI-Actor src/gui_actor/constants.py `chat_template`: Qwen2-VL's chat template
# (without its default system message), as vLLM renders a Qwen2-VL checkpoint's requests.
QWEN2VL_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n{% else %}"
    "{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}Picture "
    "{{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}{% if add_vision_id %}Video "
    "{{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _req(tmp_path: Path, history: tuple[str, ...] = ()) -> StepRequest:
    path = tmp_path / "s.png"
    Image.new("RGB", (640, 400), (40, 40, 40)).save(path)
    return StepRequest(
        step_uid="App/0/2",
        task_uid="App/0",
        image_rel="s.png",
        image_path=path,
        image_size=(640, 400),
        instruction="open the File menu",
        history=history,
    )


def _ask(name: str, url: str, req: StepRequest, **options: Any) -> Prediction:
    from medspot.adapters.factory import build_adapter

    opts = {"backend": "openai", "base_urls": [url], **options}
    adapter = build_adapter(get_card(name), AdapterContext.with_options(opts))

    async def main() -> Prediction:
        try:
            return await adapter.predict(req)
        finally:
            await adapter.aclose()

    return asyncio.run(main())


def test_cogagent_query_is_cli_demos(tmp_path: Path) -> None:
    history = ("Step 1: Open the study -> clicked at (0.100, 0.200)", "Step 2: Zoom in")
    with OpenAITestServer(answer="Grounded Operation: CLICK(box=[[1,2,3,4]])") as srv:
        _ask("cogagent-9b", srv.base_url, _req(tmp_path, history))
        (seen,) = srv.requests
    assert seen.text == (
        "Task: open the File menu\nHistory steps: "
        "\n0. Step 1: Open the study\tclicked at (0.100, 0.200)\n1. Step 2: Zoom in\t"
        "\n(Platform: WIN)\n(Answer in Action-Operation-Sensitive format.)"
    )
    assert seen.system is None


def _render(body: Any) -> str:
    """The prompt vLLM builds from a chat request: transformers' apply_chat_template with the
    request's add_generation_prompt / continue_final_message."""
    tf = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    tok = tf.PreTrainedTokenizerFast(
        tokenizer_object=tokenizers.Tokenizer(tokenizers.models.WordLevel({"x": 0}, "x"))
    )
    messages = []
    for m in body["messages"]:
        content = m["content"]
        if isinstance(content, list):
            content = [
                {"type": "image"}
                if c["type"] == "image_url"
                else {"type": "text", "text": c["text"]}
                for c in content
            ]
        messages.append({"role": m["role"], "content": content})
    text: str = tok.apply_chat_template(
        messages,
        chat_template=QWEN2VL_TEMPLATE,
        tokenize=False,
        add_generation_prompt=body.get("add_generation_prompt", True),
        continue_final_message=body.get("continue_final_message", False),
    )
    return text


def test_aguvis_prefix_over_vllm_is_a_continued_assistant_message(tmp_path: Path) -> None:
    with OpenAITestServer(answer="pyautogui.click(x=0.11, y=0.05)") as srv:
        pred = _ask("aguvis-7b-720p", srv.base_url, _req(tmp_path))
        (seen,) = srv.requests
    body = seen.body
    assert body["messages"][-1] == {"role": "assistant", "content": "<|recipient|>os\n"}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert "generation_prompt_approximated" in pred.flags
    # What vLLM's chat template makes of it: one newline more than Aguvis's own prompt
    # (`<|im_start|>assistant<|recipient|>os\n`, xlang-ai/aguvis src/aguvis/serve/cli.py).
    assert _render(body).endswith("<|im_end|>\n<|im_start|>assistant\n<|recipient|>os\n")


def test_aguvis_prefix_is_not_sent_where_it_would_end_the_turn(tmp_path: Path) -> None:
    """Without vLLM's continue_final_message the prefill would be a finished assistant turn
    followed by a new generation prompt; no prefix is sent then (docs/models.md)."""
    with OpenAITestServer(answer="pyautogui.click(x=0.11, y=0.05)") as srv:
        pred = _ask("aguvis-7b-720p", srv.base_url, _req(tmp_path), server_extras=False)
        (seen,) = srv.requests
    assert [m["role"] for m in seen.body["messages"]] == ["system", "user"]
    assert "continue_final_message" not in seen.body
    assert "generation_prompt_dropped" in pred.flags
    assert _render(seen.body).endswith("<|im_start|>assistant\n")
