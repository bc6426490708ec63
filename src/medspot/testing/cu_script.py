"""Scripted computer-use conversations for the test server, in both APIs' own formats.

A script file (JSON):

    {"format_version": 1,
     "conversations": [
       {"match": "GARCIA^MARIA",              # a substring of the goal (the first user text)
        "turns": [
          {"text": "I open the filter box.",   # the model's text beside its actions
           "actions": [{"type": "click", "button": "left", "x": 640, "y": 120}],
           "safety_checks": [{"id": "sc_1", "code": "malicious_instructions",
                              "message": "..."}]},
          {"tool_uses": [{"input": {"action": "left_click", "coordinate": [640, 120]}}]},
          {"function_calls": [{"name": "find_studies",          # the tools track (`--tools`)
                               "arguments": {"patient_name": "DOE^JOHN"}}],
           "tool_uses": [{"name": "find_studies", "input": {"patient_name": "DOE^JOHN"}}]},
          {"text": "The study is open."}       # no actions: the final answer
        ]}]}

A turn answers one request: for the Responses API its `actions` (or one `action`, the
preview's form) become one `computer_call` (with `pending_safety_checks`), its
`function_calls` `function_call` items (the tools offered beside the computer), its `text` a
message and `reasoning` a reasoning summary; for the Messages API its `tool_uses` become
`tool_use` blocks (`name` "computer" with `input.action`, turned into the member's name when
the request offers the `computer_toolset_...` toolset) after a text block. `usage` ([in, out])
overrides the token counts (default: 1000 per image sent plus the words, out 40 per action).

Response and message ids name the turn they answer (`resp_<conversation>_<turn>_<request>`,
`msg_<conversation>_<turn>_<request>`). The conversation a request belongs to: the Responses
API's `previous_response_id` (the server remembers which turn each response answered) or, for
a first request and for the stateless Messages API, the script whose `match` the goal
contains; the Messages API's turn is the number of assistant messages sent. What the client
must send is checked as the real APIs check it (refused with HTTP 400): every computer call of
the previous turn answered by a `computer_call_output` with a screenshot, its pending safety
checks acknowledged, every function call by a `function_call_output`, every `tool_use`
answered by a `tool_result`. Each request answered is
kept (`CuExchange`) so that tests read what was sent: the screenshots, the chaining, the
acknowledgements, the tool and the beta header.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from medspot.errors import ConfigError
from medspot.testing.messages_protocol import messages_body
from medspot.testing.openai_server import Refusal, SeenRequest

__all__ = [
    "SCRIPT_FORMAT_VERSION",
    "CuExchange",
    "CuScript",
    "ScriptedComputerUse",
    "load_script",
]


class SafetyCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    code: str = "malicious_instructions"
    message: str = "The page asks for something the user did not ask for."


class ToolUse(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "computer"
    input: dict[str, Any]


class FunctionCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ScriptTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str | None = None
    function_calls: list[FunctionCall] = Field(default_factory=list)
    reasoning: str | None = None
    action: dict[str, Any] | None = None  # the preview's single action
    actions: list[dict[str, Any]] | None = None  # the computer tool's batch
    safety_checks: list[SafetyCheck] = Field(default_factory=list)
    tool_uses: list[ToolUse] = Field(default_factory=list)
    stop_reason: str | None = None
    usage: tuple[int, int] | None = None


class Conversation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    match: str
    turns: list[ScriptTurn] = Field(min_length=1)


SCRIPT_FORMAT_VERSION = 1  # the script format this module reads


class CuScript(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format_version: int = SCRIPT_FORMAT_VERSION
    conversations: list[Conversation] = Field(min_length=1)

    @field_validator("format_version")
    @classmethod
    def _known_version(cls, v: int) -> int:
        if v != SCRIPT_FORMAT_VERSION:
            raise ValueError(f"format {v} is not one this medspot reads ({SCRIPT_FORMAT_VERSION})")
        return v


def load_script(path: Path) -> CuScript:
    """A script file, or a `ConfigError` naming the file and the field."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"cannot read the script {path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not JSON (line {e.lineno}: {e.msg})") from None
    try:
        return CuScript.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{path}: field '{where}': {first['msg']}") from None


@dataclass(frozen=True)
class CuExchange:
    """One answered request: which conversation and turn, and what the client sent."""

    api: str  # "responses" or "messages"
    conversation: int
    turn: int
    request: int  # the server's request number
    screenshots: tuple[str, ...]  # sha256 of the screenshots sent as the previous turn's output
    previous_response_id: str | None
    acknowledged: tuple[str, ...]  # safety check ids acknowledged
    tool: dict[str, Any]
    beta: str | None
    truncation: str | None
    # what the previous turn's tool calls returned, as the client sent it (function call
    # outputs, the text of the tool_result blocks), and the names of the tools offered
    tool_outputs: tuple[str, ...] = ()
    tools_offered: tuple[str, ...] = ()


@dataclass
class _State:
    responses: dict[str, tuple[int, int]] = field(default_factory=dict)  # id -> (conv, turn)
    exchanges: list[CuExchange] = field(default_factory=list)


def _tokens(turn: ScriptTurn, req: SeenRequest, n_actions: int) -> tuple[int, int]:
    if turn.usage is not None:
        return turn.usage
    return 1000 * len(req.images) + len(req.text.split()), 20 + 40 * n_actions


class ScriptedComputerUse:
    """The test server's `responder` for a `CuScript` (thread-safe)."""

    END = "(the script has no more turns)"

    def __init__(self, script: CuScript) -> None:
        self.script = script
        self._lock = threading.Lock()
        self._st = _State()

    @property
    def exchanges(self) -> list[CuExchange]:
        with self._lock:
            return list(self._st.exchanges)

    def __call__(self, req: SeenRequest) -> dict[str, Any] | None:
        if req.api == "responses":
            return self._responses(req)
        if req.api == "messages":
            return self._messages(req)
        return None

    def _match(self, goal: str) -> int:
        for i, conv in enumerate(self.script.conversations):
            if conv.match in goal:
                return i
        raise Refusal(400, f"the script has no conversation for the goal {goal[:80]!r}")

    def _turn(self, conv: int, k: int) -> ScriptTurn:
        turns = self.script.conversations[conv].turns
        return turns[k] if k < len(turns) else ScriptTurn(text=self.END)

    # -- the Responses API --------------------------------------------------------------------

    def _responses(self, req: SeenRequest) -> dict[str, Any]:
        body = req.body
        prev = body.get("previous_response_id")
        items = [i for i in body.get("input") or [] if isinstance(i, dict)]
        outputs = [i for i in items if i.get("type") == "computer_call_output"]
        fn_outputs = {str(i.get("call_id")): str(i.get("output", "")) for i in items
                      if i.get("type") == "function_call_output"}  # fmt: skip
        with self._lock:
            if prev:
                if prev not in self._st.responses:
                    raise Refusal(400, f"Previous response with id '{prev}' not found.")
                conv, k = self._st.responses[prev]
                k += 1
            else:
                conv, k = self._match(req.text), 0
        acknowledged: list[str] = []
        if k > 0:
            before = self._turn(conv, k - 1)
            if before.action is not None or before.actions:
                call_id = f"call_{conv}_{k - 1}"
                out = next((o for o in outputs if o.get("call_id") == call_id), None)
                if out is None:
                    raise Refusal(400, f"No tool output found for computer call {call_id}.")
                acknowledged = [str(c.get("id")) for c in out.get("acknowledged_safety_checks")
                                or ()]  # fmt: skip
                missing = {c.id for c in before.safety_checks} - set(acknowledged)
                if missing:
                    raise Refusal(400, f"Safety checks not acknowledged: {sorted(missing)}")
                if not req.images:
                    raise Refusal(400, "the computer_call_output carries no screenshot")
            for j in range(len(before.function_calls)):
                if f"fcall_{conv}_{k - 1}_{j}" not in fn_outputs:
                    raise Refusal(400, f"No tool output found for function call "
                                       f"fcall_{conv}_{k - 1}_{j}.")  # fmt: skip
        turn = self._turn(conv, k)
        rid = f"resp_{conv}_{k}_{req.index}"
        output: list[dict[str, Any]] = []
        if turn.reasoning:
            output.append({"type": "reasoning", "id": f"rs_{req.index}", "summary": [
                {"type": "summary_text", "text": turn.reasoning}]})  # fmt: skip
        if turn.text:
            text = {"type": "output_text", "text": turn.text, "annotations": []}
            output.append({"type": "message", "id": f"msg_{req.index}", "status": "completed",
                           "role": "assistant", "content": [text]})  # fmt: skip
        n_actions = 0
        if turn.action is not None or turn.actions:
            call: dict[str, Any] = {
                "type": "computer_call", "id": f"cu_{req.index}", "call_id": f"call_{conv}_{k}",
                "status": "completed",
                "pending_safety_checks": [c.model_dump() for c in turn.safety_checks],
            }  # fmt: skip
            if turn.action is not None:
                call["action"] = turn.action
                n_actions = 1
            else:
                call["actions"] = turn.actions
                n_actions = len(turn.actions or ())
            output.append(call)
        for j, fc in enumerate(turn.function_calls):
            fn = {"type": "function_call", "id": f"fc_{req.index}_{j}", "name": fc.name,
                  "call_id": f"fcall_{conv}_{k}_{j}", "arguments": json.dumps(fc.arguments),
                  "status": "completed"}  # fmt: skip
            output.append(fn)
            n_actions += 1
        tokens = _tokens(turn, req, n_actions)
        tools = body.get("tools") or [{}]
        offered = tuple(str(t.get("name")) for t in tools if t.get("type") == "function")
        with self._lock:
            self._st.responses[rid] = (conv, k)
            self._st.exchanges.append(CuExchange(
                "responses", conv, k, req.index, tuple(i.sha256 for i in req.images),
                str(prev) if prev else None, tuple(acknowledged), dict(tools[0]), None,
                body.get("truncation"), tuple(fn_outputs.values()), offered,
            ))  # fmt: skip
        return {
            "id": rid, "object": "response", "created_at": 0, "status": "completed",
            "model": req.model, "output": output, "parallel_tool_calls": False,
            "tool_choice": "auto", "tools": tools,
            "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1],
                      "total_tokens": sum(tokens), "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}},
        }  # fmt: skip

    # -- the Messages API ---------------------------------------------------------------------

    def _messages(self, req: SeenRequest) -> dict[str, Any]:
        messages = [m for m in req.body.get("messages") or [] if isinstance(m, dict)]
        first = messages[0].get("content") if messages else None
        goal = first if isinstance(first, str) else " ".join(
            str(b.get("text", "")) for b in first or () if isinstance(b, dict))  # fmt: skip
        conv = self._match(goal)
        k = sum(1 for m in messages if m.get("role") == "assistant")
        tools = req.body.get("tools") or [{}]
        toolset = str(tools[0].get("type", "")).startswith("computer_toolset_")
        shots: tuple[str, ...] = ()
        texts: tuple[str, ...] = ()
        offered = tuple(str(t.get("name")) for t in tools[1:] if "input_schema" in t)
        if k > 0:
            asked = [b.get("id") for b in messages[-2].get("content") or ()
                     if isinstance(b, dict) and b.get("type") == "tool_use"]  # fmt: skip
            last = messages[-1].get("content") or []
            answered = {b.get("tool_use_id") for b in last
                        if isinstance(b, dict) and b.get("type") == "tool_result"}  # fmt: skip
            missing = [a for a in asked if a not in answered]
            if missing:
                ids = ", ".join(map(str, missing))
                raise Refusal(400, f"tool_use ids were found without tool_result blocks: {ids}")
            if asked and not req.images:
                raise Refusal(400, "the tool_result blocks carry no screenshot")
            shots = (req.images[-1].sha256,) if req.images else ()
            texts = tuple(str(c.get("text", "")) for b in last if isinstance(b, dict)
                          and b.get("type") == "tool_result" for c in b.get("content") or ()
                          if isinstance(c, dict) and c.get("type") == "text")  # fmt: skip
        turn = self._turn(conv, k)
        content: list[dict[str, Any]] = []
        if turn.text:
            content.append({"type": "text", "text": turn.text})
        for i, use in enumerate(turn.tool_uses):
            block: dict[str, Any] = {"type": "tool_use", "id": f"toolu_{conv}_{k}_{i}",
                                     "name": use.name, "input": dict(use.input)}  # fmt: skip
            if toolset and use.name == "computer":
                inp = dict(use.input)
                block.update(name=str(inp.pop("action", "")), input=inp, toolset_name="computer",
                             caller={"type": "direct"})  # fmt: skip
            content.append(block)
        stop = turn.stop_reason or ("tool_use" if turn.tool_uses else "end_turn")
        tokens = _tokens(turn, req, len(turn.tool_uses))
        with self._lock:
            self._st.exchanges.append(CuExchange(
                "messages", conv, k, req.index, shots, None, (), dict(tools[0]),
                req.headers.get("anthropic-beta"), None, texts, offered,
            ))  # fmt: skip
        body = messages_body(req.index, req.model, content, tokens, stop)
        body["id"] = f"msg_{conv}_{k}_{req.index}"  # which turn it answered, for tests
        return body
