"""An MCP client that ends its HTTP session (DELETE with its session id): the server abandons
its episodes before the answer goes out, so the client that has its answer (and a server
stopped right after) finds them ended as it left them; a DELETE the MCP app refuses abandons
nothing. The ASGI wrapper of `McpServe` around a small stand-in app, in-process; the real client
ending a real session is `test_serve_mcp.py`."""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest

from medspot.live.loop.envspec import EnvSpec
from medspot.live.serve.host import ServeOptions

pytestmark = pytest.mark.live
pytest.importorskip("mcp")

SESSION = "0123abcd"


def _order(tmp_path: Path, status: int, method: str = "DELETE") -> list[str]:
    import anyio

    from medspot.live.serve.mcp_server import McpServe

    serve = McpServe(ServeOptions(spec=EnvSpec("orthanc-explorer"), out=tmp_path / "run"))
    seen: list[str] = []

    async def gone(key: str, reason: str) -> None:
        seen.append(f"gone {key}: {reason}")

    serve._connection_gone = gone  # type: ignore[method-assign]

    async def app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def send(message: MutableMapping[str, Any]) -> None:
        seen.append(f"sent {message['type']}")

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": method, "path": "/mcp",
             "headers": [(b"mcp-session-id", SESSION.encode())]}  # fmt: skip
    anyio.run(serve._asgi(app), scope, receive, send)
    return seen


def test_the_episodes_are_abandoned_before_the_answer_goes_out(tmp_path: Path) -> None:
    assert _order(tmp_path, 200) == [
        f"gone {SESSION}: the client ended its session",
        "sent http.response.start",
        "sent http.response.body",
    ]


@pytest.mark.parametrize(("status", "method"), [(404, "DELETE"), (400, "DELETE"), (200, "POST")])
def test_a_refused_delete_or_another_request_abandons_nothing(
    tmp_path: Path, status: int, method: str
) -> None:
    assert _order(tmp_path, status, method) == ["sent http.response.start",
                                                "sent http.response.body"]  # fmt: skip
