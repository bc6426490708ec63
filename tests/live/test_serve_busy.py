"""The episode host (`medspot live serve`) when every environment is taken, in-process on the
lamp panel (a real small environment with a child process): a start waits a moment for an
environment to be given back (a client that has just left: its disconnect reaches the server
after the client has gone on) and answers "busy" only when none is, also while the taker's own
start is still in its reset; a server that stops while a start waits says so."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from _lamp_panel import ENTRY, NAME, switch_task, task_file

from medspot.live.envs import registry
from medspot.live.loop.envspec import EnvSpec
from medspot.live.serve import host as host_module
from medspot.live.serve.host import ClientInfo, EpisodeHost, ServeError, ServeOptions

pytestmark = pytest.mark.live

LEAVING = ClientInfo("rl-agent", "1", "session-a")  # one agent (the run folder's model),
NEXT = ClientInfo("rl-agent", "1", "session-b")  # two connections


@pytest.fixture(autouse=True)
def _lamp_panel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._ENVS, NAME, ENTRY)


def _host(tmp_path: Path, concurrency: int = 1) -> EpisodeHost:
    tasks = task_file(tmp_path / "tasks.json", [switch_task("red", "red")])
    return EpisodeHost(
        ServeOptions(
            spec=EnvSpec(NAME, tasks_file=tasks, workroot=tmp_path / "w"),
            out=tmp_path / "run",
            concurrency=concurrency,
        )
    )


async def _later(delay_s: float, host: EpisodeHost, episode: str) -> None:
    await asyncio.sleep(delay_s)
    await host.abandon(episode, "the client disconnected", LEAVING)


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_start_waits_for_an_episode_ending_a_moment_later(
    tmp_path: Path, concurrency: int
) -> None:
    host = _host(tmp_path, concurrency)

    async def main() -> tuple[list[str], float, str]:
        await host.open()
        try:
            firsts = [(await host.start("red", LEAVING)).episode for _ in range(concurrency)]
            if concurrency == 1:
                # one client's own new task abandons its old one at once (no wait)
                again = await host.start("red", LEAVING)
                assert "was abandoned: a new task started" in again.note
                firsts = [again.episode]
            leaving = asyncio.create_task(_later(0.5, host, firsts[-1]))
            t0 = time.monotonic()
            turn = await host.start("red", NEXT)
            waited = time.monotonic() - t0
            await leaving
            return host.episodes(NEXT), waited, turn.episode
        finally:
            await host.close()

    mine, waited, episode = asyncio.run(main())
    assert mine == [episode]  # the next client's episode runs: no "busy"
    assert waited > 0.4  # it started once the other episode had ended


@pytest.mark.parametrize(
    ("concurrency", "message"),
    [(1, "the environment is busy with another client's episode"),
     (2, "all 2 environments are busy: end an episode")],
)  # fmt: skip
def test_busy_when_no_environment_is_given_back_in_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, concurrency: int, message: str
) -> None:
    monkeypatch.setattr(host_module, "FREE_WAIT_S", 0.6)
    host = _host(tmp_path, concurrency)

    async def main() -> tuple[str, float]:
        await host.open()
        try:
            for _ in range(concurrency):
                await host.start("red", LEAVING)
            t0 = time.monotonic()
            with pytest.raises(ServeError) as e:
                await host.start("red", NEXT)
            return str(e.value), time.monotonic() - t0
        finally:
            await host.close()

    err, waited = asyncio.run(main())
    assert err.startswith(message)
    assert waited >= 0.6


def test_a_start_waiting_for_an_environment_hears_that_the_server_stops(tmp_path: Path) -> None:
    host = _host(tmp_path)

    async def main() -> str:
        await host.open()
        await host.start("red", LEAVING)
        waiting = asyncio.create_task(host.start("red", NEXT))
        await asyncio.sleep(0.2)
        await host.close()
        with pytest.raises(ServeError) as e:
            await waiting
        return str(e.value)

    assert asyncio.run(main()) == "the server is stopping"


def test_a_start_while_another_clients_start_is_still_resetting_waits_then_is_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one environment taken by a start that has not finished its reset (no episode runs
    yet): another client's start waits, then is told the environment is busy."""
    monkeypatch.setattr(host_module, "FREE_WAIT_S", 0.6)
    tasks = task_file(tmp_path / "tasks.json", [switch_task("red", "red")])
    host = EpisodeHost(
        ServeOptions(
            spec=EnvSpec(
                NAME, tasks_file=tasks, env_options={"reset_delay_s": 0.5}, workroot=tmp_path / "w"
            ),
            out=tmp_path / "run",
        )
    )

    async def main() -> tuple[str, str]:
        await host.open()
        try:
            first = asyncio.create_task(host.start("red", LEAVING))
            await asyncio.sleep(0.1)  # the first start is in its reset
            with pytest.raises(ServeError) as e:
                await host.start("red", NEXT)
            return (await first).episode, str(e.value)
        finally:
            await host.close()

    episode, err = asyncio.run(main())
    assert err == "the environment is busy with another client's episode"
    assert host.episodes() == [] and episode.startswith("red#1-")
