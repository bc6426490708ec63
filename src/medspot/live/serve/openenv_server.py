"""`medspot live serve --env ENV --openenv`: an OpenEnv-compatible server over the episode host
(`openenv-core`'s types and its HTTP server's WebSocket protocol; `pip install
'medspot[openenv]'`), for RL trainers and anything speaking OpenEnv's `EnvClient`.

- WebSocket `/ws` (what `EnvClient` and `medspot.live.MedspotEnvClient` use): each connection is
  a session with its own episode; `reset` (data: `task`, else one drawn with `seed`; `agent`,
  `agent_version`: who the agent is, run.json's model), `step` (a `MedspotAction`), `state`. A
  connection that goes leaves its running episode `abandoned`. This is openenv-core's own
  `HTTPEnvServer` (its `/ws`, `/health`, `/schema`, `/metadata`).
- HTTP `POST /reset`, `POST /step`, `GET /state`: the same, stateful by `episode_id` (openenv's
  own HTTP routes make a fresh environment per request, which a running application cannot be):
  the reset answers with the episode's id, every step names it (`"episode_id": ...` beside
  `"action"`). An HTTP episode with no call for `idle_timeout_s` is abandoned.

A bad request (an unknown task or episode, coordinates off the screen) is an error naming the
problem (HTTP 400 / a WebSocket error message); the server keeps serving. A text with no
readable action is a no-action step, as in the Gymnasium API.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
import random
import sys
import uuid
from collections.abc import Callable
from typing import Any

from medspot.errors import ConfigError, MedspotError
from medspot.live.agents.answer_reader import NO_ACTION, parse_action
from medspot.live.core.actions import action_to_json
from medspot.live.core.tools import ToolArgsError
from medspot.live.serve.host import ClientInfo, EpisodeHost, ServeError, ServeOptions, Turn
from medspot.live.serve.http import ignore_late_websocket_close, serve_http
from medspot.live.serve.openenv_models import MedspotAction, MedspotObservation, MedspotState

__all__ = ["MedspotOpenEnv", "OpenEnvServe", "observation_of", "run_openenv"]

log = logging.getLogger(__name__)
HTTP_CLIENT = "openenv-http"
# the HTTP routes' caller: they share one key (their episodes are named by id)
HTTP_CALLER = ClientInfo("openenv-client", "", HTTP_CLIENT)
RESET_KEYS = "known: task, seed, agent, agent_version, episode_id"


def _openenv() -> Any:
    try:
        from openenv.core.env_server import http_server, interfaces, types
    except ImportError:
        raise ConfigError(
            "medspot live serve --openenv needs openenv-core: pip install 'medspot[openenv]'"
        ) from None
    return http_server, interfaces, types


def observation_of(turn: Turn, env: str) -> MedspotObservation:
    """A turn as an OpenEnv observation (reward 1.0 on the step that ends with success)."""
    res = turn.result
    tool = res.info.get("tool") if res is not None else None
    return MedspotObservation(
        done=turn.ended,
        reward=1.0 if turn.outcome == "success" and res is not None else 0.0,
        episode_id=turn.episode, env=env, task=turn.task.id, goal=turn.goal,
        instruction=turn.instruction,
        screenshot_png=base64.b64encode(turn.observation.png).decode("ascii"),
        width=turn.observation.width, height=turn.observation.height, actions_used=turn.n,
        budget=turn.budget, tools=[s.name for s in turn.tools],
        gui_only=turn.reach.reason if turn.reach and not turn.reach.reachable else None,
        action=action_to_json(res.action) if res is not None and res.action is not None else None,
        executed=res.executed if res is not None else None,
        flags=list(res.flags) if res is not None else [],
        tool_result=tool.get("text") if tool is not None else None,
        outcome=turn.outcome, reason=turn.reason, rewards=dict(turn.rewards),
    )  # fmt: skip


class OpenEnvServe:
    """The OpenEnv front of an `EpisodeHost` (run on the server's event loop)."""

    def __init__(self, opts: ServeOptions, *, idle_timeout_s: float) -> None:
        _openenv()
        self.opts = opts
        self.host = EpisodeHost(opts)
        self.idle_timeout_s = idle_timeout_s
        self.loop: asyncio.AbstractEventLoop | None = None
        self._rng = random.Random(opts.seed)

    def _task_for(self, task: str | None, seed: int | None) -> str:
        if task is not None:
            return task
        ids = [t.id for t in self.host.tasks]
        return (random.Random(seed) if seed is not None else self._rng).choice(ids)

    async def reset(
        self, client: ClientInfo, *, task: str | None, seed: int | None, episode_id: str | None
    ) -> Turn:
        return await self.host.start(self._task_for(task, seed), client, episode_id=episode_id)

    async def step(self, episode: str | None, action: MedspotAction, client: ClientInfo) -> Turn:
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
                req = types.ResetRequest.model_validate(request)
                extra = req.model_extra or {}
                unknown = sorted(set(extra) - {"task", "agent", "agent_version"})
                if unknown:
                    raise ServeError(f"reset: unknown parameters {unknown} ({RESET_KEYS})")
                client = ClientInfo(str(extra.get("agent") or "openenv-client"),
                                    str(extra.get("agent_version") or ""), HTTP_CLIENT)  # fmt: skip
                turn = await self.reset(client, task=extra.get("task"), seed=req.seed,
                                        episode_id=req.episode_id)  # fmt: skip
            except (MedspotError, ValueError) as e:
                raise fail(e) from None
            obs = observation_of(turn, self.opts.env)
            return dict(http_server.serialize_observation(obs))

        @app.post("/step")
        async def step(request: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
            try:
                req = types.StepRequest.model_validate(request)
                action = MedspotAction.model_validate(req.action)
                episode = (req.model_extra or {}).get("episode_id")
                turn = await self.step(episode, action, HTTP_CALLER)
            except (MedspotError, ValueError) as e:
                raise fail(e) from None
            return dict(http_server.serialize_observation(observation_of(turn, self.opts.env)))

        @app.get("/state")
        async def state(episode_id: str | None = None) -> dict[str, Any]:
            try:
                turn = self.host.state_of(episode_id, HTTP_CALLER)
            except MedspotError as e:
                raise fail(e) from None
            return dict(state_of(turn, self.opts.env).model_dump())

        return app

    async def run(self, port: int, on_url: Callable[[str], None]) -> int:
        import anyio

        self.loop = asyncio.get_running_loop()
        await self.host.open()

        async def idle() -> None:
            while True:
                await anyio.sleep(min(5.0, self.idle_timeout_s / 4))
                await self.host.abandon_idle(self.idle_timeout_s)

        try:
            app = ignore_late_websocket_close(self.app())
            stopped = await serve_http(app, port, lambda p: on_url(f"http://127.0.0.1:{p}"),
                                       (idle,))  # fmt: skip
        finally:
            with anyio.CancelScope(shield=True):
                await self.host.close()
        return 128 + stopped if stopped else 0


def state_of(turn: Turn, env: str) -> MedspotState:
    return MedspotState(
        episode_id=turn.episode, step_count=turn.n, env=env, task=turn.task.id, mode=turn.mode,
        budget=turn.budget, ended=turn.ended, outcome=turn.outcome,
    )  # fmt: skip


def _environment_base() -> type[Any]:
    _, interfaces, _ = _openenv()
    base: type[Any] = interfaces.Environment
    return base


class MedspotOpenEnv(_environment_base()):  # type: ignore[misc]
    """One OpenEnv session (a WebSocket connection): its episode on the shared host. The
    server calls the async methods on its event loop; `close` (from a worker thread) abandons a
    running episode."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, front: OpenEnvServe) -> None:
        super().__init__()
        self.front = front
        self.client = ClientInfo("openenv-client", "", f"openenv-ws-{uuid.uuid4().hex[:8]}")
        self.episode: str | None = None
        self._state = MedspotState(env=front.opts.env, mode=front.opts.mode)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kw: Any) -> Any:
        raise RuntimeError("MedspotOpenEnv is asynchronous: reset_async")

    def step(self, action: Any, timeout_s: float | None = None, **kw: Any) -> Any:
        raise RuntimeError("MedspotOpenEnv is asynchronous: step_async")

    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task: str | None = None,
        agent: str | None = None,
        agent_version: str | None = None,
        **kwargs: Any,
    ) -> MedspotObservation:
        if kwargs:
            raise ServeError(f"reset: unknown parameters {sorted(kwargs)} ({RESET_KEYS})")
        if agent:
            self.client = ClientInfo(agent, agent_version or "", self.client.key)
        turn = await self.front.reset(self.client, task=task, seed=seed, episode_id=episode_id)
        self.episode = turn.episode
        self._state = state_of(turn, self.front.opts.env)
        return observation_of(turn, self.front.opts.env)

    async def step_async(
        self, action: MedspotAction, timeout_s: float | None = None, **kwargs: Any
    ) -> MedspotObservation:
        if self.episode is None:
            raise ServeError("no episode: reset first")
        try:
            turn = await self.front.step(self.episode, action, self.client)
        except ToolArgsError as e:
            raise ServeError(str(e)) from None
        self._state = state_of(turn, self.front.opts.env)
        return observation_of(turn, self.front.opts.env)

    @property
    def state(self) -> MedspotState:
        return self._state

    def close(self) -> None:
        loop, episode = self.front.loop, self.episode
        if loop is None or episode is None or loop.is_closed():
            return
        fut = asyncio.run_coroutine_threadsafe(
            self.front.host.abandon(episode, "the client disconnected"), loop
        )
        try:
            fut.result(timeout=60)
        except Exception as e:  # the server is stopping: it abandons what runs itself
            log.warning("session close: %s", e)


def run_openenv(opts: ServeOptions, port: int, idle_timeout_s: float) -> int:
    """Serve OpenEnv until a signal; the exit status."""
    import anyio

    front = OpenEnvServe(opts, idle_timeout_s=idle_timeout_s)

    def on_url(url: str) -> None:
        print(f"OpenEnv server: {url}", flush=True)
        print(f"medspot live serve: OpenEnv at {url}", file=sys.stderr, flush=True)

    return int(anyio.run(lambda: front.run(port, on_url), backend="asyncio"))
