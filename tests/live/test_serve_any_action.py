"""Whatever an agent sends through `medspot live serve`, property-based (hypothesis), on the lamp
panel (a real small environment with a child process): generated calls and actions (numbers
huge, NaN, infinite, past 64 bits; strings empty, enormous, of odd or not-Unicode characters;
unknown keys and tools; tool calls with odd arguments) through both servers' fronts. Every call
is either a scored step (one action of the budget: `executed`, or a no-action step that says
why) or a clear refusal of a malformed call; never an environment fault, never an exception
out of the front, and the run folder's results are written after every episode and stay
readable.

The fronts are driven in-process for speed (the MCP server through the official client on its
in-memory transport; the OpenEnv session's `reset`/`step` after openenv-core's own action
validation), on one event loop that outlives the examples; a few examples go over the real
transports (streamable HTTP; OpenEnv's WebSocket and HTTP routes) to a server process."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from _lamp_panel import ENTRY, NAME, button_box, lamp_command, switch_task, task_file
from _serve_support import kill_leftovers, short_workroot, start_server, stop_server
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medspot.live.core.executable import MAX_TEXT_CHARS
from medspot.live.envs import registry
from medspot.live.loop.steplog import FaultRecord, StepRecord, TaskRecord, read_live_journal
from medspot.live.serve.openenv_models import MAX_ACTION_CHARS
from medspot.runfolder.layout import LIVE_JOURNAL

# a 2,000,000-character text is one of the values: hypothesis warns when it shows it
pytestmark = [pytest.mark.live, pytest.mark.filterwarnings("ignore:Generating overly large repr")]
mcp = pytest.importorskip("mcp")
pytest.importorskip("openenv")

T = TypeVar("T")
TASK = "many"
SETTINGS = settings(max_examples=60, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
RED = button_box("red").center

# -- what an agent may send ---------------------------------------------------------------------

NUMBERS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, RED[0], RED[1], 799, 1280, -1, 1e308, -1e308, 2**63, 2**64, 10**400]),
)
TEXTS = st.one_of(
    st.text(max_size=20),
    st.text(st.characters(categories=["Cs", "Cc", "Cf", "Co", "Zl", "Zs"]), max_size=8),
    st.sampled_from(["", " ", "\x00", "\ud800", "a\udfffb", "ＡＢＣ", "\u202eevil", "😀" * 10,
                     "DOE^JOHN", "Enter", "ctrl+a", "a" * MAX_TEXT_CHARS,
                     "a" * (MAX_TEXT_CHARS + 1), "x" * 2_000_000]),
)  # fmt: skip
VALUES = st.one_of(
    NUMBERS, TEXTS, st.booleans(), st.none(), st.lists(NUMBERS, max_size=3),
    st.dictionaries(st.text(max_size=4), NUMBERS, max_size=2),
)  # fmt: skip
KEYS = {"x": NUMBERS, "y": NUMBERS, "x1": NUMBERS, "y1": NUMBERS, "x2": NUMBERS, "y2": NUMBERS,
        "dy": NUMBERS, "text": TEXTS, "key": TEXTS, "reason": TEXTS,
        "seconds": st.sampled_from([0, 0.01, -1, 11, math.nan, math.inf, "1", None])}  # fmt: skip
TOOL_ARGS = {
    "click": ("x", "y"), "double_click": ("x", "y"), "right_click": ("x", "y"),
    "drag": ("x1", "y1", "x2", "y2"), "scroll": ("x", "y", "dy"), "type": ("text",),
    "key": ("key",), "wait": ("seconds",), "infeasible": ("reason",), "list_tasks": (),
    "find_studies": ("patient_name",), "no_such_tool": ("x",), "": (),
}  # fmt: skip
ACTION_TOOLS = {"click", "double_click", "right_click", "drag", "scroll", "type", "key",
                "infeasible"}  # fmt: skip
NAME_CHARS = 255  # the schemas' bound of a key name (`tools.MAX_NAME_CHARS`)


def _number(v: Any) -> bool:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    try:
        return math.isfinite(float(v))
    except OverflowError:  # a whole number no float holds
        return False


def _string(v: Any, least: int, most: int) -> bool:
    if not isinstance(v, str) or not least <= len(v) <= most:
        return False
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _fits(key: str, v: Any) -> bool:
    """Whether `v` fits argument `key` of the MCP tools' schemas (stated here, from the docs,
    independently of the server's code)."""
    if key in ("x", "y", "x1", "y1", "x2", "y2"):
        return _number(v)
    if key == "dy":
        return isinstance(v, int) and not isinstance(v, bool)
    if key in ("text", "reason"):
        return _string(v, 0, MAX_TEXT_CHARS)
    if key == "key":
        return _string(v, 1, NAME_CHARS)
    if key == "seconds":
        return _number(v) and 0 <= v <= 10
    return key == "episode" and v is None


def expected(name: str, args: dict[str, Any]) -> str:
    """What a call must be: "action" (a scored step), "call" (a well-formed call that is no
    action: wait, list_tasks) or "refused" (malformed: an unknown tool, a missing or unknown
    argument, a value the schema refuses)."""
    if name not in ACTION_TOOLS | {"wait", "list_tasks"}:
        return "refused"
    known = {*TOOL_ARGS[name], "episode"} if name != "list_tasks" else set()
    required = {k for k in TOOL_ARGS[name] if name not in ("infeasible", "wait")}
    if not required <= set(args) or set(args) - known:
        return "refused"
    if not all(_fits(k, v) for k, v in args.items()):
        return "refused"
    return "action" if name in ACTION_TOOLS else "call"


@st.composite
def mcp_calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A tool call: a tool of the server or not, its arguments odd, missing or unknown."""
    name = draw(st.sampled_from(sorted(TOOL_ARGS)))
    args = {}
    for key in TOOL_ARGS[name]:
        if draw(st.integers(0, 9)):  # most of the time the argument is there
            args[key] = draw(KEYS.get(key, VALUES))
    args.update(draw(st.dictionaries(st.sampled_from(["button", "z", "episode", "eval"]),
                                     VALUES, max_size=1)))  # fmt: skip
    return name, args


def _num(v: Any) -> str:
    return str(v)


ACTION_TEXTS = st.one_of(
    st.builds(lambda x, y: f"click({_num(x)}, {_num(y)})", NUMBERS, NUMBERS),
    st.builds(lambda x, y, dy: f"scroll({_num(x)}, {_num(y)}, {_num(dy)})", NUMBERS, NUMBERS,
              NUMBERS),
    st.builds(lambda a, b, c, d: f"drag({a}, {b}, {c}, {d})", NUMBERS, NUMBERS, NUMBERS, NUMBERS),
    st.builds(lambda t: f"type({json.dumps(t)})", TEXTS),
    st.builds(lambda t: f'type("{t}")', TEXTS),
    st.builds(lambda k: f'key("{k}")', TEXTS),
    st.builds(lambda n, a: f"tool({n}, {json.dumps(a)})",
              st.sampled_from(["find_studies", "delete_study", "x" * 300, ""]),
              st.dictionaries(st.text(max_size=5), VALUES, max_size=2)),
    st.sampled_from(["done()", 'infeasible("no")', "", "click", "tool(", "click(1e999, 1)"]),
    TEXTS,
)  # fmt: skip


# -- one event loop for the examples --------------------------------------------------------------


class Loop:
    """An asyncio loop on a thread of its own: the servers' hosts live there across examples."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 300) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)
        self.loop.close()


def _tasks(folder: Path) -> Path:
    task = {**switch_task(TASK, "red", "green", "blue"), "max_steps": 50}
    return task_file(folder / "tasks.json", [task])


def _check_folder(out: Path, scored: int) -> None:
    """The run folder: `scored` step records, no fault, results that read back."""
    records = list(read_live_journal(out / LIVE_JOURNAL))
    assert not [r for r in records if isinstance(r, FaultRecord)]
    assert all(r.outcome != "env_error" for r in records if isinstance(r, TaskRecord))
    assert len([r for r in records if isinstance(r, StepRecord)]) == scored
    rows = json.loads((out / NAME / "task_results.json").read_text(encoding="utf-8"))
    assert rows and all(r["live_outcome"] != "env_error" for r in rows)
    for name in ("run.json", "overall_dataset_metrics.json"):
        json.loads((out / name).read_text(encoding="utf-8"))


def _refusal(message: str) -> None:
    """A refusal of a malformed call: a sentence, not a fault or a crash."""
    assert message and "internal error" not in message, message
    assert "environment failed" not in message and "Traceback" not in message, message


# -- MCP, in-process ----------------------------------------------------------------------------


class McpFront:
    """The MCP server (`McpServe`) and the official client on its in-memory transport."""

    def __init__(self, loop: Loop, out: Path, work: Path) -> None:
        self.loop, self.out = loop, out
        self.scored = 0
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self.client: Any = None
        loop.run(self._open(out, work))

    async def _open(self, out: Path, work: Path) -> None:
        import mcp_types

        from medspot.live.loop.envspec import EnvSpec
        from medspot.live.serve.host import ServeOptions
        from medspot.live.serve.mcp_server import McpServe

        self.serve = McpServe(
            ServeOptions(
                spec=EnvSpec(NAME, tasks_file=_tasks(out.parent), workroot=work), out=out, n_boot=20
            )
        )
        await self.serve.host.open()
        ready, self._stop = asyncio.Event(), asyncio.Event()

        async def keep() -> None:
            me = mcp_types.Implementation(name="fuzz-agent", version="1")
            async with mcp.Client(self.serve.server, client_info=me) as client:
                self.client = client
                ready.set()
                assert self._stop is not None
                await self._stop.wait()

        self._task = asyncio.create_task(keep())
        await ready.wait()

    async def call(self, name: str, args: dict[str, Any]) -> tuple[bool, str]:
        try:
            res = await self.client.call_tool(name, args)
        except mcp.MCPError as e:  # refused by the protocol itself (JSON-RPC): a refusal
            return True, str(e)
        return bool(res.is_error), str(res.content[0].text)

    def example(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        self.loop.run(self._example(calls))

    async def _example(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        err, text = await self.call("start_task", {"task_id": TASK})
        assert not err, text
        used, ended = 0, False
        for name, args in calls:
            err, text = await self.call(name, args)
            must = expected(name, args)
            if must == "refused":
                assert err, (name, args, text)
                _refusal(text)
                continue
            assert not err, (name, args, text)  # a well-formed call is never refused
            if must == "call":
                continue
            turn = json.loads(text)  # a scored step: one action of the budget
            used += 1
            self.scored += 1
            assert turn["actions_used"] == used and turn["action"] is not None, turn
            if not turn["executed"] and name != "infeasible":
                assert turn["not_executed"], turn  # says why
            if turn["ended"]:
                ended = True
                break
        if not ended:  # the ending writes the results: they must be writable
            err, text = await self.call("done", {})
            assert not err, text
            self.scored += 1
            assert json.loads(text)["ended"]

    def close(self) -> None:
        async def close() -> None:
            assert self._stop is not None and self._task is not None
            self._stop.set()
            await self._task
            await self.serve.host.close()

        self.loop.run(close())


# -- OpenEnv, in-process ------------------------------------------------------------------------


class OpenEnvFront:
    """The OpenEnv front (`OpenEnvServe`) and one WebSocket session's environment
    (`MedspotOpenEnv`), each action validated as openenv-core validates it first."""

    def __init__(self, loop: Loop, out: Path, work: Path) -> None:
        self.loop, self.out = loop, out
        self.scored = 0
        loop.run(self._open(out, work))

    async def _open(self, out: Path, work: Path) -> None:
        from medspot.live.loop.envspec import EnvSpec
        from medspot.live.serve.host import ServeOptions
        from medspot.live.serve.openenv_server import MedspotOpenEnv, OpenEnvServe

        spec = EnvSpec(NAME, tasks_file=_tasks(out.parent), workroot=work)
        opts = ServeOptions(spec=spec, out=out, n_boot=20, protocol="openenv")
        self.front = OpenEnvServe(opts, idle_timeout_s=0)
        self.front.loop = asyncio.get_running_loop()
        await self.front.host.open()
        self.session = MedspotOpenEnv(self.front)

    def example(self, actions: list[str]) -> None:
        self.loop.run(self._example(actions))

    async def _example(self, actions: list[str]) -> None:
        from openenv.core.env_server.serialization import deserialize_action
        from pydantic import ValidationError

        from medspot.live.serve.openenv_models import MedspotAction

        await self.session.reset_async(task=TASK, agent="fuzz-trainer", agent_version="1")
        used, ended = 0, False
        for text in [*actions, "done()"]:
            well_formed = _string(text, 0, MAX_ACTION_CHARS)
            try:
                action = deserialize_action({"action": text}, MedspotAction)
            except ValidationError:  # refused by the model (too long, not Unicode)
                assert not well_formed, text[:100]
                continue
            assert well_formed, text[:100]
            obs = await self.session.step_async(action)  # never refused: a scored step
            used += 1
            self.scored += 1
            assert obs.actions_used == used
            if (
                not obs.executed
                and obs.action is not None
                and obs.action.get("kind") not in ("done", "infeasible")
            ):
                assert obs.not_executed, obs
            if not obs.executed and obs.action is None:
                assert "no_action" in obs.flags or obs.not_executed, obs
            if obs.done:
                ended = True
                break
        assert ended

    def close(self) -> None:
        self.loop.run(self.front.host.close())


@pytest.fixture(scope="module")
def fronts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[McpFront, OpenEnvFront]]:
    saved = registry._ENVS.get(NAME)
    registry._ENVS[NAME] = ENTRY
    root = tmp_path_factory.mktemp("any-action")
    loop = Loop()
    made: list[Any] = []
    try:
        with short_workroot() as work:
            (root / "mcp").mkdir()
            (root / "openenv").mkdir()
            made.append(McpFront(loop, root / "mcp" / "run", work / "m"))
            made.append(OpenEnvFront(loop, root / "openenv" / "run", work / "o"))
            yield made[0], made[1]
            for front in made:
                front.close()
            made.clear()
    finally:
        for front in made:
            front.close()
        loop.close()
        if saved is None:
            registry._ENVS.pop(NAME, None)
        else:
            registry._ENVS[NAME] = saved


@SETTINGS
@given(calls=st.lists(mcp_calls(), max_size=4))
def test_any_mcp_call_is_a_scored_step_or_a_clear_refusal(
    fronts: tuple[McpFront, OpenEnvFront], calls: list[tuple[str, dict[str, Any]]]
) -> None:
    mcp_front, _ = fronts
    mcp_front.example(calls)
    _check_folder(mcp_front.out, mcp_front.scored)


@SETTINGS
@given(actions=st.lists(ACTION_TEXTS, max_size=4))
def test_any_openenv_action_is_a_scored_step_or_a_clear_refusal(
    fronts: tuple[McpFront, OpenEnvFront], actions: list[str]
) -> None:
    _, openenv_front = fronts
    openenv_front.example(actions)
    _check_folder(openenv_front.out, openenv_front.scored)


# -- a few over the real transports ---------------------------------------------------------------


def _serve(tmp_path: Path, *extra: str) -> list[str]:
    return lamp_command("live", "serve", "--env", NAME, "--tasks-file", str(_tasks(tmp_path)),
                        "--out", str(tmp_path / "run"), "--bootstrap", "20", *extra)  # fmt: skip


def _sendable(value: Any) -> bool:
    """Whether a client library can put `value` on the wire as UTF-8 JSON (a lone surrogate
    it cannot: the in-process examples send those)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, ValueError):
        return False
    return True


def test_odd_calls_over_streamable_http(tmp_path: Path) -> None:
    import anyio
    import mcp_types
    from mcp.client.streamable_http import streamable_http_client

    scored = 0

    @settings(max_examples=8, deadline=None, database=None)
    @given(calls=st.lists(mcp_calls(), min_size=1, max_size=3))
    def over_http(calls: list[tuple[str, dict[str, Any]]]) -> None:
        async def session() -> int:
            me = mcp_types.Implementation(name="fuzz-agent", version="1")
            n = 0
            async with (
                streamable_http_client(url) as streams,
                mcp.ClientSession(streams[0], streams[1], client_info=me) as s,
            ):
                await s.initialize()
                assert not (await s.call_tool("start_task", {"task_id": TASK})).is_error
                for name, args in [*calls, ("done", {})]:
                    if not _sendable(args):
                        continue  # the client library cannot send it (in-process covers it)
                    try:
                        res = await s.call_tool(name, args)
                    except mcp.MCPError as e:
                        _refusal(str(e))
                        continue
                    text = str(res.content[0].text)
                    if res.is_error:
                        _refusal(text)
                    elif name in ACTION_TOOLS or name == "done":
                        n += 1
                        if json.loads(text)["ended"]:
                            break
            return n

        nonlocal scored
        scored += anyio.run(session)

    with short_workroot() as work:
        proc = None
        try:
            proc, url = start_server(_serve(tmp_path, "--mcp", "--transport", "http"), work)
            over_http()
            assert stop_server(proc)[0] == 143
        finally:
            kill_leftovers(proc, work)
    _check_folder(tmp_path / "run", scored)


def test_odd_actions_over_the_openenv_websocket_and_http_routes(tmp_path: Path) -> None:
    import httpx
    from websockets.asyncio.client import connect

    scored = 0

    @settings(max_examples=8, deadline=None, database=None)
    @given(actions=st.lists(ACTION_TEXTS, min_size=1, max_size=3), http=st.booleans())
    def over_the_wire(actions: list[str], http: bool) -> None:
        nonlocal scored
        if http:  # JSON as sent on the wire: a lone surrogate as its escape
            with httpx.Client(base_url=url, timeout=120,
                              headers={"content-type": "application/json"}) as c:  # fmt: skip
                reset = {"task": TASK, "agent": "fuzz", "agent_version": "1"}
                r = c.post("/reset", content=json.dumps(reset))
                assert r.status_code == 200, r.text
                episode = r.json()["observation"]["episode_id"]
                for text in [*actions, "done()"]:
                    body = {"action": {"action": text}, "episode_id": episode}
                    r = c.post("/step", content=json.dumps(body))
                    if r.status_code != 200:
                        assert r.status_code == 400, r.text
                        _refusal(r.json()["detail"])
                        continue
                    scored += 1
                    if r.json()["done"]:
                        break
            return

        async def session() -> int:
            n = 0
            async with connect(url.replace("http://", "ws://") + "/ws", max_size=None) as ws:

                async def send(kind: str, data: dict[str, Any]) -> dict[str, Any]:
                    await ws.send(json.dumps({"type": kind, "data": data}))
                    answer: dict[str, Any] = json.loads(await ws.recv())
                    return answer

                first = await send("reset", {"task": TASK, "agent": "fuzz", "agent_version": "1"})
                assert first["type"] == "observation", first
                for text in [*actions, "done()"]:
                    got = await send("step", {"action": text})
                    if got["type"] == "error":
                        _refusal(got["data"]["message"])
                        assert got["data"]["code"] in ("VALIDATION_ERROR", "EXECUTION_ERROR")
                        continue
                    n += 1
                    if got["data"]["done"]:
                        break
            return n

        scored += asyncio.run(session())

    with short_workroot() as work:
        proc = None
        try:
            proc, url = start_server(_serve(tmp_path, "--openenv"), work)
            over_the_wire()
            assert stop_server(proc)[0] == 143
        finally:
            kill_leftovers(proc, work)
    _check_folder(tmp_path / "run", scored)
