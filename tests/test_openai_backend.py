"""The OpenAI-compatible backend through the real openai client against the test server."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from medspot.adapters.backends.openai import OpenAIAdapter, parse_retry_after, sanitize_url
from medspot.adapters.base import AdapterContext, Convention, Prediction, StepRequest
from medspot.adapters.card import (
    ModelCard,
    ParsedAnswer,
    PromptSpec,
    PromptStyle,
    ResizeSpec,
    StyleSpec,
)
from medspot.errors import AdapterUnavailable, ConfigError, ModelCallError, TransientModelError
from medspot.geometry import Point
from medspot.testing.openai_server import Fault, OpenAITestServer, SeenRequest

KEY = "sk-test-SECRETKEY123456789"


def _parser(convention: Convention) -> Any:
    def parse(text: str, sent: tuple[int, int], original: tuple[int, int]) -> ParsedAnswer:
        m = re.search(r"\(\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*\)", text)
        if not m:
            return ParsedAnswer(None)
        x, y = float(m[1]), float(m[2])
        if convention is Convention.ABS_RESIZED:
            return ParsedAnswer(Point(x / sent[0], y / sent[1]))
        return ParsedAnswer(Point(x / 1000, y / 1000))

    return parse


def make_card(
    convention: Convention = Convention.REL1000, name: str = "test-card", **spec: Any
) -> ModelCard:
    base = PromptSpec(user_text="", system="You click things.", **spec)

    def build(req: StepRequest) -> PromptSpec:
        return replace(base, user_text=f"Where to click: {req.instruction}")

    style = StyleSpec(build=build, parse=_parser(convention), convention=convention)
    return ModelCard(
        name=name,
        title="Test card",
        family="test",
        checkpoint="test/checkpoint",
        backends=("openai", "hf"),
        native=style,
        upstream=style,
        upstream_preset="upstream-a",
    )


def make_request(
    tmp_path: Path, size: tuple[int, int] = (1000, 500), name: str = "s.png"
) -> StepRequest:
    path = tmp_path / name
    if not path.exists():
        Image.new("RGB", size, (90, 120, 150)).save(path)
    return StepRequest(
        step_uid="App/0/1",
        task_uid="App/0",
        image_rel=name,
        image_path=path,
        image_size=size,
        instruction="open the File menu",
    )


def adapter_for(card: ModelCard, *urls: str, **options: Any) -> OpenAIAdapter:
    opts: dict[str, Any] = {"base_urls": list(urls), "api_key": KEY, **options}
    return OpenAIAdapter.from_options(card, PromptStyle.NATIVE, opts)


async def _predict_and_close(adapter: OpenAIAdapter, *reqs: StepRequest) -> list[Prediction]:
    try:
        return [await adapter.predict(r) for r in reqs]
    finally:
        await adapter.aclose()


def run(adapter: OpenAIAdapter, *reqs: StepRequest) -> list[Prediction]:
    return asyncio.run(_predict_and_close(adapter, *reqs))


def test_chat_point_usage_cost_prompt(tmp_path: Path) -> None:
    req = make_request(tmp_path)
    with OpenAITestServer(answer="(250, 750)", usage=(1000, 10)) as srv:
        ad = adapter_for(make_card(detail="high"), srv.base_url, api_model="gpt-4o-mini")
        (pred,) = run(ad, req)
        seen = srv.requests[0]
    assert pred.point == Point(0.25, 0.75)
    assert pred.raw_text == "(250, 750)"
    assert pred.usage is not None and (pred.usage.input_tokens, pred.usage.output_tokens) == (
        1000,
        10,
    )
    # gpt-4o-mini list price: 0.15 $/1M in, 0.60 $/1M out -> 1000*0.15e-6 + 10*0.6e-6
    assert pred.cost_usd == pytest.approx(0.000156)
    assert pred.prompt == "You click things.\n\nWhere to click: open the File menu"
    assert seen.api == "chat" and seen.model == "gpt-4o-mini"
    assert seen.text == "Where to click: open the File menu"
    assert seen.system == "You click things."
    content = seen.body["messages"][1]["content"]
    assert content[0]["type"] == "image_url" and content[0]["image_url"]["detail"] == "high"
    assert seen.body["max_completion_tokens"] == 128 and seen.body["temperature"] == 0.0
    assert pred.meta["latency_s"] >= 0


def test_responses_api(tmp_path: Path) -> None:
    req = make_request(tmp_path)
    with OpenAITestServer(answer="(100, 900)", usage=(50, 5)) as srv:
        ad = adapter_for(make_card(api="responses", image_first=False), srv.base_url)
        (pred,) = run(ad, req)
        seen = srv.requests[0]
    assert seen.api == "responses"
    content = seen.body["input"][0]["content"]
    assert [p["type"] for p in content] == ["input_text", "input_image"]
    assert seen.body["instructions"] == "You click things."
    assert seen.body["max_output_tokens"] == 128
    assert pred.point == Point(0.1, 0.9)
    assert pred.usage is not None and pred.usage.input_tokens == 50
    assert pred.cost_usd is None  # test/checkpoint has no price


def test_original_bytes_sent_once_read(tmp_path: Path) -> None:
    req = make_request(tmp_path)
    original = hashlib.sha256(req.image_path.read_bytes()).hexdigest()
    with OpenAITestServer(answer="(1, 1)") as srv:
        ad = adapter_for(make_card(), srv.base_url)
        preds = run(ad, req, req, req)
        hashes = {r.image.sha256 for r in srv.requests if r.image}
    assert hashes == {original}
    assert ad.images.reads == 1 and ad.images.encodes == 0
    assert all(p.sent_size is None for p in preds)


def test_png_card_gets_jpeg_reencoded_as_png(tmp_path: Path) -> None:
    path = tmp_path / "s.jpg"
    Image.new("RGB", (40, 30), (1, 2, 3)).save(path, format="JPEG")
    req = replace(make_request(tmp_path), image_path=path, image_size=(40, 30))
    with OpenAITestServer(answer="(1, 1)") as srv:
        run(adapter_for(make_card(image_format="png"), srv.base_url), req)
        img = srv.requests[0].image
    assert img is not None and img.mime == "image/png" and img.size == (40, 30)


def test_abs_resized_sends_resized_and_maps_back(tmp_path: Path) -> None:
    # 1000x500 with factor 28 and at most 100*28*28 = 78400 px: beta = sqrt(500000/78400)
    # = 2.525; width floor(395.97/28)*28 = 392, height floor(197.99/28)*28 = 196.
    spec = ResizeSpec(factor=28, min_pixels=4 * 28 * 28, max_pixels=100 * 28 * 28)
    req = make_request(tmp_path)
    sizes: list[tuple[int, int]] = []

    def answer(r: SeenRequest) -> str:
        assert r.image is not None
        sizes.append(r.image.size)
        return "(196, 49)"  # the middle of the sent width, a quarter of its height

    with OpenAITestServer(answer=answer) as srv:
        (pred,) = run(
            adapter_for(make_card(Convention.ABS_RESIZED, resize=spec), srv.base_url), req
        )
    assert sizes == [(392, 196)]
    assert pred.sent_size == (392, 196)
    assert pred.point == Point(0.5, 0.25)


@pytest.mark.parametrize(
    ("fault", "transient"),
    [
        (Fault("500", at=[1]), True),
        (Fault("503", at=[1]), True),
        (Fault("not_json", at=[1]), True),
        (Fault("no_choices", at=[1]), True),
        (Fault("no_content", at=[1]), True),
        (Fault("400", at=[1]), False),
        (Fault("401", at=[1]), False),
    ],
)
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_faults_map_to_error_types(tmp_path: Path, fault: Fault, transient: bool, api: str) -> None:
    req = make_request(tmp_path)
    with OpenAITestServer(answer="(1, 1)", faults=[fault]) as srv:
        ad = adapter_for(make_card(api=api), srv.base_url)
        with pytest.raises(ModelCallError) as info:
            run(ad, req)
    assert isinstance(info.value, TransientModelError) is transient


def test_429_retry_after_is_parsed(tmp_path: Path) -> None:
    req = make_request(tmp_path)
    with (
        OpenAITestServer(faults=[Fault("429", at=[1], retry_after="7")]) as srv,
        pytest.raises(TransientModelError) as info,
    ):
        run(adapter_for(make_card(), srv.base_url), req)
    assert info.value.retry_after == 7.0


def test_hang_past_timeout_is_transient(tmp_path: Path) -> None:
    req = make_request(tmp_path)
    with (
        OpenAITestServer(faults=[Fault("hang", at=[1], hang_s=5.0)]) as srv,
        pytest.raises(TransientModelError, match="timed out"),
    ):
        run(adapter_for(make_card(), srv.base_url, timeout=0.3), req)


def test_connection_refused_is_transient(tmp_path: Path) -> None:
    with OpenAITestServer() as srv:
        url = srv.base_url  # the port is free again once the server is closed
    with pytest.raises(TransientModelError, match="connection"):
        run(adapter_for(make_card(), url), make_request(tmp_path))


def test_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    date = "Wed, 21 Oct 2015 07:28:10 GMT"  # 1445412490 in Unix time
    assert parse_retry_after({"retry-after": date}, now=1445412480.0) == 10.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_concurrency_reaches_n(tmp_path: Path) -> None:
    n = 6
    gate = threading.Barrier(n, timeout=20)

    def answer(r: SeenRequest) -> str:
        gate.wait()  # fails (BrokenBarrierError) unless n requests are inside at once
        return "(500, 500)"

    reqs = [make_request(tmp_path, name=f"s{i}.png") for i in range(n)]
    with OpenAITestServer(answer=answer) as srv:
        ad = adapter_for(make_card(), srv.base_url, concurrency=n)
        assert ad.max_concurrency == n

        async def main() -> list[Prediction]:
            try:
                return list(await asyncio.gather(*(ad.predict(r) for r in reqs)))
            finally:
                await ad.aclose()

        preds = asyncio.run(main())
        assert srv.max_in_flight == n
    assert all(p.point == Point(0.5, 0.5) for p in preds)


def test_load_spread_over_replicas(tmp_path: Path) -> None:
    req = make_request(tmp_path)
    with OpenAITestServer(answer="(1, 1)") as a, OpenAITestServer(answer="(1, 1)") as b:
        ad = adapter_for(make_card(), a.base_url, b.base_url)
        run(ad, *[req] * 6)
        assert (a.request_count, b.request_count) == (3, 3)
        assert ad.describe()["base_urls"] == [a.base_url, b.base_url]


def test_key_never_logged_nor_described(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    req = make_request(tmp_path)
    caplog.set_level(logging.DEBUG)
    with OpenAITestServer(answer="(1, 1)", faults=[Fault("401", at=[2])]) as srv:
        ad = adapter_for(make_card(), srv.base_url)
        run(ad, req)
        ad2 = adapter_for(make_card(), srv.base_url)
        with pytest.raises(ModelCallError) as info:
            run(ad2, req)
        auth = srv.requests[0].headers["authorization"]
    assert auth == f"Bearer {KEY}"  # the key did reach the server
    assert caplog.records  # the openai client logged at DEBUG
    for rec in caplog.records:
        assert KEY not in rec.getMessage()
    assert KEY not in str(ad.describe())
    assert KEY not in str(info.value)


def test_redacts_keylike_text_in_errors(tmp_path: Path) -> None:
    ad = adapter_for(make_card(), "http://127.0.0.1:9/v1")
    text = ad._redact(f"Incorrect API key provided: {KEY} and sk-abc****wxyz")
    assert KEY not in text and "sk-abc" not in text


def test_missing_key_for_openai_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(AdapterUnavailable, match="OPENAI_API_KEY"):
        OpenAIAdapter.from_options(make_card(), PromptStyle.NATIVE, {})
    # a local server needs no key
    ad = OpenAIAdapter.from_options(
        make_card(), PromptStyle.NATIVE, {"base_url": "http://127.0.0.1:8000/v1"}
    )
    assert ad.describe()["base_urls"] == ["http://127.0.0.1:8000/v1"]


def test_env_base_url_and_sanitized(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://user:pw@10.0.0.5:8000/v1?token=abc")
    ad = OpenAIAdapter.from_options(make_card(), PromptStyle.NATIVE, {"api_key": KEY})
    assert ad.describe()["base_urls"] == ["http://10.0.0.5:8000/v1"]
    assert sanitize_url("https://api.openai.com/v1") == "https://api.openai.com/v1"
    with pytest.raises(ConfigError):
        OpenAIAdapter.from_options(make_card(), PromptStyle.NATIVE, {"balance": "random"})


def test_server_extras_and_retry_on_no_point(tmp_path: Path) -> None:
    req = make_request(tmp_path)
    answers = iter(["I cannot tell.", "(100, 200)"])
    card = make_card(
        keep_special_tokens=True, retries_on_no_point=2, retry_temperature=0.3, stop=("<|x|>",)
    )
    with OpenAITestServer(answer=lambda r: next(answers), usage=(10, 2)) as srv:
        (pred,) = run(adapter_for(card, srv.base_url), req)
        bodies = [r.body for r in srv.requests]
    assert len(bodies) == 2
    assert bodies[0]["temperature"] == 0.0 and bodies[1]["temperature"] == 0.3
    assert bodies[0]["skip_special_tokens"] is False
    assert bodies[0]["stop"] == ["<|x|>"] and bodies[0]["seed"] == 0
    assert pred.point == Point(0.1, 0.2) and pred.meta["attempts"] == 2
    assert pred.usage is not None and pred.usage.input_tokens == 20


def test_official_url_gets_no_server_extras() -> None:
    ad = OpenAIAdapter.from_options(make_card(), PromptStyle.NATIVE, {"api_key": KEY})
    assert ad.server_extras is False
    assert ad.describe()["base_urls"] == ["https://api.openai.com/v1"]


def test_generic_card_through_backend_factory(tmp_path: Path) -> None:
    cards = pytest.importorskip("medspot.adapters.cards")
    assert hasattr(cards, "make_generic_card")
    from medspot.adapters.factory import create_generic_adapter

    req = make_request(tmp_path)
    with OpenAITestServer(answer="(250, 500)") as srv:
        ctx = AdapterContext.with_options({"base_urls": [srv.base_url], "api_key": KEY})
        ad = create_generic_adapter(ctx, "my-served-model")
        assert isinstance(ad, OpenAIAdapter)
        (pred,) = run(ad, req)
        assert srv.requests[0].model == "my-served-model"
        assert req.instruction in srv.requests[0].text
    assert pred.point == Point(0.25, 0.5)


def test_backend_choice_errors() -> None:
    from medspot.adapters.factory import build_adapter

    card = replace(make_card(), backends=("hf",))
    with pytest.raises(ConfigError, match="cannot run on the openai backend"):
        build_adapter(card, AdapterContext.with_options({"backend": "openai"}))
    with pytest.raises(ConfigError, match="prompt style"):
        build_adapter(make_card(), AdapterContext.with_options({"prompt_style": "fancy"}))
