"""`--model anthropic-computer-use`: the Messages API's computer-use tool through the official
`anthropic` client (`pip install 'medspot[anthropic]'`, key `$ANTHROPIC_API_KEY` or
`--api-key-env`; `--base-url` for another server, e.g. the test server).

The tool version follows the model (`--computer-tool` overrides): `computer_20251124` with the
beta `computer-use-2025-11-24` (Claude Opus 4.5 and later, Sonnet 4.6; the default),
`computer_20250124` with `computer-use-2025-01-24` (Sonnet 4.5, Haiku 4.5, Opus 4.1, Sonnet 4,
Opus 4, Sonnet 3.7), or the toolset `computer_toolset_20260801` (no beta header; the members
this harness cannot execute are disabled in its `configs`).

The API is stateless: every request carries the whole conversation, rebuilt from the turns of
the attempt (`transcript`, replayed turns included; nothing is asked again): the goal with the
first screenshot, then per API turn the assistant's content blocks as they came and a user
message with one `tool_result` per `tool_use` (the screenshot after that action; an error
result naming what was not executed). Only the last `KEEP_IMAGES` screenshots are sent as
images, earlier ones as a short text. The display is the screenshot's size, scaled down (and
the coordinates mapped back) only when it exceeds the API's image limits (`MAX_EDGE_PX`,
`MAX_PIXELS`); the live environments' 1280x800 is sent as it is.
"""

from __future__ import annotations

import base64
import functools
import io
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from medspot.adapters.backends.anthropic_api import (
    ANTHROPIC_URL,
    import_anthropic,
    map_anthropic_error,
)
from medspot.adapters.backends.openai import check_base_url, redact_secrets
from medspot.adapters.backends.pricing import PriceTable, load_price_table
from medspot.adapters.base import Usage
from medspot.adapters.keys import ANTHROPIC_KEY_ENV, ApiKey, api_key
from medspot.adapters.options import AdapterOptions
from medspot.adapters.retry import RetryPolicy
from medspot.errors import ConfigError, TransientModelError
from medspot.live.agents.computer_use.actions import (
    CuItem,
    DisplayMap,
    Point,
    anthropic_item,
    fit_display,
)
from medspot.live.agents.computer_use.agent import (
    CallResult,
    ComputerUseAgent,
    ending_json,
    harness_instructions,
    tool_item,
    tool_outputs,
)
from medspot.live.agents.computer_use.transcript import TurnLog, call_items
from medspot.live.agents.turn import AgentTurn

__all__ = [
    "DEFAULT_MODEL",
    "KEEP_IMAGES",
    "TOOL_BETAS",
    "AnthropicComputerUseAgent",
    "build_messages",
    "tool_for",
]

DEFAULT_MODEL = "claude-sonnet-4-6"
TOOL_BETAS: dict[str, str | None] = {
    "computer_20251124": "computer-use-2025-11-24",
    "computer_20250124": "computer-use-2025-01-24",
    "computer_toolset_20260801": None,  # generally available: no beta header
}
# models documented with the 2025-01-24 tool; any other model gets the 2025-11-24 one
_OLDER_TOOL_MODELS = (
    "claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1", "claude-sonnet-4-2",
    "claude-sonnet-4-0", "claude-opus-4-2", "claude-opus-4-0", "claude-3-7",
)  # fmt: skip
# toolset members the live action type cannot execute: not offered to the model
_DISABLED_MEMBERS = (
    "middle_click", "triple_click", "left_mouse_down", "left_mouse_up", "hold_key", "zoom",
)  # fmt: skip
MAX_EDGE_PX = 1568  # the API's image limits (larger images are downscaled by the API)
MAX_PIXELS = 1_150_000
KEEP_IMAGES = 10
MAX_TOKENS = 4096
DEFAULT_TIMEOUT = 120.0
LEFT_OUT = "(an earlier screenshot, left out)"


def tool_for(model: str, override: str | None = None) -> str:
    if override is not None:
        if override not in TOOL_BETAS:
            raise ConfigError(
                f"--computer-tool {override!r} is not an Anthropic computer-use tool "
                f"({', '.join(TOOL_BETAS)})"
            )
        return override
    older = model in ("claude-sonnet-4", "claude-opus-4") or model.startswith(_OLDER_TOOL_MODELS)
    return "computer_20250124" if older else "computer_20251124"


@functools.lru_cache(maxsize=64)
def _png_b64(path: str, size: tuple[int, int] | None) -> str:
    data = Path(path).read_bytes()
    if size is not None:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as im:
            out = io.BytesIO()
            im.convert("RGB").resize(size, Image.Resampling.LANCZOS).save(out, format="PNG")
            data = out.getvalue()
    return base64.b64encode(data).decode("ascii")


def _image(b64: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}}


def _tool_result(
    item: CuItem | None,
    ident: str,
    image: dict[str, Any],
    refused: str | None = None,
    output: str | None = None,
) -> dict[str, Any]:
    if output is not None:  # a tool of the tools track: what it returned, and the screen
        return {"type": "tool_result", "tool_use_id": ident, "is_error": output.startswith(
            "Tool error"), "content": [{"type": "text", "text": output}, image]}  # fmt: skip
    note = None
    if item is not None and item.kind == "unsupported":
        note = f"Not executed (this harness cannot do it): {item.note}"
    elif refused:  # executable in the tool's terms, but not in the application's
        note = f"Not executed (the application cannot do it): {refused}"
    if note is not None:
        return {"type": "tool_result", "tool_use_id": ident, "is_error": True,
                "content": [{"type": "text", "text": note}, image]}  # fmt: skip
    return {"type": "tool_result", "tool_use_id": ident, "content": [image]}


def build_messages(
    goal: str,
    logs: Sequence[TurnLog],
    image: Callable[[Path], dict[str, Any]],
    keep: int,
    outputs: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The Messages API conversation of `logs` (the current turn last), ending with the user
    message of the call to make now (pure but for `image`, which reads a screen)."""
    messages: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    items: dict[str, CuItem] = {}

    def user(screen: Path) -> dict[str, Any]:
        if not messages:
            content = [{"type": "text", "text": goal}, image(screen)]
        elif results:
            content = list(results)
        else:
            content = [{"type": "text", "text": "Continue with the task."}, image(screen)]
        return {"role": "user", "content": content}

    for log in logs:
        for ev in log.events:
            kind = ev.get("e")
            if kind == "result":
                ident = str(ev.get("id"))
                refused = ev.get("not_executed")
                results.append(_tool_result(items.get(ident), ident, image(log.screen_path),
                                            str(refused) if refused else None,
                                            (outputs or {}).get(ident)))  # fmt: skip
            elif kind == "call":
                messages.append(user(log.screen_path))
                results = []
                messages.append({"role": "assistant", "content": list(ev.get("content") or [])})
                items.update({i.id: i for i in call_items(ev)})
    messages.append(user(logs[-1].screen_path))
    return _keep_last_images(messages, keep)


def _keep_last_images(messages: list[dict[str, Any]], keep: int) -> list[dict[str, Any]]:
    seen = 0

    def walk(blocks: list[Any]) -> list[Any]:
        nonlocal seen
        out: list[Any] = []
        for b in reversed(blocks):
            if isinstance(b, Mapping) and b.get("type") == "image":
                seen += 1
                out.append(b if seen <= keep else {"type": "text", "text": LEFT_OUT})
            elif isinstance(b, Mapping) and b.get("type") == "tool_result":
                out.append({**b, "content": walk(list(b.get("content") or []))})
            else:
                out.append(b)
        return out[::-1]

    rebuilt = []
    for m in reversed(messages):
        content = m["content"]
        rebuilt.append({**m, "content": walk(content) if m["role"] == "user" else content})
    return rebuilt[::-1]


def _kind(v: Any) -> str:
    return "missing" if v is None else type(v).__name__


def _content(resp: Any) -> list[dict[str, Any]]:
    """The response's content blocks as they are sent back, checked to be what the Messages
    API returns (a `ValueError` naming what is not): a list of blocks with a `type`, a
    `tool_use` with its id, name and input object, and a `stop_reason`."""
    raw = getattr(resp, "content", None)
    if not isinstance(raw, list):
        raise ValueError(f"'content' is {_kind(raw)}, not a list of blocks")
    stop = getattr(resp, "stop_reason", None)
    if not isinstance(stop, str) or not stop:
        raise ValueError(f"'stop_reason' is {_kind(stop)}, not a string")
    out = []
    for b in raw:
        d = (
            b.model_dump(mode="json", exclude_none=True, warnings=False)
            if hasattr(b, "model_dump")
            else b
        )
        if not isinstance(d, Mapping) or not isinstance(d.get("type"), str):
            raise ValueError(f"a content block is {str(d)[:80]!r}, not an object with a type")
        if d["type"] == "tool_use" and not (
            isinstance(d.get("id"), str) and isinstance(d.get("name"), str)
            and isinstance(d.get("input"), Mapping)
        ):  # fmt: skip
            raise ValueError("a tool_use block without its id, name or input object")
        block = _block(d)
        if block is not None:
            out.append(block)
    return out


def _usage(resp: Any) -> Usage | None:
    usage = getattr(resp, "usage", None)
    if usage is None:
        return None
    counts = [getattr(usage, n, None) for n in ("input_tokens", "output_tokens")]
    extra = [getattr(usage, n, None) or 0 for n in ("cache_creation_input_tokens",
                                                     "cache_read_input_tokens")]  # fmt: skip
    if not all(isinstance(t, int) and not isinstance(t, bool) for t in (*counts, *extra)):
        raise ValueError(f"'usage' is {str(usage)[:80]!r}, without its token counts")
    return Usage(int(counts[0]) + sum(extra), int(counts[1]))  # type: ignore[arg-type]


def _block(d: Mapping[str, Any]) -> dict[str, Any] | None:
    """A response content block as it is sent back (only the fields the API takes)."""
    kind = d.get("type")
    if kind == "text":
        return {"type": "text", "text": d.get("text", "")}
    if kind == "thinking":
        return {"type": "thinking", "thinking": d.get("thinking", ""),
                "signature": d.get("signature", "")}  # fmt: skip
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": d.get("data", "")}
    if kind == "tool_use":
        out = {"type": "tool_use", "id": d.get("id", ""), "name": d.get("name", ""),
               "input": d.get("input") or {}}  # fmt: skip
        if d.get("toolset_name"):
            out["toolset_name"] = d["toolset_name"]
        return out
    return None


class AnthropicComputerUseAgent(ComputerUseAgent):
    api = "anthropic"
    api_name = "anthropic-messages"
    name = "anthropic-computer-use"

    def __init__(
        self,
        *,
        model: str,
        api_key: ApiKey | str,
        tool: str,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        prices: PriceTable | None = None,
        concurrency: int = 4,
        retry: RetryPolicy | None = None,
    ) -> None:
        anthropic = import_anthropic("anthropic-computer-use")
        if base_url is not None:
            check_base_url(base_url)
        super().__init__(
            model=model, prices=prices or PriceTable(), tool=tool,
            url=base_url or ANTHROPIC_URL, timeout=timeout, api_key=api_key,
            concurrency=concurrency, retry=retry,
        )  # fmt: skip
        self.beta = TOOL_BETAS[tool]
        self._anthropic = anthropic
        self._client = anthropic.AsyncAnthropic(
            api_key=self._key, base_url=base_url, timeout=self.timeout, max_retries=0
        )

    @classmethod
    def from_options(
        cls, options: AdapterOptions, *, max_retries: int
    ) -> AnthropicComputerUseAgent:
        if len(options.base_urls) > 1:
            raise ConfigError("anthropic-computer-use talks to one server: give one --base-url")
        url = options.base_urls[0].rstrip("/") if options.base_urls else None
        key = api_key(
            options, default_env=ANTHROPIC_KEY_ENV,
            needed_by="anthropic-computer-use on the Anthropic API" if url is None else None,
        )  # fmt: skip
        if options.acknowledge_safety_checks:
            raise ConfigError(
                "--acknowledge-safety-checks is for openai-computer-use (the Messages API has "
                "no pending safety checks)"
            )
        model = str(options.api_model or DEFAULT_MODEL)
        return cls(
            model=model, api_key=key, tool=tool_for(model, options.computer_tool),
            base_url=url, timeout=float(options.timeout or DEFAULT_TIMEOUT),
            prices=load_price_table(options.price_file),
            concurrency=int(options.concurrency or 4), retry=RetryPolicy(max_retries),
        )  # fmt: skip

    def display(self, turn: AgentTurn) -> DisplayMap:
        return DisplayMap(turn.size, fit_display(turn.size, MAX_EDGE_PX, MAX_PIXELS))

    def _tool(self, dmap: DisplayMap) -> dict[str, Any]:
        if self.tool.startswith("computer_toolset_"):
            return {
                "type": self.tool,
                "configs": {m: {"enabled": False} for m in _DISABLED_MEMBERS},
            }
        w, h = dmap.display
        return {"type": self.tool, "name": "computer", "display_width_px": w,
                "display_height_px": h}  # fmt: skip

    async def _create(self, turn: AgentTurn, logs: list[TurnLog], dmap: DisplayMap) -> Any:
        size = dmap.display if dmap.scaled else None

        def image(path: Path) -> dict[str, Any]:
            return _image(_png_b64(str(path), size))

        messages = build_messages(
            turn.task.instruction, logs, image, KEEP_IMAGES, tool_outputs(turn)
        )
        kind = "browser" if turn.observation.url is not None else "desktop"
        custom = [{"name": s.name, "description": s.description, "input_schema": s.schema}
                  for s in turn.tools]  # fmt: skip
        kwargs: dict[str, Any] = {
            "model": self.model, "max_tokens": MAX_TOKENS, "messages": messages,
            "system": harness_instructions(kind, bool(turn.tools)),
            "tools": [self._tool(dmap), *custom],
        }  # fmt: skip
        try:
            if self.beta is not None:
                resp = await self._client.beta.messages.create(**kwargs, betas=[self.beta])
            else:
                resp = await self._client.messages.create(**kwargs)
        except self._anthropic.AnthropicError as e:
            raise map_anthropic_error(
                self._anthropic, e, self.url, self.timeout,
                lambda t: redact_secrets(t, self._secrets),
            ) from None  # fmt: skip
        return resp

    def _read(
        self, resp: Any, dmap: DisplayMap, cursor: Point | None, offered: frozenset[str]
    ) -> CallResult:
        try:
            content, tokens = _content(resp), _usage(resp)
        except ValueError as e:
            raise TransientModelError(
                f"{self.url}: the reply is not a Messages API response: {e}"
            ) from None
        texts: list[str] = []
        items: list[CuItem] = []
        for b in content:
            if b["type"] in ("text", "thinking"):
                texts.append(str(b.get("text") or b.get("thinking") or ""))
            elif b["type"] == "tool_use" and b["name"] in offered and "toolset_name" not in b:
                item = tool_item(str(b["id"]), str(b["name"]), b["input"], cursor, offered)
                items.append(item)
            elif b["type"] == "tool_use":
                item = anthropic_item(str(b["name"]), b["input"], str(b["id"]), dmap, cursor)
                if b["name"] != "computer" and "toolset_name" not in b:
                    item = CuItem(item.id, item.name, "unsupported", None,
                                  f"unknown tool {b['name']!r}", cursor)  # fmt: skip
                cursor = item.cursor or cursor
                items.append(item)
        stop = str(getattr(resp, "stop_reason", "") or "")
        text = "\n".join(t for t in texts if t)
        flags = [f"stop_reason:{stop}"] if stop not in ("tool_use", "end_turn") else []
        ending = None
        if not items and stop in ("end_turn", "stop_sequence", "refusal"):
            ending = ending_json(text)
        event = {
            "message_id": str(getattr(resp, "id", "")),
            "content": content,
            "items": [i.to_json() for i in items],
            "ending": ending,
            "stop_reason": stop,
        }
        raw = {"id": event["message_id"], "stop_reason": stop, "content": content}
        return CallResult(event=event, text=text, raw=json.loads(json.dumps(raw)),
                          usage=tokens, flags=flags)  # fmt: skip

    def _settings(self) -> dict[str, Any]:
        return {"tool": self.tool, "beta": self.beta, "base_url": self.url,
                "timeout_s": self.timeout}  # fmt: skip
