"""Serving an ASGI app on 127.0.0.1 for `medspot live serve` (uvicorn): the port bound first
(`bind_port`: before anything is written, so that a port in use is a clear error with nothing
left behind), the URL announced once it serves, SIGINT and SIGTERM handled here (uvicorn's own
handlers are off: it would re-raise the signal after its shutdown, before the episodes are
written), a graceful shutdown on a signal, and background tasks (the idle watch) run beside
it."""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from typing import Any

from medspot.errors import ConfigError

__all__ = [
    "HOST",
    "ASGIApp",
    "bind_port",
    "ignore_late_websocket_close",
    "serve_http",
    "stop_signals",
]

HOST = "127.0.0.1"

ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]


def _server_class() -> type[Any]:
    import uvicorn

    class Server(uvicorn.Server):  # type: ignore[misc]
        def install_signal_handlers(self) -> None:
            pass

        def capture_signals(self) -> Any:
            return contextlib.nullcontext()

        def bound_port(self) -> int | None:
            for srv in getattr(self, "servers", []) or []:
                for sock in srv.sockets:
                    return int(sock.getsockname()[1])
            return None

    return Server


async def stop_signals(on_signal: Callable[[int], None]) -> None:
    """Call `on_signal(signum)` at the first SIGINT or SIGTERM, then return."""
    import anyio

    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
        async for signum in received:
            on_signal(int(signum))
            return


def bind_port(port: int) -> socket.socket:
    """A socket bound to 127.0.0.1:`port` (0: a free port), or a `ConfigError` naming the port
    (in use, not allowed). Bound before the server writes anything; `serve_http` serves on it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
    except (OSError, OverflowError) as e:
        sock.close()
        why = getattr(e, "strerror", None) or str(e)
        raise ConfigError(f"port {port}: cannot serve on {HOST}:{port} ({why})") from None
    return sock


async def serve_http(
    app: ASGIApp,
    sock: socket.socket,
    on_url: Callable[[int], None],
    background: tuple[Callable[[], Coroutine[Any, Any, None]], ...] = (),
) -> int | None:
    """Serve `app` on the bound socket `sock` (`bind_port`) until SIGINT or SIGTERM; `on_url`
    gets the port once it serves. Returns the signal that stopped it."""
    import anyio
    import uvicorn

    port = int(sock.getsockname()[1])
    server = _server_class()(
        uvicorn.Config(app, host=HOST, port=port, log_level="warning", lifespan="on")
    )
    stopped: list[int] = []

    def stop(signum: int) -> None:
        stopped.append(signum)
        server.should_exit = True

    async with anyio.create_task_group() as tg:

        async def serve() -> None:
            await server.serve(sockets=[sock])
            tg.cancel_scope.cancel()

        tg.start_soon(stop_signals, stop)
        for task in background:
            tg.start_soon(task)
        tg.start_soon(serve)
        while not server.started:
            if server.should_exit or tg.cancel_scope.cancel_called:
                raise ConfigError(f"cannot serve HTTP on {HOST}:{port}")
            await anyio.sleep(0.05)
        on_url(server.bound_port() or port)
    return stopped[0] if stopped else None


def ignore_late_websocket_close(app: ASGIApp) -> ASGIApp:
    """openenv-core's `/ws` closes a socket the client already closed and lets starlette's
    `WebSocketDisconnect` out: nothing is wrong then (the session has ended)."""
    from starlette.websockets import WebSocketDisconnect

    async def wrapped(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        try:
            await app(scope, receive, send)
        except WebSocketDisconnect:
            if scope.get("type") != "websocket":
                raise

    return wrapped
