"""`medspot live serve --env ENV --openenv`: an OpenEnv-compatible server over the episode host
(`openenv-core`'s types and its HTTP server's WebSocket protocol; `pip install
'medspot[openenv]'`), for RL trainers and anything speaking OpenEnv's `EnvClient`.

- WebSocket `/ws` (what `EnvClient` and `medspot.live.MedspotEnvClient` use): each connection is
  a session with its own episode, which only it reaches; `reset` (`MedspotReset`: `task`, else
  one drawn with `seed`; `agent`, `agent_version`: who the agent is, run.json's model;
  `episode_id`), `step` (a `MedspotAction`), `state`. A reset while the session's episode runs
  abandons it first; a connection that goes leaves its running episode `abandoned`. This is
  openenv-core's own `HTTPEnvServer` (its `/ws`, `/health`, `/schema`, `/metadata`; its `/mcp`
  routes are off: this environment has no MCP tools, `--mcp` is the MCP server). A connection
  beyond `--concurrency` sessions is told why and closed with code 1013 (try again later).
- HTTP `POST /reset`, `POST /step`, `GET /state`: the same, stateful by `episode_id` (openenv's
  own HTTP routes make a fresh environment per request, which a running application cannot be):
  the reset answers with the episode's id, which the server makes unguessable (96 random bits)
  and which is the key to the episode: every step and state names it (`"episode_id": ...`
  beside `"action"`), and no call reaches an episode without it. An HTTP episode with no call
  for `idle_timeout_s` is abandoned (0: never).

An action the environment cannot execute (coordinates off the screen, a tool the task is not
offered) and a text with no readable action are no-action steps, as in the Gymnasium API
(`executed` false; `not_executed` says why). A request that is no action of one's own running
episode (an unknown task or episode, a field that does not fit) is an error naming the problem
in OpenEnv's words (HTTP 400 / a WebSocket error message); the server keeps serving.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import logging
import random
import re
import socket
import sys
import uuid
from collections.abc import Callable, MutableMapping
from typing import Any

from pydantic import ValidationError

from medspot.errors import ConfigError, MedspotError
from medspot.live.agents.answer_reader import NO_ACTION, parse_action
from medspot.live.core.actions import action_to_json
from medspot.live.serve import host
from medspot.live.serve.episodes import new_episode_id
from medspot.live.serve.http import HOST, ASGIApp, ignore_late_websocket_close, serve_http
from medspot.live.serve.openenv_models import (
    MedspotAction,
    MedspotObservation,
    MedspotReset,
    MedspotState,
)
from medspot.live.serve.tools import not_unicode, validation_message

__all__ = ["MedspotOpenEnv", "OpenEnvServe", "observation_of", "run_openenv"]

log = logging.getLogger(__name__)
HTTP_KEY = "openenv-http:"  # an HTTP episode's caller key: this, then the episode's id
RESET_KEYS = "known: task, seed, agent, agent_version, episode_id"
HINTS = host.Hints(
    start="reset(task=TASK_ID)", end='step "done()" or "infeasible(reason)"',
    episode="episode_id", agent="reset's agent and agent_version",
)  # fmt: skip
WS_TRY_LATER = 1013  # WebSocket close code: try again later (RFC 6455, IANA registry)


def _openenv() -> Any:
    try:
        from openenv.core.env_server import http_server, interfaces, types
    except ImportError:
        raise ConfigError(
            "medspot live serve --openenv needs openenv-core: pip install 'medspot[openenv]'"
        ) from None
    return http_server, interfaces, types


def observation_of(turn: host.Turn, env: str) -> MedspotObservation:
    """A turn as an OpenEnv observation: `reward` the step's reward of the server's kind
    (`live serve --reward`; success, the default: 1.0 on the step that ends with success),
    `rewards` each kind's."""
    res = turn.result
    tool = res.info.get("tool") if res is not None else None
    why = (res.not_executed or res.info.get("tool_error")) if res is not None else None
    return MedspotObservation(
        done=turn.ended,
        reward=turn.reward,
        episode_id=turn.episode, env=env, task=turn.task.id, goal=turn.goal,
        instruction=turn.instruction,
        screenshot_png=base64.b64encode(turn.observation.png).decode("ascii"),
        width=turn.observation.width, height=turn.observation.height, actions_used=turn.n,
        budget=turn.budget, tools=[s.name for s in turn.tools],
        gui_only=turn.reach.reason if turn.reach and not turn.reach.reachable else None,
        action=action_to_json(res.action) if res is not None and res.action is not None else None,
        executed=res.executed if res is not None else None,
        not_executed=str(why) if why is not None else None,
        flags=list(res.flags) if res is not None else [],
        tool_result=tool.get("text") if tool is not None else None,
        outcome=turn.outcome, reason=turn.reason, rewards=dict(turn.rewards),
    )  # fmt: skip


def reset_params(data: dict[str, Any]) -> MedspotReset:
    """A reset's parameters checked (`MedspotReset`), or a `ServeError` naming what is wrong."""
    unknown = sorted(set(data) - set(MedspotReset.model_fields))
    if unknown:
        raise host.ServeError(f"reset: unknown parameters {unknown} ({RESET_KEYS})")
    try:
        return MedspotReset.model_validate(data)
    except ValidationError as e:
        raise host.ServeError(validation_message("reset", e)) from None


def http_caller(episode_id: str | None, what: str) -> host.ClientInfo:
    """The caller of an HTTP route: the episode it names is the key (none: a `ServeError`)."""
    if not isinstance(episode_id, str) or not episode_id:
        raise host.ServeError(
            f"{what}: episode_id: required (the id POST /reset answered: it is the key to the "
            "episode)"
        )
    return host.ClientInfo("openenv-client", "", HTTP_KEY + episode_id)


class OpenEnvServe:
    """The OpenEnv front of an `EpisodeHost` (run on the server's event loop)."""

    def __init__(self, opts: host.ServeOptions, *, idle_timeout_s: float) -> None:
        _openenv()
        self.opts = opts
        self.host = host.EpisodeHost(opts, HINTS)
        self.idle_timeout_s = idle_timeout_s
        self.loop: asyncio.AbstractEventLoop | None = None
        self._rng = random.Random(opts.seed)

    def _task_for(self, task: str | None, seed: int | None) -> str:
        if task is not None:
            return task
        ids = [t.id for t in self.host.tasks]
        return (random.Random(seed) if seed is not None else self._rng).choice(ids)

    async def reset(
        self, client: host.ClientInfo, params: MedspotReset, *, episode_id: str | None = None
    ) -> host.Turn:
        """A new episode for `client` (one at a time: a running one of its is abandoned)."""
        task = self._task_for(params.task, params.seed)
        return await self.host.start(task, client, episode_id=episode_id or params.episode_id,
                                     one_at_a_time=True)  # fmt: skip

    async def step(
        self, episode: str | None, action: MedspotAction, client: host.ClientInfo
    ) -> host.Turn:
        run = self.host.state_of(episode, client)
        parsed = parse_action(action.action, (run.observation.width, run.observation.height))
        flags = parsed.flags if parsed.action is not None else (*parsed.flags, NO_ACTION)
        return await self.host.act(
            run.episode, parsed.action, client, raw=action.action, flags=tuple(flags)
        )

    # -- the app --------------------------------------------------------------------------------

    def app(self) -> Any:
        http_server, _, types = _openenv()
        from fastapi import Body, FastAPI, HTTPException

        app = FastAPI(title="MedSPOT-Live (OpenEnv)", version="1")
        factory = functools.partial(MedspotOpenEnv, self)
        server = http_server.HTTPEnvServer(
            factory, MedspotAction, MedspotObservation,
            max_concurrent_envs=self.opts.concurrency,
        )  # fmt: skip
        server.register_routes(app, mode=types.ServerMode.PRODUCTION)

        def fail(e: Exception) -> HTTPException:
            return HTTPException(status_code=400, detail=str(e))

        @app.post("/reset")
        async def reset(request: dict[str, Any] = Body(default_factory=dict)) -> dict[str, Any]:  # noqa: B008
            try:
                params = reset_params(request)
                if params.episode_id is not None:
                    raise host.ServeError(
                        "reset: episode_id: the HTTP route names its episodes itself (the id "
                        "it answers is unguessable: the key to the episode); leave it out"
                    )
                task = self._task_for(params.task, params.seed)
                episode = new_episode_id(task)
                agent = params.agent or "openenv-client"
                client = host.ClientInfo(agent, params.agent_version or "", HTTP_KEY + episode)
                turn = await self.reset(client, params.model_copy(update={"task": task}),
                                        episode_id=episode)  # fmt: skip
            except MedspotError as e:
                raise fail(e) from None
            obs = observation_of(turn, self.opts.env)
            return dict(http_server.serialize_observation(obs))

        @app.post("/step")
        async def step(request: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
            try:
                try:
                    req = types.StepRequest.model_validate(request)
                    action = MedspotAction.model_validate(req.action)
                except ValidationError as e:
                    raise host.ServeError(validation_message("step", e)) from None
                episode = (req.model_extra or {}).get("episode_id")
                turn = await self.step(episode, action, http_caller(episode, "step"))
            except MedspotError as e:
                raise fail(e) from None
            return dict(http_server.serialize_observation(observation_of(turn, self.opts.env)))

        @app.get("/state")
        async def state(episode_id: str | None = None) -> dict[str, Any]:
            try:
                turn = self.host.state_of(episode_id, http_caller(episode_id, "state"))
            except MedspotError as e:
                raise fail(e) from None
            return dict(state_of(turn, self.opts.env).model_dump())

        return app

    async def run(self, sock: socket.socket, on_url: Callable[[str], None]) -> int:
        """Serve on the bound `sock` until a signal; the exit status (130, 143)."""
        import anyio

        self.loop = asyncio.get_running_loop()
        await self.host.open()

        async def idle() -> None:
            await self.host.watch_idle(self.idle_timeout_s)

        try:
            app = ignore_late_websocket_close(
                websocket_answers(without_mcp_routes(self.app()), self.opts.concurrency)
            )
            stopped = await serve_http(app, sock, lambda p: on_url(f"http://{HOST}:{p}"),
                                       (idle,))  # fmt: skip
        finally:
            with anyio.CancelScope(shield=True):
                await self.host.close()
        return 128 + stopped if stopped else 0


def state_of(turn: host.Turn, env: str) -> MedspotState:
    return MedspotState(
        episode_id=turn.episode, step_count=turn.n, env=env, task=turn.task.id, mode=turn.mode,
        budget=turn.budget, ended=turn.ended, outcome=turn.outcome,
    )  # fmt: skip


# -- openenv-core's WebSocket and routes, as this server words and closes them ------------------


def _reworded(text: str, concurrency: int) -> tuple[str, bool]:
    """An answer of openenv-core's `/ws` in this server's words: a message that does not fit
    its schema says which field and why (openenv-core says "Invalid message" and echoes the
    input); a session refused at capacity says so. Also whether it was that refusal."""
    try:
        msg = json.loads(text)
    except ValueError:
        return text, False
    data = msg.get("data") if isinstance(msg, dict) and msg.get("type") == "error" else None
    if not isinstance(data, dict):
        return text, False
    code = data.get("code")
    if code == "CAPACITY_REACHED":
        data = {**data, "message": capacity_message(concurrency)}
    elif code == "VALIDATION_ERROR" and isinstance(data.get("errors"), list) and data["errors"]:
        err = data["errors"][0] if isinstance(data["errors"][0], dict) else {}
        where = ".".join(str(x) for x in err.get("loc", ())) or "message"
        data = {"code": code, "message": f"the message does not fit: {where}: {err.get('msg')}"}
    else:
        return text, False
    return json.dumps({**msg, "data": data}, ensure_ascii=False), code == "CAPACITY_REACHED"


def capacity_message(concurrency: int) -> str:
    return (
        f"the server is at capacity: its {concurrency} session(s) are taken (--concurrency "
        f"{concurrency}); try again when one closes"
    )


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _not_unicode_message(text: str) -> str | None:
    """Where a WebSocket message (JSON) holds a string that is not Unicode text (a lone
    surrogate, which JSON can carry as an escape), or None."""
    if not _SURROGATE_ESCAPE.search(text):
        return None
    try:
        return not_unicode(json.loads(text))
    except ValueError:
        return None  # not JSON: openenv-core says so


def websocket_answers(app: ASGIApp, concurrency: int) -> ASGIApp:
    """openenv-core's `/ws` with this server's messages (`_reworded`); a message holding text
    that is not Unicode answered with an error here, before openenv-core (which would echo it
    in a validation error it cannot serialize, and end the session); and a session refused at
    capacity closed with code 1013 (try again later) and a reason naming why (openenv-core
    closes it with 1000, "normal", and no reason)."""

    async def wrapped(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "websocket" or scope.get("path") != "/ws":
            await app(scope, receive, send)
            return
        full = False

        async def receive_unicode() -> MutableMapping[str, Any]:
            while True:
                message: MutableMapping[str, Any] = await receive()
                text = message.get("text") if message.get("type") == "websocket.receive" else None
                where = _not_unicode_message(text) if isinstance(text, str) else None
                if where is None:
                    return message
                refusal = {"type": "error", "data": {
                    "code": "VALIDATION_ERROR",
                    "message": f"the message does not fit: {where}: not Unicode text (it holds "
                    "a lone surrogate)",
                }}  # fmt: skip
                await send({"type": "websocket.send", "text": json.dumps(refusal)})

        async def send_worded(message: MutableMapping[str, Any]) -> None:
            nonlocal full
            kind = message.get("type")
            if kind == "websocket.send" and isinstance(message.get("text"), str):
                text, refused = _reworded(message["text"], concurrency)
                full = full or refused
                message = {**message, "text": text}
            elif kind == "websocket.close" and full:
                message = {**message, "code": WS_TRY_LATER,
                           "reason": f"at capacity: {concurrency} session(s) taken"}  # fmt: skip
            await send(message)

        await app(scope, receive_unicode, send_worded)

    return wrapped


def without_mcp_routes(app: ASGIApp) -> ASGIApp:
    """openenv-core's `/mcp` routes turned away (HTTP 404, a WebSocket refused): this
    environment has no MCP tools, and they would open sessions beside `/ws` (`--mcp` is the
    MCP server)."""

    async def wrapped(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        path = str(scope.get("path", ""))
        if path != "/mcp" and not path.startswith("/mcp/"):
            await app(scope, receive, send)
        elif scope.get("type") == "http":
            body = b'{"detail":"no MCP here: medspot live serve --mcp is the MCP server"}'
            await send({"type": "http.response.start", "status": 404,
                        "headers": [(b"content-type", b"application/json")]})  # fmt: skip
            await send({"type": "http.response.body", "body": body})
        elif scope.get("type") == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "no MCP here"})

    return wrapped


def _environment_base() -> type[Any]:
    _, interfaces, _ = _openenv()
    base: type[Any] = interfaces.Environment
    return base


class MedspotOpenEnv(_environment_base()):  # type: ignore[misc]
    """One OpenEnv session (a WebSocket connection): its episode on the shared host, reached by
    this session only (its caller key). The server calls the async methods on its event loop;
    `close` (from a worker thread) abandons a running episode."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, front: OpenEnvServe) -> None:
        super().__init__()
        self.front = front
        self.client = host.ClientInfo("openenv-client", "", f"openenv-ws-{uuid.uuid4().hex}")
        self.episode: str | None = None
        self._state = MedspotState(env=front.opts.env, mode=front.opts.mode)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kw: Any) -> Any:
        raise RuntimeError("MedspotOpenEnv is asynchronous: reset_async")

    def step(self, action: Any, timeout_s: float | None = None, **kw: Any) -> Any:
        raise RuntimeError("MedspotOpenEnv is asynchronous: step_async")

    async def reset_async(self, **kwargs: Any) -> MedspotObservation:
        params = reset_params(kwargs)
        if params.agent:
            self.client = host.ClientInfo(params.agent, params.agent_version or "", self.client.key)
        turn = await self.front.reset(self.client, params)
        self.episode = turn.episode
        self._state = state_of(turn, self.front.opts.env)
        return observation_of(turn, self.front.opts.env)

    async def step_async(
        self, action: MedspotAction, timeout_s: float | None = None, **kwargs: Any
    ) -> MedspotObservation:
        if self.episode is None:
            raise host.ServeError("no episode: reset(task=TASK_ID) first")
        turn = await self.front.step(self.episode, action, self.client)
        self._state = state_of(turn, self.front.opts.env)
        return observation_of(turn, self.front.opts.env)

    @property
    def state(self) -> MedspotState:
        return self._state

    def close(self) -> None:
        loop = self.front.loop
        if loop is None or self.episode is None or loop.is_closed():
            return
        fut = asyncio.run_coroutine_threadsafe(
            self.front.host.abandon_client(self.client, "the client disconnected"), loop
        )
        try:
            fut.result(timeout=60)
        except Exception as e:  # the server is stopping: it abandons what runs itself
            log.warning("session close: %s", e)


def run_openenv(opts: host.ServeOptions, sock: socket.socket, idle_timeout_s: float) -> int:
    """Serve OpenEnv on the bound `sock` until a signal; the exit status."""
    import anyio

    front = OpenEnvServe(opts, idle_timeout_s=idle_timeout_s)

    def on_url(url: str) -> None:
        print(f"OpenEnv server: {url}", flush=True)
        print(f"medspot live serve: OpenEnv at {url}", file=sys.stderr, flush=True)

    return int(anyio.run(lambda: front.run(sock, on_url), backend="asyncio"))
