"""Whose episode is whose on a server (`medspot live serve`): one client, one set of episodes.

Every episode belongs to the caller that started it, named by the front's caller key (an MCP
session, an OpenEnv WebSocket, an OpenEnv HTTP episode's own unguessable id), and is found by
(owner, episode id) only: a caller naming another's episode finds nothing, exactly as for an
episode that never existed, so it learns nothing of it (`EpisodeBook.running`). An episode that
ended is remembered for its owner (how it ended, in the sentence the agent is told: "episode X
was abandoned: no call for 600 s"), a bounded number of them (`MAX_REMEMBERED`), oldest forgotten
first. Pure bookkeeping: no environment, no I/O.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from typing import Generic, Protocol, TypeVar

__all__ = ["MAX_REMEMBERED", "EpisodeBook", "Owned", "new_episode_id"]

MAX_REMEMBERED = 10_000  # ended episodes whose ending is still told to their owner


class Owned(Protocol):
    """A running episode as the book keeps it: its id and its owner's caller key."""

    @property
    def id(self) -> str: ...

    @property
    def owner(self) -> str: ...


R = TypeVar("R", bound=Owned)


def new_episode_id(task_id: str, repeat: int | None = None) -> str:
    """A fresh episode id: the task, its repeat (1-based) when known, and 96 random bits
    (unguessable: where a caller has no session of its own, knowing the id is owning it)."""
    run = f"#{repeat}" if repeat is not None else ""
    return f"{task_id}{run}-{secrets.token_hex(12)}"


class EpisodeBook(Generic[R]):
    """The running episodes of a server by (owner, id), and how its owners' last ones ended."""

    def __init__(self, remember: int = MAX_REMEMBERED) -> None:
        self._running: dict[tuple[str, str], R] = {}
        self._ended: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._remember = remember

    def __len__(self) -> int:
        return len(self._running)

    def add(self, run: R) -> None:
        self._running[(run.owner, run.id)] = run
        self._ended.pop((run.owner, run.id), None)

    def running(self, owner: str, episode: str) -> R | None:
        """`owner`'s running episode `episode` (None: not one of its running episodes, whether
        or not another caller runs an episode of that id)."""
        return self._running.get((owner, episode))

    def of(self, owner: str | None = None) -> list[R]:
        """The running episodes of `owner` (None: all), oldest first."""
        return [r for r in self._running.values() if owner is None or r.owner == owner]

    def end(self, run: R, told: str) -> None:
        """`run` has ended; `told` is what its owner is told when it names it again."""
        self._running.pop((run.owner, run.id), None)
        self._ended[(run.owner, run.id)] = told
        self._ended.move_to_end((run.owner, run.id))
        while len(self._ended) > self._remember:
            self._ended.popitem(last=False)

    def ended(self, owner: str, episode: str | None = None) -> str | None:
        """How `owner`'s episode `episode` ended (None: not remembered); without `episode`,
        its last episode that ended."""
        if episode is not None:
            return self._ended.get((owner, episode))
        for (who, _), told in reversed(self._ended.items()):
            if who == owner:
                return told
        return None
