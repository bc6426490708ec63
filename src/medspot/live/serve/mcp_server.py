"""`medspot live serve --env ENV --mcp`: an MCP server over the episode host (the official `mcp`
SDK's low-level `Server`; `pip install 'medspot[mcp]'`).

Transports: stdio (the default: a desktop client starts the server as its child) and
streamable HTTP (`transport="http"`: on 127.0.0.1, the URL printed on stdout). The tools are
`medspot.live.serve.tools`' (one per action, the task tools, the toolset's); each action
returns what the step did as text (JSON) and the new screenshot as image content. An action
the environment cannot execute (coordinates off the screen, a tool the task is not offered) is
a scored no-action step (`executed: false` and `not_executed`, why). A call that is no action
(no task started, an unknown task or episode, arguments that do not fit the tool's schema) is
a tool error (`isError`) with its message; the server keeps serving.

Who the agent is: the client's `clientInfo` (name, version) from the initialize handshake is
run.json's model. Whose episode is whose: the connection's (stdio: the one client; HTTP: the
MCP session, `Mcp-Session-Id`): a session reaches its own episodes only. A connection that goes
(stdio: the client closes the pipe; HTTP: the client ends its session, or stays silent for
`idle_timeout_s`; 0: never) leaves its running episodes `abandoned`. SIGINT and SIGTERM stop
the server: running episodes are abandoned, the results written, the environments closed.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import sys
from collections.abc import Callable, MutableMapping
from typing import Any

from medspot.errors import ConfigError, MedspotError
from medspot.live.core.actions import action_to_json
from medspot.live.core.tools import ToolArgsError
from medspot.live.envs.toolsets import toolset_info
from medspot.live.serve import IDLE_TIMEOUT_S, host
from medspot.live.serve.http import HOST, serve_http, stop_signals
from medspot.live.serve.tools import ServeTool, parse_call, serve_tools

__all__ = ["IDLE_TIMEOUT_S", "McpServe", "turn_summary"]

log = logging.getLogger(__name__)

SERVER_NAME = "medspot-live"
STDIO = "stdio"  # the caller key of the one client of a stdio server
HINTS = host.Hints(
    start="call start_task(task_id)", tasks="list_tasks", end="done(), infeasible(reason)",
    episode="its episode argument: the id start_task returned",
    agent="the clientInfo name and version your client sends when it connects",
)  # fmt: skip


def _mcp() -> Any:
    try:
        import mcp
        import mcp_types
    except ImportError:
        raise ConfigError(
            "medspot live serve --mcp needs the MCP SDK: pip install 'medspot[mcp]'"
        ) from None
    return mcp, mcp_types


def turn_summary(turn: host.Turn) -> dict[str, Any]:
    """What an agent is told of a turn besides the screenshot (JSON)."""
    out: dict[str, Any] = {
        "episode": turn.episode, "task": turn.task.id, "goal": turn.goal, "mode": turn.mode,
        "actions_used": turn.n, "budget": turn.budget,
        "screen": {"width": turn.observation.width, "height": turn.observation.height},
    }  # fmt: skip
    if turn.instruction is not None:
        out["instruction"] = turn.instruction
    if turn.reach is not None:
        out["tools"] = [s.name for s in turn.tools]
        if not turn.reach.reachable:
            out["gui_only"] = turn.reach.reason
    res = turn.result
    if res is not None:
        out["action"] = action_to_json(res.action) if res.action is not None else None
        out["executed"] = res.executed
        out["flags"] = list(res.flags)
        why = res.not_executed or res.info.get("tool_error")
        if why is not None:  # an action the environment could not execute: why
            out["not_executed"] = str(why)
        if res.changed is not None:
            out["screen_changed"] = res.changed
        tool = res.info.get("tool")
        if tool is not None:
            out["tool_result"] = tool.get("text")
        if "tool_error" in res.info:
            out["tool_error"] = str(res.info["tool_error"])
    if turn.rewards:  # the step's reward of the server's kind (`--reward`), and each kind's
        out["reward"] = turn.reward
        out["rewards"] = dict(turn.rewards)
    out["ended"] = turn.ended
    if turn.ended:
        out["outcome"], out["reason"] = turn.outcome, turn.reason
    if turn.note:
        out["note"] = turn.note
    return out


class McpServe:
    """The MCP front of an `EpisodeHost`."""

    def __init__(self, opts: host.ServeOptions, *, idle_timeout_s: float = IDLE_TIMEOUT_S) -> None:
        _, types = _mcp()
        self.types = types
        self.opts = opts
        self.host = host.EpisodeHost(opts, HINTS)
        tools = opts.spec.tools
        specs = toolset_info(opts.env, tools).specs if tools else ()
        self.tools: tuple[ServeTool, ...] = serve_tools(specs)
        self.episode_required = opts.concurrency > 1
        self.idle_timeout_s = idle_timeout_s
        self._connections: dict[str, host.ClientInfo] = {}  # key (HTTP session id, stdio) -> client
        from mcp.server.lowlevel import Server

        self.server = Server(
            SERVER_NAME,
            version=_version(),
            instructions=(
                f"MedSPOT-Live: clinical tasks in a running {opts.env}. list_tasks, then "
                "start_task(task_id); act with click/drag/scroll/type/key (pixels of the last "
                "screenshot); end with done() or infeasible(reason)."
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    # -- handlers -------------------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        types = self.types
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name,
                    description=t.description,
                    input_schema=t.schema(self.episode_required),
                )
                for t in self.tools
            ]
        )

    def _client(self, ctx: Any) -> host.ClientInfo:
        """Who calls: the clientInfo of its handshake, and its connection (the caller key its
        episodes belong to): over HTTP its MCP session id, over stdio the one client."""
        cp = getattr(ctx.session, "client_params", None)
        info = getattr(cp, "client_info", None)
        request = getattr(ctx, "request", None)
        if request is None:
            key = STDIO
        else:  # HTTP: the session the transport checked; none (stateless) reaches no episode
            key = str(getattr(request, "headers", {}).get("mcp-session-id") or "")
            if not key:
                raise host.ServeError("no MCP session: initialize a session first (Mcp-Session-Id)")
        client = host.ClientInfo(
            name=str(getattr(info, "name", "") or "mcp-client"),
            version=str(getattr(info, "version", "") or ""),
            key=key,
        )
        self._connections[key] = client
        return client

    def _error(self, message: str) -> Any:
        types = self.types
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=message)], is_error=True
        )

    def _turn_result(self, turn: host.Turn) -> Any:
        types = self.types
        text = json.dumps(turn_summary(turn), ensure_ascii=False)
        image = base64.b64encode(turn.observation.png).decode("ascii")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text),
                     types.ImageContent(type="image", data=image, mime_type="image/png")],
        )  # fmt: skip

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        types = self.types
        try:
            client = self._client(ctx)
            call = parse_call(
                params.name, params.arguments, self.tools, episode_required=self.episode_required
            )
            if call.kind == "list":
                text = json.dumps(self.host.task_list(), ensure_ascii=False)
                return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
            if call.kind == "start":
                assert call.task_id is not None
                return self._turn_result(await self.host.start(call.task_id, client))
            if call.kind == "wait":
                return self._turn_result(await self.host.wait(call.episode, call.seconds, client))
            turn = await self.host.act(call.episode, call.action, client, raw=call.raw)
            return self._turn_result(turn)
        except (host.ServeError, ToolArgsError, ConfigError) as e:
            return self._error(str(e))
        except MedspotError as e:
            log.warning("tool %s: %s", params.name, e)
            return self._error(str(e))
        except Exception as e:  # a bug: said, logged, and the server goes on
            log.exception("tool %s failed", params.name)
            return self._error(f"internal error in the server ({type(e).__name__}: {e})")

    # -- connections ----------------------------------------------------------------------------

    async def _connection_gone(self, key: str, reason: str) -> None:
        client = self._connections.pop(key, None)
        if client is not None:
            await self.host.abandon_client(client, reason)

    async def _watch_idle(self) -> None:
        await self.host.watch_idle(self.idle_timeout_s, keep=frozenset({STDIO}))

    def _asgi(self, app: Any) -> Any:
        """The HTTP app, seeing a client end its session (HTTP DELETE with its session id): its
        episodes are abandoned before the answer goes out, so a client that has its answer
        finds them ended (and a server stopped right after records why they ended)."""

        async def wrapped(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
            key = ""
            if scope.get("type") == "http" and scope.get("method") == "DELETE":
                headers = dict(scope.get("headers") or [])
                key = headers.get(b"mcp-session-id", b"").decode("latin-1")
            if not key:
                await app(scope, receive, send)
                return

            async def send_once_gone(message: MutableMapping[str, Any]) -> None:
                start = message.get("type") == "http.response.start"
                if start and 200 <= int(message.get("status", 500)) < 300:
                    await self._connection_gone(key, "the client ended its session")
                await send(message)

            await app(scope, receive, send_once_gone)

        return wrapped

    # -- running --------------------------------------------------------------------------------

    async def run(self, sock: socket.socket | None, on_url: Callable[[str], None]) -> int:
        """Serve over stdio (`sock` None) until the client goes, or over streamable HTTP on the
        bound `sock`, until a signal; the exit status (0, 130, 143)."""
        import anyio

        await self.host.open()
        stopped: int | None = None
        try:
            if sock is None:
                async with anyio.create_task_group() as tg:

                    def stop(signum: int) -> None:
                        nonlocal stopped
                        stopped = signum
                        tg.cancel_scope.cancel()

                    tg.start_soon(stop_signals, stop)
                    await self._serve_stdio()
                    tg.cancel_scope.cancel()
            else:
                app = self._asgi(self.server.streamable_http_app(host=HOST))
                stopped = await serve_http(
                    app, sock, lambda p: on_url(f"http://{HOST}:{p}/mcp"), (self._watch_idle,)
                )
        finally:
            with anyio.CancelScope(shield=True):
                await self.host.close()
        return 128 + stopped if stopped else 0

    async def _serve_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())
        log.info("the client closed the connection")
        await self._connection_gone(STDIO, "the client disconnected")


def _version() -> str:
    from medspot import _version

    return str(_version.__version__)


def run_mcp(opts: host.ServeOptions, sock: socket.socket | None, idle_timeout_s: float) -> int:
    """Serve MCP (over stdio, or streamable HTTP on the bound `sock`) until the client goes or
    a signal; the exit status."""
    import anyio

    serve = McpServe(opts, idle_timeout_s=idle_timeout_s)

    def on_url(url: str) -> None:
        print(f"MCP server (streamable HTTP): {url}", flush=True)
        print(f"medspot live serve: MCP at {url}", file=sys.stderr, flush=True)

    return int(anyio.run(lambda: serve.run(sock, on_url), backend="asyncio"))
