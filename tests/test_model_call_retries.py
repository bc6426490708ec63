"""The one model-call retry loop (`medspot.adapters.retry`): backoff with jitter, Retry-After
honoured and capped, limits, what is final at once; and the live `ModelAgent` using it against
the OpenAI test server through the real `openai` client."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from PIL import Image

from medspot.adapters.retry import (
    BACKOFF_BASE_S,
    BACKOFF_MAX_S,
    MAX_RETRIES,
    RETRY_AFTER_MAX_S,
    CallFailed,
    RetryPolicy,
    call_with_retries,
)
from medspot.errors import DataError, ModelCallError, TransientModelError
from medspot.live.agents.factory import create_agent
from medspot.live.agents.model import ModelAgent
from medspot.live.agents.turn import AgentTurn
from medspot.live.core.actions import Click
from medspot.live.core.contract import Observation
from medspot.live.core.tasks import LiveTask
from medspot.runner import RunOptions
from medspot.scoring.protocol import get_protocol
from medspot.testing.openai_server import Fault, OpenAITestServer

FAST = RetryPolicy(backoff_base=0.0)


def test_delay_honours_retry_after_up_to_its_cap() -> None:
    p = RetryPolicy()
    assert p.delay(0, 3.0) == 3.0
    assert p.delay(5, 0.0) == 0.0
    assert p.delay(0, 10_000.0) == RETRY_AFTER_MAX_S
    assert RetryPolicy(retry_after_max=2.0).delay(0, 7.0) == 2.0


def test_backoff_doubles_with_jitter_and_is_capped() -> None:
    random.seed(1)
    p = RetryPolicy()
    for retries in range(8):
        base = min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2**retries)
        seen = [p.delay(retries, None) for _ in range(200)]
        assert all(0.5 * base <= d < base for d in seen)
        assert max(seen) - min(seen) > 0.2 * base  # jittered, not one value
    assert p.delay(30, None) < BACKOFF_MAX_S  # capped however many retries
    assert p.delay(0, -1.0) < BACKOFF_BASE_S  # a negative Retry-After is ignored


def test_the_static_runner_and_the_live_agent_share_the_defaults() -> None:
    opts = RunOptions(protocol=get_protocol("medspot-v1"))
    assert opts.retry == RetryPolicy()
    assert opts.max_retries == MAX_RETRIES
    agent, seven = create_agent("random"), create_agent("random", max_retries=7)
    assert isinstance(agent, ModelAgent) and isinstance(seven, ModelAgent)
    assert agent.retry == RetryPolicy() and seven.retry.max_retries == 7


class Flaky:
    """An async callable that fails with `errors` in turn, then answers."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "answer"


def test_transient_errors_are_retried_and_counted() -> None:
    fn = Flaky(TransientModelError("HTTP 503"), TransientModelError("HTTP 429", retry_after=0))
    seen: list[tuple[int, float]] = []
    result, retries, latency = asyncio.run(
        call_with_retries(fn, FAST, on_retry=lambda n, d, e: seen.append((n, d)))
    )
    assert (result, retries, fn.calls) == ("answer", 2, 3)
    assert [n for n, _ in seen] == [1, 2] and latency >= 0


def test_exhausted_retries_fail_with_the_count() -> None:
    fn = Flaky(*[TransientModelError("HTTP 500") for _ in range(10)])
    with pytest.raises(CallFailed) as err:
        asyncio.run(call_with_retries(fn, RetryPolicy(max_retries=2, backoff_base=0.0)))
    assert err.value.retries == 2 and fn.calls == 3
    assert str(err.value) == "HTTP 500 (after 2 retries)"
    assert isinstance(err.value, ModelCallError)


def test_final_errors_are_not_retried() -> None:
    fn = Flaky(ModelCallError("HTTP 401"))
    with pytest.raises(CallFailed, match=r"^HTTP 401$"):
        asyncio.run(call_with_retries(fn, FAST))
    assert fn.calls == 1
    bug = Flaky(TransientModelError("HTTP 503"), KeyError("choices"))
    with pytest.raises(CallFailed, match=r"^KeyError: 'choices'$") as err:
        asyncio.run(call_with_retries(bug, FAST))
    assert err.value.retries == 1 and bug.calls == 2


def test_passthrough_and_cancellation_propagate() -> None:
    bad = Flaky(DataError("bad image"))
    with pytest.raises(DataError):
        asyncio.run(call_with_retries(bad, FAST, passthrough=(DataError,)))
    with pytest.raises(CallFailed, match="DataError"):  # without passthrough: a failed call
        asyncio.run(call_with_retries(Flaky(DataError("bad image")), FAST))

    async def cancelled() -> None:
        task = asyncio.ensure_future(
            call_with_retries(Flaky(TransientModelError("x", retry_after=30.0)), RetryPolicy())
        )
        await asyncio.sleep(0.05)  # the loop now waits the 30 s Retry-After
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(cancelled())


# ---- the live agent over the real client ------------------------------------------------------

TASK = LiveTask.model_validate({
    "id": "t", "instruction": "Open the study",
    "steps": [{"instruction": "Click the study", "target": {"text": "CT"}}],
    "success": [{"kind": "web.url_matches", "pattern": "study"}],
})  # fmt: skip


def _turn(tmp: Path) -> AgentTurn:
    screen = tmp / "screen.png"
    Image.new("RGB", (640, 400), (30, 30, 30)).save(screen)

    async def oracle() -> None:
        return None

    return AgentTurn(
        env="orthanc-explorer", task=TASK, step_index=0, n=1,
        observation=Observation(screen.read_bytes(), 640, 400), screen_path=screen,
        screen_rel="screen.png", history=(), oracle=oracle,
    )  # fmt: skip


def _agent(url: str, max_retries: int) -> ModelAgent:
    opts = {"base_url": url, "api_key": "x", "convention": "abs_sent", "timeout": 5.0}
    agent = create_agent("openai:scripted", options=opts, max_retries=max_retries)
    assert isinstance(agent, ModelAgent) and agent.retry.max_retries == max_retries
    agent.retry = RetryPolicy(max_retries=max_retries, backoff_base=0.0)  # no waiting
    return agent


def test_live_agent_retries_a_429_and_5xx_then_answers(tmp_path: Path) -> None:
    faults = (Fault("429", at=(1,), retry_after="0"), Fault("503", at=(2,)))
    with OpenAITestServer(answer="click(100, 200)", faults=faults) as srv:
        ans = asyncio.run(_agent(srv.base_url, max_retries=3).answer(_turn(tmp_path)))
        assert srv.request_count == 3
    assert ans.retries == 2 and ans.error is None
    assert ans.action == Click(100.0, 200.0)


def test_live_agent_gives_up_after_its_retries(tmp_path: Path) -> None:
    faults = (Fault("500", at=(1, 2, 3, 4)),)
    with OpenAITestServer(answer="click(1, 2)", faults=faults) as srv:
        agent = _agent(srv.base_url, max_retries=1)
        with pytest.raises(ModelCallError, match=r"\(after 1 retries\)"):
            asyncio.run(agent.answer(_turn(tmp_path)))
        assert srv.request_count == 2
