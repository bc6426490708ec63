"""The OHIF start's wait for a loaded stack is bounded: past its time the start is observed as
it is (a log line), unless the browser itself failed (then the fault stands). No browser: the
web session is a stand-in that times out."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from medspot.live.core.contract import EnvironmentFault
from medspot.live.envs.ohif.env import STACK_LOADED_TIMEOUT_S, OhifEnv


class _TimingOut:
    def __init__(self, faulted: bool) -> None:
        self.faulted = faulted
        self.waits: list[float] = []

    def wait_for(self, script: str, timeout_s: float) -> None:
        self.waits.append(timeout_s)
        raise EnvironmentFault("web session: TimeoutError: Page.wait_for_function")


def _env(web: Any) -> OhifEnv:
    env = OhifEnv.__new__(OhifEnv)
    env.web = web
    return env


def test_a_stack_that_does_not_load_is_observed_as_it_is(
    caplog: pytest.LogCaptureFixture,
) -> None:
    web = _TimingOut(faulted=False)
    with caplog.at_level(logging.INFO, logger="medspot.live.envs.ohif.env"):
        _env(web)._wait_stack_loaded()
    assert web.waits == [STACK_LOADED_TIMEOUT_S]
    assert "did not finish loading" in caplog.text


def test_a_browser_fault_during_the_wait_stands() -> None:
    with pytest.raises(EnvironmentFault):
        _env(_TimingOut(faulted=True))._wait_stack_loaded()
