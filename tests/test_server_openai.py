"""The OpenAI-compatible test server, spoken to with plain HTTP (urllib), no openai client."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest
from PIL import Image

from medspot.testing.openai_server import Fault, OpenAITestServer, SeenRequest


def _png(size: tuple[int, int], color: tuple[int, int, int] = (10, 20, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format="PNG")
    return out.getvalue()


def _url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def _post(base: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer x"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def _chat(image: bytes, text: str = "Click File") -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [
            {"role": "system", "content": "be brief"},
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": _url(image)}},
                    {"type": "text", "text": text},
                ],
            },
        ],
    }


def test_chat_answer_sees_image_size_hash_and_text() -> None:
    img = _png((64, 48))
    seen: list[SeenRequest] = []

    def answer(req: SeenRequest) -> str:
        seen.append(req)
        return f"{req.image.size if req.image else None}"

    with OpenAITestServer(answer=answer, usage=(100, 7)) as srv:
        status, _, body = _post(srv.base_url, "/chat/completions", _chat(img, "Click File"))
    assert status == 200
    out = json.loads(body)
    assert out["choices"][0]["message"]["content"] == "(64, 48)"
    assert out["usage"] == {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}
    (req,) = seen
    assert req.api == "chat" and req.text == "Click File" and req.system == "be brief"
    assert req.image is not None
    assert req.image.sha256 == hashlib.sha256(img).hexdigest()
    assert req.image.mime == "image/png"
    assert req.headers["authorization"] == "Bearer x"


def test_responses_route_and_mapping_by_image_hash() -> None:
    a, b = _png((32, 32), (1, 1, 1)), _png((32, 32), (2, 2, 2))
    mapping = {hashlib.sha256(a).hexdigest(): "(1, 1)", "*": "(9, 9)"}
    body_a = {
        "model": "m",
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "t"},
                    {"type": "input_image", "image_url": _url(a)},
                ],
            }
        ],
    }
    body_b = json.loads(json.dumps(body_a).replace(_url(a), _url(b)))
    with OpenAITestServer(answer=mapping) as srv:
        _, _, ra = _post(srv.base_url, "/responses", body_a)
        _, _, rb = _post(srv.base_url, "/responses", body_b)
    out_a, out_b = json.loads(ra), json.loads(rb)
    assert out_a["object"] == "response"
    assert out_a["output"][0]["content"][0]["text"] == "(1, 1)"
    assert out_b["output"][0]["content"][0]["text"] == "(9, 9)"
    assert "input_tokens" in out_a["usage"]


def test_scheduled_faults_and_counters() -> None:
    faults = [
        Fault("429", at=[1], retry_after="7"),
        Fault("503", at=[2]),
        Fault("not_json", at=[3]),
        Fault("no_choices", at=[4]),
        Fault("no_content", at=[5]),
    ]
    img = _png((8, 8))
    with OpenAITestServer(answer="(1, 2)", faults=faults) as srv:
        results = [_post(srv.base_url, "/chat/completions", _chat(img)) for _ in range(6)]
        counts = srv.status_counts
        n = srv.request_count
    assert results[0][0] == 429 and results[0][1]["Retry-After"] == "7"
    assert results[1][0] == 503
    assert results[2][0] == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(results[2][2])
    assert "choices" not in json.loads(results[3][2])
    assert json.loads(results[4][2])["choices"][0]["message"]["content"] is None
    assert json.loads(results[5][2])["choices"][0]["message"]["content"] == "(1, 2)"
    assert n == 6
    assert counts == {429: 1, 503: 1, 200: 4}


def test_fault_rate_is_seeded() -> None:
    img = _png((8, 8))

    def run() -> list[int]:
        with OpenAITestServer(faults=[Fault("500", rate=0.5)], seed=3) as srv:
            return [_post(srv.base_url, "/chat/completions", _chat(img))[0] for _ in range(12)]

    first, second = run(), run()
    assert first == second
    assert 500 in first and 200 in first


def test_max_in_flight_counts_overlapping_requests() -> None:
    img = _png((8, 8))
    gate = threading.Barrier(4, timeout=10)

    def answer(req: SeenRequest) -> str:
        gate.wait()  # all four requests are inside the server at once
        return "ok"

    with OpenAITestServer(answer=answer) as srv:
        threads = [
            threading.Thread(target=_post, args=(srv.base_url, "/chat/completions", _chat(img)))
            for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert srv.max_in_flight == 4
        assert srv.request_count == 4


def test_only_loopback_and_body_limit() -> None:
    with pytest.raises(ValueError):
        OpenAITestServer(host="0.0.0.0")
    with OpenAITestServer(max_body=1000) as srv:
        assert srv.base_url.startswith("http://127.0.0.1:")
        status, _, _ = _post(srv.base_url, "/chat/completions", _chat(_png((200, 200))))
        assert status == 413
        status, _, _ = _post(srv.base_url, "/nothing", {})
        assert status == 404


def test_unknown_fault_kind_is_refused() -> None:
    with pytest.raises(ValueError):
        Fault("teapot")
