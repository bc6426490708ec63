"""The conversation of a computer-use agent, kept in the journal and rebuilt from it (pure).

Every answer of a computer-use agent journals, in its `call_state`, the events of its turn:

    {"e": "result", "id": ITEM}   the item was resolved with this turn's screen (the action
                                  acted on in the turn before, or an observation-only item)
    {"e": "call", ...}            an API call made in this turn: its `items` (`CuItem.to_json`),
                                  the ending it gave (if any), and what the API needs to go on
                                  (OpenAI: the response id and its computer calls with their
                                  safety checks; Anthropic: the assistant's content blocks)
    {"e": "act", "id": ITEM}      the item this turn's answer executes (or, unsupported, the
                                  no-action turn it spends)

A turn's events, read in order over the attempt's earlier turns (`AgentTurn.previous`,
replayed answers included) and the screens those turns saw, are the whole conversation: the
items still to execute, the one whose result is due, and (for the stateless Messages API) every
message, rebuilt without asking anything again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medspot.live.agents.computer_use.actions import CuItem

__all__ = ["Pending", "TurnLog", "call_items", "last_call", "pending", "turn_logs"]

Event = Mapping[str, Any]


@dataclass(frozen=True)
class TurnLog:
    """One turn of the conversation: the screen it saw and the events of its answer."""

    screen_path: Path
    events: tuple[Event, ...] = ()


@dataclass(frozen=True)
class Pending:
    """Where the conversation stands: the item acted on last (its result is due with the next
    screen), the items of the last call not executed yet, and the pointer's position."""

    awaiting: str | None = None
    queue: tuple[CuItem, ...] = ()
    cursor: tuple[float, float] | None = None
    calls: int = 0  # API calls made so far in the attempt
    items: dict[str, CuItem] = field(default_factory=dict)  # every item seen, by id


def turn_logs(turns: Iterable[tuple[Path, Mapping[str, Any] | None]], api: str) -> list[TurnLog]:
    """The turns (screen, call_state) that belong to this API's conversation; answers of other
    agents (no call_state, another api) carry no events."""
    out = []
    for screen, state in turns:
        events: tuple[Event, ...] = ()
        if isinstance(state, Mapping) and state.get("api") == api:
            events = tuple(e for e in state.get("events") or () if isinstance(e, Mapping))
        out.append(TurnLog(screen, events))
    return out


def call_items(event: Event) -> list[CuItem]:
    return [CuItem.from_json(d) for d in event.get("items") or () if isinstance(d, Mapping)]


def pending(logs: Sequence[TurnLog]) -> Pending:
    """What is still open after `logs`: replays every event in order."""
    queue: list[CuItem] = []
    items: dict[str, CuItem] = {}
    awaiting: str | None = None
    cursor: tuple[float, float] | None = None
    calls = 0
    for log in logs:
        for ev in log.events:
            kind = ev.get("e")
            if kind == "call":
                calls += 1
                queue = call_items(ev)
                items.update({i.id: i for i in queue})
            elif kind in ("result", "act"):
                ident = str(ev.get("id"))
                item = items.get(ident)
                queue = [i for i in queue if i.id != ident]
                if item is not None and item.cursor is not None:
                    cursor = item.cursor
                if kind == "act":
                    awaiting = ident
                elif awaiting == ident:
                    awaiting = None
    return Pending(awaiting, tuple(queue), cursor, calls, items)


def last_call(logs: Sequence[TurnLog]) -> Event | None:
    """The latest call event (None before the first call)."""
    for log in reversed(logs):
        for ev in reversed(log.events):
            if ev.get("e") == "call":
                return ev
    return None
