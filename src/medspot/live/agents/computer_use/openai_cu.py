"""`--model openai-computer-use`: the Responses API's computer tool through the official
`openai` client (extra `[api]`, key `$OPENAI_API_KEY` or `--api-key-env`).

The tool follows the model (`--computer-tool` overrides): `{"type": "computer"}` (gpt-5.4 and
later; actions may come batched in `actions`) or, for `computer-use-preview*`,
`{"type": "computer_use_preview", "display_width": W, "display_height": H, "environment":
"browser"}` ("linux" for a desktop environment). The display is the screenshot's own size: the
screenshot is sent as it is and the actions are in its pixels.

The first request carries the goal and the first screenshot (an `input_image`); every later
one chains `previous_response_id` (the last response) and sends the new screenshot as the
`computer_call_output` of each computer call (`{"type": "computer_screenshot", "image_url":
data URL}`), with `acknowledged_safety_checks` only when the run acknowledges them;
`truncation: "auto"`; the harness's instruction as `instructions`. Pending safety checks are
journaled; without `--acknowledge-safety-checks` the turn is an error and nothing is executed.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from medspot.adapters.backends.openai import (
    OPENAI_URL,
    check_base_url,
    map_openai_error,
    redact_secrets,
    sanitize_url,
)
from medspot.adapters.backends.pricing import PriceTable, load_price_table
from medspot.adapters.base import Usage
from medspot.adapters.keys import GIVEN, OPENAI_KEY_ENV, ApiKey, api_key
from medspot.adapters.options import AdapterOptions
from medspot.adapters.retry import RetryPolicy
from medspot.errors import AdapterUnavailable, ConfigError, TransientModelError
from medspot.live.agents.computer_use.actions import CuItem, DisplayMap, openai_item
from medspot.live.agents.computer_use.agent import (
    CallResult,
    ComputerUseAgent,
    ending_json,
    harness_instructions,
    tool_item,
    tool_outputs,
)
from medspot.live.agents.computer_use.transcript import TurnLog, call_items, last_call, pending
from medspot.live.agents.turn import AgentTurn

__all__ = ["DEFAULT_MODEL", "TOOLS", "OpenAIComputerUseAgent", "tool_for"]

DEFAULT_MODEL = "gpt-5.4"
TOOLS = ("computer", "computer_use_preview")
DEFAULT_TIMEOUT = 120.0


def tool_for(model: str, override: str | None = None) -> str:
    """The tool type for `model`: the preview tool for `computer-use-preview*`, else the
    computer tool; `override` (one of `TOOLS`) wins."""
    if override is not None:
        if override not in TOOLS:
            raise ConfigError(
                f"--computer-tool {override!r} is not an OpenAI computer tool ({', '.join(TOOLS)})"
            )
        return override
    return "computer_use_preview" if model.startswith("computer-use-preview") else "computer"


def _data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _dump(obj: Any) -> Any:
    """An item of the response as JSON, as it came (the client's types are not enforced: a
    number where the type says int is kept as it is, without pydantic's warnings)."""
    dump = getattr(obj, "model_dump", None)
    return dump(mode="json", exclude_none=True, warnings=False) if callable(dump) else obj


def _kind(v: Any) -> str:
    return "missing" if v is None else type(v).__name__


def _output(resp: Any) -> list[dict[str, Any]]:
    """The response's `output` items, checked to be what the Responses API returns (a
    `ValueError` naming what is not): a list of objects with a `type`, a computer call with
    its `call_id` and its actions as objects, a message's content as a list of parts."""
    if not isinstance(getattr(resp, "id", None), str) or not resp.id:
        raise ValueError(f"the response id is {_kind(getattr(resp, 'id', None))}, not a string")
    raw = getattr(resp, "output", None)
    if not isinstance(raw, list):
        raise ValueError(f"'output' is {_kind(raw)}, not a list of items")
    items = [_dump(o) for o in raw]
    for o in items:
        if not isinstance(o, Mapping) or not isinstance(o.get("type"), str):
            raise ValueError(f"an output item is {str(o)[:80]!r}, not an object with a type")
        if o["type"] == "computer_call":
            actions = o.get("actions", [o["action"]] if o.get("action") else [])
            if not isinstance(o.get("call_id"), str) or not o["call_id"]:
                raise ValueError("a computer_call without its call_id")
            if not isinstance(actions, list) or not all(isinstance(a, Mapping) for a in actions):
                raise ValueError("a computer_call whose actions are not objects")
        if o["type"] == "function_call" and (
            not isinstance(o.get("call_id"), str) or not o["call_id"]
        ):
            raise ValueError("a function_call without its call_id")
        for name in ("content", "summary"):
            parts = o.get(name)
            if parts is not None and (
                not isinstance(parts, list) or not all(isinstance(c, Mapping) for c in parts)
            ):
                raise ValueError(f"a {o['type']} item whose {name} is not a list of objects")
    return items


def _usage(resp: Any) -> Usage | None:
    usage = getattr(resp, "usage", None)
    if usage is None:
        return None
    tokens = (getattr(usage, "input_tokens", None), getattr(usage, "output_tokens", None))
    if not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in tokens):
        raise ValueError(f"'usage' is {str(usage)[:80]!r}, without its token counts")
    return Usage(int(tokens[0]), int(tokens[1]))  # type: ignore[arg-type]


def _functions(turn: AgentTurn) -> list[dict[str, Any]]:
    """The tools track's tools as the Responses API's function tools."""
    return [{"type": "function", "name": s.name, "description": s.description,
             "parameters": s.schema, "strict": False} for s in turn.tools]  # fmt: skip


class OpenAIComputerUseAgent(ComputerUseAgent):
    api = "openai"
    name = "openai-computer-use"

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: ApiKey | str,
        tool: str,
        timeout: float = DEFAULT_TIMEOUT,
        prices: PriceTable | None = None,
        acknowledge_safety_checks: bool = False,
        concurrency: int = 4,
        retry: RetryPolicy | None = None,
    ) -> None:
        try:
            import openai
        except ImportError:
            raise AdapterUnavailable(
                "openai-computer-use needs the openai package: pip install 'medspot[api]'"
            ) from None
        check_base_url(base_url)
        super().__init__(
            model=model, prices=prices or PriceTable(), concurrency=concurrency, retry=retry,
            acknowledge_safety_checks=acknowledge_safety_checks,
        )  # fmt: skip
        self.tool = tool
        self.timeout = float(timeout)
        self.url = sanitize_url(base_url)
        key = ApiKey(api_key, GIVEN) if isinstance(api_key, str) else api_key
        self.key_source = key.source
        self._secrets = (key.value,)
        self._openai = openai
        self._client = openai.AsyncOpenAI(
            api_key=key.value, base_url=base_url, timeout=self.timeout, max_retries=0
        )

    @classmethod
    def from_options(cls, options: AdapterOptions, *, max_retries: int) -> OpenAIComputerUseAgent:
        url = (options.base_urls[0] if options.base_urls else None) or os.environ.get(
            "OPENAI_BASE_URL"
        ) or OPENAI_URL  # fmt: skip
        if len(options.base_urls) > 1:
            raise ConfigError("openai-computer-use talks to one server: give one --base-url")
        official = urlsplit(url).hostname == "api.openai.com"
        key = api_key(
            options, default_env=OPENAI_KEY_ENV,
            needed_by="openai-computer-use on the OpenAI API" if official else None,
        )  # fmt: skip
        model = str(options.api_model or DEFAULT_MODEL)
        return cls(
            model=model, base_url=url.rstrip("/"), api_key=key,
            tool=tool_for(model, options.computer_tool),
            timeout=float(options.timeout or DEFAULT_TIMEOUT),
            prices=load_price_table(options.price_file),
            acknowledge_safety_checks=bool(options.acknowledge_safety_checks),
            concurrency=int(options.concurrency or 4), retry=RetryPolicy(max_retries),
        )  # fmt: skip

    def display(self, turn: AgentTurn) -> DisplayMap:
        return DisplayMap(turn.size, turn.size)

    def _tool(self, turn: AgentTurn) -> dict[str, Any]:
        if self.tool == "computer":
            return {"type": "computer"}
        w, h = turn.size
        env = "browser" if turn.observation.url is not None else "linux"
        return {"type": "computer_use_preview", "display_width": w, "display_height": h,
                "environment": env}  # fmt: skip

    def _input(self, turn: AgentTurn, logs: list[TurnLog]) -> tuple[list[Any], str | None]:
        url = _data_url(turn.observation.png)
        prev = last_call(logs)
        outputs = tool_outputs(turn)
        if prev is None:
            detail = "original" if self.tool == "computer" else "high"
            first = [{"type": "input_text", "text": turn.task.instruction},
                     {"type": "input_image", "image_url": url, "detail": detail}]  # fmt: skip
            return [{"role": "user", "content": first}], None
        out: list[Any] = []
        for c in prev.get("calls") or ():
            item: dict[str, Any] = {
                "type": "computer_call_output",
                "call_id": c["call_id"],
                "output": {"type": "computer_screenshot", "image_url": url},
            }
            if c.get("acknowledged"):
                item["acknowledged_safety_checks"] = c.get("pending_safety_checks") or []
            out.append(item)
        for f in prev.get("function_calls") or ():
            note = next((i.note for i in call_items(prev) if i.id == f["call_id"]), "")
            text = outputs.get(f["call_id"]) or f"Not executed: {note or 'not reached'}"
            out.append({"type": "function_call_output", "call_id": f["call_id"], "output": text})
        notes = [f"{i.name}: {i.note}" for i in call_items(prev)
                 if i.kind == "unsupported" and not i.name.startswith("tool:")]  # fmt: skip
        if notes:
            text = "Not executed (this harness cannot do it): " + "; ".join(notes)
            out.append({"role": "user", "content": [{"type": "input_text", "text": text}]})
        refused = [str(e["not_executed"]) for e in logs[-1].events
                   if e.get("e") == "result" and e.get("not_executed")]  # fmt: skip
        if refused:
            text = "Not executed (the application cannot do it): " + "; ".join(refused)
            out.append({"role": "user", "content": [{"type": "input_text", "text": text}]})
        if not prev.get("calls"):
            out.append({"role": "user", "content": [
                {"type": "input_text", "text": "Continue with the task."},
                {"type": "input_image", "image_url": url, "detail": "auto"}]})  # fmt: skip
        return out, str(prev.get("response_id") or "") or None

    async def _request(self, turn: AgentTurn, logs: list[TurnLog], dmap: DisplayMap) -> CallResult:
        items, previous_id = self._input(turn, logs)
        kind = "browser" if turn.observation.url is not None else "desktop"
        body: dict[str, Any] = {
            "model": self.model, "tools": [self._tool(turn), *_functions(turn)], "input": items,
            "truncation": "auto", "instructions": harness_instructions(kind, bool(turn.tools)),
        }  # fmt: skip
        if previous_id:
            body["previous_response_id"] = previous_id
        try:
            resp = await self._client.responses.create(**body)
        except self._openai.OpenAIError as e:
            raise map_openai_error(
                self._openai, e, self.url, self.timeout, lambda t: redact_secrets(t, self._secrets)
            ) from None
        offered = frozenset(s.name for s in turn.tools)
        return self._read(resp, dmap, pending(logs).cursor, offered)

    def _read(
        self,
        resp: Any,
        dmap: DisplayMap,
        cursor: tuple[float, float] | None,
        offered: frozenset[str] = frozenset(),
    ) -> CallResult:
        """What a response says. A reply that is not the Responses API's shape is a failed
        call (`TransientModelError`: retried, then an error asked again on resume), never
        read as the model saying it is done."""
        try:
            output, usage = _output(resp), _usage(resp)
        except ValueError as e:
            raise TransientModelError(
                f"{self.url}: the reply is not a Responses API response: {e}"
            ) from None
        texts: list[str] = []
        items: list[CuItem] = []
        calls: list[dict[str, Any]] = []
        functions: list[dict[str, Any]] = []
        flags: list[str] = []
        checks: list[dict[str, Any]] = []
        for o in output:
            kind = o.get("type")
            if kind == "reasoning":
                texts += [str(s.get("text", "")) for s in o.get("summary") or () if s.get("text")]
            elif kind == "message":
                for c in o.get("content") or ():
                    if c.get("type") == "output_text" and c.get("text"):
                        texts.append(str(c["text"]))
                    elif c.get("type") == "refusal":
                        texts.append(str(c.get("refusal", "")))
                        flags.append("refusal")
            elif kind == "computer_call":
                call_id = str(o.get("call_id", ""))
                pend = [{k: c.get(k) for k in ("id", "code", "message")}
                        for c in o.get("pending_safety_checks") or ()]  # fmt: skip
                checks += pend
                calls.append({"call_id": call_id, "pending_safety_checks": pend,
                              "acknowledged": bool(pend) and self.acknowledge})  # fmt: skip
                actions = o.get("actions") or ([o["action"]] if o.get("action") else [])
                for i, a in enumerate(actions):
                    item = openai_item(a, f"{call_id}#{i}", dmap, cursor)
                    cursor = item.cursor or cursor
                    items.append(item)
            elif kind == "function_call":  # a tool of the tools track
                call_id, name = str(o.get("call_id", "")), str(o.get("name", ""))
                try:
                    args = json.loads(str(o.get("arguments") or "{}"))
                except (ValueError, RecursionError):  # not JSON, or nested past any reader
                    args = None
                functions.append({"call_id": call_id, "name": name})
                items.append(tool_item(call_id, name, args, cursor, offered))
        text = "\n".join(t for t in texts if t)
        ending = None
        status = getattr(resp, "status", None)
        if not calls and not functions and status not in ("incomplete", "failed"):
            ending = ending_json(text)
        elif not calls and not functions:
            flags.append(f"response_status:{status}")
        event = {
            "response_id": str(getattr(resp, "id", "")),
            "calls": calls,
            "function_calls": functions,
            "items": [i.to_json() for i in items],
            "ending": ending,
        }
        raw = {"id": event["response_id"], "output": output}
        return CallResult(
            event=event, text=text, raw=json.loads(json.dumps(raw, default=str)),
            usage=usage,
            flags=flags, pending_checks=checks,
        )  # fmt: skip

    def describe(self) -> dict[str, Any]:
        price = self.prices.get(self.model)
        return {
            "name": self.name, "kind": "computer-use", "api": "openai-responses",
            "api_model": self.model, "tool": self.tool, "base_url": self.url,
            "timeout_s": self.timeout, "acknowledge_safety_checks": self.acknowledge,
            "price_per_1m": [price.input_per_m, price.output_per_m] if price else None,
            "api_key_env": self.key_source,
        }  # fmt: skip

    async def aclose(self) -> None:
        await self._client.close()
