"""An OpenAI-compatible (and Anthropic Messages) HTTP server for tests and benchmarks, on
loopback only.

    with OpenAITestServer(answer=lambda req: "(500, 500)", latency=0.01) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="test")
        claude = AsyncAnthropic(base_url=srv.root_url, api_key="test")

It serves `POST /v1/chat/completions`, `POST /v1/responses` and `POST /v1/messages` (and `GET
/v1/models`), decodes the images sent as data URLs or base64 blocks (size and sha256 of their
bytes; a `computer_call_output`'s screenshot and a `tool_result`'s images too), answers with a
scripted text per request, or with a whole body from `responder` (the scripted computer-use
conversations of `medspot.testing.cu_script`; it may refuse a request with `Refusal`),
can wait before answering, injects faults by schedule or rate (500, 503, 429 with
Retry-After, hangs past a client's timeout, malformed bodies), counts requests, statuses and
the most requests in flight at once, and reports usage tokens. It never binds to anything but
127.0.0.1 and refuses bodies over `max_body` bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from medspot.testing.messages_protocol import image_sources, message_texts, messages_body

__all__ = ["FAULT_KINDS", "Fault", "OpenAITestServer", "Refusal", "SeenImage", "SeenRequest"]

FAULT_KINDS = (
    "500",  # internal server error
    "503",  # service unavailable
    "429",  # rate limited, with Retry-After
    "400",  # bad request (not transient)
    "401",  # bad key (not transient)
    "hang",  # wait `hang_s` before answering (past the client's timeout)
    "not_json",  # 200 with a body that is not JSON
    "no_choices",  # 200 with JSON lacking choices / output
    "no_content",  # 200 with a message whose content is null
)


@dataclass(frozen=True, slots=True)
class SeenImage:
    """An image the server received: its decoded bytes' sha256, size and MIME type."""

    sha256: str
    size: tuple[int, int]
    mime: str
    nbytes: int


@dataclass(frozen=True, slots=True)
class SeenRequest:
    """One request as the answer function sees it."""

    index: int  # 1-based, in arrival order
    api: str  # "chat", "responses" or "messages"
    model: str
    text: str  # the user text parts joined by newlines
    system: str | None
    images: tuple[SeenImage, ...]
    body: Mapping[str, Any]
    headers: Mapping[str, str]
    assistant: tuple[str, ...] = ()  # the texts of assistant messages sent (earlier answers)

    @property
    def image(self) -> SeenImage | None:
        return self.images[0] if self.images else None


@dataclass(frozen=True)
class Fault:
    """A fault injected at the 1-based request numbers in `at`, at every request for which
    `when(request)` is true (e.g. one instruction), or at random with `rate` (a seeded
    generator, so a run is reproducible)."""

    kind: str
    at: Sequence[int] = ()
    rate: float = 0.0
    retry_after: str | None = "1"  # the Retry-After header of a 429
    hang_s: float = 30.0
    when: Callable[[SeenRequest], bool] | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {self.kind!r}; one of {FAULT_KINDS}")


class Refusal(Exception):
    """Raised by a `responder`: the request is answered with this HTTP status and message (as
    the real API refuses, e.g., a computer call without its output)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


Answer = str | Mapping[str, str] | Callable[[SeenRequest], str | None]
Responder = Callable[[SeenRequest], Mapping[str, Any] | None]
Latency = float | Callable[[SeenRequest], float]
UsageFn = Callable[[SeenRequest, str], tuple[int, int]]


def default_usage(req: SeenRequest, answer: str) -> tuple[int, int]:
    """Rough token counts: words of the text + 85 per image in; words of the answer out."""
    return len(req.text.split()) + 85 * len(req.images), max(1, len(answer.split()))


@dataclass
class _Counters:
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)


class OpenAITestServer:
    """A scripted OpenAI-compatible server. `answer`: a constant, a mapping from image sha256
    (or `"*"` for any) to text, or a function of the `SeenRequest` (None: content null)."""

    def __init__(
        self,
        answer: Answer = "(500, 500)",
        *,
        responder: Responder | None = None,
        latency: Latency = 0.0,
        faults: Sequence[Fault] = (),
        usage: UsageFn | tuple[int, int] = default_usage,
        seed: int = 0,
        max_body: int = 64 * 1024 * 1024,
        keep_requests: int = 1000,
        host: str = "127.0.0.1",
        port: int = 0,  # 0: a free port chosen by the system
    ) -> None:
        if host not in ("127.0.0.1", "localhost"):
            raise ValueError("the test server only serves loopback (127.0.0.1)")
        self.answer = answer
        self.responder = responder  # a whole response body per request (None: from `answer`)
        self._wanted_port = port
        self.latency = latency
        self.faults = tuple(faults)
        self.usage = usage
        self.max_body = max_body
        self.keep_requests = keep_requests
        self.requests: list[SeenRequest] = []
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._c = _Counters()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> OpenAITestServer:
        handler = type("_Handler", (_Handler,), {"server_ref": self})
        httpd = _Server(("127.0.0.1", self._wanted_port), handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="openai-test-server"
        )
        self._thread.daemon = True
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> OpenAITestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The OpenAI clients' base URL (with /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        """The Anthropic client's base URL (it adds /v1/messages itself)."""
        return f"http://127.0.0.1:{self.port}"

    # -- counters --------------------------------------------------------------------------
    @property
    def request_count(self) -> int:
        return self._c.requests

    @property
    def max_in_flight(self) -> int:
        return self._c.max_in_flight

    @property
    def status_counts(self) -> dict[int, int]:
        with self._lock:
            return dict(self._c.statuses)

    @property
    def fault_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._c.faults)

    # -- request handling (called from handler threads) ------------------------------------
    def _enter(self) -> int:
        with self._lock:
            self._c.requests += 1
            self._c.in_flight += 1
            self._c.max_in_flight = max(self._c.max_in_flight, self._c.in_flight)
            return self._c.requests

    def _leave(self, status: int) -> None:
        with self._lock:
            self._c.in_flight -= 1
            self._c.statuses[status] += 1

    def _fault_for(self, req: SeenRequest) -> Fault | None:
        index = req.index
        matched = [f.when is not None and f.when(req) for f in self.faults]
        with self._lock:
            for f, hit in zip(self.faults, matched, strict=True):
                if index in f.at or hit or (f.rate > 0 and self._rng.random() < f.rate):
                    self._c.faults[f.kind] += 1
                    return f
        return None

    def _record(self, req: SeenRequest) -> None:
        with self._lock:
            self.requests.append(req)
            if len(self.requests) > self.keep_requests:
                del self.requests[0]

    def _answer_text(self, req: SeenRequest) -> str | None:
        a = self.answer
        if isinstance(a, str):
            return a
        if isinstance(a, Mapping):
            key = req.image.sha256 if req.image else ""
            return a.get(key, a.get("*", ""))
        return a(req)

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stop.wait(seconds)

    def _latency(self, req: SeenRequest) -> float:
        return self.latency(req) if callable(self.latency) else float(self.latency)

    def _tokens(self, req: SeenRequest, text: str) -> tuple[int, int]:
        return self.usage if isinstance(self.usage, tuple) else self.usage(req, text)


def _decode_image(url: str) -> SeenImage | None:
    if not url.startswith("data:") or "," not in url:
        return None
    head, _, payload = url.partition(",")
    mime = head[5:].split(";")[0]
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None
    size = (0, 0)
    try:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as im:
            size = (int(im.size[0]), int(im.size[1]))
    except Exception:  # an undecodable image keeps size (0, 0); the hash still identifies it
        pass
    return SeenImage(hashlib.sha256(data).hexdigest(), size, mime, len(data))


def _parts(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [p for p in content or [] if isinstance(p, Mapping)]


def _parse_request(index: int, api: str, body: Mapping[str, Any], headers: Any) -> SeenRequest:
    texts: list[str] = []
    assistant: list[str] = []
    images: list[SeenImage] = []
    system: str | None = None
    if api == "messages":
        texts, system = message_texts(body)
        return SeenRequest(
            index=index, api=api, model=str(body.get("model", "")), text="\n".join(texts),
            system=system, images=tuple(image_sources(body.get("messages"), _decode_image)),
            body=body, headers={k.lower(): v for k, v in headers.items()},
        )  # fmt: skip
    if api == "chat":
        messages = body.get("messages") or []
    else:
        inp = body.get("input")
        messages = [{"role": "user", "content": inp}] if isinstance(inp, str) else inp or []
        system = body.get("instructions")
    for m in messages:
        if not isinstance(m, Mapping):
            continue
        if m.get("type") == "computer_call_output":  # the screenshot a computer call returned
            out = m.get("output")
            url = out.get("image_url") if isinstance(out, Mapping) else None
            shot = _decode_image(str(url or ""))
            if shot is not None:
                images.append(shot)
            continue
        role = m.get("role")
        for p in _parts(m.get("content")):
            kind = p.get("type")
            if kind in ("text", "input_text"):
                if role == "system" or role == "developer":
                    system = str(p.get("text", ""))
                elif role == "user":
                    texts.append(str(p.get("text", "")))
                elif role == "assistant":
                    assistant.append(str(p.get("text", "")))
            elif kind in ("image_url", "input_image"):
                url = p.get("image_url")
                if isinstance(url, Mapping):
                    url = url.get("url")
                img = _decode_image(str(url or ""))
                if img is not None:
                    images.append(img)
    return SeenRequest(
        index=index,
        api=api,
        model=str(body.get("model", "")),
        text="\n".join(texts),
        system=system,
        images=tuple(images),
        body=body,
        headers={k.lower(): v for k, v in headers.items()},
        assistant=tuple(assistant),
    )


def _chat_body(index: int, model: str, text: str | None, tokens: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": tokens[0],
            "completion_tokens": tokens[1],
            "total_tokens": tokens[0] + tokens[1],
        },
    }


def _responses_body(
    index: int, model: str, text: str | None, tokens: tuple[int, int]
) -> dict[str, Any]:
    content = [] if text is None else [{"type": "output_text", "text": text, "annotations": []}]
    return {
        "id": f"resp_{index}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": model,
        "output": [
            {
                "type": "message",
                "id": f"msg_{index}",
                "status": "completed",
                "role": "assistant",
                "content": content,
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
            "total_tokens": tokens[0] + tokens[1],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


class _Server(ThreadingHTTPServer):
    """A backlog large enough for a burst of connections (a benchmark opens 64 at once), and
    quiet about clients that disconnect (a killed run)."""

    request_queue_size = 128
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall per answer

    server_ref: OpenAITestServer
    _counted: bool = False
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return None

    def _send(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        # Counted before the bytes go out, so a client that has its answer sees the counters.
        if not getattr(self, "_counted", False):
            self._counted = True
            self.server_ref._leave(status)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
            pass

    def _error(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        body = {"error": {"message": message, "type": "test_server", "code": status}}
        self._send(status, json.dumps(body).encode(), headers)

    def do_GET(self) -> None:
        self._counted = False
        self.server_ref._enter()
        if self.path.rstrip("/") == "/v1/models":
            self._send(200, json.dumps({"object": "list", "data": []}).encode())
        else:
            self._error(404, "not found")

    def do_POST(self) -> None:
        srv = self.server_ref
        self._counted = False
        index = srv._enter()
        try:
            self._post(srv, index)
        finally:
            if not self._counted:  # an exception before any answer
                self._counted = True
                srv._leave(500)

    def _post(self, srv: OpenAITestServer, index: int) -> int:
        path = self.path.split("?")[0].rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        if length > srv.max_body:
            self.close_connection = True
            self._error(413, "request body too large")
            return 413
        raw = self.rfile.read(length)
        routes = {"/v1/chat/completions": "chat", "/v1/responses": "responses",
                  "/v1/messages": "messages"}  # fmt: skip
        api = routes.get(path)
        if api is None:
            self._error(404, f"no route {path}")
            return 404
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._error(400, "body is not JSON")
            return 400
        req = _parse_request(index, api, body, self.headers)
        srv._record(req)
        fault = srv._fault_for(req)
        srv._wait(srv._latency(req))
        if fault is not None:
            done = self._fault(srv, fault)
            if done:
                return done
        out = self._body(srv, req, fault)
        if out is None:
            return 0
        if fault is not None and fault.kind == "no_choices":
            out.pop("choices", None)
            out.pop("output", None)
            out.pop("content", None)
        self._send(200, json.dumps(out).encode())
        return 200

    def _body(
        self, srv: OpenAITestServer, req: SeenRequest, fault: Fault | None
    ) -> dict[str, Any] | None:
        """The answer's body, or None when a `Refusal` was sent instead."""
        if srv.responder is not None:
            try:
                made = srv.responder(req)
            except Refusal as r:
                self._error(r.status, r.message)
                return None
            if made is not None:
                return dict(made)
        text = srv._answer_text(req)
        if fault is not None and fault.kind == "no_content":
            text = None
        tokens = srv._tokens(req, text or "")
        if req.api == "messages":
            content = [] if text is None else [{"type": "text", "text": text}]
            return messages_body(req.index, req.model, content, tokens)
        make = _chat_body if req.api == "chat" else _responses_body
        return make(req.index, req.model, text, tokens)

    def _fault(self, srv: OpenAITestServer, fault: Fault) -> int:
        kind = fault.kind
        if kind in ("500", "503", "400", "401"):
            self._error(int(kind), f"injected {kind}")
            return int(kind)
        if kind == "429":
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            self._error(429, "injected rate limit", headers)
            return 429
        if kind == "hang":
            srv._wait(fault.hang_s)
            return 0  # then answer normally (the client has usually given up)
        if kind == "not_json":
            self._send(200, b"<html>upstream proxy error</html>")
            return 200
        return 0
